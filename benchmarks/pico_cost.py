"""bench-cost's Pico figures: estimated Pico 1 (RP2040 at 125 MHz) and Pico 2 (RP2350 at
150 MHz) cycles and milliseconds of one inference, from the timing model of rip.timing
(the Cortex-M0+ / Cortex-M33 cost tables and the XIP flash cache, docs/pico-timing.md), for

- rip: the model's firmware (strategy rip) on qemu-armv6m / qemu-m33 under the timing plugin,
  checksum checked against TFLite Micro's; for a few models also a profiling build, whose
  per-op segments rank the layers by the cycles they lose to flash misses;
- TFLite Micro + CMSIS-NN: the CMSIS-NN routines TFLite Micro calls for every layer, with
  its arguments (the harness ``make bench-cmsis`` builds, benchmarks/cmsis_layers.py), under
  the same plugin, layer by layer. What is summed is the CMSIS-NN calls (and PAD and the
  nearest-neighbour gather): TFLite Micro's interpreter (Invoke's op loop, each kernel's
  Eval wrapper) is not, so the ratio rip / CMSIS-NN compares kernels, not whole runtimes.
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cmsis import CFLAGS as CMSIS_BOARDS
from bench_cmsis import build_harness, build_library, find_cmsis, parse_cmsis

from rip.allocator.planning.options import DEFAULT_STAGE_WEIGHTS
from rip.boards import Board, load_board
from rip.codegen.emit import EmittedModel
from rip.compiler import Options, analyse, emit, reference
from rip.core.errors import RipError
from rip.core.terms import Placer, Strategy
from rip.firmware.qemu_project import build_qemu_project, write_qemu_project
from rip.firmware.result import Result
from rip.frontend.ir import Graph
from rip.timing.estimate import Estimate, Segment, run_timed
from rip.timing.model import TimingModel

BOARDS = ("qemu-armv6m", "qemu-m33")
PROFILE_MODELS = ("person-det", "mcunet-in3")  # per-layer flash-miss ranking
TIMEOUT = 3600.0


def segment_figures(model: TimingModel, s: Segment) -> dict:
    """The figures of one interval: cycles, ms at the chip's clock, stall and its share."""
    return {
        "instructions": s.instructions,
        "cycles": s.cycles,
        "ms": round(1e3 * s.cycles / model.chip.clock_hz, 3),
        "stall": s.stall,
        "stall_share": round(s.stall_share, 4),
        "misses": s.misses,
        "hits": s.fetch_hits + s.data_hits,
    }


def weight_bytes(graph: Graph, op) -> int:
    """Bytes of the op's constant inputs (its weights and biases, in flash)."""
    return sum(
        graph.tensors[t].nbytes for t in op.inputs if t >= 0 and graph.tensors[t].is_constant
    )


def timed_firmware(
    model: EmittedModel, board: Board, ref: int | None, out: Path, timing: TimingModel
) -> tuple[Result, Estimate]:
    """``model``'s QEMU project written to ``out``, built and run on ``board`` under the
    timing plugin: its result line and the estimate; a RipError when it prints none."""
    write_qemu_project(model, out, board, ref)
    run, est = run_timed(build_qemu_project(out, board), board, TIMEOUT, timing)
    res = run.result
    if res is None or isinstance(res, str):
        raise RipError(f"{model.name} on {board.name}: no result line ({res})")
    return res, est


def rip_timed(path: str, boards: tuple[str, ...] = BOARDS, profile: bool = False,
              strategy: Strategy = Strategy.RIP,
              stage_weights: int = DEFAULT_STAGE_WEIGHTS) -> dict:  # fmt: skip
    """rip's firmware (``strategy``, default rip) of one model on each emulated board under
    the timing plugin, planned for that board: with flash-aware execution (budget
    ``stage_weights``, default 0; staging.py) and without it (``unstaged``: the same plan
    with ``--stage-weights off``),
    so a cell says what staging saved; with ``profile`` also a profiling build's per-op
    figures (of the staged firmware)."""
    p = Path(path)
    row: dict = {"model": None, "strategy": str(strategy), "reference": None, "boards": {}}
    with tempfile.TemporaryDirectory(prefix="pico-cost-") as tmp:
        for name in boards:
            board = load_board(name)
            timing = TimingModel.of(board)
            cell: dict = {"chip": timing.label}
            for staged in (True, False):
                budget = stage_weights if staged else None
                options = Options(strategy=strategy, placer=Placer("milp"),
                                  strategies=(strategy,), stage_weights=budget)  # fmt: skip
                compiled = analyse(p, board, options)
                model = emit(compiled)
                if row["model"] is None:
                    row["model"] = compiled.graph.name
                    row["reference"] = reference(p, compiled.graph).checksum
                ref = row["reference"]
                out = Path(tmp) / f"{name}-{int(staged)}"
                res, est = timed_firmware(model, board, ref, out, timing)
                figures = {**segment_figures(timing, est.window()),
                           "systick_instructions": res.instructions,
                           "checksum_ok": ref is not None and res.checksum == ref,
                           "arena_bytes": compiled.plan.peak}  # fmt: skip
                if staged:
                    cell.update(figures)
                    done = compiled.staged.get(strategy)
                    cell["staging"] = done.summary(compiled.plan.peak) if done else None
                    if profile:
                        cell["ops"] = profile_ops(compiled, model, board, ref,
                                                  Path(tmp) / f"{name}-p")  # fmt: skip
                else:
                    cell["unstaged"] = figures
            row["boards"][name] = cell
    return row


