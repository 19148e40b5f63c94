"""The spatial int8 kernels (the families of kernels/rip_conv.h, kernels/rip_pool.c) against
TensorFlow Lite Micro, byte for byte, out of place and in place.

The C sources are compiled once per session into a shared library and called through
ctypes; the kernel parameters come from codegen.conv_params and codegen.pool_params on the
graph the front end reads from random single-layer models (explicit PADs folded by
frontend.rewrite). In-place runs put the input ``gap`` bytes above the output inside one
buffer, at the planner's bound, and show that a smaller gap corrupts the output, so the
overlap is real. The same kernels, cross
compiled, run under QEMU on a Cortex-M33 (the SMLAD path) and a Cortex-M0 when installed.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import cbuild as cb
import numpy as np
import pytest
import tflite_writer as tw
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis_strategies import layers
from tflite_micro import runtime
from tflite_writer import ModelBuilder, conv_output_size

from rip.allocator.planning.requirements import conv_geometry, op_scratch_bytes, requirements
from rip.allocator.planning.scratch import (
    ROWS_BUFFER_SIZE_FUNCTION,
    depthwise_ring_rows,
    depthwise_ring_slots,
    depthwise_rows_scratch_bytes,
    depthwise_saved_rows,
)
from rip.allocator.theory.bounds import depthwise_bound, pool_bound, rip_bound
from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.simulate import (
    depthwise_plane_order,
    simulate_depthwise_plane,
    simulate_depthwise_ring,
    simulate_depthwise_rows,
    simulate_rip,
)
from rip.codegen import conv_params as cp
from rip.codegen import pool_params as pp
from rip.codegen.kernel_choice import (
    fast_channels,
    fast_conv_channels,
    fast_fc_channels,
    folded_bias,
    pack_depthwise_filter,
    pack_filter_pairs,
)
from rip.codegen.quant import ParamsError, activation_range
from rip.core import kernel_variants as kv
from rip.core.errors import LayerError
from rip.core.operators import Op, spec
from rip.frontend.ir import Graph, Operator, Quant
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

SEEDS = (0, 1)

# The kernels' library, structs and signatures are tests/cbuild.py's.
Dims, Context, PerChannelQuant, TensorQuant = cb.Dims, cb.Context, cb.PerChannelQuant, cb.Quant
HW, Act, ConvParams, DwConvParams = cb.HW, cb.Act, cb.ConvParams, cb.DwConvParams
FcParams, PoolParams, MeanParams = cb.FcParams, cb.PoolParams, cb.MeanParams
FastChannel = cb.FastChannel


@pytest.fixture(scope="session")
def lib(kernel_lib: ctypes.CDLL) -> ctypes.CDLL:
    return kernel_lib


# ---- models, the oracle and the IR -----------------------------------------------------------


def tflm(model: bytes, x: np.ndarray) -> bytes:
    it = runtime.Interpreter.from_bytes(model, arena_size=1 << 20)
    it.set_input(x, 0)
    it.invoke()
    return np.asarray(it.get_output(0)).tobytes()


def single_op(model: bytes) -> tuple[Graph, Operator]:
    """The model's graph after the front-end rewrites, which leave one operator."""
    graph = rewrite(read_model(model))
    assert len(graph.operators) == 1, [op.kind for op in graph.operators]
    return graph, graph.operators[0]


def random_input(graph: Graph, seed: int) -> np.ndarray:
    shape = graph.tensors[graph.inputs[0]].shape
    return np.random.default_rng(1000 + seed).integers(-128, 128, size=shape, dtype=np.int8)


def const(graph: Graph, op: Operator, k: int, dtype: str) -> np.ndarray | None:
    """Constant input ``k`` of ``op`` (weights, bias), None when absent."""
    if len(op.inputs) <= k or op.inputs[k] < 0:
        return None
    return np.frombuffer(graph.tensors[op.inputs[k]].data, dtype=dtype).copy()


def pool_model(
    seed: int,
    kind: str,
    h: int,
    w: int,
    c: int,
    size: tw.Pair,
    stride: tw.Pair,
    padding: tw.PaddingSpec,
    activation: tw.Activation = "NONE",
) -> bytes:
    """AVERAGE_POOL_2D / MAX_POOL_2D with a fused activation; explicit padding is a PAD
    before a VALID pool (which the front end folds, with pad_counts)."""
    rng = np.random.default_rng(seed)
    scale, zp = float(rng.uniform(0.01, 0.05)), int(rng.integers(-40, 41))
    mb = ModelBuilder()
    x = src = mb.activation((1, h, w, c), scale, zp)
    if not isinstance(padding, str):
        top, bottom, left, right = padding
        src = mb.activation((1, h + top + bottom, w + left + right, c), scale, zp)
        mb.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), src)
        padding = "VALID"
    (fh, fw), (sh, sw) = tw._pair(size), tw._pair(stride)
    _, hp, wp, _ = mb.shape(src)
    out_hw = (conv_output_size(hp, fh, sh, 1, padding), conv_output_size(wp, fw, sw, 1, padding))
    y = mb.activation((1, *out_hw, c), scale, zp)
    method = mb.average_pool2d if kind == "avg" else mb.max_pool2d
    method(src, y, filter_size=(fh, fw), stride=(sh, sw), padding=padding, activation=activation)
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


def mean_model(seed: int, h: int, w: int, c: int, keep_dims: bool, same_quant: bool) -> bytes:
    """MEAN over H and W, requantized to its own scale and zero point unless ``same_quant``."""
    rng = np.random.default_rng(seed)
    scale, zp = float(rng.uniform(0.01, 0.05)), int(rng.integers(-40, 41))
    if same_quant:
        out_scale, out_zp = scale, zp
    else:
        out_scale, out_zp = scale * float(rng.uniform(0.05, 1.5)), int(rng.integers(-40, 41))
    mb = ModelBuilder()
    x = mb.activation((1, h, w, c), scale, zp)
    y = mb.activation((1, 1, 1, c) if keep_dims else (1, c), out_scale, out_zp)
    mb.mean(x, (1, 2), y, keep_dims=keep_dims)
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


# ---- calling the kernels ---------------------------------------------------------------------


