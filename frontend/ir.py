"""The graph IR: plain frozen data, produced by the reader and rewritten by small passes.

Every later stage (liveness, bounds, placement, code generation) reads these types and none
of them knows about flatbuffers.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from rip.core.operators import Op
from rip.core.shapes import nhwc
from rip.core.terms import Activation

DTYPE_BYTES = {"int8": 1, "uint8": 1, "int16": 2, "int32": 4, "int64": 8, "float32": 4, "bool": 1}


@dataclass(frozen=True)
class Quant:
    """Affine quantization: real = scale * (q - zero_point), per tensor (one entry) or per
    channel along ``axis``."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int = 0

    @property
    def per_channel(self) -> bool:
        return len(self.scale) > 1


@dataclass(frozen=True)
class Tensor:
    """A tensor of the model. ``data`` holds a constant's raw little-endian bytes, or None
    for an activation (and for a constant of a graph-only model whose buffer was emptied:
    then ``is_constant`` is still True and ``data`` is None)."""

    id: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    quant: Quant | None = None
    is_constant: bool = False
    data: bytes | None = None

    @property
    def nbytes(self) -> int:
        n = DTYPE_BYTES[self.dtype]
        for d in self.shape:
            n *= d
        return n

    @property
    def hwc(self) -> tuple[int, int, int]:
        """(H, W, C) of an NHWC activation, by ``rip.core.shapes.nhwc`` (lower ranks get ones
        prepended, as TFLite extends a shape)."""
        return nhwc(self.shape)[1:]


@dataclass(frozen=True)
class Padding:
    """Explicit padding per side, never materialized: taps outside read the zero point."""

    top: int = 0
    bottom: int = 0
    left: int = 0
    right: int = 0

    def as_tuple(self) -> tuple[int, int, int, int]:
        return self.top, self.bottom, self.left, self.right

    def __add__(self, other: Padding) -> Padding:
        return Padding(
            self.top + other.top,
            self.bottom + other.bottom,
            self.left + other.left,
            self.right + other.right,
        )


@dataclass(frozen=True)
class Conv2DParams:
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: Padding = field(default_factory=Padding)
    activation: Activation = Activation.NONE  # NONE | RELU | RELU6 | RELU_N1_TO_1


@dataclass(frozen=True)
class DepthwiseParams(Conv2DParams):
    depth_multiplier: int = 1


@dataclass(frozen=True)
class PoolParams:
    """MAX_POOL_2D / AVERAGE_POOL_2D.

    ``pad_counts`` False is TFLite's pooling: cells outside the input are skipped (not in
    the max, not in the average's divisor). True is the semantics of an explicit PAD folded
    into a VALID pool: padded cells hold the input zero point and take part like any other
    cell (the average always divides by the full filter area).
    """

    filter: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    padding: Padding = field(default_factory=Padding)
    activation: Activation = Activation.NONE
    pad_counts: bool = False


@dataclass(frozen=True)
class FullyConnectedParams:
    activation: Activation = Activation.NONE
    keep_num_dims: bool = False
    # a 16x8 layer without bias sums in int32 only when its options say its bias type is
    # int32 (TFLite Micro's requires_int32_accum); else in int64
    int32_bias_type: bool = False


@dataclass(frozen=True)
class ElementwiseParams:
    """ADD, SUB, MUL (their fused activation; any broadcast), and the option-less binary ops
    (MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, PRELU, ADD_N) read as NoParams."""

    activation: Activation = Activation.NONE


@dataclass(frozen=True)
class ConcatParams:
    axis: int = -1
    activation: Activation = Activation.NONE


@dataclass(frozen=True)
class SoftmaxParams:
    beta: float = 1.0


@dataclass(frozen=True)
class ReduceParams:
    """MEAN (over H and W together it becomes global average pooling), SUM, REDUCE_MAX,
    REDUCE_MIN over ``axes``; ARG_MAX, ARG_MIN over their one axis (``keep_dims`` False)."""

    axes: tuple[int, ...] = ()
    keep_dims: bool = False


@dataclass(frozen=True)
class LeakyReluParams:
    alpha: float = 0.0  # the float32 of LeakyReluOptions (the schema default when absent)


@dataclass(frozen=True)
class ResizeParams:
    align_corners: bool = False
    half_pixel_centers: bool = False


@dataclass(frozen=True)
class TransposeParams:
    perm: tuple[int, ...] = ()


@dataclass(frozen=True)
class PadParams:
    """An explicit PAD the rewrites could not fold (its consumer cannot absorb it).

    ``channels`` is (before, after) padding of the channel axis (NHWC axis 3), which some
    residual blocks use to widen a shortcut (Arm's MicroNet); it is never folded.
    """

    padding: Padding = field(default_factory=Padding)
    channels: tuple[int, int] = (0, 0)