def profile_ops(compiled, model, board, ref: int | None, out: Path) -> list[dict]:
    """Per op (and planned shift) of a profiling build under the plugin: cycles and flash
    stall. The segments are [startup, main's read, main's mark 0, op marks..., the final
    read, the rest]: the op marks' segments are the ones before the last two."""
    marks = write_qemu_project(model, out, board, ref, profile=True)
    timing = TimingModel.of(board)
    _, est = run_timed(build_qemu_project(out, board), board, TIMEOUT, timing)
    segments = est.segments[len(est.segments) - 2 - len(marks) : len(est.segments) - 2]
    graph = compiled.variant.graph  # the graph the firmware was emitted from
    rows = []
    for mark, seg in zip(marks, segments, strict=True):
        op = graph.operators[mark.op]
        rows.append({
            "op": mark.op, "part": mark.part, "kind": op.kind,
            "output": list(graph.tensors[op.outputs[0]].shape),
            "weight_bytes": weight_bytes(graph, op) if mark.part == "op" else 0,
            **segment_figures(timing, seg),
        })  # fmt: skip
    return rows


def cmsis_timed(path: str, nn: str, core: str, libs: dict[str, str],
                boards: tuple[str, ...] = BOARDS) -> dict:  # fmt: skip
    """TFLite Micro's CMSIS-NN routines for every layer of one model under the timing
    plugin: per board, each layer's figures and their sum."""
    from rip.codegen.reference import checksum, reference_outputs
    from rip.frontend.reader import read_model
    from rip.frontend.rewrite import strip_interface

    p = Path(path)
    graph = strip_interface(read_model(p))
    want = checksum(reference_outputs(p, graph))
    row: dict = {"model": graph.name, "boards": {}}
    with tempfile.TemporaryDirectory(prefix="pico-cmsis-") as tmp:
        for name in boards:
            board = load_board(name)
            timing = TimingModel.of(board)
            elf, layers = build_harness(graph, Path(nn), Path(core), Path(libs[name]), board,
                                        Path(tmp) / name)  # fmt: skip
            run, est = run_timed(elf, board, TIMEOUT, timing, until="CMSIS-DONE")
            done = parse_cmsis(run.lines)
            if len(est.segments) != 2 * len(layers) + 1 or done["checksum"] != want:
                raise RipError(f"{graph.name} on {name}: the CMSIS-NN harness did not run "
                               f"every layer to TFLite Micro's checksum")  # fmt: skip
            per = [est.segments[2 * k + 1] for k in range(len(layers))]
            total = sum(per, Segment())
            row["boards"][name] = {
                "chip": timing.label,
                **segment_figures(timing, total),
                "layers": [{"op": spec.op, "kind": spec.kind, "routine": spec.routine,
                            **segment_figures(timing, s)} for spec, s in zip(layers, per,
                                                                              strict=True)],
            }  # fmt: skip
    return row


def cmsis_libraries(nn: str | None, core: str | None, boards=BOARDS) -> tuple[str, str, dict]:
    """CMSIS-NN's root, CMSIS Core's include folder and libcmsisnn.a per board (bench-cmsis's
    build); a BenchError when the checkouts are not there."""
    nn_dir, core_dir = find_cmsis(nn, core)
    libs = {b: str(build_library(nn_dir, core_dir, b)) for b in boards if b in CMSIS_BOARDS}
    return str(nn_dir), str(core_dir), libs


# ---- printing --------------------------------------------------------------------------------


def _n(x: float | None, digits: int = 0) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{digits}f}"


def staging_saved(cell: dict) -> tuple[int | None, float | None]:
    """What flash-aware execution saved in one cell: cycles without it minus with it, and
    that as a share of the cycles without it (None where the cell has no unstaged run)."""
    u = cell.get("unstaged")
    if not u or not u["cycles"]:
        return None, None
    saved = u["cycles"] - cell["cycles"]
    return saved, saved / u["cycles"]


