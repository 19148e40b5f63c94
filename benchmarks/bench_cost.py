"""make bench-cost: executed instructions of one inference on the emulated boards.

For every shared model with weights that the reference file lists, under every strategy
(dual, tinyengine, rip, fused), compiled once by the compiler driver for qemu-m33 (so the
fused chains are those the M33's cost model picks, on both boards) and that same code run
on qemu-m33 (Cortex-M33, the RP2350's core) and qemu-armv6m (Cortex-M0+ code, the RP2040's
instruction set): MACs, instructions, instructions per MAC, the ratio rip / dual (the
paper: 1.0005 mean on the Pico 2; ours must stay within 1.002), and the ratio to TFLite
Micro with CMSIS-NN on the same emulated core, read from
../shared/reference/cmsis-nn-m33-instructions.json (measured the same way: SysTick under
-icount shift=0, wraps counted, only the inference, the same default input). Every run's
checksum must equal TFLite Micro's. Then a per-op-class breakdown for one model from a
profiling build (SysTick marks around each op), with planned right shifts in their own
column; and, with CMSIS-NN checkouts (--cmsis-nn, --cmsis-core or $CMSIS_NN_DIR,
$CMSIS_CORE_DIR), instructions per MAC per MCUNet model and op class, rip at the board's
flags and at -O2 beside CMSIS-NN's (bench_cmsis's harness, every layer's bytes checked);
the MLPerf Tiny models' instructions and estimated Pico 2 cycles beside X-CUBE-AI's and
pico-tflmicro's measured latencies (results/mlperf.py); and two cores against one, arena and
critical path (two_cores.py, issue 27).

With the CMSIS checkouts it also measures the models issue 28 added operators for, which no
reference figure covers (tests/bench_models.py: an attention block, a 16x8 DS-CNN, a
keyword-spotting LSTM in int8 and 16x8): rip's whole inference on qemu-m33 (strategy rip,
its checksum TFLite Micro's) beside the CMSIS-NN routines TFLite Micro's cmsis_nn kernels
call for each layer, with the arguments they pass (bench_cmsis's harness; every layer's
bytes equal three ways), summed, and rip's own per-layer figures over the same layers. The
CMSIS-NN side leaves out TFLite Micro's interpreter, which only adds to its figure.
--only-writer-models runs this section alone.

    python benchmarks/bench_cost.py [--models a,b] [--jobs N] [--profile MODEL] [--json F]
        [--no-writer-models | --only-writer-models]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pico_cost

from rip import compiler
from rip.allocator.planning.cost_model import op_class as cost_class
from rip.allocator.planning.options import DEFAULT_TIME_LIMIT
from rip.allocator.planning.strategies import STRATEGIES
from rip.boards import Board, load_board
from rip.codegen.emit import EmittedModel
from rip.compiler import Options, analyse, emit
from rip.core import jsonio
from rip.core.errors import RipError
from rip.core.terms import Placer, Strategy
from rip.firmware.qemu_project import ProfileMark, build_qemu_project, macs, write_qemu_project
from rip.firmware.qemu_run import QemuRun, calibrate, run_elf
from rip.firmware.result import parse_result_line
from rip.frontend.ir import Graph, Operator

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / ".." / "shared"
REFERENCE = SHARED / "reference" / "cmsis-nn-m33-instructions.json"
BOARDS = ("qemu-m33", "qemu-armv6m")
CLASSES = ("1x1 conv", "dw 3x3", "dw 5x5", "dw 7x7", "dw other", "other conv", "fc",
           "fused chain", "elementwise", "pooling", "other")  # fmt: skip


# The breakdown's name of each cost class (allocator.planning.cost_model.op_class).
LABELS = {
    "conv1x1": "1x1 conv",
    "conv": "other conv",
    "fc": "fc",
    "fused": "fused chain",
    "elementwise": "elementwise",
    "pool": "pooling",
    "other": "other",
}


def op_class(graph: Graph, op: Operator) -> str:
    """The breakdown's class of an op: its cost class (`cost_model.op_class`), depthwise by
    kernel size: 1x1 conv, dw 3x3 / 5x5 / 7x7 / other, other conv, fc, fused chain,
    elementwise, pooling, other."""
    cls = cost_class(graph, op, by_window=True)
    if cls.startswith("dw"):
        return cls if cls in CLASSES else "dw other"
    return LABELS[cls]


def measure(
    path: str,
    profile: bool = False,
    time_limit: float = DEFAULT_TIME_LIMIT,
    boards: tuple[str, ...] = BOARDS,
    strategies: tuple[str, ...] | None = None,
) -> dict:
    """Compile one model for ``BOARDS[0]`` under ``strategies`` (default: every strategy),
    then build and run that code on each of ``boards``."""
    p = Path(path)
    board0 = load_board(BOARDS[0])
    t0 = time.perf_counter()
    measured = strategies or STRATEGIES
    # the profile compares every strategy; otherwise plan only the ones measured
    planned = STRATEGIES if profile else tuple(Strategy(s) for s in measured)
    options = Options(placer=Placer("milp"), time_limit=time_limit, strategies=planned)
    compiled = analyse(p, board0, options)
    expected = compiler.reference(p, compiled.graph).checksum
    row: dict = {"model": compiled.graph.name, "macs": macs(compiled.graph),
                 "checksum": f"0x{expected:08x}", "runs": {}, "mismatches": []}  # fmt: skip
    models = {s: emit(compiled, Strategy(s)) for s in measured}  # the same code on every board
    with tempfile.TemporaryDirectory(prefix="bench-cost-") as tmp:
        for board_name in boards:
            board = load_board(board_name)
            for strategy in measured:
                model = models[strategy]
                out = Path(tmp) / f"{board_name}-{strategy}"
                try:
                    write_qemu_project(model, out, board, expected)
                    run = run_elf(build_qemu_project(out, board), board, 1800.0)
                except RipError as e:
                    row["runs"][f"{board_name}/{strategy}"] = {"error": str(e).splitlines()[0]}
                    continue
                res = run.result
                if res is None or isinstance(res, str):
                    row["runs"][f"{board_name}/{strategy}"] = {"error": str(res)}
                    continue
                if res.checksum != expected:
                    row["mismatches"].append(f"{board_name}/{strategy}")
                row["runs"][f"{board_name}/{strategy}"] = {
                    "instructions": res.instructions,
                    "arena_bytes": model.arena_bytes,
                    "shifts": sum(1 for o in model.ops if o.shift),
                }
        if profile:
            row["profile"] = profile_model(compiled, expected, Path(tmp))
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def profile_run(
    model: EmittedModel, board: Board, reference: int | None, out: Path
) -> tuple[list[ProfileMark], list[int], QemuRun]:
    """A profiling build of ``model`` run on QEMU: its marks, the instructions from each
    mark to the next (the firmware's RIP-PROFILE lines) and the run."""
    marks = write_qemu_project(model, out, board, reference, profile=True)
    run = run_elf(build_qemu_project(out, board), board, 1800.0)
    figures = [int(x.split("instructions=")[1]) for x in run.lines if "RIP-PROFILE" in x]
    return marks, figures, run


def profile_model(compiled, reference: int, tmp: Path) -> dict:
    """Instructions per op class on qemu-m33 under every strategy (profiling build)."""
    board = load_board("qemu-m33")
    table = {}
    for strategy in STRATEGIES:
        graph = compiled.variants[strategy].graph
        marks, figures, run = profile_run(
            emit(compiled, strategy), board, reference, tmp / f"profile-{strategy}"
        )
        sums = dict.fromkeys((*CLASSES, "shift"), 0)
        for mark, n in zip(marks, figures, strict=True):
            if mark.part == "shift":
                sums["shift"] += n
            else:
                sums[op_class(graph, graph.operators[mark.op])] += n
        result = parse_result_line(run.lines[-1])
        sums["total"] = result.instructions if result else sum(figures)
        table[strategy] = sums
    return table


def _fmt(n: float | None, digits: int = 0) -> str:
    if n is None:
        return "-"
    return f"{n:,.{digits}f}"


def print_tables(rows: list[dict], reference: dict, calibration: dict) -> None:
    print("Calibration (2-instruction loop): " + "; ".join(
        f"{b}: {i:,} instructions = {t:,} ticks ({i / t:g}/tick)"
        for b, (i, t) in calibration.items()))  # fmt: skip
    print()
    head = (f"| model | MACs | board | {' | '.join(STRATEGIES)} | rip instr/MAC | rip / dual "
            "| TFLM+CMSIS-NN | rip / TFLM+CMSIS-NN |")  # fmt: skip
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    ratios = []
    for row in rows:
        ref = reference.get(row["model"], {})
        for board in BOARDS:
            runs = {s: row["runs"].get(f"{board}/{s}", {}) for s in STRATEGIES}
            n = {s: runs[s].get("instructions") for s in STRATEGIES}
            tflm = ref.get("tflm_cmsis_nn_instructions" if board == "qemu-m33"
                           else "tflm_cmsis_nn_instructions_armv6m")  # fmt: skip
            rd = n["rip"] / n["dual"] if n["rip"] and n["dual"] else None
            if rd is not None:
                ratios.append(rd)
            per_mac = n["rip"] / row["macs"] if n["rip"] and row["macs"] else None
            vs = n["rip"] / tflm if n["rip"] and tflm else None
            cells = [_fmt(n[s]) if n[s] else runs[s].get("error", "-")[:40] for s in STRATEGIES]
            tail = f"{_fmt(per_mac, 2)} | {_fmt(rd, 5)} | {_fmt(tflm)} | {_fmt(vs, 3)}"
            print(f"| {row['model']} | {row['macs']:,} | {board} | {' | '.join(cells)} | {tail} |")
    if ratios:
        print()
        print(f"rip / dual over {len(ratios)} runs: mean {sum(ratios) / len(ratios):.5f}, "
              f"max {max(ratios):.5f} (the paper: 1.0005 mean on the Pico 2; ours must stay "
              "within 1.002)")  # fmt: skip
    bad = [f"{r['model']} {m}" for r in rows for m in r["mismatches"]]
    print("checksums: " + ("all equal TFLite Micro's" if not bad else "MISMATCH " + ", ".join(bad)))
    for row in rows:
        if "profile" not in row:
            continue
        print()
        print(f"Per op class on qemu-m33, {row['model']} (instructions, profiling build):")
        cols = [c for c in (*CLASSES, "shift")
                if any(row["profile"][s][c] for s in STRATEGIES)]  # fmt: skip
        print("| strategy | " + " | ".join(cols) + " | total |")
        print("|---" * (len(cols) + 2) + "|")
        for s in STRATEGIES:
            p = row["profile"][s]
            print(f"| {s} | " + " | ".join(_fmt(p[c]) for c in cols) + f" | {_fmt(p['total'])} |")


def load_reference() -> dict[str, dict]:
    """The reference file's models by name (TFLite Micro + CMSIS-NN figures)."""
    return {m["model"]: m for m in json.loads(REFERENCE.read_text())["models"]}


def model_path(entry: dict) -> Path:
    """A reference entry's model file under ../shared/models."""
    return SHARED / "models" / entry["file"].split("models/", 1)[1]


def collect(
    models: list[str],
    jobs: int,
    profile: str | None,
    reference: dict[str, dict] | None = None,
    boards: tuple[str, ...] = BOARDS,
    strategies: tuple[str, ...] | None = None,
) -> dict:
    """Calibration and one ``measure`` row per model (in the order given), ``jobs`` models
    at a time: the data every table of this benchmark is printed from."""
    reference = load_reference() if reference is None else reference
    paths = {m: model_path(reference[m]) for m in models if m in reference}
    calibration = {}
    with tempfile.TemporaryDirectory() as tmp:
        for b in boards:
            calibration[b] = calibrate(load_board(b), Path(tmp) / b)
    with ProcessPoolExecutor(jobs) as pool:
        futures = [
            pool.submit(
                measure, str(paths[m]), m == profile, DEFAULT_TIME_LIMIT, boards, strategies
            )
            for m in paths
        ]
        rows = [f.result() for f in futures]
    return {"rows": rows, "calibration": calibration}


CLASS_ROWS = ("1x1 conv", "other conv", "dw 3x3", "dw 5x5", "dw 7x7", "dw other",
              "fully connected")  # fmt: skip
LEVEL = "-O2"  # the second build type measured per class (issue 26: at most 1.05x)


def class_costs(models: list[str], jobs: int, reference: dict[str, dict], nn: str, core: str,
                boards: tuple[str, ...] = BOARDS) -> list[dict]:  # fmt: skip
    """Per MCUNet model among ``models``: bench_cmsis's layer-by-layer run on each board
    (CMSIS-NN's routines, and rip's code at the board's flags and at ``LEVEL``, every
    layer's bytes checked against TFLite Micro's), summed per op class."""
    import bench_cmsis
    from results.common import MCUNET

    found = bench_cmsis.find_cmsis(nn, core)
    paths = [model_path(reference[m]) for m in models if m in reference and m in MCUNET]
    libs = {b: str(bench_cmsis.build_library(*found, b)) for b in boards}
    with ProcessPoolExecutor(jobs) as pool:
        futures = [pool.submit(bench_cmsis.measure, str(p), list(boards), str(found[0]),
                               str(found[1]), libs, (LEVEL,)) for p in paths]  # fmt: skip
        return [f.result() for f in futures]


def print_class_table(rows: list[dict]) -> None:
    """Instructions per MAC per model, board and op class: rip at the board's flags and at
    LEVEL, beside CMSIS-NN's; the whole inference's LEVEL / board-flags ratio."""
    print(f"Per op class, instructions per MAC (strategy rip at the board's flags and at {LEVEL}"
          "; CMSIS-NN's routines as TFLite Micro calls them, bench-cmsis's harness):")  # fmt: skip
    head = f"| model | board | {' | '.join(CLASS_ROWS)} | whole inference {LEVEL} / board |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    worst = {b: 0.0 for b in BOARDS}
    for row in rows:
        for b, res in row["boards"].items():
            cl = res["classes"]
            cells = []
            for c in CLASS_ROWS:
                x = cl.get(c)
                if not x or not x["macs"]:
                    cells.append("")
                    continue
                m = x["macs"]
                cells.append(f"{x['rip'] / m:.2f} / {x.get('rip' + LEVEL, 0) / m:.2f} / "
                             f"{x['cmsis'] / m:.2f}")  # fmt: skip
            ratio = res[f"rip_total{LEVEL}"] / res["rip_total"]
            worst[b] = max(worst[b], ratio)
            print(f"| {row['model']} | {b} | {' | '.join(cells)} | {ratio:.3f} |")
    print()
    levels = "; ".join(f"{b}: {LEVEL} at most {w:.3f}x the board's flags"
                       for b, w in worst.items() if w)  # fmt: skip
    print(f"cells: rip (board flags) / rip ({LEVEL}) / CMSIS-NN; {levels}")
    bad = [m for r in rows for res in r["boards"].values() for m in res["mismatches"]]
    print("layers: " + ("every layer's bytes equal TFLite Micro's at both levels" if not bad
                        else "MISMATCH " + "; ".join(bad)))  # fmt: skip


WRITER_BOARD = "qemu-m33"


def writer_costs(jobs: int, nn: str | None, core: str | None) -> list[dict]:
    """Per model of tests/bench_models.py (which writes them to build/bench-models/ and prints
    their paths: benchmarks never import the tests): bench_cmsis's
    layer-by-layer run on WRITER_BOARD (CMSIS-NN's routines and rip's ops, every layer's
    bytes checked against TFLite Micro's) under ``"boards"``, ``measure``'s whole-inference
    run of strategy rip under ``"whole"``, and the ops neither side times under
    ``"uncovered"``."""
    import bench_cmsis

    from rip.frontend.reader import read_model

    found = bench_cmsis.find_cmsis(nn, core)
    script = ROOT / "tests" / "bench_models.py"
    written = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             check=True)  # fmt: skip
    paths = [Path(line) for line in written.stdout.split()]
    libs = {WRITER_BOARD: str(bench_cmsis.build_library(*found, WRITER_BOARD))}
    with ProcessPoolExecutor(jobs) as pool:
        layers = [pool.submit(bench_cmsis.measure, str(p), [WRITER_BOARD], str(found[0]),
                              str(found[1]), libs) for p in paths]  # fmt: skip
        whole = [pool.submit(measure, str(p), False, DEFAULT_TIME_LIMIT, (WRITER_BOARD,),
                             ("rip",)) for p in paths]  # fmt: skip
        rows = [{**f.result(), "whole": w.result()} for f, w in zip(layers, whole, strict=True)]
    for p, row in zip(paths, rows, strict=True):
        timed = {x["op"] for x in row["boards"][WRITER_BOARD]["layers"]}
        ops = read_model(p).operators
        row["uncovered"] = [f"{op.kind.name} (op {op.source_index})" for op in ops
                            if op.source_index not in timed]  # fmt: skip
    return rows


