"""Two cores against one (issue 27), measured side by side in one run.

Each model is compiled twice for qemu-m33 under each strategy measured (``rip``, and
``fused``, the default plan of every MCUNet model; the same options, ``--cores 1`` and
``--cores 2``), and each build runs on qemu-m33 (Cortex-M33 code, timed as the Pico 2) and
qemu-armv6m (Cortex-M0+ code, timed as the Pico), every run under the Pico timing plugin:
one core on the board's one-core machine (instructions by SysTick under -icount), two cores
on QEMU's dual-core mps2-an521 in the plugin's two-core mode, whose replay gives the
critical path (the core that finishes last) in instructions and in the Pico's cycles, each
core timed over the chip's one XIP cache, and each core's idle share. Every checksum must
be TFLite Micro's. The table gives both arenas and their ratio, both instruction counts and
both Pico cycle counts with their ratios, and two cores against TFLite Micro + CMSIS-NN on
one core (as users run it today).

    python benchmarks/two_cores.py [--models a,b] [--strategies rip,fused] [--jobs N] [--json FILE]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from bench_cost import BOARDS, _fmt, load_reference, model_path

from rip import compiler
from rip.boards import load_board
from rip.compiler import Options, analyse, emit
from rip.core import jsonio
from rip.core.errors import RipError
from rip.core.terms import Strategy
from rip.firmware.qemu_project import macs, write_qemu_project
from rip.timing.estimate import Estimate, run_project_timed

MCUNET = ("mcunet-in0", "mcunet-in1", "mcunet-in2", "mcunet-in3", "mcunet-in4", "mcunet-vww0",
          "mcunet-vww1", "mcunet-vww2", "mbv2-w0.35", "proxyless-w0.3", "person-det")  # fmt: skip


STRATEGIES = (Strategy.RIP.value, Strategy.FUSED.value)


def measure(job: tuple[str, str]) -> dict:
    """One model under one strategy on one and on two cores, on both emulated boards."""
    path, name = job
    p, strategy = Path(path), Strategy(name)
    board0 = load_board(BOARDS[0])
    t0 = time.perf_counter()
    row: dict = {"runs": {}, "mismatches": [], "strategy": strategy.value}
    with tempfile.TemporaryDirectory(prefix="bench-cores-") as tmp:
        for cores in (1, 2):
            options = Options(strategy=strategy, strategies=(strategy,), cores=cores)
            compiled = analyse(p, board0, options)
            expected = compiler.reference(p, compiled.graph).checksum
            row.update(model=compiled.graph.name, macs=macs(compiled.graph))
            model = emit(compiled)
            row[f"arena_{cores}"] = model.arena_bytes
            row[f"shared_{cores}"] = sum(op.shared for op in model.ops)
            for name in BOARDS:
                board = load_board(name)
                out = Path(tmp) / f"{name}-{cores}"
                key = f"{name}/{cores}"
                try:
                    write_qemu_project(model, out, board, expected, model_macs=row["macs"])
                    result, estimate = run_project_timed(out, board)
                except RipError as e:
                    row["runs"][key] = {"error": str(e).splitlines()[0]}
                    continue
                if result.checksum != expected:
                    row["mismatches"].append(key)
                row["runs"][key] = {"instructions": result.instructions}
                if isinstance(estimate, Estimate):
                    row["runs"][key]["pico_cycles"] = estimate.window().cycles
                elif not isinstance(estimate, str):
                    two = estimate.summary()["two_cores"]
                    row["runs"][key].update(two, pico_cycles=two["critical_path_cycles"])
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def collect(models: list[str], jobs: int, strategies: tuple[str, ...] = STRATEGIES) -> list[dict]:
    """Every model under every strategy (``measure``), ``jobs`` at a time."""
    reference = load_reference()
    paths = [str(model_path(reference[m])) for m in models if m in reference]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(measure, [(p, s) for s in strategies for p in paths]))


def print_table(rows: list[dict]) -> None:
    reference = load_reference()
    print("Two cores against one (critical path on QEMU's dual-core mps2-an521):")
    head = (
        "| model | strategy | board | arena 1 core | arena 2 cores | ratio | instr 1 core | "
        "instr 2 cores | ratio | core 1 idle | Pico cycles 1 core | Pico cycles 2 cores | "
        "ratio | ops shared | 2 cores / TFLM+CMSIS-NN |"
    )
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for row in rows:
        ref = reference.get(row["model"], {})
        for board in BOARDS:
            one = row["runs"].get(f"{board}/1", {})
            two = row["runs"].get(f"{board}/2", {})
            n1, n2 = one.get("instructions"), two.get("instructions")
            tflm = ref.get("tflm_cmsis_nn_instructions" if board == "qemu-m33"
                           else "tflm_cmsis_nn_instructions_armv6m")  # fmt: skip
            idle = two.get("idle_share_instructions", [None, None])[1]
            c1, c2 = one.get("pico_cycles"), two.get("pico_cycles")
            cells = [
                row["model"], row["strategy"], board, _fmt(row["arena_1"]), _fmt(row["arena_2"]),
                _fmt(row["arena_2"] / row["arena_1"], 4),
                _fmt(n1) if n1 else one.get("error", "-")[:40],
                _fmt(n2) if n2 else two.get("error", "-")[:40],
                _fmt(n2 / n1 if n1 and n2 else None, 3),
                "-" if idle is None else f"{100 * idle:.1f}%",
                _fmt(c1), _fmt(c2), _fmt(c2 / c1 if c1 and c2 else None, 3),
                str(row["shared_2"]),
                _fmt(n2 / tflm if n2 and tflm else None, 3),
            ]  # fmt: skip
            print("| " + " | ".join(cells) + " |")
    bad = [f"{r['model']} {m}" for r in rows for m in r["mismatches"]]
    print("checksums: " + ("all equal TFLite Micro's" if not bad else "MISMATCH " + ", ".join(bad)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help=f"comma-separated model names (default: {','.join(MCUNET)})")
    ap.add_argument("--strategies", default=",".join(STRATEGIES),
                    help="comma-separated strategies (default: %(default)s)")  # fmt: skip
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    models = args.models.split(",") if args.models else list(MCUNET)
    rows = collect(models, args.jobs, tuple(args.strategies.split(",")))
    print_table(rows)
    print(f"\nwall {time.perf_counter() - t0:.0f} s, {args.jobs} jobs")
    if args.json:
        Path(args.json).write_text(jsonio.dumps(rows, indent=1))
    return 1 if any(r["mismatches"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