# ---- data movement and resampling ---------------------------------------------------------------


@dataclass(frozen=True)
class SliceParams:
    """One output of STRIDED_SLICE, SLICE, SPLIT, SPLIT_V or UNPACK, normalized: output
    element ``i`` along input axis ``k`` is input index ``begin[k] + i * stride[k]``, for
    ``i < size[k]`` (one entry per input axis; the output shape drops shrunk axes, which
    does not move a byte)."""

    begin: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    size: tuple[int, ...] = ()


@dataclass(frozen=True)
class SplitParams:
    """SPLIT, SPLIT_V, UNPACK as read: one ``SliceParams`` per output, in output order
    (the rewrite ``split_outputs`` turns the op into one single-output op per slice)."""

    slices: tuple[SliceParams, ...] = ()


@dataclass(frozen=True)
class PackParams:
    axis: int = 0


@dataclass(frozen=True)
class BlockParams:
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH."""

    block: int = 1


@dataclass(frozen=True)
class GatherParams:
    axis: int = 0
    batch_dims: int = 0


@dataclass(frozen=True)
class MirrorPadParams:
    """MIRROR_PAD: ``pairs`` (before, after) per axis; ``symmetric`` repeats the edge."""

    pairs: tuple[tuple[int, int], ...] = ()
    symmetric: bool = False


@dataclass(frozen=True)
class PadValueParams:
    """PADV2 (and PAD of any rank the folds keep): ``pairs`` per axis, filled with ``value``
    (None: the output zero point)."""

    pairs: tuple[tuple[int, int], ...] = ()
    value: int | None = None


@dataclass(frozen=True)
class SpaceBatchParams:
    """SPACE_TO_BATCH_ND (``pads``) / BATCH_TO_SPACE_ND (``pads`` = crops), 4-D NHWC."""

    block: tuple[int, int] = (1, 1)
    pads: tuple[tuple[int, int], tuple[int, int]] = ((0, 0), (0, 0))


@dataclass(frozen=True)
class BatchMatMulParams:
    """BATCH_MATMUL: ``adj_x`` / ``adj_y`` read the left / right operand transposed (its
    last two axes swapped)."""

    adj_x: bool = False
    adj_y: bool = False


@dataclass(frozen=True)
class SvdfParams:
    """SVDF: ``rank`` filters a unit; ``state`` is the variable tensor it updates (kept in
    the persistent region, `Graph.state`, never an operator input). TFLite Micro's int8
    kernel applies no fused activation (its output is only clamped to int8), so none is
    read."""

    rank: int
    state: int


@dataclass(frozen=True)
class LstmParams:
    """UNIDIRECTIONAL_SEQUENCE_LSTM (TFLite Micro's integer LSTM, cell gate TANH):
    ``hidden`` and ``cell`` are the variable tensors it updates (inputs 18 and 19, kept in
    the persistent region, `Graph.state`; the operator's inputs hold -1 there);
    ``cell_clip`` the float clip of the cell state (0: none)."""

    time_major: bool
    cell_clip: float
    hidden: int
    cell: int


@dataclass(frozen=True)
class VariableParams:
    """READ_VARIABLE, ASSIGN_VARIABLE: ``state``, the resource variable's tensor in the
    persistent region (`Graph.state`) that it copies from or into."""

    state: int


@dataclass(frozen=True)
class NoParams:
    """Ops with no options we use: RESHAPE, LOGISTIC, HARD_SWISH, RELU, RELU6, QUANTIZE, ..."""


@dataclass(frozen=True)
class Operator:
    """One step of the schedule. ``inputs``/``outputs`` are tensor ids (-1: optional input
    absent). ``source_index`` is the operator's index in the .tflite file, for messages."""

    kind: Op  # (a name compares and hashes as its Op)
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    params: Any
    source_index: int

    def with_(self, **changes: Any) -> Operator:
        return replace(self, **changes)

    def describe(self, graph: Graph | None = None, step: int | None = None) -> str:
        """How messages name this op (``describe``); with ``graph``, also its output. A fused
        chain (rip.frontend.fusion) names its members: ``FUSED_CHAIN(CONV_2D 3 > ...)``."""
        members = getattr(self.params, "names", None)
        kind = f"{self.kind}({members()})" if callable(members) else self.kind
        if graph is None or not self.outputs:
            return describe(kind, self.source_index, step)
        out = self.outputs[0]
        name = graph.tensors[out].name if out >= 0 else None
        return describe(kind, self.source_index, step, out, name)


def describe(
    kind: str,
    index: int,
    step: int | None = None,
    output: int | None = None,
    output_name: str | None = None,
) -> str:
    """The one way a message names an operator: ``operator CONV_2D at index 3`` (its index
    in the .tflite file), then what is known of ``(step 2, output tensor 7 'conv1')``; an
    ``output`` of -1 reads ``no output tensor``. The reader calls it before a Graph exists;
    everything later calls ``Operator.describe``."""
    details = [] if step is None else [f"step {step}"]
    if output is not None:
        details.append(
            f"output tensor {output} {output_name!r}" if output >= 0 else "no output tensor"
        )
    text = f"operator {kind} at index {index}"
    return f"{text} ({', '.join(details)})" if details else text


@dataclass(frozen=True)
class Graph:
    """Subgraph 0 of a model; the operator order is the schedule.

    ``aliases`` maps a tensor to the tensor whose storage it shares (RESHAPE, SQUEEZE,
    EXPAND_DIMS, and contiguous slices); ``view_offsets`` gives the byte offset of a view
    inside the tensor it aliases (absent: 0), so a slice's bytes are a range of its input's.
    ``interface`` records boundary ops stripped from the graph, e.g.
    ``(Op.QUANTIZE, input_float_id, int8_id)``: the compiled model runs int8 inside.
    ``streamed`` names the inputs that arrive row by row (``--stream-input``): no tensor of
    the arena holds them; the fused chain that reads one keeps its rows in a ring.
    ``state`` names the variable tensors of stateful ops (SVDF): their params name them, no
    operator lists them as an input, so the liveness graph and the plan never see them.
    """

    name: str
    tensors: dict[int, Tensor]
    operators: tuple[Operator, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    aliases: dict[int, int] = field(default_factory=dict)
    view_offsets: dict[int, int] = field(default_factory=dict)
    interface: tuple[tuple[str, int, int], ...] = ()
    # inputs that stream in row by row (rip.frontend.streaming): never in the arena
    streamed: tuple[int, ...] = ()
    has_weights: bool = True
    notes: tuple[str, ...] = ()
    # variable (state) tensors, kept across invokes in the persistent region, each reset to
    # its zero point (int8) as TFLite Micro's ResetVariableTensors does; never in the arena
    state: tuple[int, ...] = ()
    # a state tensor's reset bytes where the model gives them (CALL_ONCE's constants);
    # any other is reset to its zero point
    state_init: dict[int, bytes] = field(default_factory=dict)

    def tensor(self, tid: int) -> Tensor:
        return self.tensors[tid]

    def _state_layout(self) -> tuple[dict[int, int], int]:
        """The persistent region: each state tensor's offset, in `state` order, each 4-byte
        aligned, and the region's size."""
        offsets, at = {}, 0
        for tid in self.state:
            offsets[tid] = at
            at += -(-self.tensors[tid].nbytes // 4) * 4
        return offsets, at

    def state_offsets(self) -> dict[int, int]:
        """Each state tensor's byte offset in the persistent region."""
        return self._state_layout()[0]

    @property
    def state_bytes(self) -> int:
        """The persistent region's size: every state tensor, 4-byte aligned."""
        return self._state_layout()[1]

    def storage(self, tid: int) -> int:
        """The tensor whose bytes ``tid`` lives in (follows alias chains)."""
        while tid in self.aliases:
            tid = self.aliases[tid]
        return tid

    def storage_offset(self, tid: int) -> int:
        """Byte offset of ``tid``'s bytes inside its storage tensor (0 but for views)."""
        offset = 0
        while tid in self.aliases:
            offset += self.view_offsets.get(tid, 0)
            tid = self.aliases[tid]
        return offset

    def is_partial_view(self, tid: int) -> bool:
        """True if ``tid`` is a view of only part of its storage (a slice)."""
        s = self.storage(tid)
        return self.storage_offset(tid) != 0 or self.tensors[tid].nbytes != self.tensors[s].nbytes

    def activations(self) -> list[int]:
        """Activation tensor ids in first-use order: graph inputs, then op outputs."""
        seen: list[int] = []
        for t in (*self.inputs, *(o for op in self.operators for o in op.outputs)):
            if t not in seen:
                seen.append(t)
        return seen

    def producers(self) -> dict[int, int]:
        return {o: i for i, op in enumerate(self.operators) for o in op.outputs}

    def consumers(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for i, op in enumerate(self.operators):
            for t in op.inputs:
                if t >= 0:
                    out.setdefault(t, []).append(i)
        return out

    def with_(self, **changes: Any) -> Graph:
        return replace(self, **changes)