def print_writer_tables(rows: list[dict]) -> None:
    """Per model: MACs, rip's whole inference, both per-layer sums over the layers the
    harness runs, the ratio; then every layer."""
    import bench_cmsis

    b = WRITER_BOARD
    print(f"Attention, 16x8 and LSTM models on {b} (instructions; CMSIS-NN: the sum of the "
          "CMSIS-NN routines TFLite Micro's cmsis_nn kernels call for these layers, with the "
          "arguments they pass, BATCH_MATMUL's transposes included, without TFLite Micro's "
          "interpreter, which only favours CMSIS-NN; rip: its ops over the same layers, and its "
          "whole inference, strategy rip):")  # fmt: skip
    print()
    head = ("| model | MACs | rip whole inference | rip, layers covered | CMSIS-NN, layers "
            "covered | rip / CMSIS-NN | layers covered | not covered (neither side) |")  # fmt: skip
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for row in rows:
        res = row["boards"][b]
        # harness layers (with any planned shift of theirs) against rip-only ops
        covered = {x["op"] for x in res["layers"] if x["kind"] not in ("rip", "shift")}
        rip = sum(x["rip"] for x in res["layers"] if x["op"] in covered)
        cm = sum(x["cmsis"] for x in res["layers"] if x["op"] in covered)
        macs = sum(x["macs"] for x in res["layers"] if x["op"] in covered)
        rip_only = [f"rip op {x['op']}" for x in res["layers"] if x["kind"] == "rip"]
        run = row["whole"]["runs"].get(f"{b}/rip", {})
        whole = run.get("instructions") or run.get("error", "-")
        missing = ", ".join(row["uncovered"] + rip_only) or "none"
        print(f"| {row['model']} | {macs:,} | {_fmt(whole) if isinstance(whole, int) else whole} "
              f"| {rip:,} | {cm:,} | {_fmt(bench_cmsis.ratio(rip, cm), 3)} | {len(covered)} "
              f"| {missing} |")  # fmt: skip
    print()
    print("MACs: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and BATCH_MATMUL (output elements x "
          "depth), UNIDIRECTIONAL_SEQUENCE_LSTM (steps x 4 gates x units x (features + units)). "
          "RESHAPE: the harness shares its input's bytes (TFLite Micro's copies them) "
          "and rip emits no code for it.")  # fmt: skip
    for row in rows:
        print()
        print("\n".join(bench_cmsis.layer_table(row["model"], b, row["boards"][b])))
    bad = [m for r in rows for m in r["boards"][b]["mismatches"]]
    bad += [f"{r['model']} whole inference {m}" for r in rows for m in r["whole"]["mismatches"]]
    print()
    print("checks: " + ("every layer's CMSIS-NN, rip and TFLite Micro bytes equal; rip's whole-"
                        "inference checksum TFLite Micro's" if not bad
                        else "MISMATCH " + "; ".join(bad)))  # fmt: skip


