"""Per-op in-place requirements: which input each op may overwrite and the gap it needs.

Which ops may overwrite an input is the operator table's in-place class (Appendix I,
`OpSpec.in_place`): convolution, depthwise convolution, pooling, elementwise binary ops
(add, sub, mul, maximum, minimum, squared difference, prelu, add_n), activations, L2
normalisation and nearest upsampling may overwrite one input; concatenation, reductions
(mean, sum, max, min, arg max / min), fully-connected, softmax, transpose, explicit pads and
the other data movement ops need disjoint buffers (each reads its input out of output
order: gathers, transposes, block moves, interpolation from two rows, a transposed conv's
scatter). `BOUNDS` gives the gap of each in-place op. An input may only be overwritten by
its last reader, so a tensor kept alive by a skip connection is never a candidate. Every
relation has one form: the output starts ``gap`` bytes below the input (the gap is 0 for
channel in-place, elementwise and upsampling, whose output starts where its input does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rip.allocator.planning.placement import SCRATCH, OpBuffer
from rip.allocator.planning.scratch import (
    Dims,
    fused_scratch_bytes,
    kernel_scratch_bytes,
    lean_scratch_bytes,
)
from rip.allocator.theory.bounds import (
    Bound,
    depthwise_bound,
    elementwise_bound,
    pool_bound,
    rip_bound,
    upsample_bound,
)
from rip.allocator.theory.fused import Chain, make_chain
from rip.allocator.theory.fused import fused_gap as chain_gap
from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.simulate import simulate_resize_nearest
from rip.core.errors import GraphError, LayerError
from rip.core.operators import SPECS, WINDOW_POOLS, Op
from rip.core.shapes import nearest_index_map, nhwc
from rip.core.terms import InPlaceKind, Layout, Order, Taps
from rip.frontend.fusion import FusedParams
from rip.frontend.ir import Graph, Operator, Tensor
from rip.frontend.liveness import Buffer, last_reader, lifetimes

# the per-layer bound that gave a candidate -> how its output overlays its input
KIND_OF_SCHEME = {
    "rip": InPlaceKind.RIP,
    "pool": InPlaceKind.RIP,
    "depthwise": InPlaceKind.CHANNEL,
    "upsample": InPlaceKind.REVERSE,
    "elementwise": InPlaceKind.ELEMENTWISE,
    "fused": InPlaceKind.FUSED,
}


@dataclass(frozen=True)
class InPlace:
    """``op`` may write ``output`` over ``input`` (storage ids): output offset = input
    offset - gap, the pair spanning ``workspace`` bytes while the op runs."""

    op: int
    input: int
    output: int
    gap: int
    workspace: int
    order: Order | str  # "reverse": in-place upsampling (Theorem 14)
    kind: InPlaceKind
    theorem: str


@dataclass(frozen=True)
class OpRequirement:
    index: int
    kind: Op
    inputs: tuple[int, ...]  # activation storage ids read
    output: int  # activation storage id written
    candidates: tuple[InPlace, ...]
    reason: str  # why no candidate, when there is none
    scratch_bytes: int
    # the least scratch a kernel of the same order needs (scratch.lean_scratch_bytes)
    min_scratch_bytes: int | None = None

    @property
    def least_scratch_bytes(self) -> int:
        return self.scratch_bytes if self.min_scratch_bytes is None else self.min_scratch_bytes


@dataclass(frozen=True)
class Requirements:
    ops: tuple[OpRequirement, ...]
    lifetimes: dict[int, Buffer]  # every activation's buffer, by storage id
    op_buffers: tuple[OpBuffer, ...] = ()  # each kernel's scratch, live for its op
    # False: the paper's accounting (Table 3's Buffer column): the plan holds the
    # activations alone, the scratch is left outside the arena and ``op_buffers`` is empty
    scratch_in_arena: bool = True
    cores: int = 1  # the cores inference runs on (--cores)
    # on two cores, the ops both run, each with a scratch of its own (scratch_choice.share)
    shared: frozenset[int] = frozenset()

    @property
    def scratch_bytes(self) -> int:
        """The largest per-kernel scratch buffer (Table 3's Buffer); it is a buffer of the
        arena (`op_buffers`), live for its op alone, so the arena's peak includes it."""
        return max((op.scratch_bytes for op in self.ops), default=0)

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        """Every buffer the plan places: the activations, then the op buffers."""
        return (*self.lifetimes.values(), *(b.buffer for b in self.op_buffers))

    def op_buffer(self, op: int, role: str = SCRATCH) -> OpBuffer | None:
        """Op ``op``'s buffer of ``role``, None when it has none."""
        return next((b for b in self.op_buffers if b.op == op and b.role == role), None)

    def candidates(self) -> list[InPlace]:
        return [c for op in self.ops for c in op.candidates]


def op_buffers(graph: Graph, scratch: list[int] | None = None) -> tuple[OpBuffer, ...]:
    """The scratch buffer of every op whose kernel needs one (``scratch``: each op's need,
    `op_scratch_bytes`, computed here when not given), numbered from one past the graph's
    largest tensor id in schedule order: the same ids for the same graph, whoever asks
    (the planner and the independent replay)."""
    if scratch is None:
        scratch = [op_scratch_bytes(graph, op) for op in graph.operators]
    first = max(graph.tensors, default=-1) + 1
    needs = [(i, n) for i, n in enumerate(scratch) if n > 0]
    return tuple(OpBuffer(first + j, i, n) for j, (i, n) in enumerate(needs))


def conv_geometry(graph: Graph, op: Operator) -> ConvGeometry:
    """ConvGeometry of a (grouped) CONV_2D, DEPTHWISE_CONV_2D or pooling op, checked against the
    output tensor's shape."""
    x = graph.tensors[op.inputs[0]]
    y = graph.tensors[op.outputs[0]]
    h, w, c_in = x.hwc
    h_out, w_out, c_out = y.hwc
    p = op.params
    if op.kind in WINDOW_POOLS:
        kh, kw = p.filter
        dh = dw = 1
    else:
        wshape = graph.tensors[op.inputs[1]].shape  # [O, KH, KW, I] or [1, KH, KW, C]
        kh, kw = wshape[1], wshape[2]
        dh, dw = p.dilation
    (sh, sw), pad = p.stride, p.padding
    try:
        geom = ConvGeometry(h, w, c_in, c_out, kh, kw, sh, sw, dh, dw, *pad.as_tuple())
    except LayerError as e:
        raise GraphError(f"{op.describe()}: {e}") from None
    if (geom.h_out, geom.w_out) != (h_out, w_out):
        raise GraphError(
            f"{op.describe()}: parameters give a "
            f"{geom.h_out}x{geom.w_out} output, tensor {op.outputs[0]} is {h_out}x{w_out}"
        )
    return geom


def fused_chain(graph: Graph, members: tuple[Operator, ...], residual: bool) -> Chain:
    """The theory's chain (rip.allocator.theory.fused) of ``members``; LayerError when it
    cannot be fused (e.g. padding outside Theorem 13's domain)."""
    return make_chain([(m.kind, conv_geometry(graph, m)) for m in members], residual)


def fused_gap(graph: Graph, op: Operator) -> int:
    """The gap a fused chain's output needs below its input under the fused row schedule
    (`rip.allocator.theory.fused.fused_gap`, the closed form; the replay runs the
    simulator)."""
    p: FusedParams = op.params
    return chain_gap(fused_chain(graph, p.members, p.residual is not None))


def shared_by_cores(graph: Graph, op: Operator) -> bool:
    """Whether two cores share ``op``'s work (issue 27, docs/two-cores.md): a CONV_2D of at
    least 4 output channels, split by output channel pairs over the same pixel tiles
    (rip_cores.h, rip_share_channels); a DEPTHWISE_CONV_2D of at least two groups of four
    channels, split by groups (rip_share_groups); a fused chain over a resident input, each
    row compute split by channels. Each core then needs a scratch of its own. The kernel the
    generator picks decides at last: one that cannot share runs on core 0."""
    c_out = graph.tensors[op.outputs[0]].hwc[2]
    if op.kind == Op.FUSED_CHAIN:  # every row compute split by channels (rip_fused.c)
        return op.params.source is None  # a streamed input's rows arrive on core 0
    if op.kind == Op.CONV_2D:
        return c_out >= 4
    if op.kind == Op.DEPTHWISE_CONV_2D and not depthwise_is_conv(graph, op):
        return c_out == graph.tensors[op.inputs[0]].hwc[2] and c_out >= 8
    return False


def per_cores(graph: Graph, op: Operator, one_core_bytes: int, cores: int) -> int:
    """The scratch of ``op`` on ``cores`` cores: a shared CONV_2D's one-core need once per
    core, each rounded up to 4 bytes so that the second core's starts word-aligned. A shared
    depthwise layer's is one core's: both cores share its ring of saved rows, each saving
    and reading its own channels of a slot, and its plane variant halves the buffer (or
    runs on core 0 alone where a half holds no plane). A shared fused chain's, like a
    CONV_2D's, once per core."""
    if cores == 1 or one_core_bytes == 0 or not shared_by_cores(graph, op):
        return one_core_bytes
    if not scratch_per_core(op):
        return one_core_bytes
    return cores * (-(-one_core_bytes // 4) * 4)


def scratch_per_core(op: Operator) -> bool:
    """Whether a shared op's scratch is one per core (in halves, each word-aligned): a
    CONV_2D's (widened pixels, raw fields) and a fused chain's (gathered fields, the residual
    row); a depthwise layer's ring the cores share."""
    return op.kind in (Op.CONV_2D, Op.FUSED_CHAIN)


def op_min_scratch_bytes(graph: Graph, op: Operator, cores: int = 1) -> int:
    """The least scratch any kernel that may run ``op`` needs (`scratch.lean_scratch_bytes`,
    else `op_scratch_bytes`), on each of ``cores`` cores where they share it: what the
    replay requires of an op's scratch buffer."""
    full = op_scratch_bytes(graph, op)
    if full == 0 or not (op.kind == Op.CONV_2D or depthwise_is_conv(graph, op)):
        return per_cores(graph, op, full, cores)
    _, kh, kw, c = nhwc(graph.tensors[op.inputs[1]].shape)
    lean = lean_scratch_bytes(Op.CONV_2D, (1, kh, kw, c if op.kind == Op.CONV_2D else 1))
    return per_cores(graph, op, full if lean is None else min(full, lean), cores)


def op_scratch_bytes(graph: Graph, op: Operator) -> int:
    """Scratch a kernel needs (its op buffer in the arena): `planning.scratch.kernel_scratch_bytes`
    (the formulas of the kernels' ..._get_buffer_size) on this op's dims. A 16x8 op (an
    int16 input: kernels/rip_wide.h) needs none."""
    if op.inputs and op.inputs[0] >= 0 and graph.tensors[op.inputs[0]].dtype == "int16":
        return 0
    if depthwise_is_conv(graph, op):  # the conv kernels' need, as the conv it equals runs
        _, kh, kw, _ = nhwc(graph.tensors[op.inputs[1]].shape)
        return kernel_scratch_bytes(Op.CONV_2D, (1, 1, 1, 1), (1, kh, kw, 1), (1, 1, 1, 1))
    formula = SPECS[op.kind].scratch if op.kind in SPECS else None
    if formula == "fused":
        p = op.params
        return chain_scratch_bytes(
            graph, p.members, op.outputs[0], p.residual is not None, p.source is not None
        )
    if formula is None:
        return 0  # the kernel uses no scratch (and the tensors need not be NHWC)
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if op.kind == Op.MEAN and (len(x.shape) != 4 or set(op.params.axes) != {1, 2}):
        return 0  # the reduction kernel, not the global pool: no scratch
    conv = formula in ("conv", "grouped_conv", "depthwise")
    w = nhwc(graph.tensors[op.inputs[1]].shape) if conv else (1, 1, 1, 1)
    if formula == "depthwise":
        p = op.params
        return kernel_scratch_bytes(
            op.kind, (1, *x.hwc), w, (1, *y.hwc), stride=tuple(p.stride),
            padding=(p.padding.top, p.padding.left), dilation=tuple(p.dilation),
        )  # fmt: skip
    return kernel_scratch_bytes(op.kind, (1, *x.hwc), w, (1, *y.hwc))


def chain_scratch_bytes(
    graph: Graph, members: Sequence[Operator], output: int, residual: bool, streamed: bool = False
) -> int:
    """Scratch of the fused chain of ``members`` writing tensor ``output`` (ending in a
    residual ADD when ``residual``; its input streamed in when ``streamed``):
    `planning.scratch.fused_scratch_bytes` on their dims."""
    stages: list[tuple[str, Dims, Dims]] = [
        (m.kind, (1, *graph.tensors[m.inputs[0]].hwc), nhwc(graph.tensors[m.inputs[1]].shape))
        for m in members
    ]
    return fused_scratch_bytes(stages, (1, *graph.tensors[output].hwc), residual, streamed)


# ---- the gap of each in-place op (BOUNDS) ----------------------------------------------


def _fused(graph: Graph, op: Operator, x: Tensor, y: Tensor) -> Bound:
    gap = fused_gap(graph, op)
    si, so = x.nbytes, y.nbytes
    return Bound("fused", "dense", "gather", Order.ROW, gap, max(so, gap + si),
                 y.hwc[:2], "fused row schedule (simulated)")  # fmt: skip


def _conv(graph: Graph, op: Operator, x: Tensor, y: Tensor) -> Bound:
    # The kernels gather each receptive field first and never store padding: dense
    # layout, sigma = 0. They traverse row-major over HWC tensors; column order (Sec.
    # 5.3) would need the tensors stored transposed, which no kernel does yet.
    return rip_bound(conv_geometry(graph, op), Layout.DENSE, Taps.GATHER, Order.ROW)


def _depthwise(graph: Graph, op: Operator, x: Tensor, y: Tensor) -> Bound:
    if depthwise_is_conv(graph, op):
        # one input channel, multiplier M: the CONV_2D [M, KH, KW, 1] it equals, which runs
        # on the conv kernels (codegen.kernel_choice.depthwise_as_conv), in their order
        return _conv(graph, op, x, y)
    if op.params.depth_multiplier != 1:
        raise LayerError("depth multiplier is not 1")
    return depthwise_bound(conv_geometry(graph, op))


def depthwise_is_conv(graph: Graph, op: Operator) -> bool:
    """A DEPTHWISE_CONV_2D over one input channel whose multiplier is its output channels:
    the convolution [M, KH, KW, 1] it equals, planned and run as one (in place as
    ``rip``, Theorem 13's gather order)."""
    if op.kind != Op.DEPTHWISE_CONV_2D:
        return False
    c_in, c_out = graph.tensors[op.inputs[0]].hwc[2], graph.tensors[op.outputs[0]].hwc[2]
    return c_in == 1 and op.params.depth_multiplier == c_out > 1


def _pool(graph: Graph, op: Operator, x: Tensor, y: Tensor) -> Bound:
    return pool_bound(conv_geometry(graph, op), Layout.DENSE)


def _elementwise(graph: Graph, op: Operator, x: Tensor, y: Tensor) -> Bound:
    if x.shape != y.shape and x.nbytes != y.nbytes:
        raise LayerError("it is the broadcast operand")
    return elementwise_bound(x.nbytes, y.nbytes)


def _resize_nearest(graph: Graph, op: Operator, x: Tensor, y: Tensor) -> Bound:
    (h, w, c), (ho, wo, co) = x.hwc, y.hwc
    if not (op.params.align_corners or ho % h or wo % w or ho // h != wo // w or c != co):
        return upsample_bound(h, w, c, ho // h)
    return resize_nearest_bound(graph, op)  # any ratio the simulator proves


BoundRule = Callable[[Graph, Operator, Tensor, Tensor], Bound]

# The gap of every op whose in-place class (`OpSpec.in_place`) lets it overwrite an input,
# given the input and output tensors (tests/test_operators.py checks that these are exactly
# the in-place ops).
BOUNDS: dict[Op, BoundRule] = {
    Op.CONV_2D: _conv,
    # rip_conv2d_grouped_s8 gathers all C_in channels of a field, as rip_conv2d_s8: the same
    # traversal, so the same gap (the replay simulates it, as every RIP op)
    Op.GROUPED_CONV_2D: _conv,
    Op.DEPTHWISE_CONV_2D: _depthwise,
    Op.AVERAGE_POOL_2D: _pool,
    Op.MAX_POOL_2D: _pool,
    Op.RESIZE_NEAREST_NEIGHBOR: _resize_nearest,
    Op.FUSED_CHAIN: _fused,  # strategy `fused` only (rip.frontend.fusion)
    **dict.fromkeys(
        (s.op for s in SPECS.values() if s.in_place is InPlaceKind.ELEMENTWISE), _elementwise
    ),
}


def _bound(graph: Graph, op: Operator, tid: int) -> Bound:
    """The in-place bound for op overwriting activation input ``tid``; LayerError when the
    op cannot run in place over it."""
    rule = BOUNDS.get(op.kind)
    if rule is None:
        raise LayerError(f"{op.kind} needs disjoint input and output (Appendix I)")
    return rule(graph, op, graph.tensors[tid], graph.tensors[op.outputs[0]])


def resize_nearest_bound(graph: Graph, op: Operator) -> Bound:
    """RESIZE_NEAREST_NEIGHBOR at a ratio Theorem 14 does not cover (non-integer, unequal
    per axis, align_corners, half_pixel_centers): in place from one base (gap 0, reverse
    order) only when ``simulate_resize_nearest`` runs the kernel's traversal over TFLite's
    float32 index maps without one corrupted read."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    (n, h, w, c), (_, ho, wo, co) = nhwc(x.shape), nhwc(y.shape)
    p = op.params
    if c != co or x.quant != y.quant:
        raise LayerError("nearest resizing in place keeps channels and quantization")
    ys = nearest_index_map(h, ho, p.align_corners, p.half_pixel_centers)
    xs = nearest_index_map(w, wo, p.align_corners, p.half_pixel_centers)
    if simulate_resize_nearest(n, (h, w), (ho, wo), ys, xs):
        raise LayerError("the reverse traversal reads pixels it already overwrote")
    workspace = max(x.nbytes, y.nbytes)
    return Bound("upsample", Layout.DENSE, Taps.GATHER, "reverse", 0, workspace, (ho, wo),
                 "Theorem 14 (Sec. I.1), order checked by simulate_resize_nearest")  # fmt: skip


def requirements(graph: Graph, scratch_in_arena: bool = True, cores: int = 1) -> Requirements:
    """In-place candidates, their gaps, and scratch (an op buffer each, unless
    ``scratch_in_arena`` is False: the paper's accounting), for every op of the schedule, to
    run on ``cores`` cores. Each strategy's variant picks the ops two cores share
    (scratch_choice.share), giving each a scratch per core; every gap stays: a shared op
    synchronises at lag 0, where the two-core gap is the one-core tile's (docs/two-cores.md;
    the replay simulates it)."""
    last = last_reader(graph)
    outputs = {graph.storage(t) for t in graph.outputs}
    ops = []
    for i, op in enumerate(graph.operators):
        acts = [t for t in op.inputs if t >= 0 and not graph.tensors[t].is_constant]
        out = graph.storage(op.outputs[0])
        candidates: list[InPlace] = []
        reasons: list[str] = []
        for tid in dict.fromkeys(acts):
            s = graph.storage(tid)
            if s in graph.streamed:
                reasons.append(f"input {tid} streams in (--stream-input): not in the arena")
                continue
            if last.get(s) != i:
                reasons.append(f"input {tid} is read later (skip connection)")
                continue
            if s in outputs:
                reasons.append(f"input {tid} is a graph output")
                continue
            # a slice's view shares its storage with more bytes than it has
            if any(graph.is_partial_view(t) and graph.storage(t) == s for t in acts):
                reasons.append(f"input {tid} shares tensor {s} with a view into part of it")
                continue
            if graph.tensors[tid].dtype != "int8" or graph.tensors[op.outputs[0]].dtype != "int8":
                reasons.append(f"input {tid} is not int8")
                continue
            try:
                b = _bound(graph, op, tid)
            except LayerError as e:
                reasons.append(str(e))
                continue
            kind = KIND_OF_SCHEME[b.scheme]
            candidates.append(InPlace(i, s, out, b.gap, b.workspace, b.order, kind, b.theorem))
        ops.append(
            OpRequirement(
                i,
                op.kind,
                tuple(graph.storage(t) for t in acts),
                out,
                tuple(candidates),
                "" if candidates else "; ".join(dict.fromkeys(reasons)),
                op_scratch_bytes(graph, op),
                op_min_scratch_bytes(graph, op),
            )
        )
    scratch = op_buffers(graph, [op.scratch_bytes for op in ops]) if scratch_in_arena else ()
    return Requirements(tuple(ops), lifetimes(graph), scratch, scratch_in_arena, cores)
