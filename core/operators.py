"""The operator table: every op kind rip knows, as one enum member and one frozen row that
every stage reads (Arm Vela's ``Op`` enum with its ``OperatorInfo``).

`Op` is a `rip.core.terms.Word`: a member equals its TFLite builtin name (``Op.CONV_2D ==
"CONV_2D"``), so messages, JSON and reports keep the plain names. Besides the builtins rip
compiles it holds the kinds the rewrites create (``GLOBAL_AVERAGE_POOL``, ``FUSED_CHAIN``),
the one the reader makes of a builtin (``GROUPED_CONV_2D``) and the builtins rip refuses
with a reason that names the op and what TFLite Micro does with it.

`OpSpec` is what rip itself means by an op: its `Role`, its kernel family (which names the
kernel header ``kernels/rip_<family>.h`` and the template pair
``templates/ops/<family>_{data,call}.c.j2``), its kernel function and params struct, how
its output may overlay an input (`InPlaceKind`, Appendix I) and how that gap is found,
the scratch formula and its C twin, the cost class, whether it can be a fused-chain stage.
How a TFLite file spells an op (its options table, its operand counts) is the reader's
(`rip.frontend.tflite_mapping`); each stage keys its own functions by `Op` and a test checks
that each such dispatch covers exactly the ops of its role (tests/test_operators.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rip.core.terms import InPlaceKind, Word


class Op(Word):
    """Every op kind: its value is its TFLite builtin name (or the rewrite's own name)."""

    # convolution and fully connected (kernels/rip_conv.h)
    CONV_2D = "CONV_2D"
    GROUPED_CONV_2D = "GROUPED_CONV_2D"  # a CONV_2D whose filter has C_in / groups channels
    DEPTHWISE_CONV_2D = "DEPTHWISE_CONV_2D"
    FULLY_CONNECTED = "FULLY_CONNECTED"
    # pooling (kernels/rip_pool.h)
    MAX_POOL_2D = "MAX_POOL_2D"
    AVERAGE_POOL_2D = "AVERAGE_POOL_2D"
    GLOBAL_AVERAGE_POOL = "GLOBAL_AVERAGE_POOL"  # a MEAN over H and W (mean_to_global_pool)
    # reductions (kernels/rip_reduce.h)
    MEAN = "MEAN"
    SUM = "SUM"
    REDUCE_MAX = "REDUCE_MAX"
    REDUCE_MIN = "REDUCE_MIN"
    ARG_MAX = "ARG_MAX"
    ARG_MIN = "ARG_MIN"
    # elementwise (kernels/rip_elementwise.h)
    ADD = "ADD"
    SUB = "SUB"
    MUL = "MUL"
    MAXIMUM = "MAXIMUM"
    MINIMUM = "MINIMUM"
    SQUARED_DIFFERENCE = "SQUARED_DIFFERENCE"
    PRELU = "PRELU"
    ADD_N = "ADD_N"
    # activations (kernels/rip_activation.h)
    RELU = "RELU"
    RELU6 = "RELU6"
    QUANTIZE = "QUANTIZE"
    LOGISTIC = "LOGISTIC"
    TANH = "TANH"
    HARD_SWISH = "HARD_SWISH"
    SOFTMAX = "SOFTMAX"
    LOG_SOFTMAX = "LOG_SOFTMAX"
    ABS = "ABS"
    LEAKY_RELU = "LEAKY_RELU"
    ELU = "ELU"
    RSQRT = "RSQRT"
    # data movement (kernels/rip_shape.h)
    TRANSPOSE = "TRANSPOSE"
    RESIZE_NEAREST_NEIGHBOR = "RESIZE_NEAREST_NEIGHBOR"
    CONCATENATION = "CONCATENATION"
    PAD = "PAD"
    STRIDED_SLICE = "STRIDED_SLICE"
    SLICE = "SLICE"
    SPLIT = "SPLIT"
    SPLIT_V = "SPLIT_V"
    UNPACK = "UNPACK"
    PACK = "PACK"
    DEPTH_TO_SPACE = "DEPTH_TO_SPACE"
    SPACE_TO_DEPTH = "SPACE_TO_DEPTH"
    GATHER = "GATHER"
    PADV2 = "PADV2"
    MIRROR_PAD = "MIRROR_PAD"
    SPACE_TO_BATCH_ND = "SPACE_TO_BATCH_ND"
    BATCH_TO_SPACE_ND = "BATCH_TO_SPACE_ND"
    # resampling (kernels/rip_resample.h) and normalisation (kernels/rip_norm.h)
    RESIZE_BILINEAR = "RESIZE_BILINEAR"
    TRANSPOSE_CONV = "TRANSPOSE_CONV"
    L2_NORMALIZATION = "L2_NORMALIZATION"
    # batched matrix products (kernels/rip_matmul.h): attention blocks
    BATCH_MATMUL = "BATCH_MATMUL"
    # no code: aliases, views, the float boundary
    RESHAPE = "RESHAPE"
    SQUEEZE = "SQUEEZE"
    EXPAND_DIMS = "EXPAND_DIMS"
    DEQUANTIZE = "DEQUANTIZE"
    # a constant: folded when the model is read (rip.frontend.constants)
    SHAPE = "SHAPE"
    # a fused, row-streamed chain (rip.frontend.fusion; kernels/rip_fused.h)
    FUSED_CHAIN = "FUSED_CHAIN"
    # float32 islands between DEQUANTIZE and QUANTIZE (kernels/rip_float.h)
    NEG = "NEG"
    DIV = "DIV"
    # refused: TFLite Micro has no int8 kernel for these (nothing to be bit-exact with)
    L2_POOL_2D = "L2_POOL_2D"
    # recurrent layers, state kept across invokes in variable tensors (kernels/rip_svdf.h)
    SVDF = "SVDF"
    # refused: recurrent layers and resource variables, state kept across invokes
    LSTM = "LSTM"
    RNN = "RNN"
    UNIDIRECTIONAL_SEQUENCE_LSTM = "UNIDIRECTIONAL_SEQUENCE_LSTM"
    UNIDIRECTIONAL_SEQUENCE_RNN = "UNIDIRECTIONAL_SEQUENCE_RNN"
    BIDIRECTIONAL_SEQUENCE_LSTM = "BIDIRECTIONAL_SEQUENCE_LSTM"
    BIDIRECTIONAL_SEQUENCE_RNN = "BIDIRECTIONAL_SEQUENCE_RNN"
    VAR_HANDLE = "VAR_HANDLE"
    READ_VARIABLE = "READ_VARIABLE"
    ASSIGN_VARIABLE = "ASSIGN_VARIABLE"
    CALL_ONCE = "CALL_ONCE"


class Role(Word):
    """What becomes of an op between the reader and the code."""

    KERNEL = "kernel"  # runs its family's C kernel (rip.codegen.lowerings)
    ALIAS = "alias"  # its output is its input's bytes: an alias, no code (alias_reshapes)
    VIEW = "view"  # a view into its input, no code (alias_views)
    INTERFACE = "interface"  # only at the float boundary, removed there (strip_interface)
    FOLDED = "folded"  # accepted only where a rewrite folds it away (fold_space_batch)
    REFUSED = "refused"  # known so that its refusal can say why


class CostClass(Word):
    """The cost model's class of an op (allocator.planning.cost_model; cost_model.json is
    keyed by these, a 1x1 ``conv`` refined to ``conv1x1`` per layer)."""

    CONV = "conv"
    DEPTHWISE = "dw"
    FULLY_CONNECTED = "fc"
    ELEMENTWISE = "elementwise"
    POOL = "pool"
    FUSED = "fused"  # a fused chain: its members' costs plus the chain's overhead
    OTHER = "other"


@dataclass(frozen=True)
class Kernel:
    """One C kernel: its function, its params struct type and its family (the header
    ``rip_<family>.h`` and the template pair ``templates/ops/<family>_{data,call}.c.j2``)."""

    function: str
    struct: str
    family: str

    @property
    def header(self) -> str:
        return f"rip_{self.family}.h"


@dataclass(frozen=True)
class OpSpec:
    """One operator of the table (see the module docstring)."""

    op: Op
    role: Role
    family: str | None = None  # kernels/rip_<family>.h, templates/ops/<family>_*.c.j2
    # The C function and params struct it runs; with ``variants`` the default (reference)
    # one, its lowering choosing per layer among faster kernels (rip.core.kernel_variants
    # lists them with their preconditions).
    function: str | None = None
    struct: str | None = None
    variants: bool = False
    in_place: InPlaceKind | None = None  # None: output disjoint from every input
    view_when_contiguous: bool = False  # a slice whose bytes are one run becomes a view
    scratch: str | None = None  # the formula in allocator.planning.scratch (FORMULAS)
    scratch_twin: str | None = None  # its C twin, ..._get_buffer_size in kernels/*.h
    cost_class: CostClass = CostClass.OTHER
    chain_stage: bool = False  # a possible member of a fused chain (theory and fusion)
    fused_activation: bool = False  # its int8 kernel clamps to a fused RELU / RELU6
    interface: bool = False  # removed when it is the float boundary (strip_interface)
    made_by: str | None = None  # the pass that creates it (None: read from TFLite files)
    read_from: Op | None = None  # the builtin the reader reads as this kind (made_by reader)
    refusal: str | None = None  # why a REFUSED op is refused, appended to the message
    resource_variable: bool = False  # a resource variable op (rip.frontend.stateful)
    writes_indices: bool = False  # its output is int32 indices into its int8 input
    # (input dtype, output dtype) pairs its kernels run besides int8 -> int8, as TFLite
    # Micro runs them (a 16x8 or int32 interface): the reader accepts an activation of
    # another type only between ops that list it
    wide_types: tuple[tuple[str, str], ...] = ()
    # the input positions of the variable (state) tensors it updates, kept across invokes
    # in the persistent region (ir.Graph.state), not in the arena
    state_inputs: tuple[int, ...] = ()

    @property
    def header(self) -> str | None:
        return f"rip_{self.family}.h" if self.family else None

    @property
    def keeps_state(self) -> bool:
        """It updates variable (state) tensors of the persistent region."""
        return bool(self.state_inputs)

    @property
    def kernel(self) -> Kernel | None:
        """The kernel this op runs (the default one where ``variants``), None without one."""
        if self.function is None or self.struct is None or self.family is None:
            return None
        return Kernel(self.function, self.struct, self.family)

    @property
    def accepted(self) -> bool:
        """rip reads it from a TFLite file and compiles it (`rip-compile --list-ops`)."""
        return self.made_by is None and self.role is not Role.REFUSED

    @property
    def listed(self) -> bool:
        """`rip-compile --list-ops` lists it: accepted, or read from a builtin (a grouped
        CONV_2D)."""
        return self.accepted or self.read_from is not None

    @property
    def lowered(self) -> bool:
        """The code generator has a lowering for it (a kernel, or a folded op's refusal)."""
        return self.role in (Role.KERNEL, Role.FOLDED)


def _kernel(op: Op, family: str, function: str, struct: str, **fields: object) -> OpSpec:
    return OpSpec(op, Role.KERNEL, family, function, struct, **fields)  # type: ignore[arg-type]


def _no_code(op: Op, role: Role, **fields: object) -> OpSpec:
    return OpSpec(op, role, **fields)  # type: ignore[arg-type]


_RIP, _CHANNEL, _EW, _REVERSE = (
    InPlaceKind.RIP,
    InPlaceKind.CHANNEL,
    InPlaceKind.ELEMENTWISE,
    InPlaceKind.REVERSE,
)
_POOL = CostClass.POOL
# QUANTIZE between int8, int16 and int32 as TFLite Micro's Requantize runs it
_WIDE_REQUANTIZE = (
    ("int16", "int8"),
    ("int8", "int16"),
    ("int16", "int16"),
    ("int16", "int32"),
    ("int8", "int32"),
    ("int32", "int8"),
    ("int32", "int16"),
)
# int16 -> int16 with int8 weights: the 16x8 kernels (kernels/rip_wide.h)
_WIDE_16X8 = (("int16", "int16"),)
# int16 -> int16 bytes moved by the int8 movement kernels, two a value (shape_params)
_BYTES16 = _WIDE_16X8
# float32 -> float32, inside a float island (kernels/rip_float.h)
_FLOAT_ISLAND = (("float32", "float32"),)
_FLOAT_ONLY = "TFLite Micro runs it on float32 only (no int8 kernel to match)"
_NO_TFLM_RECURRENT = (
    "a recurrent layer TFLite Micro has no kernel for either; convert the model with the "
    "layer unrolled"
)
# How resource variables are named in one refusal (rip.frontend.stateful).
RESOURCE_VARIABLES = (
    "resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, initialised by "
    "CALL_ONCE): a streaming model's state across invokes, which rip keeps in its persistent "
    "region; a handle or CALL_ONCE is read only with the variables it makes"
)

_ROWS = (
    # ---- kernels/rip_conv.h: the lowering picks a fast variant per layer (kernel_choice)
    _kernel(
        Op.CONV_2D,
        "conv",
        "rip_conv2d_s8",
        "rip_conv_params",
        variants=True,
        in_place=_RIP,
        scratch="conv",
        scratch_twin="rip_conv2d_fast_rq_s8_get_buffer_size",
        cost_class=CostClass.CONV,
        chain_stage=True,
        fused_activation=True,
        wide_types=_WIDE_16X8,  # rip_conv_s16 (rip_wide.h)
    ),
    # A CONV_2D whose filter's input channels are a proper divisor of the input's: groups =
    # C_in / filter C_in (TFLite Micro's reference conv). Its own kernel gathers each field
    # over all C_in channels, as rip_conv2d_s8, so the simulator's conv gap holds for it.
    _kernel(
        Op.GROUPED_CONV_2D,
        "conv",
        "rip_conv2d_grouped_s8",
        "rip_conv_params",
        in_place=_RIP,
        scratch="grouped_conv",
        scratch_twin="rip_conv2d_grouped_s8_get_buffer_size",
        cost_class=CostClass.CONV,
        fused_activation=True,
        made_by="read_model",
        read_from=Op.CONV_2D,
    ),
    _kernel(
        Op.DEPTHWISE_CONV_2D,
        "conv",
        "rip_depthwise_conv2d_s8",
        "rip_dw_conv_params",
        variants=True,
        in_place=_CHANNEL,
        scratch="depthwise",
        scratch_twin="rip_depthwise_conv2d_scratch_get_buffer_size",
        cost_class=CostClass.DEPTHWISE,
        chain_stage=True,
        fused_activation=True,
        wide_types=_WIDE_16X8,  # rip_conv_s16 (rip_wide.h)
    ),
    _kernel(
        Op.FULLY_CONNECTED,
        "conv",
        "rip_fully_connected_s8",
        "rip_fc_params",
        variants=True,
        cost_class=CostClass.FULLY_CONNECTED,
        fused_activation=True,
        wide_types=_WIDE_16X8,  # rip_fully_connected_s16 (rip_wide.h)
    ),
    # ---- kernels/rip_pool.h
    _kernel(
        Op.MAX_POOL_2D,
        "pool",
        "rip_max_pool_s8",
        "rip_pool_params",
        in_place=_RIP,
        scratch="pool",
        scratch_twin="rip_max_pool_s8_get_buffer_size",
        cost_class=_POOL,
        chain_stage=True,
        fused_activation=True,
        wide_types=_WIDE_16X8,  # rip_pool_s16 (rip_wide.h)
    ),
    _kernel(
        Op.AVERAGE_POOL_2D,
        "pool",
        "rip_avg_pool_s8",
        "rip_pool_params",
        in_place=_RIP,
        scratch="pool",
        scratch_twin="rip_avg_pool_s8_get_buffer_size",
        cost_class=_POOL,
        chain_stage=True,
        fused_activation=True,
        wide_types=_WIDE_16X8,  # rip_pool_s16 (rip_wide.h)
    ),
    _kernel(
        Op.GLOBAL_AVERAGE_POOL,
        "pool",
        "rip_global_avg_pool_s8",
        "rip_mean_params",
        scratch="pool",
        scratch_twin="rip_global_avg_pool_s8_get_buffer_size",
        cost_class=_POOL,
        made_by="mean_to_global_pool",
    ),
    # ---- kernels/rip_reduce.h (a MEAN over H and W of NHWC runs rip_pool.h's global pool)
    _kernel(
        Op.MEAN,
        "reduce",
        "rip_reduce_sum_s8",
        "rip_reduce_params",
        variants=True,
        scratch="pool",
        scratch_twin="rip_global_avg_pool_s8_get_buffer_size",
        cost_class=_POOL,
        wide_types=_WIDE_16X8,  # rip_reduce_sum_s16
    ),
    _kernel(Op.SUM, "reduce", "rip_reduce_sum_s8", "rip_reduce_params", wide_types=_WIDE_16X8),
    _kernel(Op.REDUCE_MAX, "reduce", "rip_reduce_max_s8", "rip_reduce_params"),
    _kernel(Op.REDUCE_MIN, "reduce", "rip_reduce_min_s8", "rip_reduce_params"),
    _kernel(Op.ARG_MAX, "reduce", "rip_arg_max_s8", "rip_reduce_params", writes_indices=True),
    _kernel(Op.ARG_MIN, "reduce", "rip_arg_min_s8", "rip_reduce_params", writes_indices=True),
    # ---- kernels/rip_elementwise.h (binary ops: a _broadcast twin for general broadcasting)
    _kernel(
        Op.ADD,
        "elementwise",
        "rip_add_s8",
        "rip_add_params",
        in_place=_EW,
        cost_class=CostClass.ELEMENTWISE,
        fused_activation=True,
        wide_types=(*_FLOAT_ISLAND, *_WIDE_16X8),  # rip_add_broadcast_s16
    ),
    _kernel(
        Op.SUB,
        "elementwise",
        "rip_sub_s8",
        "rip_sub_params",
        in_place=_EW,
        cost_class=CostClass.ELEMENTWISE,
        fused_activation=True,
        wide_types=(*_FLOAT_ISLAND, *_WIDE_16X8),  # rip_sub_broadcast_s16
    ),
    _kernel(
        Op.MUL,
        "elementwise",
        "rip_mul_s8",
        "rip_mul_params",
        in_place=_EW,
        cost_class=CostClass.ELEMENTWISE,
        fused_activation=True,
        wide_types=(*_FLOAT_ISLAND, *_WIDE_16X8),  # rip_mul_broadcast_s16
    ),
    _kernel(
        Op.MAXIMUM,
        "elementwise",
        "rip_max_min_s8",
        "rip_max_min_params",
        in_place=_EW,
        wide_types=(*_FLOAT_ISLAND, *_WIDE_16X8),  # rip_max_min_broadcast_s16
    ),
    _kernel(
        Op.MINIMUM,
        "elementwise",
        "rip_max_min_s8",
        "rip_max_min_params",
        in_place=_EW,
        wide_types=(*_FLOAT_ISLAND, *_WIDE_16X8),  # rip_max_min_broadcast_s16
    ),
    _kernel(
        Op.SQUARED_DIFFERENCE,
        "elementwise",
        "rip_squared_difference_s8",
        "rip_squared_difference_params",
        in_place=_EW,
    ),
    _kernel(Op.PRELU, "elementwise", "rip_prelu_s8", "rip_prelu_params", in_place=_EW),
    _kernel(Op.ADD_N, "elementwise", "rip_add_n_s8", "rip_add_n_params", in_place=_EW),
    # ---- kernels/rip_activation.h (ABS, LEAKY_RELU, ELU, RSQRT: a 256-byte table)
    *(
        _kernel(
            op,
            "activation",
            "rip_relu_s8",
            "rip_relu_params",
            in_place=_EW,
            wide_types=_WIDE_16X8,  # rip_quantize_wide
        )
        for op in (Op.RELU, Op.RELU6)
    ),
    _kernel(
        Op.QUANTIZE,
        "activation",
        "rip_quantize_s8",
        "rip_quantize_params",
        in_place=_EW,
        interface=True,
        wide_types=(*_WIDE_REQUANTIZE, ("float32", "int8")),
    ),
    _kernel(
        Op.LOGISTIC,
        "activation",
        "rip_logistic_s8",
        "rip_logistic_params",
        in_place=_EW,
        wide_types=_WIDE_16X8,  # rip_sigmoid_s16
    ),
    _kernel(
        Op.TANH,
        "activation",
        "rip_tanh_s8",
        "rip_tanh_params",
        in_place=_EW,
        wide_types=_WIDE_16X8,  # rip_sigmoid_s16
    ),
    _kernel(
        Op.HARD_SWISH, "activation", "rip_hard_swish_s8", "rip_hard_swish_params", in_place=_EW
    ),
    _kernel(
        Op.SOFTMAX,
        "activation",
        "rip_softmax_s8",
        "rip_softmax_params",
        wide_types=(("int8", "int16"), *_WIDE_16X8),  # rip_softmax_s8_s16, rip_softmax_s16
    ),
    _kernel(Op.LOG_SOFTMAX, "activation", "rip_log_softmax_s8", "rip_log_softmax_params"),
    _kernel(Op.ABS, "activation", "rip_lut_s8", "rip_lut_params", in_place=_EW),
    _kernel(Op.LEAKY_RELU, "activation", "rip_lut_s8", "rip_lut_params", in_place=_EW),
    _kernel(Op.ELU, "activation", "rip_lut_s8", "rip_lut_params", in_place=_EW),
    _kernel(Op.RSQRT, "activation", "rip_lut_s8", "rip_lut_params", in_place=_EW),
    # ---- kernels/rip_shape.h
    _kernel(Op.TRANSPOSE, "shape", "rip_transpose_s8", "rip_transpose_params", wide_types=_BYTES16),
    _kernel(
        Op.RESIZE_NEAREST_NEIGHBOR,
        "shape",
        "rip_resize_nearest_s8",
        "rip_resize_nearest_params",
        in_place=_REVERSE,
        wide_types=_BYTES16,
    ),
    _kernel(
        Op.CONCATENATION, "shape", "rip_concatenation_s8", "rip_concat_params", wide_types=_BYTES16
    ),
    _kernel(Op.PAD, "shape", "rip_pad_s8", "rip_pad_params", wide_types=_BYTES16),
    # every slicing op is one rip_slice_s8 (begin, stride, count per axis)
    *(
        _kernel(
            op,
            "shape",
            "rip_slice_s8",
            "rip_slice_params",
            view_when_contiguous=True,
            wide_types=_BYTES16,
        )
        for op in (Op.STRIDED_SLICE, Op.SLICE, Op.SPLIT, Op.SPLIT_V, Op.UNPACK)
    ),
    _kernel(Op.PACK, "shape", "rip_concatenation_s8", "rip_concat_params", wide_types=_BYTES16),
    _kernel(Op.DEPTH_TO_SPACE, "shape", "rip_depth_space_s8", "rip_depth_space_params"),
    _kernel(Op.SPACE_TO_DEPTH, "shape", "rip_depth_space_s8", "rip_depth_space_params"),
    _kernel(Op.GATHER, "shape", "rip_gather_s8", "rip_gather_params"),
    _kernel(Op.PADV2, "shape", "rip_pad_s8", "rip_pad_params", wide_types=_BYTES16),
    _kernel(Op.MIRROR_PAD, "shape", "rip_mirror_pad_s8", "rip_mirror_pad_params"),
    # SPACE_TO_BATCH_ND -> conv -> BATCH_TO_SPACE_ND becomes a dilated conv (fold_space_batch);
    # alone they are refused by the code generator (no byte-exact kernel can be written).
    OpSpec(Op.SPACE_TO_BATCH_ND, Role.FOLDED, "shape"),
    OpSpec(Op.BATCH_TO_SPACE_ND, Role.FOLDED, "shape"),
    # ---- kernels/rip_resample.h, kernels/rip_norm.h
    _kernel(Op.RESIZE_BILINEAR, "resample", "rip_resize_bilinear_s8", "rip_resize_bilinear_params"),
    _kernel(Op.TRANSPOSE_CONV, "resample", "rip_transpose_conv_s8", "rip_transpose_conv_params"),
    # in place at gap 0 like an activation: each row is read whole before any of it is written
    _kernel(Op.L2_NORMALIZATION, "norm", "rip_l2norm_s8", "rip_l2norm_params", in_place=_EW),
    # ---- kernels/rip_matmul.h: output row i reads all of lhs row i and every rhs column,
    # so no overlay is safe without buffering a row (out of place: no in-place class)
    _kernel(Op.BATCH_MATMUL, "matmul", "rip_batch_matmul_s8", "rip_batch_matmul_params"),
    # ---- kernels/rip_svdf.h: the output is written after the whole input is read, but the
    # tensors are a few dozen bytes: out of place. Its state is no arena tensor.
    _kernel(
        Op.SVDF,
        "svdf",
        "rip_svdf_s8",
        "rip_svdf_params",
        state_inputs=(4,),
    ),
    # ---- kernels/rip_lstm.h: a whole sequence per invoke, a unit at a time (no scratch);
    # the output row of a step is written while later steps' inputs are still to be read:
    # out of place. Hidden and cell state are no arena tensors.
    _kernel(
        Op.UNIDIRECTIONAL_SEQUENCE_LSTM,
        "lstm",
        "rip_lstm",
        "rip_lstm_params",
        state_inputs=(18, 19),
        wide_types=_WIDE_16X8,
    ),
    # ---- kernels/rip_state.h: a resource variable's value copied out of or into its bytes
    # of the persistent region, where the model reads or assigns it (TFLite Micro's order)
    *(
        _kernel(
            op, "state", "rip_copy_s8", "rip_copy_params", state_inputs=(0,), resource_variable=True
        )
        for op in (Op.READ_VARIABLE, Op.ASSIGN_VARIABLE)
    ),
    # ---- kernels/rip_fused.h (strategy `fused` only)
    _kernel(
        Op.FUSED_CHAIN,
        "fused",
        "rip_fused_chain_s8",
        "rip_fused_chain",
        in_place=InPlaceKind.FUSED,
        scratch="fused",
        scratch_twin="rip_fused_chain_s8_get_buffer_size",
        cost_class=CostClass.FUSED,
        made_by="fuse",
    ),
    # ---- no code
    _no_code(Op.RESHAPE, Role.ALIAS, wide_types=(*_FLOAT_ISLAND, *_WIDE_16X8)),
    _no_code(Op.SQUEEZE, Role.ALIAS, wide_types=(*_FLOAT_ISLAND, *_WIDE_16X8)),
    _no_code(Op.EXPAND_DIMS, Role.VIEW, wide_types=(*_FLOAT_ISLAND, *_WIDE_16X8)),
    # ---- kernels/rip_float.h: a float32 island between DEQUANTIZE and QUANTIZE (a DEQUANTIZE
    # of a graph output is the float interface, removed); IEEE-exact ops only
    _kernel(
        Op.DEQUANTIZE,
        "float",
        "rip_dequantize_f32",
        "rip_float_quant_params",
        interface=True,
        wide_types=(("int8", "float32"),),
    ),
    _kernel(Op.NEG, "float", "rip_neg_f32", "rip_float_quant_params", wide_types=_FLOAT_ISLAND),
    _kernel(Op.DIV, "float", "rip_binary_f32", "rip_float_binary_params", wide_types=_FLOAT_ISLAND),
    # ---- folded by the reader with the int32 shape arithmetic after it; never reaches a
    # stage (its input's shape is static), so refused only past the reader's own checks
    _no_code(
        Op.SHAPE,
        Role.REFUSED,
        refusal="its output, the input's static shape, is folded when the model is read; "
        "this one's output type is neither int32 nor int64",
    ),
    # ---- refused
    _no_code(Op.L2_POOL_2D, Role.REFUSED, refusal=_FLOAT_ONLY),
    *(
        _no_code(op, Role.REFUSED, refusal=_NO_TFLM_RECURRENT)
        for op in (
            Op.LSTM,
            Op.RNN,
            Op.UNIDIRECTIONAL_SEQUENCE_RNN,
            Op.BIDIRECTIONAL_SEQUENCE_LSTM,
            Op.BIDIRECTIONAL_SEQUENCE_RNN,
        )
    ),
    # read only as a resource variable's handle and initialisation (rip.frontend.stateful),
    # which the reader removes
    *(
        _no_code(op, Role.REFUSED, refusal=RESOURCE_VARIABLES, resource_variable=True)
        for op in (Op.VAR_HANDLE, Op.CALL_ONCE)
    ),
)
SPECS: dict[Op, OpSpec] = {row.op: row for row in _ROWS}

# Two groups every stage asks about: the windowed convolutions (a filter tensor as input 1)
# and the windowed pools (their window in PoolParams).
CONVOLUTIONS = (Op.CONV_2D, Op.DEPTHWISE_CONV_2D)
WINDOW_POOLS = (Op.MAX_POOL_2D, Op.AVERAGE_POOL_2D)

# How the gap of each in-place class is found (allocator.planning.requirements), as
# `rip-compile --list-ops` prints it.
GAP_RULES: dict[InPlaceKind, str] = {
    InPlaceKind.RIP: "gap from its window and stride (Theorem 13, pool bound)",
    InPlaceKind.CHANNEL: "same base, one channel plane at a time (depth multiplier 1)",
    InPlaceKind.ELEMENTWISE: "gap 0, over a full-size operand",
    InPlaceKind.REVERSE: "same base, traversed backwards (Theorem 14; other ratios as simulated)",
    InPlaceKind.FUSED: "the fused chain's row schedule (fused_gap, simulated)",
}


def spec(kind: str) -> OpSpec:
    """The row of ``kind`` (an `Op`, or its name); KeyError for a kind not in the table."""
    return SPECS[kind]  # type: ignore[index]  # a name hashes and compares as its Op


def kernel_of(kind: str) -> Kernel:
    """The kernel of ``kind``'s row (`OpSpec.kernel`); KeyError when it has none."""
    kernel = spec(kind).kernel
    if kernel is None:
        raise KeyError(f"{kind} runs no kernel of its own")
    return kernel


def ops(where: Callable[[OpSpec], object] = lambda s: True) -> frozenset[Op]:
    """The ops whose row satisfies ``where`` (e.g. ``ops(lambda s: s.chain_stage)``)."""
    return frozenset(s.op for s in SPECS.values() if where(s))


def of_family(family: str) -> frozenset[Op]:
    """The ops a kernel family runs (``of_family("shape")``)."""
    return ops(lambda s: s.family == family)