@dataclass
class Arena:
    """One buffer filled with random bytes, holding the input at ``input_at`` and the output
    at ``output_at``: disjoint, or an in-place layout. Bytes past both must stay untouched."""

    buf: np.ndarray
    input_at: int
    output_at: int
    n_out: int
    end: int
    tail: bytes

    @classmethod
    def build(cls, x: np.ndarray, n_out: int, gap: int | None, seed: int) -> Arena:
        """``gap`` None: disjoint input and output; otherwise output = input - gap (a
        negative gap puts the output above the input)."""
        x = np.ascontiguousarray(x).view(np.int8).reshape(-1)
        if gap is None:
            input_at, output_at = 0, x.size + 8
        else:
            input_at, output_at = max(gap, 0), max(-gap, 0)
        end = max(input_at + x.size, output_at + n_out)
        words = np.empty((end + 19) // 4, dtype=np.int32)  # 4-byte aligned base, 16-byte tail
        buf = words.view(np.int8)[: end + 16]
        buf[:] = np.random.default_rng(seed).integers(-128, 128, size=buf.size, dtype=np.int8)
        buf[input_at : input_at + x.size] = x
        return cls(buf, input_at, output_at, n_out, end, buf[end:].tobytes())

    @property
    def input(self) -> int:
        return self.buf.ctypes.data + self.input_at

    @property
    def output(self) -> int:
        return self.buf.ctypes.data + self.output_at

    def result(self, status: int) -> bytes:
        """The output bytes, after checking the call succeeded and wrote nothing beyond."""
        assert status == 0
        assert self.buf[self.end :].tobytes() == self.tail
        return self.buf[self.output_at : self.output_at + self.n_out].tobytes()


def dims(d: tuple[int, ...]) -> Any:
    return Dims(*d)


def scratch(size: int, seed: int) -> tuple[Any, np.ndarray]:
    """A context over ``size`` bytes of 4-byte aligned garbage (return the array too: it must
    outlive the call)."""
    words = np.random.default_rng(seed).integers(
        -(2**31), 2**31, size=size // 4 + 1, dtype=np.int32
    )
    return Context(words.ctypes.data, size), words


def per_channel(p: Any) -> tuple[Any, np.ndarray, np.ndarray]:
    m, s = np.asarray(p.multipliers, np.int32), np.asarray(p.shifts, np.int32)
    return PerChannelQuant(m.ctypes.data, s.ctypes.data), m, s


def aligned_copy(a: np.ndarray) -> np.ndarray:
    """``a``'s bytes at a 4-byte aligned address (the packed filter's contract)."""
    words = np.zeros((a.size + 3) // 4, dtype=np.int32)
    out = words.view(np.int8)[: a.size]
    out[:] = a
    return out


def address(a: np.ndarray | None) -> int | None:
    return None if a is None else a.ctypes.data


def weighted_args(
    graph: Graph, op: Operator, p: Any, arena: Arena, fast: bool = False
) -> tuple[list[Any], list]:
    """Input, filter, bias and output dims and data as the kernels take them, and the arrays
    to keep alive. ``fast``: the folded bias the fast kernels take (kernel_choice)."""
    w, bias = const(graph, op, 1, "<i1"), const(graph, op, 2, "<i4")
    if fast:
        model_bias = None if bias is None else tuple(int(v) for v in bias)
        bias = np.asarray(folded_bias(p, w.tobytes(), model_bias), dtype=np.int32)
    if fast and p.kind == Op.DEPTHWISE_CONV_2D and p.depth_multiplier == 1:
        # the fast depthwise kernels read the filter the generator packs (a fresh numpy
        # array: 4-byte aligned)
        _, kh, kw, c = p.filter_dims
        packed = pack_depthwise_filter(w.tobytes(), kh, kw, c, p.stride[1], p.dilation[1])
        w = np.frombuffer(packed, np.int8).copy()
    args = [
        dims(p.input_dims),
        arena.input,
        dims(p.filter_dims),
        address(w),
        dims((p.output_dims[3], 1, 1, 1)),
        address(bias),
        dims(p.output_dims),
    ]
    return args, [w, bias]


def run_conv(
    lib: ctypes.CDLL,
    graph: Graph,
    op: Operator,
    x: np.ndarray,
    gap: int | None,
    seed: int = 0,
    variant: str = "reference",
) -> bytes:
    """CONV_2D through rip_conv2d_s8 (``variant`` "reference"), rip_conv2d_fast_s8
    ("fast") or rip_conv2d_fast_rq_s8 ("fast_rq", with the generator's rip_fast_channel
    records; skipped where the cheap requantisation is not proven for the layer); ``gap``:
    the output starts gap bytes below the input in one buffer (None: separate buffers)."""
    p = cp.conv_params(graph, op)
    fast = variant != "reference"
    arena = Arena.build(x, int(np.prod(p.output_dims)), gap, seed)
    ctx, _scratch = scratch(p.scratch_bytes, seed)
    quant, *_quant = per_channel(p)
    args, _data = weighted_args(graph, op, p, arena, fast)
    params = ConvParams(
        p.input_offset,
        p.output_offset,
        HW(*p.stride),
        HW(*p.padding),
        HW(*p.dilation),
        Act(*p.activation),
    )
    if variant in ("fast_rq", "gemv_rq"):
        w, bias = const(graph, op, 1, "<i1"), const(graph, op, 2, "<i4")
        model_bias = None if bias is None else tuple(int(v) for v in bias)
        found = fast_conv_channels(p, w.tobytes(), model_bias)
        if found is None:
            pytest.skip("the cheap requantisation is not proven for this layer")
        records, signed = found
        table = (FastChannel * len(records))(*(FastChannel(*r) for r in records))
        packed = np.frombuffer(pack_filter_pairs(signed, p.output_dims[3]), np.int8)
        packed = aligned_copy(packed)
        d_in, x_in, d_f, _f, _d_b, _b, d_out = args
        kernel = lib.rip_conv2d_gemv_rq_s8 if variant == "gemv_rq" else lib.rip_conv2d_fast_rq_s8
        status = kernel(
            ctx,
            params,
            ctypes.addressof(table),
            d_in,
            x_in,
            d_f,
            address(packed),
            d_out,
            arena.output,
        )
        return arena.result(status)
    fn = lib.rip_conv2d_fast_s8 if fast else lib.rip_conv2d_s8
    return arena.result(fn(ctx, params, quant, *args, arena.output))


def run_depthwise(
    lib: ctypes.CDLL,
    graph: Graph,
    op: Operator,
    x: np.ndarray,
    mode: str,
    seed: int = 0,
    variant: str = "reference",
    scratch_bytes: int | None = None,
    ring_rows: int | None = None,
) -> bytes:
    """DEPTHWISE_CONV_2D: ``mode`` "out" (disjoint buffers), "channel" (channel in place,
    output base == input base), "rows" (row-streamed in place, output base == input base,
    the fast kernel with the generator's baked schedule; ``ring_rows`` forces the ring's
    slot count, the same rows saved) or "naive"
    (the out-of-place kernel with output == input);
    ``variant`` "reference", "fast" (the _fast kernels, depth multiplier 1 only) or
    "fast_rq" (their _rq twins with the generator's rip_fast_channel records; skipped where
    the cheap requantisation is not proven for the layer);
    ``scratch_bytes``: the context's size (default: the planner's, one plane)."""
    p = cp.conv_params(graph, op)
    fast = variant != "reference"
    arena = Arena.build(x, int(np.prod(p.output_dims)), None if mode == "out" else 0, seed)
    if scratch_bytes is None:
        scratch_bytes = rows_scratch(p) if mode == "rows" else p.scratch_bytes
    fast = fast or mode == "rows"
    ctx, _scratch = scratch(scratch_bytes, seed)
    quant, *_quant = per_channel(p)
    args, _data = weighted_args(graph, op, p, arena, fast)
    params = DwConvParams(
        p.input_offset,
        p.output_offset,
        HW(*p.stride),
        HW(*p.padding),
        HW(*p.dilation),
        p.depth_multiplier,
        Act(*p.activation),
    )
    if variant == "fast_rq":
        return run_depthwise_rq(lib, graph, op, p, arena, ctx, params, args, mode, ring_rows)
    variant_part = "_fast" if fast else ""  # rip_depthwise_conv2d[_inplace][_fast]_s8
    if mode == "rows":  # the row-streamed in-place kernel; ring_rows=None: the formula's ring
        slots, ring = rows_schedule(p, ring_rows)
        fn = lib.rip_depthwise_conv2d_inplace_rows_fast_s8
        return arena.result(fn(ctx, params, quant, *args, slots, ring))
    if mode == "channel":
        fn = getattr(lib, f"rip_depthwise_conv2d_inplace{variant_part}_s8")
        return arena.result(fn(ctx, params, quant, *args))
    fn = getattr(lib, f"rip_depthwise_conv2d{variant_part}_s8")
    return arena.result(fn(ctx, params, quant, *args, arena.output))


def run_depthwise_rq(
    lib: ctypes.CDLL,
    graph: Graph,
    op: Operator,
    p: Any,
    arena: Any,
    ctx: Any,
    params: Any,
    args: Any,
    mode: str,
    ring_rows: int | None,
) -> bytes:
    """The _rq twins of the fast depthwise kernels (run_depthwise's "fast_rq")."""
    w, bias = const(graph, op, 1, "<i1"), const(graph, op, 2, "<i4")
    model_bias = None if bias is None else tuple(int(v) for v in bias)
    records = fast_channels(p, w.tobytes(), model_bias)
    if records is None:
        pytest.skip("the cheap requantisation is not proven for this layer")
    table = (FastChannel * len(records))(*(FastChannel(*r) for r in records))
    d_in, x_in, d_f, f, _d_b, _b, d_out = args
    head = (ctx, params, ctypes.addressof(table), d_in, x_in, d_f, f, d_out)
    if mode == "rows":
        slots, ring = rows_schedule(p, ring_rows)
        fn = lib.rip_depthwise_conv2d_inplace_rows_fast_rq_s8
        return arena.result(fn(*head, slots, ring))
    if mode == "channel":
        return arena.result(lib.rip_depthwise_conv2d_inplace_fast_rq_s8(*head))
    return arena.result(lib.rip_depthwise_conv2d_fast_rq_s8(*head, arena.output))


def rows_scratch(p: Any) -> int:
    """rip.allocator.planning.scratch's formula for the row-streamed in-place depthwise kernel."""
    return depthwise_rows_scratch_bytes(
        p.input_dims, p.output_dims, p.filter_dims[1:3], p.stride, p.padding, p.dilation
    )


def rows_args(p: Any) -> tuple[Any, ...]:
    """The schedule arguments of planning.scratch's row functions for a layer (with its columns)."""
    _, h, w, _ = p.input_dims
    _, h_out, w_out, _ = p.output_dims
    cols = (p.filter_dims[2], p.stride[1], p.padding[1], p.dilation[1])
    return (h, w, h_out, w_out, p.filter_dims[1], p.stride[0], p.padding[0], p.dilation[0],
            cols)  # fmt: skip


def rows_ring(p: Any) -> int:
    """rip.allocator.planning.scratch's ring rows for the row-streamed in-place depthwise kernel."""
    return depthwise_ring_rows(*rows_args(p))


def rows_slots(p: Any, ring_rows: int | None = None) -> list[int]:
    """The baked schedule the generator passes (planning.scratch.depthwise_ring_slots), or the
    same saved rows over a ring of ``ring_rows`` slots (none saved when that is 0)."""
    if ring_rows is None:
        return list(depthwise_ring_slots(*rows_args(p)))
    slots = [-1] * p.input_dims[1]
    for n, (i, _, _) in enumerate(depthwise_saved_rows(*rows_args(p)) if ring_rows else ()):
        slots[i] = n % ring_rows  # no ring: nothing saved, as the simulator's ring of 0
    return slots


def rows_schedule(p: Any, ring_rows: int | None = None) -> tuple[Any, int]:
    """The row kernel's last two arguments: its slot table (int16) and ring rows."""
    slots = rows_slots(p, ring_rows)
    return (ctypes.c_int16 * len(slots))(*slots), rows_ring(p) if ring_rows is None else ring_rows


def run_fc(lib: ctypes.CDLL, graph: Graph, op: Operator, x: np.ndarray) -> bytes:
    p = cp.fully_connected_params(graph, op)
    arena = Arena.build(x, int(np.prod(p.output_dims)), None, 0)
    args, _data = weighted_args(graph, op, p, arena)
    params = FcParams(p.input_offset, p.output_offset, Act(*p.activation), p.filter_offset)
    if p.per_channel:
        quant, *_quant = per_channel(p)
        status = lib.rip_fully_connected_per_channel_s8(None, params, quant, *args, arena.output)
    else:
        quant = TensorQuant(p.multipliers[0], p.shifts[0])
        status = lib.rip_fully_connected_s8(None, params, quant, *args, arena.output)
    return arena.result(status)


def fc_records(graph: Graph, op: Operator) -> tuple[Any, bytes] | None:
    """rip_fully_connected_fast_rq_s8's records and packed filter (kernel_choice), or None
    where the cheap requantisation is not proven."""
    p = cp.fully_connected_params(graph, op)
    bias = const(graph, op, 2, "<i4")
    model_bias = None if bias is None else tuple(int(v) for v in bias)
    found = fast_fc_channels(p, const(graph, op, 1, "<i1").tobytes(), model_bias)
    if found is None:
        return None
    return found[0], pack_filter_pairs(found[1], p.output_dims[3])


def run_fc_fast(lib: ctypes.CDLL, graph: Graph, op: Operator, x: np.ndarray) -> bytes:
    """FULLY_CONNECTED through rip_fully_connected_fast_rq_s8 (the packed GEMV)."""
    p = cp.fully_connected_params(graph, op)
    found = fc_records(graph, op)
    assert found is not None, "the cheap requantisation is not proven"
    records, packed = found
    table = (FastChannel * len(records))(*(FastChannel(*r) for r in records))
    w = aligned_copy(np.frombuffer(packed, np.int8))
    arena = Arena.build(x, int(np.prod(p.output_dims)), None, 0)
    params = FcParams(p.input_offset, p.output_offset, Act(*p.activation), p.filter_offset)
    status = lib.rip_fully_connected_fast_rq_s8(
        None, params, ctypes.addressof(table), dims(p.input_dims), arena.input,
        dims(p.filter_dims), address(w), dims(p.output_dims), arena.output,
    )  # fmt: skip
    return arena.result(status)


def run_pool(
    lib: ctypes.CDLL, graph: Graph, op: Operator, x: np.ndarray, gap: int | None, seed: int = 0
) -> bytes:
    """AVERAGE_POOL_2D / MAX_POOL_2D; ``gap`` as for run_conv."""
    p = pp.pool_params(graph, op)
    arena = Arena.build(x, int(np.prod(p.output_dims)), gap, seed)
    ctx, _scratch = scratch(p.scratch_bytes, seed)
    params = PoolParams(
        HW(*p.stride), HW(*p.padding), Act(*p.activation), int(p.pad_counts), p.pad_value
    )
    fn = lib.rip_avg_pool_s8 if p.kind == "AVERAGE_POOL_2D" else lib.rip_max_pool_s8
    return arena.result(
        fn(
            ctx,
            params,
            dims(p.input_dims),
            arena.input,
            dims(p.filter_dims),
            dims(p.output_dims),
            arena.output,
        )
    )


def run_mean(lib: ctypes.CDLL, graph: Graph, op: Operator, x: np.ndarray) -> bytes:
    p = pp.mean_params(graph, op)
    arena = Arena.build(x, int(np.prod(p.output_dims)), None, 0)
    ctx, _scratch = scratch(p.scratch_bytes, 0)
    params = MeanParams(p.input_offset, p.output_offset, p.multiplier, p.shift)
    return arena.result(
        lib.rip_global_avg_pool_s8(
            ctx, params, dims(p.input_dims), arena.input, dims(p.output_dims), arena.output
        )
    )


def round_up4(n: int) -> int:
    return -(-n // 4) * 4


# ---- cases -------------------------------------------------------------------------------------

conv, dw = tw.random_conv_model, tw.random_depthwise_model
# random_conv_model(seed, h, w, c_in, c_out, kernel, stride, dilation, padding, activation,
# per_channel); an explicit (top, bottom, left, right) padding is PAD + VALID, folded.
CONV: dict[str, Callable[[int], bytes]] = {
    "same_3x3_expand": lambda s: conv(s, 8, 8, 4, 8, 3),
    "same_s2_relu6_odd_cin": lambda s: conv(s, 9, 7, 3, 8, 3, 2, 1, "SAME", "RELU6"),
    "same_s2_even_relu": lambda s: conv(s, 8, 10, 7, 9, 3, 2, 1, "SAME", "RELU"),
    "dilated_relu": lambda s: conv(s, 10, 10, 5, 6, 3, 1, 2, "SAME", "RELU"),
    "dilated_rect": lambda s: conv(s, 11, 9, 3, 5, (3, 2), 1, (1, 3)),
    "explicit_pad": lambda s: conv(s, 8, 8, 4, 5, 3, 1, 1, (1, 2, 0, 1)),
    "explicit_pad_s2_relu6": lambda s: conv(s, 9, 9, 3, 6, 3, 2, 1, (0, 1, 1, 0), "RELU6"),
    "valid_rect_per_tensor": lambda s: conv(
        s, 9, 8, 3, 4, (5, 3), (2, 1), 1, "VALID", per_channel=False
    ),
    "same_1x7": lambda s: conv(s, 7, 9, 4, 4, (1, 7)),
    "same_7x1_s2_dilated": lambda s: conv(s, 12, 5, 2, 3, (7, 1), 2, (2, 1)),
    "pointwise_expand": lambda s: conv(s, 6, 6, 8, 16, 1),
    "pointwise_s2_project": lambda s: conv(s, 8, 8, 16, 7, 1, 2),
    "pointwise_odd_pixels": lambda s: conv(s, 5, 7, 12, 9, 1),  # a lone last pixel
    # the M33 takes pointwise pixels in triples: 16 = 5 triples and a lone pixel, 10 taps
    "pointwise_triples_tail": lambda s: conv(s, 4, 4, 10, 6, 1),
    "pointwise_one_pixel": lambda s: conv(s, 1, 1, 12, 7, 1),  # a classifier as a conv
    # packed filters above the flash cache (16 KB): the M33 sweeps them over as many pixels
    # as the scratch holds widened, triples then pairs; an odd channel count, 25 pixels
    "pointwise_flash_sweeps": lambda s: conv(s, 5, 5, 128, 131, 1),
    # 4 pixels in one sweep (two pairs), 130 taps (a tail word)
    "pointwise_flash_2x2": lambda s: conv(s, 2, 2, 130, 127, 1),
    # a classifier whose filter streams from flash: swept once, pair by pair, in address
    # order (rip_rq_gemv_1x2; its 33 groups of taps odd, as its channels)
    "pointwise_flash_one_pixel": lambda s: conv(s, 1, 1, 130, 127, 1),
    "valid_wide_odd_cin": lambda s: conv(s, 5, 5, 33, 4, 3, 1, 1, "VALID"),
    # stems (3x3 over 3 channels): cores without DSP widen a pair wholly inside the input
    # from its rows; an odd width puts pairs across rows, stride 2 and SAME padding others at
    # the edge (the host runs that path: the M0+ machine's flash has no room for the cases)
    "stem_odd_width": lambda s: conv(s, 4, 7, 3, 3, 3),
    "stem_s2_relu6": lambda s: conv(s, 7, 10, 3, 2, 3, 2, 1, "SAME", "RELU6"),
}

# random_depthwise_model(seed, h, w, channels, kernel, stride, dilation, padding, activation,
# depth_multiplier, per_channel)
DEPTHWISE: dict[str, Callable[[int], bytes]] = {
    "same_3x3": lambda s: dw(s, 8, 8, 8, 3),
    "same_s2_odd_c": lambda s: dw(s, 8, 9, 7, 3, 2),
    "dilated_relu6": lambda s: dw(s, 10, 10, 6, 3, 1, (2, 1), activation="RELU6"),
    "explicit_pad": lambda s: dw(s, 8, 8, 4, 3, 1, 1, (0, 1, 1, 0)),
    "valid_rect_per_tensor": lambda s: dw(
        s, 9, 8, 5, (5, 3), (2, 1), 1, "VALID", per_channel=False
    ),
    "same_5x5_s2_relu6": lambda s: dw(s, 11, 11, 6, 5, 2, activation="RELU6"),
    "same_7x7": lambda s: dw(s, 12, 12, 5, 7),
    "mult2_s2": lambda s: dw(s, 9, 9, 4, 3, 2, depth_multiplier=2),
    "mult2_relu_odd": lambda s: dw(s, 7, 6, 3, 3, 1, 1, "SAME", "RELU", depth_multiplier=2),
}
DEPTHWISE_M1 = [name for name in DEPTHWISE if not name.startswith("mult")]

# pool_model(seed, kind, h, w, c, size, stride, padding, activation)
POOL: dict[str, Callable[[int], bytes]] = {
    "avg_same_3x3_s2": lambda s: pool_model(s, "avg", 7, 7, 4, 3, 2, "SAME"),
    "avg_same_3x3_s1_odd_c": lambda s: pool_model(s, "avg", 6, 5, 5, 3, 1, "SAME"),
    "avg_valid_2x2": lambda s: pool_model(s, "avg", 8, 8, 4, 2, 2, "VALID"),
    "avg_same_rect_relu6": lambda s: pool_model(s, "avg", 9, 7, 3, (3, 2), (2, 1), "SAME", "RELU6"),
    "avg_same_5x5_relu": lambda s: pool_model(s, "avg", 6, 6, 3, 5, 1, "SAME", "RELU"),
    "avg_pad_counts": lambda s: pool_model(s, "avg", 7, 7, 4, 3, 2, (1, 1, 2, 0)),
    "avg_pad_counts_s1": lambda s: pool_model(s, "avg", 5, 6, 3, 3, 1, (1, 1, 1, 1)),
    "max_same_3x3_s2_odd_c": lambda s: pool_model(s, "max", 7, 8, 5, 3, 2, "SAME"),
    "max_valid_rect_relu": lambda s: pool_model(s, "max", 8, 7, 4, (3, 2), (2, 1), "VALID", "RELU"),
    "max_same_3x3_s1": lambda s: pool_model(s, "max", 6, 6, 4, 3, 1, "SAME"),
    "max_pad_counts": lambda s: pool_model(s, "max", 6, 6, 3, 3, 2, (1, 0, 0, 1)),
    # Wider channels for the M33's word paths (kernels/rip_pool.c): eight- and four-channel
    # SXTAB16 groups plus a scalar tail, sixteen- and four-channel SSUB8/SEL maxima, the
    # activation clamp, folded padding, and windows at (255 cells) and past (272) the last
    # count whose sums and rounding fit 16-bit lanes.
    "avg_same_3x3_s2_c23": lambda s: pool_model(s, "avg", 7, 6, 23, 3, 2, "SAME"),
    "avg_same_3x3_s1_c12_relu6": lambda s: pool_model(s, "avg", 5, 6, 12, 3, 1, "SAME", "RELU6"),
    "avg_pad_counts_c8": lambda s: pool_model(s, "avg", 6, 7, 8, 3, 2, (1, 0, 1, 1)),
    "avg_global_255_cells": lambda s: pool_model(s, "avg", 15, 17, 4, (15, 17), 1, "VALID"),
    "avg_global_272_cells": lambda s: pool_model(s, "avg", 16, 17, 5, (16, 17), 1, "VALID"),
    # past the last count (361) whose rounded average the cores without a divide instruction
    # take by reciprocal multiplication
    "avg_global_380_cells": lambda s: pool_model(s, "avg", 19, 20, 3, (19, 20), 1, "VALID"),
    "max_valid_2x2_c16": lambda s: pool_model(s, "max", 8, 10, 16, 2, 2, "VALID"),
    "max_same_3x3_s2_c20_relu6": lambda s: pool_model(s, "max", 7, 7, 20, 3, 2, "SAME", "RELU6"),
    "max_pad_counts_c16": lambda s: pool_model(s, "max", 6, 6, 16, 3, 1, (1, 1, 1, 1)),
}

# mean_model(seed, h, w, c, keep_dims, same_quant)
MEAN: dict[str, Callable[[int], bytes]] = {
    "7x7_requant_keep": lambda s: mean_model(s, 7, 7, 8, True, False),
    "4x4_requant_flat": lambda s: mean_model(s, 4, 4, 3, False, False),
    "5x3_same_quant": lambda s: mean_model(s, 5, 3, 16, True, True),
    "13x13_requant_flat": lambda s: mean_model(s, 13, 13, 5, False, False),
    "16x16_same_quant_flat": lambda s: mean_model(s, 16, 16, 3, False, True),
    "1x1_requant": lambda s: mean_model(s, 1, 1, 4, True, False),
    "3x10_requant": lambda s: mean_model(s, 3, 10, 7, True, False),
}

FC: dict[str, Callable[[int], bytes]] = {
    "per_tensor_relu": lambda s: tw.random_fully_connected_model(s, 24, 10, "RELU"),
    "per_tensor_odd": lambda s: tw.random_fully_connected_model(s, 17, 5),
    "per_tensor_relu6_wide": lambda s: tw.random_fully_connected_model(s, 67, 3, "RELU6"),
    "per_channel": lambda s: tw.random_fully_connected_model(s, 19, 6, "NONE", per_channel=True),
    "per_channel_batch2_relu": lambda s: tw.random_fully_connected_model(
        s, 32, 9, "RELU", per_channel=True, batch=2
    ),
    # the packed GEMV's edges: no whole word of taps, a lone unit pair, three units left
    # over from the quads, batch rows
    "per_tensor_depth1": lambda s: tw.random_fully_connected_model(s, 1, 6, "RELU"),
    "per_tensor_units2_batch3": lambda s: tw.random_fully_connected_model(
        s, 9, 2, "RELU6", batch=3
    ),
    "per_channel_units7_odd_depth": lambda s: tw.random_fully_connected_model(
        s, 13, 7, "NONE", per_channel=True
    ),
    "per_tensor_one_unit": lambda s: tw.random_fully_connected_model(s, 5, 1, "RELU"),
}

# Layers whose gap is set by a live input rather than by the output's size (gap > N_out - N_in):
# there the row-order debt of Theorem 13 is met with equality, so any smaller gap overwrites an
# input byte a later pixel still gathers. (Where N_out - N_in sets it, a smaller gap instead
# runs the output past the end of the workspace.) The seed is fixed: an unlucky one could hide
# a one-byte collision whose clobbered value happens to requantize to the same output.
CONV_TIGHT = [
    "same_3x3_expand",
    "same_s2_relu6_odd_cin",
    "dilated_relu",
    "dilated_rect",
    "explicit_pad",
    "explicit_pad_s2_relu6",
    "valid_rect_per_tensor",
    "same_1x7",
    "same_7x1_s2_dilated",
]
POOL_TIGHT = [
    "avg_same_3x3_s1_odd_c",
    "avg_same_5x5_relu",
    "avg_pad_counts",
    "avg_pad_counts_s1",
    "max_same_3x3_s1",
    "avg_same_3x3_s1_c12_relu6",
    "max_pad_counts_c16",
]


def cases(names: Any) -> list[Any]:
    return [pytest.param(name, seed, id=f"{name}-{seed}") for name in names for seed in SEEDS]


def load(
    table: dict[str, Callable[[int], bytes]], name: str, seed: int
) -> tuple[Graph, Operator, np.ndarray, bytes]:
    """The single rewritten op of a case, a random input, and TFLite Micro's output bytes."""
    model = table[name](seed)
    graph, op = single_op(model)
    x = random_input(graph, seed)
    return graph, op, x, tflm(model, x)


def assert_live_input_sets_the_gap(graph: Graph, op: Operator, gap: int) -> None:
    geom = conv_geometry(graph, op)
    assert gap > max(0, geom.n_out - geom.n_in_dense)


# ---- convolution -------------------------------------------------------------------------------


# rip_conv2d_s8, rip_conv2d_fast_s8, rip_conv2d_fast_rq_s8, rip_conv2d_gemv_rq_s8
CONV_VARIANTS = ("reference", "fast", "fast_rq", "gemv_rq")
# Pixels a variant gathers before writing them: the simulator's tile.
CONV_TILE = {"reference": 1, "fast": 2, "fast_rq": 2, "gemv_rq": 1}


@pytest.mark.parametrize("variant", CONV_VARIANTS)
@pytest.mark.parametrize(("name", "seed"), cases(CONV))
def test_conv_matches_tflm(lib: ctypes.CDLL, name: str, seed: int, variant: str) -> None:
    graph, op, x, expected = load(CONV, name, seed)
    assert op.kind == "CONV_2D"
    assert run_conv(lib, graph, op, x, None, seed, variant) == expected


@pytest.mark.parametrize("variant", CONV_VARIANTS)
@pytest.mark.parametrize(("name", "seed"), cases(CONV))
def test_conv_in_place_at_the_rip_bound(
    lib: ctypes.CDLL, name: str, seed: int, variant: str
) -> None:
    """Output = input - gap in one buffer, at Theorem 13's row-order gather gap and at that
    gap rounded up to the 4-byte placement grid."""
    graph, op, x, expected = load(CONV, name, seed)
    gap = rip_bound(conv_geometry(graph, op), "dense", "gather", "row").gap
    assert gap < len(expected), "the output must overlap the input for the test to mean much"
    assert run_conv(lib, graph, op, x, gap, seed, variant) == expected
    assert run_conv(lib, graph, op, x, round_up4(gap), seed, variant) == expected


@pytest.mark.parametrize("variant", CONV_VARIANTS)
@pytest.mark.parametrize("name", CONV_TIGHT)
def test_conv_below_the_rip_bound_corrupts(lib: ctypes.CDLL, name: str, variant: str) -> None:
    """The bound is tight: one byte (or four) less gap and the output differs, so the kernel
    really runs over its own input. A variant's bound is the simulator's gap for the
    traversal it really has (pixel pairs for the fast kernel): never above Theorem 13's."""
    graph, op, x, expected = load(CONV, name, 0)
    geom = conv_geometry(graph, op)
    planned = rip_bound(geom, "dense", "gather", "row").gap
    gap = simulate_rip(geom, "dense", "gather", "row", tile=CONV_TILE[variant])
    assert gap <= planned
    if variant == "reference":
        assert gap == planned
    if gap <= max(0, geom.n_out - geom.n_in_dense):
        pytest.skip("the output's size, not a live input, sets this variant's gap")
    assert run_conv(lib, graph, op, x, gap, 0, variant) == expected
    assert run_conv(lib, graph, op, x, gap - 1, 0, variant) != expected
    assert run_conv(lib, graph, op, x, gap - 4, 0, variant) != expected


@pytest.mark.parametrize("variant", CONV_VARIANTS)
@pytest.mark.parametrize("name", list(CONV))
def test_conv_in_place_at_the_planners_gap(lib: ctypes.CDLL, name: str, variant: str) -> None:
    """The gap the planner hands the placement (requirements' in-place candidate) is one the
    kernel runs at."""
    graph, op, x, expected = load(CONV, name, 0)
    (candidate,) = requirements(graph).ops[0].candidates
    assert run_conv(lib, graph, op, x, candidate.gap, 0, variant) == expected


# ---- depthwise ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "seed"), cases(DEPTHWISE))
def test_depthwise_matches_tflm(lib: ctypes.CDLL, name: str, seed: int) -> None:
    graph, op, x, expected = load(DEPTHWISE, name, seed)
    assert op.kind == "DEPTHWISE_CONV_2D"
    assert run_depthwise(lib, graph, op, x, "out", seed) == expected
    if name in DEPTHWISE_M1:
        assert run_depthwise(lib, graph, op, x, "out", seed, "fast") == expected


@pytest.mark.parametrize(("name", "seed"), cases(DEPTHWISE_M1))
@pytest.mark.parametrize("mode", ("out", "channel", "rows"))
def test_depthwise_fast_rq_matches_tflm(lib: ctypes.CDLL, name: str, seed: int, mode: str) -> None:
    """The _rq twins (cheap requantisation, proven per layer) out of place, in place by
    channel planes and row-streamed in place (gap 0): TFLite Micro's bytes."""
    graph, op, x, expected = load(DEPTHWISE, name, seed)
    assert run_depthwise(lib, graph, op, x, mode, seed, "fast_rq") == expected


@pytest.mark.parametrize("variant", ("reference", "fast"))
@pytest.mark.parametrize(("name", "seed"), cases(DEPTHWISE_M1))
def test_depthwise_channel_in_place(lib: ctypes.CDLL, name: str, seed: int, variant: str) -> None:
    """Output base == input base (depthwise_bound: gap 0)."""
    graph, op, x, expected = load(DEPTHWISE, name, seed)
    assert depthwise_bound(conv_geometry(graph, op)).gap == 0
    assert run_depthwise(lib, graph, op, x, "channel", seed, variant) == expected


@pytest.mark.parametrize("planes", [4, 5, 8, 1000])
@pytest.mark.parametrize(("name", "seed"), cases(DEPTHWISE_M1))
def test_depthwise_fast_in_place_channel_groups(
    lib: ctypes.CDLL, name: str, seed: int, planes: int
) -> None:
    """rip_depthwise_conv2d_inplace_fast_s8 with more scratch than the planner's one plane
    runs channel groups (a multiple of 4 channels per pass, all of them when the scratch
    holds every plane): still gap 0 and bit-exact, whatever the group and its tail."""
    graph, op, x, expected = load(DEPTHWISE, name, seed)
    plane = cp.conv_params(graph, op).scratch_bytes
    got = run_depthwise(lib, graph, op, x, "channel", seed, "fast", planes * plane + 3)
    assert got == expected


@pytest.mark.parametrize(("name", "seed"), cases(DEPTHWISE_M1))
def test_depthwise_rows_in_place(lib: ctypes.CDLL, name: str, seed: int) -> None:
    """rip_depthwise_conv2d_inplace_rows_fast_s8: output base == input base (gap 0, the
    planner's channel candidate), a ring of saved input rows in scratch, bit-exact."""
    graph, op, x, expected = load(DEPTHWISE, name, seed)
    assert depthwise_bound(conv_geometry(graph, op)).gap == 0
    assert run_depthwise(lib, graph, op, x, "rows", seed) == expected


@pytest.mark.parametrize("name", ["same_3x3", "dilated_relu6", "explicit_pad", "same_7x7"])
def test_depthwise_rows_ring_one_row_short_corrupts(lib: ctypes.CDLL, name: str) -> None:
    """The ring the formula gives (the one plan every core runs) is the fewest rows the
    simulator finds safe under ARMv6-M's engine order on these unit-stride layers (saving
    the rows the baked schedule lists), and at least the fewest under the DSP and host
    engine's order; the host kernel is exact with the latter and, with one slot fewer,
    reads a row a later save has overwritten: its output differs from TFLite Micro's. A
    layer the host takes in the column-pair engine's group order (`depthwise_plane_order`,
    which saves no row and which the simulator finds safe in place) stays exact with one
    slot fewer."""
    graph, op, x, expected = load(DEPTHWISE, name, 0)
    geom = conv_geometry(graph, op)
    p = cp.conv_params(graph, op)
    rows = rows_ring(p)
    saves = {i for i, _, _ in depthwise_saved_rows(*rows_args(p))}
    assert rows >= 1
    assert simulate_depthwise_ring(geom, group=1, saves=saves) == rows
    assert simulate_depthwise_rows(geom, rows - 1, group=1, saves=saves).corrupted > 0
    least = simulate_depthwise_ring(geom, saves=saves)
    assert least <= rows
    assert run_depthwise(lib, graph, op, x, "rows", 0, ring_rows=rows) == expected
    assert run_depthwise(lib, graph, op, x, "rows", 0, ring_rows=least) == expected
    if least > 0:
        assert simulate_depthwise_rows(geom, least - 1, saves=saves).corrupted > 0
        short = run_depthwise(lib, graph, op, x, "rows", 0, ring_rows=least - 1)
        order = depthwise_plane_order(geom, geom.c_in, in_place=True)
        if order is None:
            assert short != expected
        else:
            assert simulate_depthwise_plane(geom, order=order) == 0
            assert short == expected


def test_depthwise_rows_column_tiles_need_fewer_rows(lib: ctypes.CDLL) -> None:
    """3x3 with one column of left padding: ARMv6-M's engine stores pixel x before pixel
    x + 1 reads column x, so each row read in place by its only reader is saved (one ring
    row); the column-pair engine reads a whole tile's columns before storing any, so on DSP
    cores and hosts no row needs saving, and the host kernel with no ring is exact."""
    graph, op, x, expected = load(DEPTHWISE, "explicit_pad", 0)
    geom = conv_geometry(graph, op)
    saves = {i for i, _, _ in depthwise_saved_rows(*rows_args(cp.conv_params(graph, op)))}
    assert simulate_depthwise_ring(geom, group=1, saves=saves) == 1
    assert simulate_depthwise_ring(geom, saves=saves) == 0
    assert run_depthwise(lib, graph, op, x, "rows", 0, ring_rows=0) == expected


@pytest.mark.parametrize("variant", ["fast", "fast_rq"])
def test_depthwise_rows_in_place_where_the_group_order_would_corrupt(
    lib: ctypes.CDLL, variant: str
) -> None:
    """5x5 with five padded rows on top: the column-pair engine's window order (a group over
    every row, rip_dw_plane_cols) would store output row 0 over input row 0 before output
    row 1 reads it, and the simulator finds that; the kernel's own test refuses the layer in
    place (rip_dw_plane_cols_ok, `depthwise_plane_order`) and runs the row schedule with its
    ring: bit-exact in place, as the same layer out of place (which takes the window order).
    Shorter 3x3, 5x5 and 7x7 twins of the layer (and a stride-2 5x5) take the whole-plane
    order in place, also bit-exact."""
    geom = ConvGeometry(12, 12, 4, 4, 5, 5, 1, 1, 1, 1, 5, 5, 0, 0)
    assert simulate_depthwise_plane(geom, order="window") > 0
    assert depthwise_plane_order(geom, 4, in_place=True) is None
    assert depthwise_plane_order(geom, 4, in_place=False) == "window"
    wholes = [
        ConvGeometry(6, 5, 4, 4, 3, 3, 1, 1, 1, 1, 3, 3, 0, 0),
        ConvGeometry(6, 6, 4, 4, 5, 5, 1, 1, 1, 1, 5, 5, 0, 0),
        ConvGeometry(6, 6, 4, 4, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3),
        ConvGeometry(10, 8, 4, 4, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2),
    ]
    assert simulate_depthwise_plane(wholes[0], order="window") > 0
    assert simulate_depthwise_plane(wholes[1], order="window") > 0
    for small in wholes:
        assert depthwise_plane_order(small, 4, in_place=True) == "whole"
    for g in (geom, *wholes):
        model = dw(0, g.h_in, g.w_in, 4, g.kh, g.sh, 1, explicit(g))
        graph, op = single_op(model)
        assert conv_geometry(graph, op) == g
        x = random_input(graph, 0)
        expected = tflm(model, x)
        assert run_depthwise(lib, graph, op, x, "out", 0, variant) == expected
        assert run_depthwise(lib, graph, op, x, "rows", 0, variant) == expected


def test_depthwise_rows_scratch_is_the_c_twin(lib: ctypes.CDLL) -> None:
    """planning.scratch.depthwise_rows_scratch_bytes is its C twin's formula, and the simulator
    executing the baked schedule with that ring finds no corruption."""
    fn = getattr(lib, ROWS_BUFFER_SIZE_FUNCTION)
    for name in DEPTHWISE_M1:
        graph, op = single_op(DEPTHWISE[name](0))
        p = cp.conv_params(graph, op)
        params = DwConvParams(p.input_offset, p.output_offset, HW(*p.stride), HW(*p.padding),
                              HW(*p.dilation), 1, Act(*p.activation))  # fmt: skip
        got = fn(params, dims(p.input_dims), dims(p.filter_dims), dims(p.output_dims))
        assert got == rows_scratch(p), name
        geom = conv_geometry(graph, op)
        rows = rows_scratch(p) // (geom.w_in * geom.c_in)
        assert rows == rows_ring(p), name
        saves = {i for i, _, _ in depthwise_saved_rows(*rows_args(p))}
        assert simulate_depthwise_rows(geom, rows, saves=saves).corrupted == 0


@pytest.mark.parametrize("name", DEPTHWISE_M1)
def test_depthwise_channel_in_place_is_the_planners(name: str) -> None:
    """The planner's depthwise candidate is the channel scheme: output base == input base."""
    graph, _, _, _ = load(DEPTHWISE, name, 0)
    (candidate,) = requirements(graph).ops[0].candidates
    assert (candidate.gap, candidate.order) == (0, "channel")


@pytest.mark.parametrize("name", ["same_3x3", "dilated_relu6", "explicit_pad"])
def test_depthwise_pixel_order_in_place_corrupts(lib: ctypes.CDLL, name: str) -> None:
    """At unit stride the out-of-place (pixel-major) kernel over its own input corrupts it;
    the channel scheme on the same buffer does not."""
    graph, op, x, expected = load(DEPTHWISE, name, 0)
    assert run_depthwise(lib, graph, op, x, "naive") != expected
    assert run_depthwise(lib, graph, op, x, "channel") == expected


# ---- fully connected ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "seed"), cases(FC))
def test_fully_connected_matches_tflm(lib: ctypes.CDLL, name: str, seed: int) -> None:
    graph, op, x, expected = load(FC, name, seed)
    assert cp.fully_connected_params(graph, op).per_channel == name.startswith("per_channel")
    assert run_fc(lib, graph, op, x) == expected


@pytest.mark.parametrize(("name", "seed"), cases(FC))
def test_fully_connected_packed_gemv_matches_tflm(lib: ctypes.CDLL, name: str, seed: int) -> None:
    """rip_fully_connected_fast_rq_s8 (the generator's records and packed filter): proven
    for every case here, and TFLite Micro's bytes."""
    graph, op, x, expected = load(FC, name, seed)
    assert run_fc_fast(lib, graph, op, x) == expected


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    depth=st.integers(1, 70),
    units=st.integers(1, 13),
    batch=st.integers(1, 3),
    per_channel=st.booleans(),
    activation=st.sampled_from(["NONE", "RELU", "RELU6"]),
)
def test_fully_connected_shapes_match_tflm(
    lib: ctypes.CDLL,
    seed: int,
    depth: int,
    units: int,
    batch: int,
    per_channel: bool,
    activation: str,
) -> None:
    """Any depth (whole words of taps and a tail), any unit count (quads, a lone pair, an
    odd unit), batch rows, per-tensor or per-channel: the exact kernels and, where the
    generator proves the cheap requantisation, the packed GEMV give TFLite Micro's bytes."""
    model = tw.random_fully_connected_model(seed, depth, units, activation, per_channel, batch)
    graph, op = single_op(model)
    x = random_input(graph, seed)
    expected = tflm(model, x)
    assert run_fc(lib, graph, op, x) == expected
    if fc_records(graph, op) is not None:
        assert run_fc_fast(lib, graph, op, x) == expected


def keep_num_dims_model(
    seed: int, keep: bool, per_channel: bool, weights_zero_point: int = 0
) -> bytes:
    """FULLY_CONNECTED over a [2, 3, 10] input, keep_num_dims: output [2, 3, 5] (else
    [6, 5]); scales picked, not calibrated (the bytes, not the accuracy, are compared)."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = mb.activation((2, 3, 10), 0.02, int(rng.integers(-20, 21)))
    q = rng.integers(-127, 128, size=(5, 10)).astype(np.int8)
    scales = rng.uniform(0.002, 0.01, size=5) if per_channel else [0.005]
    w = mb.constant_int8(q, [float(v) for v in scales], weights_zero_point, 0)
    b = mb.bias(rng.integers(-3000, 3000, size=5), 0.02, [float(v) for v in scales])
    y = mb.activation((2, 3, 5) if keep else (6, 5), 0.08, int(rng.integers(-20, 21)))
    mb.fully_connected(x, w, b, y, activation="RELU", keep_num_dims=keep)
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("keep", [False, True])
def test_fully_connected_keep_num_dims_matches_tflm(
    lib: ctypes.CDLL, keep: bool, per_channel: bool
) -> None:
    """keep_num_dims changes the output's shape, never its bytes: 6 rows of 5 units."""
    model = keep_num_dims_model(7, keep, per_channel)
    graph, op = single_op(model)
    assert cp.fully_connected_params(graph, op).output_dims == (6, 1, 1, 5)
    x = random_input(graph, 7)
    expected = tflm(model, x)
    assert run_fc(lib, graph, op, x) == expected
    assert run_fc_fast(lib, graph, op, x) == expected


@pytest.mark.parametrize("zero_point", [-9, 5])
def test_fully_connected_weights_zero_point_matches_tflm(lib: ctypes.CDLL, zero_point: int) -> None:
    """Per-tensor weights with a zero point (TFLite's weights_offset): the exact kernel adds
    it; the packed one is not chosen (its share depends on the input)."""
    model = keep_num_dims_model(3, False, False, zero_point)
    graph, op = single_op(model)
    assert cp.fully_connected_params(graph, op).filter_offset == -zero_point
    assert fc_records(graph, op) is None
    x = random_input(graph, 3)
    assert run_fc(lib, graph, op, x) == tflm(model, x)


# ---- pooling -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "seed"), cases(POOL))
def test_pool_matches_tflm(lib: ctypes.CDLL, name: str, seed: int) -> None:
    graph, op, x, expected = load(POOL, name, seed)
    assert op.params.pad_counts == ("pad_counts" in name)
    assert run_pool(lib, graph, op, x, None, seed) == expected


@pytest.mark.parametrize(("name", "seed"), cases(POOL))
def test_pool_in_place_at_the_bound(lib: ctypes.CDLL, name: str, seed: int) -> None:
    graph, op, x, expected = load(POOL, name, seed)
    gap = pool_bound(conv_geometry(graph, op), "dense").gap
    # Every gap from the bound to one pixel more: a distance that is no multiple of C is the
    # one where a pixel's stores could land on channels of its window it has yet to read.
    for g in range(gap, gap + x.shape[-1] + 1):
        assert run_pool(lib, graph, op, x, g, seed) == expected, f"gap {g}"


@pytest.mark.parametrize("name", POOL_TIGHT)
def test_pool_below_the_bound_corrupts(lib: ctypes.CDLL, name: str) -> None:
    graph, op, x, expected = load(POOL, name, 0)
    gap = pool_bound(conv_geometry(graph, op), "dense").gap
    assert_live_input_sets_the_gap(graph, op, gap)
    assert run_pool(lib, graph, op, x, gap) == expected
    assert run_pool(lib, graph, op, x, gap - 1) != expected
    assert run_pool(lib, graph, op, x, gap - 4) != expected


@pytest.mark.parametrize("name", list(POOL))
def test_pool_in_place_at_the_planners_gap(lib: ctypes.CDLL, name: str) -> None:
    graph, op, x, expected = load(POOL, name, 0)
    (candidate,) = requirements(graph).ops[0].candidates
    assert run_pool(lib, graph, op, x, candidate.gap) == expected


def test_reciprocal_rounding_is_exact_up_to_361_cells() -> None:
    """kernels/rip_pool.c without a divide instruction: floor(x / n) == (x * m) >> 24 with
    m = ceil(2^24 / n) for every x the rounded average can meet (0 <= x <= 128 n + n / 2),
    and the unsigned product x * m < 2^32, for every window of n <= RIP_RECIP_MAX_COUNT =
    361 cells: the C comment's bound x (n - 1) < 2^24, checked exhaustively."""
    source = (cb.KERNELS / "rip_pool.c").read_text()
    assert "#define RIP_RECIP_MAX_COUNT 361" in source
    for n in range(1, 362):
        m = -(-(1 << 24) // n)
        x = np.arange(128 * n + n // 2 + 1, dtype=np.int64)
        assert int(x[-1]) * m < 1 << 32
        assert np.array_equal((x * m) >> 24, x // n), n


def test_strided_pool_runs_in_place_with_no_gap(lib: ctypes.CDLL) -> None:
    """A 2x2 / 2 pool frees more than it writes (alpha, beta <= 0): output base == input base."""
    graph, op, x, expected = load(POOL, "avg_valid_2x2", 0)
    assert pool_bound(conv_geometry(graph, op), "dense").gap == 0
    assert run_pool(lib, graph, op, x, 0) == expected


# ---- global average pooling (MEAN) -------------------------------------------------------------


@pytest.mark.parametrize(("name", "seed"), cases(MEAN))
def test_global_avg_pool_matches_tflm_mean(lib: ctypes.CDLL, name: str, seed: int) -> None:
    graph, op, x, expected = load(MEAN, name, seed)
    assert op.kind == "GLOBAL_AVERAGE_POOL"
    assert run_mean(lib, graph, op, x) == expected


# ---- random layers (Hypothesis) ----------------------------------------------------------------

ACTIVATIONS = st.sampled_from(["NONE", "RELU", "RELU6"])


def explicit(geom: ConvGeometry) -> tw.PaddingSpec:
    pads = (geom.pad_top, geom.pad_bottom, geom.pad_left, geom.pad_right)
    return "VALID" if pads == (0, 0, 0, 0) else pads


@settings(max_examples=150, deadline=None)
@given(
    geom=layers(max_extent=9, max_channels=9),
    activation=ACTIVATIONS,
    per_channel=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_conv_matches_tflm_in_and_out_of_place(
    lib: ctypes.CDLL, geom: ConvGeometry, activation: tw.Activation, per_channel: bool, seed: int
) -> None:
    """Any stride, dilation, asymmetric padding (PAD + VALID, folded) and kernel shape; in
    place at the row-order gather gap whenever the dense layout admits the layer."""
    model = conv(
        seed,
        geom.h_in,
        geom.w_in,
        geom.c_in,
        geom.c_out,
        (geom.kh, geom.kw),
        (geom.sh, geom.sw),
        (geom.dh, geom.dw),
        explicit(geom),
        activation,
        per_channel,
    )
    graph, op = single_op(model)
    x = random_input(graph, seed)
    expected = tflm(model, x)
    assert run_conv(lib, graph, op, x, None, seed) == expected
    assert run_conv(lib, graph, op, x, None, seed, "fast") == expected
    w, bias = const(graph, op, 1, "<i1"), const(graph, op, 2, "<i4")
    p = cp.conv_params(graph, op)
    cheap = fast_conv_channels(
        p, w.tobytes(), None if bias is None else tuple(int(v) for v in bias)
    )
    if cheap is not None:
        assert run_conv(lib, graph, op, x, None, seed, "fast_rq") == expected
        assert run_conv(lib, graph, op, x, None, seed, "gemv_rq") == expected
    try:
        gap = rip_bound(conv_geometry(graph, op), "dense", "gather", "row").gap
    except LayerError:  # padding as wide as the dilated kernel: no dense bound
        return
    assert run_conv(lib, graph, op, x, gap, seed) == expected
    assert run_conv(lib, graph, op, x, gap, seed, "fast") == expected
    tiled = simulate_rip(conv_geometry(graph, op), "dense", "gather", "row", tile=2)
    assert run_conv(lib, graph, op, x, tiled, seed, "fast") == expected
    if cheap is not None:
        assert run_conv(lib, graph, op, x, tiled, seed, "fast_rq") == expected
        assert run_conv(lib, graph, op, x, gap, seed, "gemv_rq") == expected


@settings(max_examples=100, deadline=None)
@given(
    geom=layers(max_extent=9, max_channels=6),
    multiplier=st.integers(1, 2),
    activation=ACTIVATIONS,
    per_channel=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_depthwise_matches_tflm(
    lib: ctypes.CDLL,
    geom: ConvGeometry,
    multiplier: int,
    activation: tw.Activation,
    per_channel: bool,
    seed: int,
) -> None:
    model = dw(
        seed,
        geom.h_in,
        geom.w_in,
        geom.c_in,
        (geom.kh, geom.kw),
        (geom.sh, geom.sw),
        (geom.dh, geom.dw),
        explicit(geom),
        activation,
        multiplier,
        per_channel,
    )
    graph, op = single_op(model)
    x = random_input(graph, seed)
    expected = tflm(model, x)
    assert run_depthwise(lib, graph, op, x, "out", seed) == expected
    if multiplier == 1:
        assert run_depthwise(lib, graph, op, x, "out", seed, "fast") == expected
    p = cp.conv_params(graph, op)
    w, bias = const(graph, op, 1, "<i1"), const(graph, op, 2, "<i4")
    model_bias = None if bias is None else tuple(int(v) for v in bias)
    cheap = multiplier == 1 and fast_channels(p, w.tobytes(), model_bias) is not None
    if cheap:
        assert run_depthwise(lib, graph, op, x, "out", seed, "fast_rq") == expected
    if multiplier == 1 and geom.h_out * geom.w_out <= geom.h_in * geom.w_in:
        assert run_depthwise(lib, graph, op, x, "channel", seed) == expected
        assert run_depthwise(lib, graph, op, x, "channel", seed, "fast") == expected
        plane = geom.h_out * geom.w_out
        for planes in (4, 8, 1 + geom.c_in):  # channel groups of 4, 8, all channels
            got = run_depthwise(lib, graph, op, x, "channel", seed, "fast", planes * plane)
            assert got == expected
        assert run_depthwise(lib, graph, op, x, "rows", seed) == expected
        if cheap:
            assert run_depthwise(lib, graph, op, x, "channel", seed, "fast_rq") == expected
            assert run_depthwise(lib, graph, op, x, "rows", seed, "fast_rq") == expected


@settings(max_examples=60, deadline=None)
@given(
    kh=st.integers(1, 7),
    kw=st.sampled_from([3, 5, 7]),
    stride=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    dh=st.integers(1, 2),
    hw=st.tuples(st.integers(1, 9), st.integers(1, 40)),
    c=st.integers(1, 9),
    pads=st.tuples(*(st.integers(0, 3),) * 4),
    activation=ACTIVATIONS,
    per_channel=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_column_pair_engine_matches_tflm(
    lib: ctypes.CDLL,
    kh: int,
    kw: int,
    stride: tuple[int, int],
    dh: int,
    hw: tuple[int, int],
    c: int,
    pads: tuple[int, int, int, int],
    activation: tw.Activation,
    per_channel: bool,
    seed: int,
) -> None:
    """The layers the column-pair engine runs (kernels/rip_dw_cols_engine.h: odd kernel
    widths 3 to 7, up to seven rows, stride 1 or 2 across the row), rows up to 40 pixels
    (several tiles: 16 a tile for seven rows), channel groups and channels left over, any
    padding: out of place and in place by rows, with TFLite's requantisation and the cheap
    one, every byte TFLite Micro's."""
    try:
        geom = ConvGeometry(hw[0], hw[1], c, c, kh, kw, *stride, dh, 1, *pads)
    except LayerError:
        assume(False)
    assert kv.dw_cols_tile(kh, kw, geom.sw, geom.dw) is not None
    model = dw(seed, hw[0], hw[1], c, (kh, kw), stride, (dh, 1), explicit(geom), activation,
               1, per_channel)  # fmt: skip
    graph, op = single_op(model)
    x = random_input(graph, seed)
    expected = tflm(model, x)
    p = cp.conv_params(graph, op)
    w, bias = const(graph, op, 1, "<i1"), const(graph, op, 2, "<i4")
    model_bias = None if bias is None else tuple(int(v) for v in bias)
    cheap = fast_channels(p, w.tobytes(), model_bias) is not None
    for kind in ("fast", *(("fast_rq",) if cheap else ())):
        assert run_depthwise(lib, graph, op, x, "out", seed, kind) == expected
        if geom.h_out * geom.w_out <= geom.h_in * geom.w_in:
            assert run_depthwise(lib, graph, op, x, "rows", seed, kind) == expected


@pytest.mark.parametrize("kernel", [3, 5, 7])
def test_column_pair_engine_keeps_exact_arithmetic_for_a_left_shift_group(
    lib: ctypes.CDLL, kernel: int
) -> None:
    """A layer with one channel whose multiplier has a left shift (its weights' scale over
    1.5x the output's, as MCUNet-in3's op 15 has in one of 80 channels) has no cheap twin;
    the engine then takes the cheap arithmetic for the other groups of four (its own
    proof, rip_dwc_promote) and TFLite's for that channel's group: every byte TFLite
    Micro's, out of place and in place by rows."""
    rng = np.random.default_rng(kernel)
    c, h, w = 12, 6, 19
    mb = ModelBuilder()
    s_in, s_out = 0.05, 0.1
    scales = [float(v) for v in rng.uniform(0.002, 0.02, c)]
    scales[5] = 3.1  # s_in * 3.1 / s_out = 1.55: the left shift
    weights = rng.integers(-127, 128, size=(1, kernel, kernel, c)).astype(np.int8)
    weights[..., 5] = rng.integers(-2, 3, size=(kernel, kernel))
    x = mb.activation((1, h, w, c), s_in, 3)
    wt = mb.constant_int8(weights, scales, 0, 3)
    b = mb.bias(rng.integers(-2000, 2000, size=c), s_in, scales)
    y = mb.activation((1, h, w, c), s_out, -7)
    mb.depthwise_conv2d(x, wt, b, y, padding="SAME")
    mb.inputs([x])
    mb.outputs([y])
    model = mb.to_bytes()
    graph, op = single_op(model)
    p = cp.conv_params(graph, op)
    assert p.shifts[5] > 0 and all(s < 0 for k, s in enumerate(p.shifts) if k != 5)
    bias = const(graph, op, 2, "<i4")
    model_bias = None if bias is None else tuple(int(v) for v in bias)
    assert fast_channels(p, weights.tobytes(), model_bias) is None
    xin = random_input(graph, kernel)
    expected = tflm(model, xin)
    assert run_depthwise(lib, graph, op, xin, "out", kernel, "fast") == expected
    assert run_depthwise(lib, graph, op, xin, "rows", kernel, "fast") == expected


@settings(max_examples=150, deadline=None)
@given(
    geom=layers(max_extent=9, max_channels=6, max_dilation=1),
    kind=st.sampled_from(["avg", "max"]),
    mode=st.sampled_from(["SAME", "VALID", "explicit"]),
    activation=ACTIVATIONS,
    seed=st.integers(0, 2**16),
)
def test_random_pool_matches_tflm_in_and_out_of_place(
    lib: ctypes.CDLL, geom: ConvGeometry, kind: str, mode: str, activation: tw.Activation, seed: int
) -> None:
    """SAME skips padded cells; PAD + VALID (pad_counts) counts them; in place at the bound."""
    if mode == "explicit":
        padding: tw.PaddingSpec = explicit(geom)
        assume(max(geom.pad_top, geom.pad_bottom) < geom.kh)
        assume(max(geom.pad_left, geom.pad_right) < geom.kw)
    else:
        padding = mode
        assume(mode == "SAME" or (geom.kh <= geom.h_in and geom.kw <= geom.w_in))
    model = pool_model(
        seed,
        kind,
        geom.h_in,
        geom.w_in,
        geom.c_in,
        (geom.kh, geom.kw),
        (geom.sh, geom.sw),
        padding,
        activation,
    )
    graph, op = single_op(model)
    x = random_input(graph, seed)
    expected = tflm(model, x)
    assert run_pool(lib, graph, op, x, None, seed) == expected
    gap = pool_bound(conv_geometry(graph, op), "dense").gap
    assert run_pool(lib, graph, op, x, gap, seed) == expected


@settings(max_examples=60, deadline=None)
@given(
    h=st.integers(1, 16),
    w=st.integers(1, 16),
    c=st.integers(1, 9),
    keep_dims=st.booleans(),
    same_quant=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_global_avg_pool_matches_tflm_mean(
    lib: ctypes.CDLL, h: int, w: int, c: int, keep_dims: bool, same_quant: bool, seed: int
) -> None:
    model = mean_model(seed, h, w, c, keep_dims, same_quant)
    graph, op = single_op(model)
    x = random_input(graph, seed)
    assert run_mean(lib, graph, op, x) == tflm(model, x)


# ---- parameters and scratch --------------------------------------------------------------------


def c_buffer_size(lib: ctypes.CDLL, kind: str, p: Any) -> int:
    """The C kernel's own ..._get_buffer_size(), the twin the operator table names for ``kind``."""
    fn = getattr(lib, spec(kind).scratch_twin)
    if kind == "CONV_2D":
        return fn(dims(p.input_dims), dims(p.filter_dims))
    if kind == "DEPTHWISE_CONV_2D":
        params = DwConvParams(p.input_offset, p.output_offset, HW(*p.stride), HW(*p.padding),
                              HW(*p.dilation), p.depth_multiplier, Act(*p.activation))  # fmt: skip
        return fn(params, dims(p.input_dims), dims(p.filter_dims), dims(p.output_dims))
    return fn(dims(p.output_dims))


def test_scratch_sizes_are_the_planners(lib: ctypes.CDLL) -> None:
    """Every kernel's get_buffer_size is requirements.scratch_bytes for its op."""
    for params, table in ((cp, CONV), (cp, DEPTHWISE), (pp, POOL), (pp, MEAN)):
        for model in table.values():
            graph, op = single_op(model(0))
            p = params.op_params(graph, op)
            assert c_buffer_size(lib, op.kind, p) == p.scratch_bytes == op_scratch_bytes(graph, op)


def test_activation_range_is_tflites() -> None:
    """CalculateActivationRangeQuantized: round(value / scale) in float32, plus zero point,
    clamped to int8."""
    q = Quant(scale=(0.1,), zero_point=(10,))
    assert activation_range("NONE", q) == (-128, 127)
    assert activation_range("RELU", q) == (10, 127)
    assert activation_range("RELU6", q) == (10, 70)
    assert activation_range("RELU_N1_TO_1", q) == (0, 20)
    q = Quant(scale=(0.02,), zero_point=(-128,))
    assert activation_range("RELU", q) == (-128, 127)
    assert activation_range("RELU6", q) == (-128, 127)  # 6 / 0.02 - 128 = 172 clamps
    with pytest.raises(ParamsError):
        activation_range("TANH", q)


def test_mean_fold_follows_tflm() -> None:
    """1 / count goes into the multiplier with floor(log2 count) bits of headroom, capped at
    32 and at 31 + shift."""
    assert pp.fold_mean_count(1 << 30, 1, 1) == (1 << 30, 1)
    assert pp.fold_mean_count(1 << 30, 1, 49) == (((1 << 30) << 5) // 49, -4)
    assert pp.fold_mean_count(1 << 30, -30, 1 << 10) == ((1 << 30) << 1 >> 10, -31)
    assert pp.fold_mean_count(1 << 30, 1, 1 << 40)[1] == 1 - 32


def test_pool_rejects_requantization() -> None:
    mb = ModelBuilder()
    x = mb.activation((1, 4, 4, 2), 0.02, 0)
    y = mb.activation((1, 2, 2, 2), 0.02, 0)
    mb.average_pool2d(x, y)
    mb.inputs([x])
    mb.outputs([y])
    graph, op = single_op(mb.to_bytes())
    pp.pool_params(graph, op)
    requantized = replace(graph.tensors[y], quant=Quant((0.03,), (0,)))
    with pytest.raises(ParamsError, match="quantization differ"):
        pp.pool_params(graph.with_(tensors={**graph.tensors, y: requantized}), op)


# ---- cross compilation and the cores themselves (QEMU) -----------------------------------------


@pytest.mark.parametrize("cpu", cb.ARM_CPUS)
def test_cross_compiles_for_the_picos(tmp_path: Path, cpu: str) -> None:
    """Both Pico cores build with -Werror; the M33 (DSP) build uses SMLAD, the M0+ one does
    not."""
    for source in cb.SPATIAL:
        obj = cb.cross_compile(cb.KERNELS / source, cpu, tmp_path / f"{source}.o")
        listing = cb.disassemble(obj)
        if source == "rip_conv2d.c" and listing is not None:
            assert ("smlad" in listing) == (cpu == "cortex-m33")


@dataclass
class Harness:
    """A C program checking kernel calls against TFLite Micro's bytes, built case by case."""

    decls: list[str]
    calls: list[str]
    arena: int = 0
    scratch: int = 0

    def array(self, ctype: str, name: str, values: Any) -> None:
        body = ",".join(str(int(v)) for v in np.asarray(values).reshape(-1))
        self.decls.append(f"static const {ctype} {name}[] = {{{body}}};")

    def weighted(
        self, prefix: str, graph: Graph, op: Operator, p: Any, x: np.ndarray, expected: bytes
    ) -> None:
        """Arrays and dims of a weighted op; the call's text uses id, fd, bd, od and q."""
        self.array("int8_t", f"{prefix}_in", x)
        self.array("int8_t", f"{prefix}_exp", np.frombuffer(expected, np.int8))
        self.array("int8_t", f"{prefix}_w", const(graph, op, 1, "<i1"))
        self.array("int32_t", f"{prefix}_b", const(graph, op, 2, "<i4"))
        if len(p.multipliers) > 1 or not isinstance(p, cp.FullyConnectedKernelParams):
            self.array("int32_t", f"{prefix}_m", p.multipliers)
            self.array("int32_t", f"{prefix}_s", p.shifts)

    def records(self, name: str, records: Any) -> None:
        """A rip_fast_channel table."""
        rows = ",".join("{" + ",".join(str(x) for x in r) + "}" for r in records)
        self.decls.append(f"static const rip_fast_channel {name}[] = {{{rows}}};")

    def packed(self, name: str, data: bytes) -> None:
        """A packed filter, 4-byte aligned as the packed kernels read it."""
        body = ",".join(str(int(v)) for v in np.frombuffer(data, np.int8))
        self.decls.append(f"static const int8_t {name}[] __attribute__((aligned(4))) = {{{body}}};")

    def source(self) -> str:
        body = "\n".join(f"    {{\n{call}\n    }}" for call in self.calls)
        return "\n".join(
            [
                '#include "rip_conv.h"\n#include "rip_pool.h"',
                *self.decls,
                f"static int8_t arena[{self.arena}] __attribute__((aligned(4)));",
                f"static int8_t scratch[{self.scratch}] __attribute__((aligned(4)));",
                "int main(void) {",
                "    const rip_context ctx = {.buf = scratch, .size = sizeof scratch};",
                "    int fails = 0;",
                body,
                "    return fails;",
                "}\n",
            ]
        )


def c_dims(d: tuple[int, ...]) -> str:
    return "{" + ", ".join(str(v) for v in d) + "}"


def weighted_dims(p: Any) -> str:
    return (
        f"const rip_dims id = {c_dims(p.input_dims)}, fd = {c_dims(p.filter_dims)}, "
        f"bd = {{{p.output_dims[3]}, 1, 1, 1}}, od = {c_dims(p.output_dims)};"
    )


# Conv layers for the harness: expanding, C_in 33 (odd, many SMLAD words plus a tail), dilated
# rectangular, strided with C_in 3 (a tail only), strided pointwise.
HARNESS_CONV = ["same_3x3_expand", "valid_wide_odd_cin", "dilated_rect", "same_s2_relu6_odd_cin",
                "pointwise_s2_project", "pointwise_odd_pixels",
                "pointwise_triples_tail", "pointwise_one_pixel", "pointwise_flash_sweeps",
                "pointwise_flash_2x2", "pointwise_flash_one_pixel"]  # fmt: skip
# cases for DSP cores only (the path they reach has none elsewhere; the M0+ machine's flash
# has no room for their filters beside the others)
HARNESS_DSP_ONLY = {"pointwise_flash_one_pixel"}


def fast_bias(graph: Graph, op: Operator, p: Any) -> tuple[int, ...]:
    """The folded bias of the _fast kernels (kernel_choice.folded_bias)."""
    bias = const(graph, op, 2, "<i4")
    model_bias = None if bias is None else tuple(int(v) for v in bias)
    return folded_bias(p, const(graph, op, 1, "<i1").tobytes(), model_bias)


def pool_dims(p: Any) -> str:
    """The dims and params of a pooling call in the harness (id, fd, od, pp)."""
    return f"""const rip_dims id = {c_dims(p.input_dims)},
                       fd = {c_dims(p.filter_dims)}, od = {c_dims(p.output_dims)};
        const rip_pool_params pp = {{{c_dims(p.stride)}, {c_dims(p.padding)},
            {c_dims(p.activation)}, {int(p.pad_counts)}, {p.pad_value}}};"""


def harness_pool(h: Harness, k: int, name: str) -> None:
    """A pooling case out of place, in place at every gap from its bound to one pixel (C bytes)
    more, and for the tight ones one byte and one word below it, which must corrupt: the M33's
    word paths keep the read-before-write order the planner's gap assumes."""
    graph, op, x, expected = load(POOL, name, 0)
    p, v = pp.pool_params(graph, op), f"pool{k}"
    gap = pool_bound(conv_geometry(graph, op), "dense").gap
    fn = "rip_avg_pool_s8" if p.kind == "AVERAGE_POOL_2D" else "rip_max_pool_s8"
    h.arena = max(h.arena, gap + p.input_dims[3] + x.size, x.size + len(expected))
    h.scratch = max(h.scratch, p.scratch_bytes)
    h.array("int8_t", f"{v}_in", x)
    h.array("int8_t", f"{v}_exp", np.frombuffer(expected, np.int8))
    calls = [
        f"""        memcpy(arena, {v}_in, sizeof {v}_in);
        fails += check("{name} out of place", {fn}(&ctx, &pp, &id, arena, &fd, &od,
                       arena + {x.size}), arena + {x.size}, {v}_exp, sizeof {v}_exp);"""
    ]
    c = p.input_dims[3]
    calls.append(f"""        for (int g = {gap}; g <= {gap + c}; ++g) {{
            memset(arena, 0x5a, sizeof arena);
            memcpy(arena + g, {v}_in, sizeof {v}_in);
            fails += check("{name} in place at a gap from its bound to one pixel more",
                           {fn}(&ctx, &pp, &id, arena + g, &fd, &od, arena), arena, {v}_exp,
                           sizeof {v}_exp);
        }}""")
    for g in (gap - 1, gap - 4) if name in POOL_TIGHT else ():
        calls.append(f"""        memset(arena, 0x5a, sizeof arena);
        memcpy(arena + {g}, {v}_in, sizeof {v}_in);
        if ({fn}(&ctx, &pp, &id, arena + {g}, &fd, &od, arena) == 0 &&
            memcmp(arena, {v}_exp, sizeof {v}_exp) == 0) {{
            sh_call(0x04, "{name} in place, gap {g}, does not corrupt\\n");
            fails += 1;
        }}""")
    h.calls.append(f"        {pool_dims(p)}\n" + "\n".join(calls))


def harness_source(dsp: bool) -> str:
    """Conv in place at the bound (its taps go through the dot product SMLAD runs on the M33),
    fully connected, channel in-place depthwise and in-place pooling, each with TFLite
    Micro's bytes for its input; for a core with ``dsp`` also `HARNESS_DSP_ONLY`."""
    h = Harness([], [])
    for k, name in enumerate(HARNESS_CONV):
        if name in HARNESS_DSP_ONLY and not dsp:
            continue
        graph, op, x, expected = load(CONV, name, k)
        p, v = cp.conv_params(graph, op), f"conv{k}"
        taps = p.filter_dims[1] * p.filter_dims[2] * p.filter_dims[3]
        gap = rip_bound(conv_geometry(graph, op), "dense", "gather", "row").gap
        h.arena = max(h.arena, gap + x.size, len(expected))
        h.scratch = max(h.scratch, p.scratch_bytes)
        h.weighted(v, graph, op, p, x, expected)
        h.calls.append(f"""        {weighted_dims(p)}
        const rip_conv_params cp = {{{p.input_offset}, {p.output_offset}, {c_dims(p.stride)},
            {c_dims(p.padding)}, {c_dims(p.dilation)}, {c_dims(p.activation)}}};
        const rip_per_channel_quant q = {{{v}_m, {v}_s}};
        memset(arena, 0x5a, sizeof arena);
        memcpy(arena + {gap}, {v}_in, sizeof {v}_in);
        fails += check("conv {name}", rip_conv2d_s8(&ctx, &cp, &q, &id, arena + {gap}, &fd,
                       {v}_w, &bd, {v}_b, &od, arena), arena, {v}_exp, sizeof {v}_exp);
        memset(arena, 0x5a, sizeof arena);
        memcpy(arena + {gap}, {v}_in, sizeof {v}_in);
        fails += check("conv fast {name}", rip_conv2d_fast_s8(&ctx, &cp, &q, &id, arena + {gap},
                       &fd, {v}_w, &bd, {v}_fb, &od, arena), arena, {v}_exp, sizeof {v}_exp);
        memset(arena, 0x5a, sizeof arena);
        memcpy(arena + {gap}, {v}_in, sizeof {v}_in);
        fails += check("conv fast rq {name}", rip_conv2d_fast_rq_s8(&ctx, &cp, {v}_ch, &id,
                       arena + {gap}, &fd, {v}_wp, &od, arena), arena, {v}_exp, sizeof {v}_exp);
        {{  /* the op's own scratch, as the planner reserves it: fewer pixels a sweep */
            const rip_context own = {{.buf = ctx.buf, .size = {p.scratch_bytes}}};
            memset(arena, 0x5a, sizeof arena);
            memcpy(arena + {gap}, {v}_in, sizeof {v}_in);
            fails += check("conv fast rq own scratch {name}", rip_conv2d_fast_rq_s8(&own, &cp,
                           {v}_ch, &id, arena + {gap}, &fd, {v}_wp, &od, arena), arena,
                           {v}_exp, sizeof {v}_exp);
#if defined(__ARM_FEATURE_DSP) /* (the M0+ machine's RAM has no room for the copies) */
            /* the filter staged in SRAM (outside the XIP window): triples again */
            static int8_t wram[sizeof {v}_wp] __attribute__((aligned(4)));
            memcpy(wram, {v}_wp, sizeof wram);
            memset(arena, 0x5a, sizeof arena);
            memcpy(arena + {gap}, {v}_in, sizeof {v}_in);
            fails += check("conv fast rq filter in SRAM {name}", rip_conv2d_fast_rq_s8(&own,
                           &cp, {v}_ch, &id, arena + {gap}, &fd, wram, &od, arena), arena,
                           {v}_exp, sizeof {v}_exp);
#endif
        }}
        memset(arena, 0x5a, sizeof arena);
        memcpy(arena + {gap}, {v}_in, sizeof {v}_in);
        fails += check("conv gemv rq {name}", rip_conv2d_gemv_rq_s8(&ctx, &cp, {v}_ch, &id,
                       arena + {gap}, &fd, {v}_wp, &od, arena), arena, {v}_exp, sizeof {v}_exp);
        {{  /* one gathered field of scratch: the M33 takes the 1 x 4 tiles, not the pairs */
            const rip_context field = {{.buf = ctx.buf, .size = {taps}}};
            memset(arena, 0x5a, sizeof arena);
            memcpy(arena + {gap}, {v}_in, sizeof {v}_in);
            fails += check("conv gemv rq one field {name}", rip_conv2d_gemv_rq_s8(&field, &cp,
                           {v}_ch, &id, arena + {gap}, &fd, {v}_wp, &od, arena), arena,
                           {v}_exp, sizeof {v}_exp);
        }}""")
        h.array("int32_t", f"{v}_fb", fast_bias(graph, op, p))
        bias = const(graph, op, 2, "<i4")
        model_bias = None if bias is None else tuple(int(v) for v in bias)
        found = fast_conv_channels(p, const(graph, op, 1, "<i1").tobytes(), model_bias)
        assert found is not None, f"{name}: the cheap requantisation is not proven"
        records, signed = found
        h.array("rip_fast_channel", f"{v}_ch", [])
        h.decls[-1] = (
            f"static const rip_fast_channel {v}_ch[] = {{"
            + ",".join("{" + ",".join(str(x) for x in r) + "}" for r in records)
            + "};"
        )
        packed = np.frombuffer(pack_filter_pairs(signed, p.output_dims[3]), np.int8)
        h.array("int8_t", f"{v}_wp", packed)
        h.decls[-1] = h.decls[-1].replace(f"{v}_wp[]", f"{v}_wp[] __attribute__((aligned(4)))")
    for k, name in enumerate(FC):
        graph, op, x, expected = load(FC, name, k)
        p, v = cp.fully_connected_params(graph, op), f"fc{k}"
        h.arena = max(h.arena, len(expected))
        h.weighted(v, graph, op, p, x, expected)
        fn = "rip_fully_connected_per_channel_s8" if p.per_channel else "rip_fully_connected_s8"
        quant = f"rip_quant q = {{{p.multipliers[0]}, {p.shifts[0]}}}"
        if p.per_channel:
            quant = f"rip_per_channel_quant q = {{{v}_m, {v}_s}}"
        h.calls.append(f"""        {weighted_dims(p)}
        const rip_fc_params fp = {{{p.input_offset}, {p.output_offset}, {c_dims(p.activation)},
                                   {p.filter_offset}}};
        const {quant};
        fails += check("fc {name}", {fn}(0, &fp, &q, &id, {v}_in, &fd, {v}_w, &bd, {v}_b, &od,
                       arena), arena, {v}_exp, sizeof {v}_exp);
        fails += check("fc packed {name}", rip_fully_connected_fast_rq_s8(0, &fp, {v}_ch, &id,
                       {v}_in, &fd, {v}_wp, &od, arena), arena, {v}_exp, sizeof {v}_exp);""")
        found = fc_records(graph, op)
        assert found is not None, f"{name}: the cheap requantisation is not proven"
        h.records(f"{v}_ch", found[0])
        h.packed(f"{v}_wp", found[1])
    # Depthwise: the reference in-place kernel; the fast one out of place (channel-vectorised
    # on the M33, per-channel planes on the M0+) and in place with one plane of scratch (the
    # planner's), four planes (channel groups of 4) and every plane (one group); the
    # row-streamed in-place kernel with exactly its formula's scratch (ring and row table).
    for k, name in enumerate(["same_3x3", "same_s2_odd_c", "dilated_relu6", "same_7x7"]):
        graph, op, x, expected = load(DEPTHWISE, name, k)
        p, v = cp.conv_params(graph, op), f"dw{k}"
        plane = p.scratch_bytes
        h.arena = max(h.arena, x.size + len(expected))
        h.scratch = max(h.scratch, plane * p.output_dims[3], rows_scratch(p))
        h.weighted(v, graph, op, p, x, expected)
        h.array("int32_t", f"{v}_fb", fast_bias(graph, op, p))
        h.array("int16_t", f"{v}_slots", rows_slots(p))
        _, kh, kw, c = p.filter_dims  # the fast kernels read the generator's packed filter
        weights = const(graph, op, 1, "<i1").tobytes()
        h.packed(f"{v}_wp", pack_depthwise_filter(weights, kh, kw, c, p.stride[1], p.dilation[1]))
        h.calls.append(f"""        {weighted_dims(p)}
        const rip_dw_conv_params dp = {{{p.input_offset}, {p.output_offset}, {c_dims(p.stride)},
            {c_dims(p.padding)}, {c_dims(p.dilation)}, 1, {c_dims(p.activation)}}};
        const rip_per_channel_quant q = {{{v}_m, {v}_s}};
        memcpy(arena, {v}_in, sizeof {v}_in);
        fails += check("depthwise {name}", rip_depthwise_conv2d_inplace_s8(&ctx, &dp, &q, &id,
                       arena, &fd, {v}_w, &bd, {v}_b, &od), arena, {v}_exp, sizeof {v}_exp);
        fails += check("depthwise fast out {name}", rip_depthwise_conv2d_fast_s8(&ctx, &dp, &q,
                       &id, {v}_in, &fd, {v}_wp, &bd, {v}_fb, &od, arena + {x.size}),
                       arena + {x.size}, {v}_exp, sizeof {v}_exp);
        const int32_t planes[3] = {{1, 4, {p.output_dims[3]}}};
        for (int i = 0; i < 3; ++i) {{
            const rip_context c1 = {{.buf = ctx.buf, .size = planes[i] * {plane}}};
            memcpy(arena, {v}_in, sizeof {v}_in);
            fails += check("depthwise fast in place {name}",
                           rip_depthwise_conv2d_inplace_fast_s8(&c1, &dp, &q, &id, arena, &fd,
                           {v}_wp, &bd, {v}_fb, &od), arena, {v}_exp, sizeof {v}_exp);
        }}
        const rip_context c2 = {{.buf = ctx.buf, .size = {rows_scratch(p)}}};
        memcpy(arena, {v}_in, sizeof {v}_in);
        fails += check("depthwise rows in place {name}",
                       rip_depthwise_conv2d_inplace_rows_fast_s8(&c2, &dp, &q, &id, arena, &fd,
                       {v}_wp, &bd, {v}_fb, &od, {v}_slots, {rows_ring(p)}), arena, {v}_exp,
                       sizeof {v}_exp);
        fails += check("depthwise fast rq out {name}", rip_depthwise_conv2d_fast_rq_s8(&ctx,
                       &dp, {v}_ch, &id, {v}_in, &fd, {v}_wp, &od, arena + {x.size}),
                       arena + {x.size}, {v}_exp, sizeof {v}_exp);
        memcpy(arena, {v}_in, sizeof {v}_in);
        fails += check("depthwise rows rq in place {name}",
                       rip_depthwise_conv2d_inplace_rows_fast_rq_s8(&c2, &dp, {v}_ch, &id,
                       arena, &fd, {v}_wp, &od, {v}_slots, {rows_ring(p)}), arena, {v}_exp,
                       sizeof {v}_exp);""")
        bias = const(graph, op, 2, "<i4")
        model_bias = None if bias is None else tuple(int(v) for v in bias)
        records = fast_channels(p, const(graph, op, 1, "<i1").tobytes(), model_bias)
        assert records is not None, f"{name}: the cheap requantisation is not proven"
        h.array("rip_fast_channel", f"{v}_ch", [])
        h.decls[-1] = (
            f"static const rip_fast_channel {v}_ch[] = {{"
            + ",".join("{" + ",".join(str(x) for x in r) + "}" for r in records)
            + "};"
        )
    for k, name in enumerate(POOL):
        harness_pool(h, k, name)
    # The 16-bit lanes of the M33's average at their limit: 255 cells all -128 (or 127) sum to
    # -32640 (32385) and round within a lane; the average of a constant is that constant.
    graph, op, _x, _expected = load(POOL, "avg_global_255_cells", 0)
    p = pp.pool_params(graph, op)
    cells = p.input_dims[1] * p.input_dims[2] * p.input_dims[3]
    h.arena = max(h.arena, cells + p.output_dims[3])
    h.calls.append(f"""        {pool_dims(p)}
        for (int v = -128; v <= 127; v += 255) {{
            int8_t want[{p.output_dims[3]}];
            memset(want, v, sizeof want);
            memset(arena, v, {cells});
            fails += check("avg pool 255 cells of one value", rip_avg_pool_s8(&ctx, &pp, &id,
                           arena, &fd, &od, arena + {cells}), arena + {cells}, want, sizeof want);
        }}""")
    return h.source()


@pytest.mark.parametrize("cpu", list(cb.MACHINES))
def test_kernels_on_the_cores_under_qemu(tmp_path: Path, cpu: str) -> None:
    """The cross-compiled kernels (on the M33 with the SMLAD dot product, which the host
    cannot run) reproduce TFLite Micro's bytes on an emulated Cortex-M33 and Cortex-M0."""
    cb.need_qemu()
    output = cb.qemu_program(harness_source(cpu == "cortex-m33"), cpu, tmp_path)
    assert "PASS" in output, output
