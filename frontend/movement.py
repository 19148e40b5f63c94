"""Parameters of the data-movement operators from their constant operands and
tensor shapes, as TFLite Micro's Prepare functions read them.

Pure functions of integers and shapes: each returns an IR params dataclass or raises
``Refused`` with the reason, which the reader turns into one line naming the file and the
operator. Every slicing operator (STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, UNPACK) becomes
``SliceParams`` (begin, stride and count per input axis), so one kernel and one view rule
serve them all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rip.core.operators import Op
from rip.frontend.ir import GatherParams, SliceParams, SpaceBatchParams, SplitParams

Shape = tuple[int, ...]


class Refused(Exception):
    """A parameter TFLite Micro (or rip) refuses; the message names it."""


def _clamp(v: int, lo: int, hi: int) -> int:
    return hi if v > hi else lo if v < lo else v


def strided_slice(
    shape: Shape,
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int],
    begin_mask: int,
    end_mask: int,
    shrink_mask: int,
    out_shape: Shape,
) -> SliceParams:
    """STRIDED_SLICE as tflite::strided_slice::StridedSliceStartForAxis / EndForAxis compute
    it (TFLite Micro passes ellipsis and new-axis masks as 0, so they are refused)."""
    rank = len(shape)
    if not len(begin) == len(end) == len(strides) == rank:
        raise Refused(f"begin/end/strides of lengths {len(begin)}/{len(end)}/{len(strides)}")
    starts, steps, counts, kept = [], [], [], []
    for k, n in enumerate(shape):
        stride = strides[k]
        if stride == 0:
            raise Refused(f"stride 0 on axis {k}")
        start = begin[k] + (n if begin[k] < 0 else 0)
        start = _clamp(start, 0, n) if stride > 0 else _clamp(start, -1, n - 1)
        if begin_mask >> k & 1:
            start = 0 if stride > 0 else n - 1
        if shrink_mask >> k & 1:
            stop = start if start >= n else start + 1
        else:
            stop = end[k] + (n if end[k] < 0 else 0)
            stop = _clamp(stop, 0, n) if stride > 0 else _clamp(stop, -1, n - 1)
            if end_mask >> k & 1:
                stop = n if stride > 0 else -1
        count = max(0, -(-(stop - start) // stride))
        starts.append(start)
        steps.append(stride)
        counts.append(count)
        if not shrink_mask >> k & 1:
            kept.append(count)
    if tuple(kept) != tuple(out_shape):
        raise Refused(f"the slice has shape {kept}, the output is {list(out_shape)}")
    return _checked(SliceParams(tuple(starts), tuple(steps), tuple(counts)), shape, out_shape)


def slice_(
    shape: Shape, begin: Sequence[int], size: Sequence[int], out_shape: Shape
) -> SliceParams:
    """SLICE: ``size`` -1 runs to the end of the axis."""
    if not len(begin) == len(size) == len(shape):
        raise Refused(f"begin/size of lengths {len(begin)}/{len(size)} for rank {len(shape)}")
    counts = tuple(n - b if s == -1 else s for n, b, s in zip(shape, begin, size, strict=True))
    for k, (n, b, c) in enumerate(zip(shape, begin, counts, strict=True)):
        if b < 0 or c < 0 or b + c > n:
            raise Refused(f"begin {b}, size {c} outside axis {k} of size {n}")
    return _checked(SliceParams(tuple(begin), (1,) * len(shape), counts), shape, out_shape)


def split(
    shape: Shape, axis: int, sizes: Sequence[int], out_shapes: Sequence[Shape]
) -> SplitParams:
    """SPLIT / SPLIT_V along ``axis`` into pieces of ``sizes`` (one -1 takes the rest)."""
    rank = len(shape)
    if not -rank <= axis < rank:
        raise Refused(f"axis {axis} out of range for rank {rank}")
    axis %= rank
    sizes = list(sizes)
    if len(sizes) != len(out_shapes):
        raise Refused(f"{len(sizes)} pieces for {len(out_shapes)} outputs")
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = shape[axis] - sum(s for s in sizes if s != -1)
    if min(sizes, default=0) < 0 or sum(sizes) != shape[axis]:
        raise Refused(f"pieces {sizes} do not split axis {axis} of size {shape[axis]}")
    slices, at = [], 0
    for size, out in zip(sizes, out_shapes, strict=True):
        counts = tuple(size if k == axis else n for k, n in enumerate(shape))
        begin = tuple(at if k == axis else 0 for k in range(rank))
        slices.append(_checked(SliceParams(begin, (1,) * rank, counts), shape, out))
        at += size
    return SplitParams(tuple(slices))


def unpack(shape: Shape, axis: int, num: int, out_shapes: Sequence[Shape]) -> SplitParams:
    """UNPACK: ``num`` slices of one along ``axis``, that axis dropped."""
    rank = len(shape)
    if not -rank <= axis < rank:
        raise Refused(f"axis {axis} out of range for rank {rank}")
    axis %= rank
    if num != shape[axis] or num != len(out_shapes):
        raise Refused(f"{num} outputs for axis {axis} of size {shape[axis]}")
    pieces = split(shape, axis, [1] * num, [(*s[:axis], 1, *s[axis:]) for s in out_shapes])
    return pieces


def _checked(p: SliceParams, shape: Shape, out_shape: Shape) -> SliceParams:
    if math.prod(p.size) != math.prod(out_shape):
        raise Refused(f"the slice has {list(p.size)} elements, the output is {list(out_shape)}")
    for k, (b, s, c) in enumerate(zip(p.begin, p.stride, p.size, strict=True)):
        if c and not (0 <= b < shape[k] and 0 <= b + (c - 1) * s < shape[k]):
            raise Refused(f"slice leaves axis {k} of size {shape[k]}")
    return p


def contiguous_offset(shape: Shape, p: SliceParams) -> int | None:
    """Element offset of the slice in its input if its elements are one contiguous run of
    the row-major input (so the output can be a view), else None.

    Contiguous iff, past some axis k, every axis is taken whole, axis k runs with stride 1
    (or takes one element), and every axis before k takes one element."""
    rank = len(shape)
    if not math.prod(p.size):
        return None
    k = rank - 1
    while k >= 0 and p.begin[k] == 0 and p.size[k] == shape[k] and p.stride[k] == 1:
        k -= 1
    if k >= 0 and p.size[k] > 1 and p.stride[k] != 1:
        return None
    if any(p.size[j] != 1 for j in range(k)):
        return None
    offset = 0
    for j in range(rank):
        offset = offset * shape[j] + p.begin[j]
    return offset


def gather(
    shape: Shape,
    axis: int,
    batch_dims: int,
    coords_shape: Shape,
    coords: Sequence[int],
    out_shape: Shape,
) -> GatherParams:
    """GATHER with constant coordinates (TFLite Micro's Gather: negative axis and batch_dims
    count from the end; every coordinate must lie inside the axis, checked here once)."""
    rank = len(shape)
    axis += rank if axis < 0 else 0
    batch_dims += len(coords_shape) if batch_dims < 0 else 0
    if not 0 <= axis < rank or not 0 <= batch_dims <= min(axis, len(coords_shape)):
        raise Refused(f"axis {axis}, batch_dims {batch_dims} for ranks {rank}, {len(coords_shape)}")
    if shape[:batch_dims] != coords_shape[:batch_dims]:
        raise Refused(f"batch axes of {list(shape)} and coordinates {list(coords_shape)} differ")
    bad = [c for c in coords if not 0 <= c < shape[axis]]
    if bad:
        raise Refused(f"coordinate {bad[0]} outside axis {axis} of size {shape[axis]}")
    want = (*shape[:axis], *coords_shape[batch_dims:], *shape[axis + 1 :])
    if want != tuple(out_shape):
        raise Refused(f"output {list(out_shape)} should be {list(want)}")
    return GatherParams(axis, batch_dims)


def space_batch(
    kind: str,
    shape: Shape,
    block: tuple[int, int],
    pads: tuple[tuple[int, int], ...],
    out_shape: Shape,
) -> SpaceBatchParams:
    """SPACE_TO_BATCH_ND (``pads`` pad H and W before the blocks move into the batch) or
    BATCH_TO_SPACE_ND (``pads`` are the crops after the batch moves back), 4-D NHWC."""
    n, h, w, c = shape
    (t, b), (left, r) = pads
    bh, bw = block
    if min(t, b, left, r) < 0:
        raise Refused(f"negative paddings {pads}")
    if kind == Op.SPACE_TO_BATCH_ND:
        if (h + t + b) % bh or (w + left + r) % bw:
            raise Refused(f"padded {h + t + b}x{w + left + r} is not a multiple of {block}")
        want = (n * bh * bw, (h + t + b) // bh, (w + left + r) // bw, c)
    else:
        if n % (bh * bw):
            raise Refused(f"batch {n} is not a multiple of {bh * bw}")
        want = (n // (bh * bw), h * bh - t - b, w * bw - left - r, c)
    if want != tuple(out_shape) or min(want) < 1:
        raise Refused(f"output {list(out_shape)} should be {list(want)}")
    return SpaceBatchParams(block, ((t, b), (left, r)))
