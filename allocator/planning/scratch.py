"""The scratch each C kernel needs: one formula, written once.

Each kernel with a scratch need has a ``..._get_buffer_size()`` twin in C (kernels/*.h);
`kernel_scratch_bytes` is the Python side of the same formulas, called by the planner
(allocator.planning.requirements: each op's scratch is a buffer of the plan, in the arena,
live for that op alone) and by the code generator (codegen, to choose a kernel variant that
fits the op's buffer and check the plan). The operator table names each op's formula
(`OpSpec.scratch`, a key of `FORMULAS`) and its C twin (`OpSpec.scratch_twin`); a test
calls every twin and compares. Dims are (n, h, w, c), as ``rip_dims``.
"""

from __future__ import annotations

from collections.abc import Callable

from rip.core import kernel_variants as kv
from rip.core.operators import SPECS, Op

Dims = tuple[int, int, int, int]

# The C twin of `depthwise_rows_scratch_bytes` (the row-streamed in-place depthwise kernel's
# own need; the planner's reservation for a depthwise op, `kernel_scratch_bytes`, includes it).
ROWS_BUFFER_SIZE_FUNCTION = "rip_depthwise_conv2d_inplace_rows_fast_s8_get_buffer_size"


def kernel_scratch_bytes(
    kind: str,
    input_dims: Dims,
    filter_dims: Dims,
    output_dims: Dims,
    *,
    stride: tuple[int, int] | None = None,
    padding: tuple[int, int] | None = None,
    dilation: tuple[int, int] | None = None,
) -> int:
    """Bytes of scratch the kernel running an op of ``kind`` needs (0 for a kind without
    a scratch formula, `OpSpec.scratch`):

    - CONV_2D, ``rip_conv2d_fast_rq_s8_get_buffer_size``: two gathered receptive fields,
      2 * KH * KW * C_in (sigma = 0, Eq. 6, for the pixel pair the generated kernels
      gather before writing; the reference rip_conv2d_s8 needs half), plus the pair widened,
      8 * K4 with K4 = KH * KW * C_in rounded up to 4 (rip_conv2d_fast_rq_s8: int32 taps on
      ARMv6-M, int16 pairs in half of it with DSP; rip_conv2d_fast_s8 uses the raw fields);
    - GROUPED_CONV_2D, ``rip_conv2d_grouped_s8_get_buffer_size``: one gathered receptive
      field over all the input's channels, KH * KW * C_in;
    - DEPTHWISE_CONV_2D, ``rip_depthwise_conv2d_scratch_get_buffer_size``: one output
      channel plane, H_out * W_out (the channel in-place kernels' minimum; out of place uses
      none, but the planner reserves it whichever runs), or, where the row-streamed in-place
      kernel applies (`depthwise_rows_apply`), the larger of that plane and the row kernel's
      ring (`depthwise_rows_scratch_bytes`), so that every in-place depthwise
      layer can run it. Needs ``stride``, ``padding`` (top, left) and ``dilation``;
    - AVERAGE_POOL_2D, MAX_POOL_2D, GLOBAL_AVERAGE_POOL (and MEAN over H and W),
      ``rip_{avg,max,global_avg}_pool_s8_get_buffer_size``: one pixel's int32 accumulators,
      4 * C.

    ``input_dims`` is used by the grouped and depthwise formulas only (the others keep
    CMSIS-NN's signature)."""
    formula = SPECS[kind].scratch if kind in SPECS else None  # type: ignore[index]
    if formula == "conv":
        return conv_scratch_bytes(filter_dims)
    if formula == "grouped_conv":
        return grouped_conv_scratch_bytes(input_dims, filter_dims)
    if formula == "depthwise":
        if stride is None or padding is None or dilation is None:
            raise ValueError("a depthwise op's scratch needs its stride, padding and dilation")
        return depthwise_scratch_bytes(input_dims, filter_dims, output_dims, stride, padding,
                                       dilation)  # fmt: skip
    if formula == "pool":
        return pool_scratch_bytes(output_dims)
    return 0


