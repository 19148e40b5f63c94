"""Ops whose result is a constant, folded when the model is read (issue 28).

A converter keeps ``tf.shape`` as a SHAPE operator, often followed by a little int32 shape
arithmetic (a strided slice taking one axis, a PACK with constants) that ends in a
RESHAPE's shape input. rip's shapes are static, so SHAPE's output is its input's shape, and
every data-movement op whose inputs are then all constants has a constant output too: the
reader evaluates those ops here, makes their outputs constant tensors and drops the ops,
with a note naming them. Only chains that start at a SHAPE are folded (an op on ordinary
constants is the model's own business, and the int8 ones run as kernels).

The evaluation is NumPy over the parameters the reader's own decoders read
(rip.frontend.reader.DECODERS), so a folded slice means what a compiled slice means.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rip.core.operators import Op
from rip.frontend.ir import ConcatParams, GatherParams, PackParams, SliceParams

# The data-movement ops a SHAPE chain may run through (besides SHAPE itself).
FOLDABLE: frozenset[Op] = frozenset(
    (
        Op.STRIDED_SLICE,
        Op.SLICE,
        Op.PACK,
        Op.CONCATENATION,
        Op.GATHER,
        Op.RESHAPE,
        Op.SQUEEZE,
        Op.EXPAND_DIMS,
    )
)
INDEX_DTYPES = {"int32": "<i4", "int64": "<i8"}  # what SHAPE and its arithmetic may hold


def shape_of(shape: Sequence[int], dtype: str) -> bytes:
    """SHAPE's output: the input's (static) shape as a vector of ``dtype``."""
    return np.asarray(shape, dtype=INDEX_DTYPES[dtype]).tobytes()


def evaluate(
    kind: Op, params: object, inputs: Sequence[np.ndarray], out_shape: Sequence[int]
) -> np.ndarray:
    """The output of one FOLDABLE op on constant ``inputs`` (its data inputs, in order),
    given the parameters its reader decoder returned."""
    x = inputs[0]
    if isinstance(params, SliceParams):  # STRIDED_SLICE, SLICE
        steps = zip(params.begin, params.stride, params.size, strict=True)
        index = np.ix_(*(b + s * np.arange(n) for b, s, n in steps))
        y = x[index]
    elif kind == Op.PACK and isinstance(params, PackParams):
        y = np.stack(list(inputs), axis=params.axis)
    elif kind == Op.CONCATENATION and isinstance(params, ConcatParams):
        y = np.concatenate(list(inputs), axis=params.axis)
    elif kind == Op.GATHER and isinstance(params, GatherParams) and params.batch_dims == 0:
        y = np.take(x, inputs[1], axis=params.axis)
    elif kind in (Op.RESHAPE, Op.SQUEEZE, Op.EXPAND_DIMS):
        y = x
    else:
        raise ValueError(f"{kind} is not folded")
    return np.asarray(y).reshape(tuple(out_shape))
