"""rip-compile: an int8 TFLite model in, its memory report (and, in later stages, code) out.

rip-compile model.tflite --report [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rip.allocator.requirements import Requirements, requirements
from rip.errors import RipError
from rip.frontend.ir import Graph
from rip.frontend.liveness import live_bytes
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite


def _shape(graph: Graph, tid: int) -> str:
    return "x".join(str(d) for d in graph.tensors[tid].shape) or "scalar"


def op_table(graph: Graph, req: Requirements) -> list[dict[str, Any]]:
    """One row per op: index, kind, shapes, bytes, the chosen in-place candidate."""
    rows = []
    for op, r in zip(graph.operators, req.ops, strict=True):
        acts = [t for t in op.inputs if t >= 0 and not graph.tensors[t].is_constant]
        best = min(r.candidates, key=lambda c: c.workspace, default=None)
        rows.append({
            "index": r.index,
            "source_index": op.source_index,
            "op": op.kind,
            "inputs": [_shape(graph, t) for t in acts],
            "output": _shape(graph, op.outputs[0]),
            "input_bytes": sum(graph.tensors[t].nbytes for t in acts),
            "output_bytes": graph.tensors[op.outputs[0]].nbytes,
            "inplace_input": best.input if best else None,
            "gap": best.gap if best else None,
            "workspace": best.workspace if best else None,
            "order": best.order if best else None,
            "scheme": best.scheme if best else None,
            "not_inplace_because": r.reason or None,
            "scratch_bytes": r.scratch_bytes,
        })  # fmt: skip
    return rows


def report(path: Path) -> dict[str, Any]:
    """Parse, rewrite and analyse one model into the report's data."""
    t0 = time.perf_counter()
    source = read_model(path)
    graph = rewrite(source)
    req = requirements(graph)
    live = live_bytes(graph)
    return {
        "model": graph.name,
        "file": str(path),
        "has_weights": graph.has_weights,
        "inputs": [{"tensor": t, "shape": list(graph.tensors[t].shape),
                    "dtype": graph.tensors[t].dtype} for t in graph.inputs],
        "outputs": [{"tensor": t, "shape": list(graph.tensors[t].shape),
                     "dtype": graph.tensors[t].dtype} for t in graph.outputs],
        "ops_in_file": len(source.operators),
        "ops": len(graph.operators),
        "stripped": [{"op": k, "float_tensor": f, "int8_tensor": q}
                     for k, f, q in graph.interface],
        "notes": list(graph.notes),
        "scratch_bytes": req.scratch_bytes,
        "liveness_bound_bytes": max(live, default=0),
        "inplace_candidates": sum(1 for r in req.ops if r.candidates),
        "op_table": op_table(graph, req),
        "seconds": round(time.perf_counter() - t0, 3),
    }  # fmt: skip


def format_report(rep: dict[str, Any]) -> str:
    lines = [
        f"model {rep['model']}  ({rep['file']})",
        "  inputs:  " + ", ".join(f"{'x'.join(map(str, i['shape']))} {i['dtype']}"
                                  for i in rep["inputs"]),
        "  outputs: " + ", ".join(f"{'x'.join(map(str, o['shape']))} {o['dtype']}"
                                  for o in rep["outputs"]),
        f"  ops: {rep['ops_in_file']} in file, {rep['ops']} after folding; weights: "
        f"{'yes' if rep['has_weights'] else 'no (graph only)'}",
    ]  # fmt: skip
    for s in rep["stripped"]:
        lines.append(f"  stripped {s['op']}: float tensor {s['float_tensor']} -> int8 tensor "
                     f"{s['int8_tensor']} (the compiled model runs int8 inside)")  # fmt: skip
    lines += [f"  note: {n}" for n in rep["notes"]]
    header = (f"{'#':>4} {'op':<24} {'input':<22} {'output':<16} {'in B':>9} {'out B':>9} "
              f"{'in-place':>8} {'gap':>7} {'order':<8} {'scratch':>7}")  # fmt: skip
    lines += ["", header, "-" * len(header)]
    for r in rep["op_table"]:
        inplace = "-" if r["inplace_input"] is None else f"t{r['inplace_input']}"
        gap = "-" if r["gap"] is None else str(r["gap"])
        lines.append(
            f"{r['index']:>4} {r['op']:<24} {' + '.join(r['inputs'])[:22]:<22} "
            f"{r['output'][:16]:<16} {r['input_bytes']:>9,} {r['output_bytes']:>9,} "
            f"{inplace:>8} {gap:>7} {(r['order'] or '-'):<8} {r['scratch_bytes']:>7,}"
        )
    lines += [
        "",
        f"in-place candidates: {rep['inplace_candidates']} of {rep['ops']} ops",
        f"scratch (largest kernel buffer, outside the arena): {rep['scratch_bytes']:,} B",
        f"liveness bound (max bytes alive at one op, dual buffering): "
        f"{rep['liveness_bound_bytes']:,} B",
    ]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rip-compile",
        description="Compile an int8 TFLite model with Right In-Place memory planning.",
    )
    p.add_argument("model", help="path to an int8 .tflite model")
    p.add_argument("--report", action="store_true",
                   help="print the model summary and per-op in-place table")  # fmt: skip
    p.add_argument("--json", action="store_true", help="the report as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        path = Path(args.model)
        if not path.is_file():
            raise RipError(f"{path}: no such file")
        rep = report(path)
        print(json.dumps(rep, indent=2) if args.json else format_report(rep))
        return 0
    except RipError as e:
        print(f"rip-compile: error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