def conv_scratch_bytes(filter_dims: Dims) -> int:
    """CONV_2D's (see `kernel_scratch_bytes`): 2 * KH * KW * C_in + 8 * K4."""
    taps = filter_dims[1] * filter_dims[2] * filter_dims[3]
    return 2 * taps + 8 * (-(-taps // 4) * 4)


def lean_scratch_bytes(kind: str, filter_dims: Dims) -> int | None:
    """The least scratch of a kernel that runs an op of ``kind`` in the same order as the
    one `kernel_scratch_bytes` sizes for (so the same in-place gap holds), or None when
    there is no leaner one. CONV_2D: rip_conv2d_fast_s8, the same pixel pairs gathered
    before either is written, without the widened copy of the pair: 2 * KH * KW * C_in
    (C twin ``rip_conv2d_fast_s8_get_buffer_size``); it requantises each output the general
    way, so it runs only where the planner trims an op's scratch (scratch_choice.trim)."""
    if kind == Op.CONV_2D:
        return 2 * filter_dims[1] * filter_dims[2] * filter_dims[3]
    return None


def grouped_conv_scratch_bytes(input_dims: Dims, filter_dims: Dims) -> int:
    """A grouped CONV_2D's (rip_conv2d_grouped_s8): one receptive field over every input
    channel, KH * KW * C_in (the input's C_in, not the filter's)."""
    return filter_dims[1] * filter_dims[2] * input_dims[3]


def depthwise_scratch_bytes(
    input_dims: Dims,
    filter_dims: Dims,
    output_dims: Dims,
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
) -> int:
    """DEPTHWISE_CONV_2D's (see `kernel_scratch_bytes`): one output channel plane, or the
    row kernel's ring where it is larger and the row kernel applies."""
    plane = output_dims[1] * output_dims[2]
    if not depthwise_rows_apply(input_dims, filter_dims, output_dims):
        return plane
    rows = depthwise_rows_scratch_bytes(
        input_dims, output_dims, filter_dims[1:3], stride, padding, dilation
    )
    return max(plane, rows)


def pool_scratch_bytes(output_dims: Dims) -> int:
    """The pooling kernels' (see `kernel_scratch_bytes`): one pixel's int32 accumulators."""
    return 4 * output_dims[3]


def fused_scratch_bytes(
    stages: list[tuple[str, Dims, Dims]], output_dims: Dims, residual: bool, streamed: bool = False
) -> int:
    """Scratch of rip_fused_chain_s8 (C twin ``rip_fused_chain_s8_get_buffer_size``): the
    residual ADD's row of the last stage (W_out * C_out, rounded up to 4) when the chain
    ends in one, then the largest need of one stage. A CONV_2D stage runs the fast conv
    kernel a row at a time: rip_conv2d_fast_rq_s8's scratch (the ``CONV_2D`` formula of
    `kernel_scratch_bytes`, 8 * K4 + 2 * KH * KW * C_in, rounded up to 4; it covers
    rip_conv2d_fast_s8's, so the reservation does not depend on which one the weights
    allow), and a stage with KH > 1 whose window may wrap in a ring (every stage after the
    first; the first too when the input streams, ``streamed``), two gathered receptive
    fields in front of it (2 * KH * KW * C_in, rounded up to 4). A
    DEPTHWISE_CONV_2D stage (the row engine) needs none. ``stages`` is (kind, input dims,
    filter dims) per member in chain order (the input dims are not read: the signature of
    the other formulas)."""
    need = 0
    for j, (kind, input_dims, filter_dims) in enumerate(stages):
        if kind != Op.CONV_2D:
            continue
        _, kh, kw, c_in = filter_dims
        taps = kh * kw * c_in
        fields = _align4(2 * taps) if (j > 0 or streamed) and kh > 1 else 0
        need = max(
            need, fields + _align4(kernel_scratch_bytes(kind, input_dims, filter_dims, input_dims))
        )
    row = _align4(output_dims[2] * output_dims[3]) if residual else 0
    return row + need


def _align4(n: int) -> int:
    return (n + 3) // 4 * 4


def depthwise_rows_apply(input_dims: Dims, filter_dims: Dims, output_dims: Dims) -> bool:
    """Whether rip_depthwise_conv2d_inplace_rows_fast_s8 takes this depthwise op (its C
    checks: depth multiplier 1, one batch, KH <= 16, H_out * W_out <= H * W, H < 32768)."""
    n, h, w, c = input_dims
    _, h_out, w_out, c_out = output_dims
    return (
        n == 1
        and c_out == c == filter_dims[3]
        and filter_dims[1] <= kv.DW_ROWS_MAX_KH
        and h_out * w_out <= h * w
        and h < 32768
    )


def _clobber(i: int, w: int, w_out: int) -> int:
    """The first output row whose bytes reach input row i: (r + 1) * W_out > i * W."""
    return i * w // w_out


def _last_reader(i: int, kh: int, sh: int, ph: int, dh: int, h_out: int) -> int:
    """The last output row reading input row i, -1 if none does."""
    for ky in range(kh):
        t = i + ph - ky * dh
        if t < 0:
            break
        if t % sh == 0 and t // sh < h_out:
            return t // sh
    return -1


Cols = tuple[int, int, int, int]  # a depthwise layer's (KW, stride, left padding, dilation) in W


def _self_safe(i: int, r: int, w: int, w_out: int, cols: Cols) -> bool:
    """Whether output row r, whose bytes reach input row i first and which is its last
    reader, can read row i in place: the kernel's engine walks each channel group's pixels
    left to right, every pixel reading all its taps before storing its bytes, so a read
    goes wrong only when it wants a byte an earlier pixel x < x' of the same row has stored
    (pixel x of row r sits on input pixel r * W_out + x - i * W of row i, channel for
    channel). Never at unit stride with left padding (a pixel reads its left neighbour's
    column); always with none and W_out == W (every tap at or right of the pixel), e.g. a
    1-D (W = 1) layer."""
    kw, sw, pw, dw = cols
    for x2 in range(w_out):
        for kx in range(kw):
            ix = x2 * sw - pw + kx * dw
            if 0 <= ix < w and 0 <= i * w + ix - r * w_out < x2:
                return False
    return True


def depthwise_saved_rows(
    h: int,
    w: int,
    h_out: int,
    w_out: int,
    kh: int,
    sh: int,
    ph: int,
    dh: int,
    cols: Cols | None = None,
) -> list[tuple[int, int, int]]:
    """The input rows the row-streamed in-place depthwise kernel copies into its ring, in
    save order: (row, the output row before which it is saved, its last reader). A row is
    saved when an output row after the first one its bytes reach still reads it, or when
    that first one is its last reader but reads it at a byte an earlier pixel of that row
    has stored (`_self_safe`, which needs the layer's ``cols``; without them every row that
    row or a later one reads is saved, the conservative schedule)."""
    saved = []
    for i in range(h):
        r = _clobber(i, w, w_out)
        last = _last_reader(i, kh, sh, ph, dh, h_out)
        if r >= h_out or last < r:
            continue
        if last == r and cols is not None and _self_safe(i, r, w, w_out, cols):
            continue
        saved.append((i, r, last))
    return saved


def depthwise_ring_rows(
    h: int,
    w: int,
    h_out: int,
    w_out: int,
    kh: int,
    sh: int,
    ph: int,
    dh: int,
    cols: Cols | None = None,
) -> int:
    """Ring slots of rip_depthwise_conv2d_inplace_rows_fast_s8: the schedule counted (the
    widest window, in save order, from the first saved row some output >= r still reads to
    the last row saved before output row r), as the C kernel counts it."""
    return _ring_of(depthwise_saved_rows(h, w, h_out, w_out, kh, sh, ph, dh, cols), h_out)


def _ring_of(saved: list[tuple[int, int, int]], h_out: int) -> int:
    """The ring slots a save schedule needs (`depthwise_ring_rows`)."""
    ring = live = done = 0
    for r in range(h_out):
        while done < len(saved) and saved[done][1] <= r:
            done += 1
        while live < done and saved[live][2] < r:
            live += 1
        ring = max(ring, done - live)
    return ring


def depthwise_ring_slots(
    h: int,
    w: int,
    h_out: int,
    w_out: int,
    kh: int,
    sh: int,
    ph: int,
    dh: int,
    cols: Cols | None = None,
) -> tuple[int, ...]:
    """The schedule the generator bakes into a call of the row-streamed in-place depthwise
    kernel: per input row, the ring slot it is copied into (the FIFO's next, save index
    modulo `depthwise_ring_rows`), -1 for a row never saved."""
    return depthwise_ring_schedule(h, w, h_out, w_out, kh, sh, ph, dh, cols)[1]


def depthwise_ring_schedule(
    h: int,
    w: int,
    h_out: int,
    w_out: int,
    kh: int,
    sh: int,
    ph: int,
    dh: int,
    cols: Cols | None = None,
) -> tuple[int, tuple[int, ...]]:
    """`depthwise_ring_rows` and `depthwise_ring_slots` from one save schedule."""
    saved = depthwise_saved_rows(h, w, h_out, w_out, kh, sh, ph, dh, cols)
    ring = _ring_of(saved, h_out)
    slots = [-1] * h
    for n, (i, _, _) in enumerate(saved):
        slots[i] = n % ring
    return ring, tuple(slots)


def depthwise_rows_scratch_bytes(
    input_dims: Dims,
    output_dims: Dims,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
) -> int:
    """Scratch of rip_depthwise_conv2d_inplace_rows_fast_s8 (C twin
    ``ROWS_BUFFER_SIZE_FUNCTION``): its ring, `depthwise_ring_rows` rows of W * C bytes each
    (the slot of each row is baked into the call, `depthwise_ring_slots`). ``padding`` is
    (top, left), as the kernel's params."""
    _, h, w, c = input_dims
    _, h_out, w_out, _ = output_dims
    cols = (kernel[1], stride[1], padding[1], dilation[1])
    rows = depthwise_ring_rows(
        h, w, h_out, w_out, kernel[0], stride[0], padding[0], dilation[0], cols
    )
    return rows * w * c


# Each scratch formula the operator table names (`OpSpec.scratch`), by that name.
FORMULAS: dict[str, Callable[..., int]] = {
    "conv": conv_scratch_bytes,
    "grouped_conv": grouped_conv_scratch_bytes,
    "depthwise": depthwise_scratch_bytes,
    "pool": pool_scratch_bytes,
    "fused": fused_scratch_bytes,
}
