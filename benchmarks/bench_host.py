"""bench-host: inference time of rip's generated C against TFLite Micro's interpreter on
this machine, same model, same default input, measured side by side in one run; and the
generated C under the baseline placement (tinyengine) against RiP, to show that planning
the memory in place leaves the time unchanged.

    python benchmarks/bench_host.py [--models mcunet-in3 person-det] [--repeat 20]

Both sides report the fastest of ``--repeat`` runs (the generated binary times its own
invoke; the interpreter is timed around ``invoke()`` from Python, whose call overhead is
microseconds against milliseconds of inference). Both use the reference kernels' integer
arithmetic, so the outputs are also compared. rip's side is the compiler driver's
(``rip.compiler``: planned for the host board, then emitted, written, built and run as
``rip-compile --board host -o DIR --run`` does, for each strategy).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from rip.boards import load_board
from rip.codegen.reference import default_inputs
from rip.compiler import Options, analyse, generate, reference
from rip.core.terms import Strategy

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
STRATEGIES = (Strategy.TINYENGINE, Strategy.RIP)


def tflm_seconds(path: Path, graph, repeat: int) -> float:
    from tflite_micro import runtime

    it = runtime.Interpreter.from_file(str(path), arena_size=64 << 20)
    for k, x in enumerate(default_inputs(graph)):
        d = it.get_input_details(k)
        if d["dtype"] != np.int8:
            q = graph.tensors[graph.inputs[k]].quant
            x = (x.astype(np.float32) - q.zero_point[0]) * np.float32(q.scale[0])
        it.set_input(x.reshape(d["shape"]).astype(d["dtype"]), k)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        it.invoke()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(path: Path, repeat: int) -> dict:
    """One model's host figures: the generated C under tinyengine and rip (fastest of
    ``repeat`` runs, ms), TFLite Micro's interpreter (ms), arena bytes, outputs equal."""
    c = analyse(path, load_board("host"), Options(strategies=STRATEGIES, cache=False))
    ref = reference(path, c.graph)
    done = {}
    with tempfile.TemporaryDirectory() as tmp:
        for s in STRATEGIES:
            options = Options(strategy=s, output=Path(tmp) / s, run=True, repeat=repeat)
            done[s] = generate(replace(c, strategy=s), options, ref)
    runs = {s: d.run for s, d in done.items() if d.run is not None}
    arenas = {s: d.plan.peak for s, d in done.items()}
    ours = runs[Strategy.RIP].cycles / 1e6
    base = runs[Strategy.TINYENGINE].cycles / 1e6
    theirs = tflm_seconds(path, c.graph, repeat) * 1e3
    return {
        "model": path.stem,
        "repeat": repeat,
        "rip_ms": ours,
        "tflm_ms": theirs,
        "tflm_over_rip": theirs / ours,
        "tinyengine_ms": base,
        "rip_over_tinyengine": ours / base,
        "rip_arena_bytes": arenas[Strategy.RIP],
        "tinyengine_arena_bytes": arenas[Strategy.TINYENGINE],
        "outputs_equal": all(d.match is True for d in done.values()),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=["mcunet-in3", "person-det"])
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args(argv)
    head = (
        f"{'model':<16} {'rip C (ms)':>11} {'TFLM (ms)':>10} {'TFLM / rip':>11} "
        f"{'base C (ms)':>12} {'rip / base':>11} {'rip arena B':>12} {'base arena B':>13}"
    )
    print(head)
    print("-" * len(head))
    for name in args.models:
        path = MODELS / "mcunet" / f"{name}.tflite"
        if not path.is_file():
            print(f"bench-host: {path} is absent", file=sys.stderr)
            return 2
        r = measure(path, args.repeat)
        print(
            f"{name:<16} {r['rip_ms']:>11.2f} {r['tflm_ms']:>10.2f} {r['tflm_over_rip']:>10.2f}x "
            f"{r['tinyengine_ms']:>12.2f} {r['rip_over_tinyengine']:>10.3f}x "
            f"{r['rip_arena_bytes']:>12,} {r['tinyengine_arena_bytes']:>13,}  "
            f"outputs {'equal' if r['outputs_equal'] else 'DIFFER'}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