def pico_estimates(models: list[str], jobs: int, reference: dict[str, dict],
                   nn: str | None = None, core: str | None = None) -> dict:  # fmt: skip
    """The Pico 1 / Pico 2 estimates (pico_cost) of the MCUNet models among ``models``."""
    from results.common import MCUNET

    paths = {m: model_path(reference[m]) for m in models if m in reference and m in MCUNET}
    return pico_cost.collect(paths, jobs, nn, core)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma-separated model names (default: all listed)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--profile", default="mcunet-in0", help="model of the per-op breakdown")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--no-pico", action="store_true", help="skip the Pico timing estimates")
    ap.add_argument("--no-mlperf", action="store_true",
                    help="skip the MLPerf Tiny models beside the measured engines")  # fmt: skip
    ap.add_argument("--cmsis-nn", help="CMSIS-NN checkout for the Pico estimates of TFLite Micro "
                    "+ CMSIS-NN (default $CMSIS_NN_DIR)")  # fmt: skip
    ap.add_argument("--cmsis-core", help="CMSIS_6 checkout (default $CMSIS_CORE_DIR)")
    ap.add_argument("--no-two-cores", action="store_true",
                    help="skip two cores against one (two_cores.py)")  # fmt: skip
    ap.add_argument("--no-classes", action="store_true",
                    help="skip the per-class table (needs CMSIS-NN: --cmsis-nn)")  # fmt: skip
    writer = ap.add_mutually_exclusive_group()
    writer.add_argument("--no-writer-models", action="store_true",
                        help="skip the attention, 16x8 and LSTM models (CMSIS-NN)")  # fmt: skip
    writer.add_argument("--only-writer-models", action="store_true",
                        help="run only the attention, 16x8 and LSTM models' section")  # fmt: skip
    args = ap.parse_args(argv)
    only = args.only_writer_models
    if only:
        args.no_classes = args.no_pico = args.no_two_cores = args.no_mlperf = True
    if not REFERENCE.is_file():
        print(f"bench-cost: {REFERENCE} is not there (../shared)", file=sys.stderr)
        return 2
    reference = load_reference()
    chosen = args.models.split(",") if args.models else list(reference)
    t0 = time.perf_counter()
    data: dict = {"rows": []}
    if not only:
        data = collect(chosen, args.jobs, args.profile, reference)
        print_tables(data["rows"], reference, data["calibration"])
    bad_classes = False
    if not args.no_classes:
        import bench_cmsis

        print()
        try:
            data["classes"] = class_costs(chosen, args.jobs, reference, args.cmsis_nn,
                                          args.cmsis_core)  # fmt: skip
        except bench_cmsis.BenchError as e:
            print(f"Per op class: not measured ({e})")
        else:
            print_class_table(data["classes"])
            bad_classes = any(res["mismatches"] for r in data["classes"]
                              for res in r["boards"].values())  # fmt: skip
    bad_writer = False
    if not args.no_writer_models:
        import bench_cmsis

        print()
        try:
            data["writer_models"] = writer_costs(args.jobs, args.cmsis_nn, args.cmsis_core)
        except bench_cmsis.BenchError as e:
            print(f"Attention and 16x8 models: not measured ({e})")
        else:
            print_writer_tables(data["writer_models"])
            bad_writer = any(r["boards"][WRITER_BOARD]["mismatches"] or r["whole"]["mismatches"]
                             for r in data["writer_models"])  # fmt: skip
    if not args.no_pico:
        data["pico"] = pico_estimates(chosen, args.jobs, reference, args.cmsis_nn, args.cmsis_core)
        print()
        pico_cost.print_tables(data["pico"])
    bad_cores = False
    if not args.no_two_cores:
        import two_cores

        data["two_cores"] = two_cores.collect(chosen, args.jobs)
        print()
        two_cores.print_table(data["two_cores"])
        bad_cores = any(r["mismatches"] for r in data["two_cores"])
    bad_mlperf = False
    if not args.no_mlperf:
        from results import mlperf

        data["mlperf"] = mlperf.collect(args.jobs)
        print()
        mlperf.print_table(data["mlperf"])
        bad_mlperf = not data["mlperf"]["all_checksums_equal"]
    print(f"\nwall {time.perf_counter() - t0:.0f} s, {args.jobs} jobs")
    if args.json:
        Path(args.json).write_text(jsonio.dumps(data, indent=1))
    bad = (any(r["mismatches"] for r in data["rows"]) or bad_classes or bad_mlperf or bad_cores
           or bad_writer)  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