def table(rows: list[dict], cmsis: dict[str, dict]) -> list[str]:
    """Per model and chip: rip's instructions, estimated cycles, ms and flash stall share,
    what staging filters in SRAM saved (the same plan without it, and the bytes staged);
    TFLite Micro + CMSIS-NN's kernels the same; the ratio of the estimated cycles."""
    head = ("| model | chip | rip instructions | rip cycles | rip ms | rip flash stall "
            "| staging saved (cycles) | staged (B) "
            "| CMSIS-NN kernels cycles | CMSIS-NN ms | CMSIS-NN flash stall "
            "| rip / CMSIS-NN (cycles) |")  # fmt: skip
    out = [head, "|---" * (head.count("|") - 1) + "|"]
    for row in rows:
        for board, r in row["boards"].items():
            c = cmsis.get(row["model"], {}).get("boards", {}).get(board)
            ratio = r["cycles"] / c["cycles"] if c and c["cycles"] else None
            saved, share = staging_saved(r)
            staged = (r.get("staging") or {}).get("staged_bytes", 0)
            out.append(
                f"| {row['model']} | {r['chip']} | {_n(r['instructions'])} | {_n(r['cycles'])} "
                f"| {_n(r['ms'], 1)} | {_n(100 * r['stall_share'], 1)}% "
                f"| {_n(saved)} ({_n(None if share is None else 100 * share, 1)}%) "
                f"| {_n(staged)} "
                f"| {_n(c['cycles']) if c else '-'} | {_n(c['ms'], 1) if c else '-'} "
                f"| {_n(100 * c['stall_share'], 1) + '%' if c else '-'} | {_n(ratio, 3)} |"
            )
    return out


def ranking(row: dict, board: str, top: int = 8) -> list[str]:
    """The ops of one profiled model that lose most cycles to flash misses."""
    ops = row["boards"][board].get("ops") or []
    total = sum(o["stall"] for o in ops) or 1
    chip = row["boards"][board]["chip"]
    out = [f"{row['model']} on {chip}: the ops losing most to flash misses (profiling build)", "",
           "| op | kind | output | weights (B) | cycles | flash stall | stall / op | "
           "share of all stall |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for o in sorted(ops, key=lambda o: -o["stall"])[:top]:
        kind = o["kind"] + (" (shift)" if o["part"] == "shift" else "")
        share = _n(100 * o["stall"] / total, 1)
        out.append(f"| {o['op']} | {kind} | {'x'.join(map(str, o['output']))} "
                   f"| {_n(o['weight_bytes'])} | {_n(o['cycles'])} | {_n(o['stall'])} "
                   f"| {_n(100 * o['stall_share'], 1)}% | {share}% |")  # fmt: skip
    return out


def collect(paths: dict[str, Path], jobs: int, nn: str | None = None, core: str | None = None,
            boards: tuple[str, ...] = BOARDS) -> dict:  # fmt: skip
    """rip's and (with the CMSIS checkouts) CMSIS-NN's estimates of ``paths`` (name -> model
    file), ``jobs`` models at a time; a model that fails is noted, never dropped silently."""
    from concurrent.futures import ProcessPoolExecutor

    from bench_cmsis import BenchError

    try:
        nn_dir, core_dir, libs = cmsis_libraries(nn, core, boards)
        cmsis_note = None
    except BenchError as e:
        nn_dir = core_dir = None
        libs = {}
        cmsis_note = f"TFLite Micro + CMSIS-NN not estimated: {e}"
    rows, cmsis, errors = [], {}, []
    with ProcessPoolExecutor(jobs) as pool:
        ripf = {m: pool.submit(rip_timed, str(p), boards, m in PROFILE_MODELS)
                for m, p in paths.items()}  # fmt: skip
        cmf = {m: pool.submit(cmsis_timed, str(p), nn_dir, core_dir, libs, boards)
               for m, p in paths.items() if libs}  # fmt: skip
        for m, f in ripf.items():
            try:
                rows.append(f.result())
            except Exception as e:  # one model's failure is reported, the others go on
                errors.append(f"{m} (rip): {type(e).__name__}: {str(e).splitlines()[0]}")
        for m, f in cmf.items():
            try:
                cmsis[m] = f.result()
            except Exception as e:
                errors.append(f"{m} (CMSIS-NN): {type(e).__name__}: {str(e).splitlines()[0]}")
    return {"rows": rows, "cmsis": cmsis, "cmsis_note": cmsis_note, "errors": errors,
            "chips": {b: TimingModel.of(load_board(b)).label for b in boards}}  # fmt: skip


def print_tables(data: dict) -> None:
    print("Estimated Pico cycles (rip.timing: Cortex-M0+ / Cortex-M33 cost tables and the XIP "
          "cache of docs/pico-timing.md; Pico 1 RP2040 at 125 MHz, Pico 2 RP2350 at 150 MHz; "
          "CMSIS-NN: TFLite Micro's kernel calls only, not its interpreter):")  # fmt: skip
    print()
    print("\n".join(table(data["rows"], data["cmsis"])))
    if data["cmsis_note"]:
        print(f"\n{data['cmsis_note']}")
    for row in data["rows"]:
        for board, cell in row["boards"].items():
            if cell.get("ops"):
                print()
                print("\n".join(ranking(row, board)))
    bad = [f"{r['model']} {b}" for r in data["rows"] for b, c in r["boards"].items()
           if not c["checksum_ok"]]  # fmt: skip
    print("\nchecksums (timed runs): " + ("all equal TFLite Micro's" if not bad
                                          else "MISMATCH " + ", ".join(bad)))  # fmt: skip
    for e in data["errors"]:
        print(f"FAILED {e}")
