"""The TFLite name mapping: which builtin operator of a TFLite file is which `Op`, and how
the file spells it (its options table, its operand counts), as Vela's ``tflite_mapping.py``.

An `Op`'s value is its builtin name, so the mapping is by name (`TFLITE_OPS`); what rip
means by the op is the operator table (`rip.core.operators`). `FORMATS` holds, for every op
rip accepts, what the validator checks before anything reads the graph and the options
table the reader decodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import flatbuffers
import tflite

from rip.core.operators import SPECS, Op


@dataclass(frozen=True)
class OpFormat:
    """How a TFLite file spells an op: ``min_inputs`` to ``max_inputs`` inputs (None: any
    number), of which ``optional`` positions may be -1 (absent); its ``options`` table
    besides NONE (None: no options), which must be present when ``options_required``; one
    output unless ``multi_output`` (one per piece)."""

    min_inputs: int
    max_inputs: int | None
    options: str | None = None
    options_required: bool = False
    optional: frozenset[int] = frozenset()
    multi_output: bool = False

    def options_class(self) -> type:
        """The ``tflite`` accessor class of the options table."""
        return getattr(tflite, self.options or "")


def _f(
    lo: int,
    hi: int | None,
    options: str | None = None,
    *,
    required: bool = False,
    optional: tuple[int, ...] = (),
    multi: bool = False,
) -> OpFormat:
    return OpFormat(lo, hi, options, required, frozenset(optional), multi)


FORMATS: dict[Op, OpFormat] = {
    Op.CONV_2D: _f(2, 3, "Conv2DOptions", required=True, optional=(2,)),
    Op.DEPTHWISE_CONV_2D: _f(2, 3, "DepthwiseConv2DOptions", required=True, optional=(2,)),
    Op.FULLY_CONNECTED: _f(2, 3, "FullyConnectedOptions", optional=(2,)),
    Op.ADD: _f(2, 2, "AddOptions"),
    Op.SUB: _f(2, 2, "SubOptions"),
    Op.MUL: _f(2, 2, "MulOptions"),
    Op.AVERAGE_POOL_2D: _f(1, 1, "Pool2DOptions", required=True),
    Op.MAX_POOL_2D: _f(1, 1, "Pool2DOptions", required=True),
    Op.MEAN: _f(2, 2, "ReducerOptions"),
    Op.PAD: _f(2, 2, "PadOptions"),
    Op.RESHAPE: _f(1, 2, "ReshapeOptions"),
    Op.SQUEEZE: _f(1, 1, "SqueezeOptions"),
    Op.SOFTMAX: _f(1, 1, "SoftmaxOptions"),
    Op.LOGISTIC: _f(1, 1),
    Op.HARD_SWISH: _f(1, 1, "HardSwishOptions"),
    Op.RELU: _f(1, 1),
    Op.RELU6: _f(1, 1),
    Op.CONCATENATION: _f(1, None, "ConcatenationOptions", required=True),
    Op.RESIZE_NEAREST_NEIGHBOR: _f(2, 2, "ResizeNearestNeighborOptions"),
    Op.TRANSPOSE: _f(2, 2, "TransposeOptions"),
    Op.QUANTIZE: _f(1, 1, "QuantizeOptions"),
    Op.DEQUANTIZE: _f(1, 1, "DequantizeOptions"),
    Op.NEG: _f(1, 1, "NegOptions"),
    Op.DIV: _f(2, 2, "DivOptions"),
    Op.SUM: _f(2, 2, "ReducerOptions"),
    Op.REDUCE_MAX: _f(2, 2, "ReducerOptions"),
    Op.REDUCE_MIN: _f(2, 2, "ReducerOptions"),
    Op.ARG_MAX: _f(2, 2, "ArgMaxOptions"),
    Op.ARG_MIN: _f(2, 2, "ArgMinOptions"),
    Op.LEAKY_RELU: _f(1, 1, "LeakyReluOptions"),
    Op.TANH: _f(1, 1),
    Op.ELU: _f(1, 1),
    Op.RSQRT: _f(1, 1),
    Op.LOG_SOFTMAX: _f(1, 1, "LogSoftmaxOptions"),
    Op.ABS: _f(1, 1, "AbsOptions"),
    Op.PRELU: _f(2, 2),
    Op.MAXIMUM: _f(2, 2, "MaximumMinimumOptions"),
    Op.MINIMUM: _f(2, 2, "MaximumMinimumOptions"),
    Op.SQUARED_DIFFERENCE: _f(2, 2, "SquaredDifferenceOptions"),
    Op.ADD_N: _f(2, None, "AddNOptions"),
    # data movement and resampling
    Op.STRIDED_SLICE: _f(4, 4, "StridedSliceOptions"),
    Op.SLICE: _f(3, 3, "SliceOptions"),
    Op.SPLIT: _f(2, 2, "SplitOptions", multi=True),
    Op.SPLIT_V: _f(3, 3, "SplitVOptions", multi=True),
    Op.PACK: _f(1, None, "PackOptions", required=True),
    Op.UNPACK: _f(1, 1, "UnpackOptions", required=True, multi=True),
    Op.EXPAND_DIMS: _f(2, 2, "ExpandDimsOptions"),
    Op.DEPTH_TO_SPACE: _f(1, 1, "DepthToSpaceOptions", required=True),
    Op.SPACE_TO_DEPTH: _f(1, 1, "SpaceToDepthOptions", required=True),
    Op.GATHER: _f(2, 2, "GatherOptions"),
    Op.PADV2: _f(2, 3, "PadV2Options", optional=(2,)),
    Op.MIRROR_PAD: _f(2, 2, "MirrorPadOptions"),
    Op.SPACE_TO_BATCH_ND: _f(3, 3, "SpaceToBatchNDOptions"),
    Op.BATCH_TO_SPACE_ND: _f(3, 3, "BatchToSpaceNDOptions"),
    Op.RESIZE_BILINEAR: _f(2, 2, "ResizeBilinearOptions"),
    Op.L2_NORMALIZATION: _f(1, 1, "L2NormOptions"),
    Op.TRANSPOSE_CONV: _f(3, 4, "TransposeConvOptions", required=True, optional=(3,)),
    Op.BATCH_MATMUL: _f(2, 2, "BatchMatMulOptions"),
    Op.SVDF: _f(5, 5, "SVDFOptions", required=True, optional=(3,)),
    Op.UNIDIRECTIONAL_SEQUENCE_LSTM: _f(
        20,
        24,
        "UnidirectionalSequenceLSTMOptions",
        required=True,
        optional=(9, 10, 11, 16, 17, 20, 21, 22, 23),
    ),
    Op.READ_VARIABLE: _f(0, 1),  # the handle, dropped by the reader (rip.frontend.stateful)
    Op.ASSIGN_VARIABLE: _f(1, 2),
}

# Builtin name -> Op, for every op of the table a TFLite file can hold (the ones rip
# accepts and the ones it refuses by name); the kinds rewrites create are not read.
TFLITE_OPS: dict[str, Op] = {op.value: op for op, s in SPECS.items() if s.made_by is None}


_BUILTIN_CODE_SLOT = 10  # OperatorCode.builtin_code (int32), the table's fourth field


def builtin_code(code: Any) -> int:
    """The builtin operator of an operator code table entry, by TFLite's own rule
    (``GetBuiltinCode``, schema_utils.cc, which TFLite Micro's op resolver calls): the
    larger of ``builtin_code`` and ``deprecated_builtin_code``. Old (v3) files fill only the
    deprecated int8 field; codes past 127 live only in ``builtin_code``. The field is read
    raw: the ``tflite`` package's ``BuiltinCode()`` returns the deprecated field whenever
    ``builtin_code`` is below 127, so two fields that disagree would name another op than
    TFLite Micro runs."""
    tab = code._tab
    slot = tab.Offset(_BUILTIN_CODE_SLOT)
    raw = tab.Get(flatbuffers.number_types.Int32Flags, slot + tab.Pos) if slot else 0
    return max(int(raw), int(code.DeprecatedBuiltinCode()))


def builtin_name(code: Any) -> str:
    """The builtin name of an operator code table entry (`builtin_code`)."""
    builtin = builtin_code(code)
    return tflite.BUILTIN_OPCODE2NAME.get(builtin, f"BUILTIN_{builtin}")


def accepted(name: str) -> Op | None:
    """The `Op` of a builtin name rip compiles, None for any other (refused) name."""
    op = TFLITE_OPS.get(name)
    return op if op is not None and SPECS[op].accepted else None
