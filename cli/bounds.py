"""rip-bounds: one layer in, its minimum in-place gap and workspace out, as JSON.

Examples::

    rip-bounds --input 224,224 --cin 64 --cout 64 --kernel 3 --padding same
    rip-bounds --input 14 --cin 1 --cout 5 --kernel 3 --scheme corollary1 --simulate
    rip-bounds --batch layers.jsonl > results.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from rip.allocator.theory.bounds import Bound, rip_bound
from rip.allocator.theory.geometry import ConvGeometry, make_geometry
from rip.allocator.theory.herringbone import herringbone_bound
from rip.allocator.theory.simulate import simulate_herringbone, simulate_rip
from rip.cli import guarded
from rip.core import jsonio
from rip.core.errors import LayerError, RipError
from rip.core.limits import MAX_KERNEL_WORK, kernel_work

SCHEMES = ("rip", "herringbone", "gm-eq1", "corollary1")
HERRINGBONE = ("herringbone", "gm-eq1", "corollary1")


def _is_int(value: Any) -> bool:
    """A JSON integer: not a bool (``true`` is not 1), not a float (``3.7`` is not 3)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _pair(name: str, value: Any) -> tuple[int, int]:
    """``3`` -> (3, 3); ``"3,5"`` or ``[3, 5]`` -> (3, 5)."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        try:
            nums = [int(p) for p in parts]
        except ValueError:
            raise LayerError(f"{name}: expected N or N,M, got {value!r}") from None
    elif _is_int(value):
        nums = [value]
    elif isinstance(value, list) and all(_is_int(v) for v in value):
        nums = list(value)
    else:
        raise LayerError(f"{name}: expected N or N,M, got {value!r}")
    if len(nums) == 1:
        nums *= 2
    if len(nums) != 2:
        raise LayerError(f"{name}: expected one or two values, got {value!r}")
    if min(nums) < 1:
        raise LayerError(f"{name}: values must be positive, got {value!r}")
    return nums[0], nums[1]


def _padding(value: Any) -> str | tuple[int, int, int, int]:
    """``same``, ``valid``, ``T,B,L,R``, ``[t, b, l, r]`` or one number for all sides."""
    if isinstance(value, str) and value.strip().lower() in ("same", "valid"):
        return value.strip().lower()
    if isinstance(value, str):
        try:
            value = [int(p) for p in value.split(",")]
        except ValueError:
            raise LayerError(f"padding: expected same, valid or T,B,L,R, got {value!r}") from None
        if len(value) == 1:
            value = value * 4
    if _is_int(value):
        value = [value] * 4
    if not (isinstance(value, list) and len(value) == 4 and all(_is_int(v) for v in value)):
        raise LayerError(f"padding: expected same, valid or T,B,L,R, got {value!r}")
    if min(value) < 0:
        raise LayerError(f"padding: values must be non-negative, got {value!r}")
    return tuple(value)


def _count(name: str, value: Any) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not _is_int(value):
        raise LayerError(f"{name}: expected a positive integer, got {value!r}")
    if value < 1:
        raise LayerError(f"{name}: expected a positive integer, got {value!r}")
    return value


def _choice(name: str, value: Any, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise LayerError(f"{name}: expected one of {', '.join(allowed)}, got {value!r}")
    return value


def evaluate(fields: dict[str, Any]) -> dict[str, Any]:
    """Evaluate one layer description (the batch-line schema) into the JSON result."""
    known = {
        "input",
        "cin",
        "cout",
        "kernel",
        "stride",
        "dilation",
        "padding",
        "scheme",
        "layout",
        "taps",
        "order",
        "simulate",
    }
    unknown = sorted(set(fields) - known)
    if unknown:
        raise LayerError(f"{unknown[0]}: unknown field")
    for required in ("input", "cin", "cout"):
        if required not in fields:
            raise LayerError(f"{required}: missing")
    geom = make_geometry(
        _pair("input", fields["input"]),
        _count("cin", fields["cin"]),
        _count("cout", fields["cout"]),
        kernel=_pair("kernel", fields.get("kernel", 1)),
        stride=_pair("stride", fields.get("stride", 1)),
        dilation=_pair("dilation", fields.get("dilation", 1)),
        padding=_padding(fields.get("padding", "valid")),
    )
    if kernel_work(geom.kh, geom.kw) > MAX_KERNEL_WORK:
        raise LayerError(
            f"kernel: {geom.kh}x{geom.kw} is beyond rip's limit (kh*kw*(kh+kw) <= "
            f"{MAX_KERNEL_WORK:,}; see docs/RELIABILITY.md)"
        )
    scheme = _choice("scheme", fields.get("scheme", "rip"), SCHEMES)
    if scheme in HERRINGBONE:
        # The herringbone accounting (Appendix C) is over the padded layout, taps read
        # from the workspace, in its own order; other choices are not defined for it.
        layout = _choice("layout", fields.get("layout", "padded"), ("padded",))
        taps = _choice("taps", fields.get("taps", "workspace"), ("workspace",))
        bound = herringbone_bound(geom, scheme)
    else:
        layout = _choice("layout", fields.get("layout", "dense"), ("padded", "dense"))
        taps = _choice("taps", fields.get("taps", "gather"), ("gather", "workspace"))
        order = _choice("order", fields.get("order", "best"), ("row", "col", "best"))
        bound = rip_bound(geom, layout, taps, order)
    result = _result(geom, bound)
    simulate = fields.get("simulate", False)
    if not isinstance(simulate, bool):
        raise LayerError(f"simulate: expected true or false, got {simulate!r}")
    if simulate:
        truth = _simulate(geom, bound)
        result["simulated_gap"] = truth
        result["verdict"] = (
            "tight" if bound.gap == truth else "loose" if bound.gap > truth else "unsafe"
        )
    return result


def _simulate(geom: ConvGeometry, bound: Bound) -> int:
    if bound.order == "herringbone":
        return simulate_herringbone(geom)
    return simulate_rip(geom, bound.layout, bound.taps, bound.order)


def _result(geom: ConvGeometry, bound: Bound) -> dict[str, Any]:
    out = bound.to_dict()
    n_in = geom.n_in_padded if bound.layout == "padded" else geom.n_in_dense
    out["input_scalars"] = n_in
    out["output_scalars"] = geom.n_out
    out["dual_buffer"] = n_in + geom.n_out
    out["padding"] = [geom.pad_top, geom.pad_bottom, geom.pad_left, geom.pad_right]
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rip-bounds",
        description="Minimum safe gap and workspace for a convolution whose output overwrites "
        "its own input (RiP, Theorems 4 and 13) or for the herringbone baseline "
        "(Eq. 1, Corollary 1, Theorem 11). Sizes are in scalars (bytes for int8).",
    )
    p.add_argument("--input", help="input H,W (one number: square)")
    p.add_argument("--cin", help="input channels")
    p.add_argument("--cout", help="output channels")
    p.add_argument("--kernel", default="1", help="KH,KW (default 1)")
    p.add_argument("--stride", default="1", help="SH,SW (default 1)")
    p.add_argument("--dilation", default="1", help="DH,DW (default 1)")
    p.add_argument("--padding", default="valid", help="T,B,L,R | same | valid (default valid)")
    p.add_argument("--scheme", default="rip", help="rip | herringbone | gm-eq1 | corollary1")
    p.add_argument("--layout", help="padded | dense (default dense for rip, padded otherwise)")
    p.add_argument(
        "--taps", help="gather | workspace (default gather for rip, workspace otherwise)"
    )
    p.add_argument("--order", help="row | col | best (rip only; default best)")
    p.add_argument(
        "--simulate",
        action="store_true",
        help="also run the corruption simulator: simulated_gap and verdict",
    )
    p.add_argument(
        "--batch",
        metavar="FILE",
        help="one JSON object per line with the same fields as keys ('-' for "
        "stdin); writes one JSON result per line",
    )
    return p


def _fields(args: argparse.Namespace) -> dict[str, Any]:
    for name in ("input", "cin", "cout"):
        if getattr(args, name) is None:
            raise LayerError(f"--{name} is required (or use --batch FILE)")
    fields: dict[str, Any] = {
        "input": args.input,
        "cin": args.cin,
        "cout": args.cout,
        "kernel": args.kernel,
        "stride": args.stride,
        "dilation": args.dilation,
        "padding": args.padding,
        "scheme": args.scheme,
        "simulate": args.simulate,
    }
    for name in ("layout", "taps", "order"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    return fields


def _batch_line(lineno: int, raw: bytes) -> dict[str, Any] | None:
    """One batch line's result, or None for a blank line; never raises for bad input."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return {"error": f"line {lineno}: not UTF-8 (byte {e.start})"}
    if not line.strip():
        return None
    try:
        fields = jsonio.loads(line)
        if not isinstance(fields, dict):
            raise LayerError("expected a JSON object")
        return evaluate(fields)
    except RecursionError:
        return {"error": f"line {lineno}: not JSON (nested too deeply)"}
    except json.JSONDecodeError as e:
        return {"error": f"line {lineno}: not JSON ({e.msg})"}
    except ValueError as e:  # Infinity, NaN, 1e400, 4,301 digits
        return {"error": f"line {lineno}: not JSON ({e})"}
    except RipError as e:
        return {"error": f"line {lineno}: {e}"}


def _run_batch(path: str) -> int:
    try:
        stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as e:
        raise RipError(f"{path}: cannot read batch file ({e.strerror})") from None
    with stream:
        for lineno, raw in enumerate(stream, 1):
            out = _batch_line(lineno, raw)
            if out is not None:
                print(jsonio.dumps(out), flush=False)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return guarded("rip-bounds", lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    if args.batch is not None:
        return _run_batch(args.batch)
    print(jsonio.dumps(evaluate(_fields(args)), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
