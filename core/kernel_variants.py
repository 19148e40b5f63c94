"""The kernel variants: every public C kernel of ``kernels/``, one row each.

A row names the C function, the family header that declares it, the TFLite op kinds it runs,
how its output may overlay its input (`InPlaceKind`, Appendix I), its scratch twin (the
``..._get_buffer_size`` function whose formula `rip.allocator.planning.scratch` shares),
and its preconditions: what the kernel refuses (``RIP_ERROR_ARGUMENT``) and when the code
generator picks it. After Arm CMSIS-NN, one public family per source file: ``header``
``rip_x.h`` is implemented by ``rip_x.c``.

`rip.codegen.kernel_choice` picks among the weighted variants by these names; the C
headers are tested against this table (``tests/test_kernel_variants.py``: every public
``rip_*`` function declared in ``kernels/*.h`` is a row, a row's scratch twin or one of
`HELPERS`, and every row's function and twin exist).

Data only: imports nothing but `rip.core`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rip.core.operators import Op
from rip.core.terms import InPlaceKind

RIP, CHANNEL, ELEMENTWISE = InPlaceKind.RIP, InPlaceKind.CHANNEL, InPlaceKind.ELEMENTWISE
REVERSE, FUSED = InPlaceKind.REVERSE, InPlaceKind.FUSED


@dataclass(frozen=True)
class KernelVariant:
    name: str  # the C function
    header: str  # the family header in kernels/ that declares it (its source: the .c)
    ops: tuple[Op, ...]  # the op kinds it runs
    in_place: tuple[InPlaceKind, ...] = ()  # how its output may overlay its input
    out_of_place: bool = True  # False: one buffer holds the input and receives the output
    scratch: str | None = None  # its ..._get_buffer_size twin (None: no scratch)
    folded_bias: bool = False  # takes bias + input_offset * sum(filter), not the model's bias
    cheap_twin: str | None = None  # its twin with the cheap requantisation (_rq)
    reference: bool = False  # TFLite's reference loop, linked against no fast kernel
    # the filter packed at compile time as the fast depthwise engine reads it, 4-byte
    # aligned (rip.codegen.kernel_choice.pack_depthwise_filter), not the model's layout
    depthwise_packed: bool = False
    # runs its core's share of an op both cores run (rip_context.share, rip_cores.h):
    # output channels split in pairs, every tile synchronised at lag 0 (issue 27)
    shares: bool = False
    preconditions: str = ""


# ---- the fast depthwise engines' traversal (kernels/rip_dw_row_engine.c) -------------------
# The column-pair engine (kernels/rip_dw_cols_engine.h) runs a row of a group of four
# channels in tiles, every column of a tile read before any of its pixels is stored; its
# widened tile is DW_COLS_TILE_WORDS words, four a column pair and kernel row. The
# generator packs the filter of a layer it runs in its layout and the simulator executes
# its tiles: both ask `dw_cols_tile`.
DW_COLS_TILE_WORDS = 320  # RIP_DWC_TILE_WORDS


def dw_cols_tile(kh: int, kw: int, sw: int, dw: int) -> int | None:
    """Output pixels a tile of the column-pair engine takes (rip_dwc_group), None where
    the engine does not run the layer (rip_dwc_covers: an odd kernel width 3 to 7, at most
    seven kernel rows, no dilation across the row, a stride of 1 or 2 across it)."""
    if kw not in (3, 5, 7) or not 1 <= kh <= 7 or dw != 1 or sw not in (1, 2):
        return None
    pairs = DW_COLS_TILE_WORDS // (4 * kh)  # column pairs a kernel row
    return 2 * ((pairs - (kw - 1) // 2) // sw)


# A whole layer a group of four channels at a time (rip_dw_plane_cols): the 3x3 and 5x5
# runs' tiles are larger, and the group order takes a row of as many columns as they hold
# (`dw_cols_plane_tile`); where a group's whole widened plane fits its run's tile, at
# `dw_cols_whole_pairs` column pairs a row, every row is widened before the group's first
# store; else, where a row is one tile, a window of kernel rows moves down the rows.
DW_COLS_PLANE3_WORDS = 540  # RIP_DWC_PLANE3_WORDS
DW_COLS_PLANE_WORDS = 448  # RIP_DWC_PLANE_WORDS
DW_COLS_PLANE7_WORDS = 392  # RIP_DWC_PLANE7_WORDS


def dw_cols_plane_words(kh: int, kw: int) -> int:
    """The words of a run's widened tile (rip_dwc_plane_words): the square 3x3, 5x5 and 7x7
    runs' larger ones, every other kernel size's DW_COLS_TILE_WORDS."""
    if kh != kw or kh not in (3, 5, 7):
        return DW_COLS_TILE_WORDS
    return {3: DW_COLS_PLANE3_WORDS, 5: DW_COLS_PLANE_WORDS, 7: DW_COLS_PLANE7_WORDS}[kh]


def dw_cols_plane_tile(kh: int, kw: int, sw: int, dw: int) -> int | None:
    """Output columns a row may have for the group order (rip_dw_plane_cols_ok: a row in
    one tile of the run's words), None where the engine does not run the layer."""
    if dw_cols_tile(kh, kw, sw, dw) is None:
        return None
    pairs = dw_cols_plane_words(kh, kw) // (4 * kh)
    return 2 * ((pairs - (kw - 1) // 2) // sw)


DW_COLS_WIDE3_PAIRS = 7  # RIP_DWC_WIDE3_PAIRS
DW_COLS_WIDE5_PAIRS = 8  # RIP_DWC_WIDE5_PAIRS
DW_COLS_WIDE5_WORDS = 480  # RIP_DWC_WIDE5_WORDS


def dw_cols_whole_pairs(kh: int, kw: int, sw: int, wide: bool = False) -> int:
    """Column pairs a row of a group's whole plane (rip_dwc_whole_pairs), 0: none. The
    narrow layout: square 3, 5 and 7 kernels, at most 6 output columns at stride 1 and 4 at
    stride 2; 3x3 at stride 2 DW_COLS_WIDE3_PAIRS (6 columns). The wide one: 3x3 at stride
    1, DW_COLS_WIDE3_PAIRS (12 columns); 5x5, DW_COLS_WIDE5_PAIRS (12 columns at stride 1,
    6 at stride 2)."""
    if kh != kw or kh not in (3, 5, 7):
        return 0
    if kh == 3 and (sw == 2 or wide):
        return 0 if sw == 2 and wide else DW_COLS_WIDE3_PAIRS
    if kh == 5 and wide:
        return DW_COLS_WIDE5_PAIRS
    return 0 if wide else (kw - 1) // 2 + (3 if sw == 1 else 4)


def dw_cols_whole_words(kh: int, wide: bool) -> int:
    """The words of a whole-plane run's tile (rip_dwc_whole_words): the 5x5 wide run's
    DW_COLS_WIDE5_WORDS, else the size's plane tile."""
    return DW_COLS_WIDE5_WORDS if wide and kh == 5 else dw_cols_plane_words(kh, kh)


def dw_cols_whole_fits(kh: int, kw: int, sh: int, sw: int, h_out: int, w_out: int) -> bool:
    """Whether a group's whole widened plane fits its run's tile in one of its layouts
    (rip_dwc_whole_of: every row the group reads, at `dw_cols_whole_pairs` column pairs a
    row, narrow or wide)."""
    ncp = sw * ((w_out + 1) // 2) + (kw - 1) // 2
    rows = (h_out - 1) * sh + kh
    for wide in (False, True):
        pairs = dw_cols_whole_pairs(kh, kw, sw, wide)
        if 0 < ncp <= pairs and rows * pairs * 4 <= dw_cols_whole_words(kh, wide):
            return True
    return False


# ARMv6-M's plane order (rip_dw_plane_cols there): a channel at a time, output rows in bands
# from a window of this many bytes holding their input rows padded with the zero point.
DW1_BAND_BYTES = 384  # RIP_DW1_BAND_BYTES
DW_STAGED_TAPS = 49  # RIP_DW4_MAX_TAPS: kernels up to 7x7 staged
DW_ROWS_MAX_KH = 16  # RIP_DW_ROWS_MAX_KH
# Kernels of at most nine taps take the order up to this many output columns at stride 1,
# and this many at stride 2 (the window's copy costs more than the row order's setup it
# saves beyond).
DW1_BAND_3X3_COLS = 64  # RIP_DW1_BAND_3X3_COLS
DW1_BAND_3X3_S2_COLS = 12  # RIP_DW1_BAND_3X3_S2_COLS


def dw1_window_row(kw: int, sw: int, dw: int, w_out: int) -> int:
    """Bytes of a row of ARMv6-M's channel-order window: the input columns an output row of
    w_out pixels reads (rip_dw_plane_cols' wb)."""
    return (w_out - 1) * sw + (kw - 1) * dw + 1


def dw1_band_rows(kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, w_out: int) -> int:
    """Output rows a band of ARMv6-M's channel order holds (rip_dw_plane_cols: the window
    holds (band - 1) * sh + reach rows of (w_out - 1) * sw + (kw - 1) * dw + 1 bytes), 0
    where the layer goes row by row: a single row's window does not fit, or a kernel of
    at most nine taps wider than DW1_BAND_3X3_COLS output columns (DW1_BAND_3X3_S2_COLS at
    stride 2 or more)."""
    wb = dw1_window_row(kw, sw, dw, w_out)
    reach = (kh - 1) * dh + 1
    if kh * kw > DW_STAGED_TAPS or kh > DW_ROWS_MAX_KH or w_out <= 0 or wb * reach > DW1_BAND_BYTES:
        return 0
    if kh * kw <= 9 and w_out > (DW1_BAND_3X3_COLS if sw == 1 else DW1_BAND_3X3_S2_COLS):
        return 0
    return (DW1_BAND_BYTES // wb - reach) // sh + 1


def dw1_group_channels(
    kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, h_out: int, w_out: int
) -> int:
    """Channels whose windows ARMv6-M's channel order gathers in one pass (rip_dw_plane_cols,
    rip_dw1_gather4): 4 where the layer is one band (`dw1_band_rows` >= h_out) and four of
    its windows fit the DW1_BAND_BYTES buffer, else 1."""
    band = dw1_band_rows(kh, kw, sh, sw, dh, dw, w_out)
    if band == 0 or band < h_out:
        return 1
    wb = dw1_window_row(kw, sw, dw, w_out)
    window = ((h_out - 1) * sh + (kh - 1) * dh + 1) * wb
    return 4 if 4 * window <= DW1_BAND_BYTES else 1


# ---- ADD's and SUB's term table (rip_add_params.terms, codegen's elementwise_params) -----
# ADD and SUB take the 512-word term table (2 KB of constant data) from this many output
# elements: it saves about 35 instructions an element on the Cortex-M33 (MCUNet-in3's ADDs
# of 30,976 elements went from 52 to 17 an element).
ADD_TERMS_MIN_ELEMENTS = 1024
ADD_TERMS_BYTES = 512 * 4


# ---- the fast CONV_2D's sweeps of its packed filter (kernels/rip_conv2d_fast.c) ---------
# rip_conv2d_fast_rq_s8 reads its whole packed filter once per tile of output pixels. On
# DSP cores a layer takes triples, or, a pointwise one where the packed filter is larger
# than the flash cache can hold (the Picos' 16 KB XIP cache), as many pixels as its scratch
# holds widened (2 * K4 bytes each); other cores take pairs. Flash-aware execution
# (allocator/planning/staging.py) estimates the sweeps it saves with `conv_sweep_pixels`.
CONV_SWEEP_CACHE_BYTES = 16384  # RIP_RQ_SWEEP_CACHE_BYTES
DSP_CORES = frozenset({"cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55"})  # SMLAD


def conv_sweep_pixels(core: str, pointwise: bool, c_out: int, taps: int, scratch: int) -> int:
    """Output pixels rip_conv2d_fast_rq_s8 takes per sweep of its packed filter
    (rip_rq_sweep_pixels on DSP cores, pairs elsewhere) on ``core``, for a layer of
    ``c_out`` channels of ``taps`` taps with ``scratch`` bytes of scratch."""
    if core not in DSP_CORES:
        return 2
    k4 = -(-taps // 4) * 4
    if pointwise and (c_out + c_out % 2) * k4 > CONV_SWEEP_CACHE_BYTES:
        return max(scratch // (2 * k4), 3)
    return 3


def conv_sweep_tiles(n_pix: int, per_sweep: int) -> tuple[int, ...]:
    """The pixel tiles, in order, of rip_conv2d_fast_rq_s8 on a DSP core over ``n_pix``
    pixels taking ``per_sweep`` a sweep (`conv_sweep_pixels`): triples and then a pair or a
    lone pixel where it is 3; above (pointwise only), the fewest sweeps, balanced (rip_rq_run).
    Each tile's pixels are all read before any of them is written."""
    if per_sweep <= 3:
        return (3,) * (n_pix // 3) + ((n_pix % 3,) if n_pix % 3 else ())
    tiles, left = [], n_pix
    while left >= 2:
        sweeps = -(-left // per_sweep)
        tiles.append(-(-left // sweeps))
        left -= tiles[-1]
    return (*tiles, *((left,) if left else ()))


def _cheap(exact: KernelVariant) -> KernelVariant:
    """The ``_rq`` twin of an exact variant: its traversal, scratch and in-place contract
    with the cheap requantisation, rip_fast_channel records in place of the bias and quant."""
    if exact.cheap_twin is None:
        raise ValueError(f"{exact.name} names no cheap twin")
    return replace(
        exact,
        name=exact.cheap_twin,
        cheap_twin=None,
        preconditions=f"{exact.name}'s, with the cheap requantisation proven for every channel "
        "(rip_fast_channel records)",
    )


# ---- CONV_2D (rip_conv2d*.h) -------------------------------------------------------------

CONV2D = KernelVariant(
    "rip_conv2d_s8",
    "rip_conv2d.h",
    (Op.CONV_2D,),
    (RIP,),
    scratch="rip_conv2d_s8_get_buffer_size",
    reference=True,
    preconditions="one gathered receptive field of scratch; output pixels in row-major order, "
    "each field gathered before its channels are written (gap >= the per-pixel gather gap); "
    "the generator's reference, never chosen",
)
CONV2D_FAST = KernelVariant(
    "rip_conv2d_fast_s8",
    "rip_conv2d_fast.h",
    (Op.CONV_2D, Op.DEPTHWISE_CONV_2D),
    (RIP,),
    scratch="rip_conv2d_fast_s8_get_buffer_size",
    folded_bias=True,
    cheap_twin="rip_conv2d_fast_rq_s8",
    preconditions="a bias (folded); two gathered receptive fields of scratch; pixel pairs "
    "gathered before either is written (the simulator's tile=2, gap <= the per-pixel gap): "
    "every CONV_2D whose cheap requantisation is not proven, and a DEPTHWISE_CONV_2D over one "
    "input channel (the CONV_2D it equals, out of place) whose scratch holds two fields",
)
CONV2D_FAST_RQ = KernelVariant(
    "rip_conv2d_fast_rq_s8",
    "rip_conv2d_fast.h",
    (Op.CONV_2D, Op.DEPTHWISE_CONV_2D),
    (RIP,),
    scratch="rip_conv2d_fast_rq_s8_get_buffer_size",
    folded_bias=True,
    shares=True,
    preconditions="rip_conv2d_fast_s8's traversal (on DSP cores triples, or for a pointwise "
    "layer the flash sweeps of conv_sweep_tiles); the cheap requantisation proven for every "
    "channel (rip_fast_channel records); the filter packed in channel pairs, 4-byte aligned, "
    "as is the scratch (the pair widened, then two fields): almost every CONV_2D, and a "
    "one-channel DEPTHWISE_CONV_2D whose reserved scratch holds the widened pair",
)
CONV2D_GEMV_RQ = KernelVariant(
    "rip_conv2d_gemv_rq_s8",
    "rip_conv2d_gemv.h",
    (Op.CONV_2D, Op.DEPTHWISE_CONV_2D),
    (RIP,),
    scratch="rip_conv2d_s8_get_buffer_size",
    folded_bias=True,
    preconditions="rip_conv2d_fast_rq_s8's records and packed filter, one gathered field of "
    "scratch (rip_conv2d_s8's contract; with DSP, a filter streaming from flash, "
    "rip_rq_streams, is swept pair by pair in address order where the scratch also holds the "
    "field widened, 2 * K4 bytes word-aligned after it): a CONV_2D of one output pixel, and "
    "a one-channel DEPTHWISE_CONV_2D whose reserved scratch holds one receptive field but not "
    "the widened pixel pair",
)

CONV2D_GROUPED = KernelVariant(
    "rip_conv2d_grouped_s8",
    "rip_conv2d_grouped.h",
    (Op.GROUPED_CONV_2D,),
    (RIP,),
    scratch="rip_conv2d_grouped_s8_get_buffer_size",
    reference=True,
    preconditions="C_in a multiple of the filter's channels, C_out of the groups; one gathered "
    "receptive field over all C_in channels of scratch; rip_conv2d_s8's traversal and in-place "
    "contract (gap >= the per-pixel gather gap): every grouped CONV_2D",
)

# ---- DEPTHWISE_CONV_2D (rip_depthwise*.h) --------------------------------------------------

DEPTHWISE = KernelVariant(
    "rip_depthwise_conv2d_s8",
    "rip_depthwise.h",
    (Op.DEPTHWISE_CONV_2D,),
    reference=True,
    preconditions="any depth multiplier; output disjoint from the input; no scratch: the "
    "out-of-place choice for a depth multiplier other than 1",
)
DEPTHWISE_INPLACE = KernelVariant(
    "rip_depthwise_conv2d_inplace_s8",
    "rip_depthwise.h",
    (Op.DEPTHWISE_CONV_2D,),
    (CHANNEL,),
    out_of_place=False,
    scratch="rip_depthwise_conv2d_inplace_s8_get_buffer_size",
    reference=True,
    preconditions="depth multiplier 1, H_out * W_out <= H * W, one channel plane of scratch; "
    "output base == input base (TinyEngine's channel scheme)",
)
DEPTHWISE_FAST = KernelVariant(
    "rip_depthwise_conv2d_fast_s8",
    "rip_depthwise_fast.h",
    (Op.DEPTHWISE_CONV_2D,),
    folded_bias=True,
    depthwise_packed=True,
    cheap_twin="rip_depthwise_conv2d_fast_rq_s8",
    shares=True,
    preconditions="depth multiplier 1, a bias (folded); output disjoint from the input; no "
    "scratch: the row engine (kernels up to 16 rows), else one channel plane at a time",
)
DEPTHWISE_FAST_RQ = _cheap(DEPTHWISE_FAST)
DEPTHWISE_INPLACE_FAST = KernelVariant(
    "rip_depthwise_conv2d_inplace_fast_s8",
    "rip_depthwise_inplace_fast.h",
    (Op.DEPTHWISE_CONV_2D,),
    (CHANNEL,),
    out_of_place=False,
    scratch="rip_depthwise_conv2d_inplace_s8_get_buffer_size",
    folded_bias=True,
    depthwise_packed=True,
    cheap_twin="rip_depthwise_conv2d_inplace_fast_rq_s8",
    shares=True,
    preconditions="rip_depthwise_conv2d_inplace_s8's contract, a bias (folded); groups of "
    "4 * floor(scratch / (4 * H_out * W_out)) channels a pass, else one plane at a time: in "
    "place where the row-streamed kernel does not apply or its ring does not fit",
)
DEPTHWISE_INPLACE_FAST_RQ = _cheap(DEPTHWISE_INPLACE_FAST)
DEPTHWISE_INPLACE_ROWS_FAST = KernelVariant(
    "rip_depthwise_conv2d_inplace_rows_fast_s8",
    "rip_depthwise_inplace_rows_fast.h",
    (Op.DEPTHWISE_CONV_2D,),
    (CHANNEL,),
    out_of_place=False,
    scratch="rip_depthwise_conv2d_inplace_rows_fast_s8_get_buffer_size",
    folded_bias=True,
    depthwise_packed=True,
    cheap_twin="rip_depthwise_conv2d_inplace_rows_fast_rq_s8",
    shares=True,
    preconditions="depth multiplier 1, batch 1, KH <= 16, H_out * W_out <= H * W, a bias "
    "(folded); the ring schedule baked in by the generator (ring_slots, ring_rows) and a "
    "ring of ring_rows input rows of scratch: in place wherever that ring fits the model's "
    "reserved scratch",
)
DEPTHWISE_INPLACE_ROWS_FAST_RQ = _cheap(DEPTHWISE_INPLACE_ROWS_FAST)
DEPTHWISE_ROW_FAST = KernelVariant(
    "rip_depthwise_conv2d_row_fast_s8",
    "rip_depthwise_row_fast.h",
    (Op.DEPTHWISE_CONV_2D,),
    folded_bias=True,
    depthwise_packed=True,
    cheap_twin="rip_depthwise_conv2d_row_fast_rq_s8",
    preconditions="one output row from row pointers (NULL outside the input), depth "
    "multiplier 1, a bias (folded), the output row apart from the input rows: the depthwise "
    "stage of rip_fused_chain_s8",
)
DEPTHWISE_ROW_FAST_RQ = _cheap(DEPTHWISE_ROW_FAST)

# ---- FULLY_CONNECTED (rip_fully_connected*.h) ----------------------------------------------

FULLY_CONNECTED = KernelVariant(
    "rip_fully_connected_s8",
    "rip_fully_connected.h",
    (Op.FULLY_CONNECTED,),
    reference=True,
    preconditions="per-tensor weights (a weights zero point allowed); output disjoint from "
    "the input: where the cheap requantisation is not proven",
)
FULLY_CONNECTED_PER_CHANNEL = KernelVariant(
    "rip_fully_connected_per_channel_s8",
    "rip_fully_connected.h",
    (Op.FULLY_CONNECTED,),
    reference=True,
    preconditions="per-channel weights; output disjoint from the input: where the cheap "
    "requantisation is not proven",
)
FULLY_CONNECTED_FAST_RQ = KernelVariant(
    "rip_fully_connected_fast_rq_s8",
    "rip_fully_connected_fast.h",
    (Op.FULLY_CONNECTED,),
    preconditions="no weights zero point; the cheap requantisation proven for every unit "
    "(the FULLY_CONNECTED as a 1x1 CONV_2D over its batches); the weights packed as "
    "rip_conv2d_fast_rq_s8's, 4-byte aligned; output disjoint from the input; no scratch",
)

# ---- the other families, one kernel per op group -------------------------------------------

_POOL = "rip_pool.h"
_ELEMENTWISE = "rip_elementwise.h"
_ACTIVATION = "rip_activation.h"
_SHAPE = "rip_shape.h"
_REDUCE = "rip_reduce.h"
_BINARY = (
    "int8 operands of one quantization each, suffix broadcasting (a full tensor, 1x1x1xC, a "
    "scalar); in place over a full-size operand"
)
_GENERAL_BROADCAST = (
    "any broadcast of the two operands (TFLite's general broadcast); in place over a "
    "full-size operand"
)
_UNARY = (
    "one pass over the elements, element i read before it is stored; in place at or below the input"
)
_DISJOINT = "output disjoint from the input"

OTHERS = (
    KernelVariant(
        "rip_avg_pool_s8",
        _POOL,
        (Op.AVERAGE_POOL_2D,),
        (RIP,),
        scratch="rip_avg_pool_s8_get_buffer_size",
        preconditions="every window touches the input unless padded cells count; "
        "in place with the output the pool bound's gap below the input",
    ),
    KernelVariant(
        "rip_max_pool_s8",
        _POOL,
        (Op.MAX_POOL_2D,),
        (RIP,),
        scratch="rip_max_pool_s8_get_buffer_size",
        preconditions="as rip_avg_pool_s8",
    ),
    KernelVariant(
        "rip_global_avg_pool_s8",
        _POOL,
        (Op.GLOBAL_AVERAGE_POOL, Op.MEAN),
        scratch="rip_global_avg_pool_s8_get_buffer_size",
        preconditions="a mean over H and W; 4-byte aligned scratch of 4 * C; " + _DISJOINT,
    ),
    KernelVariant("rip_add_s8", _ELEMENTWISE, (Op.ADD,), (ELEMENTWISE,), preconditions=_BINARY),
    KernelVariant("rip_sub_s8", _ELEMENTWISE, (Op.SUB,), (ELEMENTWISE,), preconditions=_BINARY),
    KernelVariant("rip_mul_s8", _ELEMENTWISE, (Op.MUL,), (ELEMENTWISE,), preconditions=_BINARY),
    KernelVariant(
        "rip_max_min_s8",
        _ELEMENTWISE,
        (Op.MAXIMUM, Op.MINIMUM),
        (ELEMENTWISE,),
        preconditions=_BINARY,
    ),
    KernelVariant(
        "rip_squared_difference_s8",
        _ELEMENTWISE,
        (Op.SQUARED_DIFFERENCE,),
        (ELEMENTWISE,),
        preconditions=_BINARY,
    ),
    KernelVariant("rip_prelu_s8", _ELEMENTWISE, (Op.PRELU,), (ELEMENTWISE,), preconditions=_BINARY),
    KernelVariant(
        "rip_add_broadcast_s8",
        _ELEMENTWISE,
        (Op.ADD,),
        (ELEMENTWISE,),
        preconditions=_GENERAL_BROADCAST,
    ),
    KernelVariant(
        "rip_sub_broadcast_s8",
        _ELEMENTWISE,
        (Op.SUB,),
        (ELEMENTWISE,),
        preconditions=_GENERAL_BROADCAST,
    ),
    KernelVariant(
        "rip_mul_broadcast_s8",
        _ELEMENTWISE,
        (Op.MUL,),
        (ELEMENTWISE,),
        preconditions=_GENERAL_BROADCAST,
    ),
    KernelVariant(
        "rip_max_min_broadcast_s8",
        _ELEMENTWISE,
        (Op.MAXIMUM, Op.MINIMUM),
        (ELEMENTWISE,),
        preconditions=_GENERAL_BROADCAST,
    ),
    KernelVariant(
        "rip_squared_difference_broadcast_s8",
        _ELEMENTWISE,
        (Op.SQUARED_DIFFERENCE,),
        (ELEMENTWISE,),
        preconditions=_GENERAL_BROADCAST,
    ),
    KernelVariant(
        "rip_prelu_broadcast_s8",
        _ELEMENTWISE,
        (Op.PRELU,),
        (ELEMENTWISE,),
        preconditions=_GENERAL_BROADCAST,
    ),
    KernelVariant(
        "rip_add_n_s8",
        _ELEMENTWISE,
        (Op.ADD_N,),
        (ELEMENTWISE,),
        preconditions="inputs of one shape and quantization; in place over any",
    ),
    KernelVariant(
        "rip_relu_s8", _ACTIVATION, (Op.RELU, Op.RELU6), (ELEMENTWISE,), preconditions=_UNARY
    ),
    KernelVariant(
        "rip_quantize_s8",
        _ACTIVATION,
        (Op.QUANTIZE,),
        (ELEMENTWISE,),
        preconditions="int8 to int8; " + _UNARY,
    ),
    KernelVariant(
        "rip_logistic_s8", _ACTIVATION, (Op.LOGISTIC,), (ELEMENTWISE,), preconditions=_UNARY
    ),
    KernelVariant("rip_tanh_s8", _ACTIVATION, (Op.TANH,), (ELEMENTWISE,), preconditions=_UNARY),
    KernelVariant(
        "rip_hard_swish_s8", _ACTIVATION, (Op.HARD_SWISH,), (ELEMENTWISE,), preconditions=_UNARY
    ),
    KernelVariant(
        "rip_lut_s8",
        _ACTIVATION,
        (Op.ABS, Op.LEAKY_RELU, Op.ELU, Op.RSQRT, Op.QUANTIZE),
        (ELEMENTWISE,),
        preconditions="a 256-entry table the generator computes (a QUANTIZE with a uint8 "
        "side: the model's uint8 interface); " + _UNARY,
    ),
    KernelVariant(
        "rip_softmax_s8",
        _ACTIVATION,
        (Op.SOFTMAX,),
        preconditions="over the last axis; " + _DISJOINT,
    ),
    KernelVariant(
        "rip_softmax_s8_s16",
        _ACTIVATION,
        (Op.SOFTMAX,),
        preconditions="int8 input, int16 output (scale 1/65536, zero point -32768); over the "
        "last axis; " + _DISJOINT,
    ),
    KernelVariant(
        "rip_softmax_s16",
        _ACTIVATION,
        (Op.SOFTMAX,),
        preconditions="16x8: int16 input and output (zero points 0, output scale 1/32768), "
        "over the last axis, its two 513-entry tables the op's constants; " + _DISJOINT,
    ),
    KernelVariant(
        "rip_sigmoid_s16",
        _ACTIVATION,
        (Op.LOGISTIC, Op.TANH),
        (ELEMENTWISE,),
        preconditions="16x8: int16 input and output, zero points 0, output scale 2^-15; in "
        "place at or below the input",
    ),
    *(
        KernelVariant(
            name,
            _ELEMENTWISE,
            ops,
            (ELEMENTWISE,),
            preconditions="16x8: int16 operands and output, any broadcast (MUL: zero points "
            "0); in place over a full-size operand",
        )
        for name, ops in (
            ("rip_add_broadcast_s16", (Op.ADD,)),
            ("rip_sub_broadcast_s16", (Op.SUB,)),
            ("rip_mul_broadcast_s16", (Op.MUL,)),
            ("rip_max_min_broadcast_s16", (Op.MAXIMUM, Op.MINIMUM)),
        )
    ),
    KernelVariant(
        "rip_quantize_wide",
        _ACTIVATION,
        (Op.QUANTIZE, Op.RELU, Op.RELU6),
        (ELEMENTWISE,),
        preconditions="between int8, int16 and int32, one side wider than int8; in place "
        "at the input's base where the output's elements are no wider than the input's",
    ),
    KernelVariant(
        "rip_log_softmax_s8",
        _ACTIVATION,
        (Op.LOG_SOFTMAX,),
        preconditions="over the last axis; " + _DISJOINT,
    ),
    KernelVariant(
        "rip_resize_nearest_s8",
        _SHAPE,
        (Op.RESIZE_NEAREST_NEIGHBOR,),
        (REVERSE,),
        preconditions="in place with the output at the input's base, traversed "
        "backwards (Theorem 14), where no output pixel reads an input pixel above "
        "it",
    ),
    KernelVariant(
        "rip_concatenation_s8", _SHAPE, (Op.CONCATENATION, Op.PACK), preconditions=_DISJOINT
    ),
    KernelVariant("rip_transpose_s8", _SHAPE, (Op.TRANSPOSE,), preconditions=_DISJOINT),
    KernelVariant("rip_pad_s8", _SHAPE, (Op.PAD, Op.PADV2), preconditions=_DISJOINT),
    KernelVariant(
        "rip_slice_s8",
        _SHAPE,
        (Op.STRIDED_SLICE, Op.SLICE, Op.SPLIT, Op.SPLIT_V, Op.UNPACK),
        preconditions=_DISJOINT,
    ),
    KernelVariant(
        "rip_depth_space_s8",
        _SHAPE,
        (Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH),
        preconditions=_DISJOINT,
    ),
    KernelVariant("rip_gather_s8", _SHAPE, (Op.GATHER,), preconditions=_DISJOINT),
    KernelVariant("rip_mirror_pad_s8", _SHAPE, (Op.MIRROR_PAD,), preconditions=_DISJOINT),
    KernelVariant(
        "rip_reduce_sum_s8",
        _REDUCE,
        (Op.SUM, Op.MEAN),
        preconditions="any axes (a MEAN's 1 / count in the multiplier; a MEAN over "
        "H and W runs rip_global_avg_pool_s8); " + _DISJOINT,
    ),
    KernelVariant("rip_reduce_max_s8", _REDUCE, (Op.REDUCE_MAX,), preconditions=_DISJOINT),
    KernelVariant("rip_reduce_min_s8", _REDUCE, (Op.REDUCE_MIN,), preconditions=_DISJOINT),
    KernelVariant("rip_arg_max_s8", _REDUCE, (Op.ARG_MAX,), preconditions=_DISJOINT),
    KernelVariant("rip_arg_min_s8", _REDUCE, (Op.ARG_MIN,), preconditions=_DISJOINT),
    KernelVariant(
        "rip_resize_bilinear_s8", "rip_resample.h", (Op.RESIZE_BILINEAR,), preconditions=_DISJOINT
    ),
    KernelVariant(
        "rip_transpose_conv_s8", "rip_resample.h", (Op.TRANSPOSE_CONV,), preconditions=_DISJOINT
    ),
    KernelVariant(
        "rip_l2norm_s8",
        "rip_norm.h",
        (Op.L2_NORMALIZATION,),
        (ELEMENTWISE,),
        preconditions="over the last axis; in place at the input's base",
    ),
    KernelVariant(
        "rip_batch_matmul_s8",
        "rip_matmul.h",
        (Op.BATCH_MATMUL,),
        preconditions="int8 operands quantized per tensor, rank 2 to 5, batch axes "
        "broadcast; " + _DISJOINT,
    ),
    KernelVariant(
        "rip_svdf_s8",
        "rip_svdf.h",
        (Op.SVDF,),
        preconditions="int8 input, weights and state (the state in the persistent region, "
        "not the arena); " + _DISJOINT,
    ),
    KernelVariant(
        "rip_svdf_s8_s16",
        "rip_svdf.h",
        (Op.SVDF,),
        preconditions="int8 input and feature weights, int16 time weights and state (the "
        "state in the persistent region, not the arena); " + _DISJOINT,
    ),
    *(
        KernelVariant(name, "rip_float.h", ops, preconditions=what + "; " + _DISJOINT)
        for name, ops, what in (
            ("rip_dequantize_f32", (Op.DEQUANTIZE,), "int8 -> float32 inside a float island"),
            ("rip_quantize_f32", (Op.QUANTIZE,), "float32 -> int8, a float island's end"),
            ("rip_neg_f32", (Op.NEG,), "float32 inside a float island"),
            (
                "rip_binary_f32",
                (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MAXIMUM, Op.MINIMUM),
                "float32 inside a float island, any broadcast",
            ),
        )
    ),
    KernelVariant(
        "rip_conv_s16",
        "rip_wide.h",
        (Op.CONV_2D, Op.DEPTHWISE_CONV_2D),
        preconditions="16x8: int16 input and output, int8 weights, an int64 or int32 bias, "
        "no offsets (symmetric int16); " + _DISJOINT,
    ),
    KernelVariant(
        "rip_pool_s16",
        "rip_wide.h",
        (Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D),
        preconditions="16x8: int16 input and output, the cells inside the input only; " + _DISJOINT,
    ),
    KernelVariant(
        "rip_fully_connected_s16",
        "rip_wide.h",
        (Op.FULLY_CONNECTED,),
        preconditions="16x8: int16 input and output, int8 weights per tensor or per output "
        "channel, an int64 or int32 bias; " + _DISJOINT,
    ),
    KernelVariant(
        "rip_reduce_sum_s16",
        "rip_reduce.h",
        (Op.MEAN, Op.SUM),
        preconditions="16x8: int16 input and output, any axes; " + _DISJOINT,
    ),
    KernelVariant(
        "rip_lstm",
        "rip_lstm.h",
        (Op.UNIDIRECTIONAL_SEQUENCE_LSTM,),
        preconditions="int8 activations with int32 biases or int16 (16x8) with int64, int8 "
        "weights one scale each, an int16 cell state; hidden and cell state in the "
        "persistent region, not the arena; no scratch; " + _DISJOINT,
    ),
    KernelVariant(
        "rip_copy_s8",
        "rip_state.h",
        (Op.READ_VARIABLE, Op.ASSIGN_VARIABLE),
        preconditions="a resource variable's bytes between the arena and the persistent "
        "region; " + _DISJOINT,
    ),
    KernelVariant(
        "rip_fused_chain_s8",
        "rip_fused.h",
        (Op.FUSED_CHAIN,),
        (FUSED,),
        scratch="rip_fused_chain_s8_get_buffer_size",
        shares=True,
        preconditions="a chain of CONV_2D and depthwise stages (and an optional "
        "residual ADD) streamed row by row through rings (strategy fused); in "
        "place with the output the chain's gap below its input",
    ),
    FUSED_STREAMED := KernelVariant(
        "rip_fused_chain_streamed_s8",
        "rip_fused.h",
        (Op.FUSED_CHAIN,),
        scratch="rip_fused_chain_s8_get_buffer_size",
        preconditions="the chain of rip_fused_chain_s8 (one stage or more, no residual "
        "ADD) over an input that streams in (--stream-input): its rows arrive from a "
        "source into a ring of the chain's own; " + _DISJOINT,
    ),
)

VARIANTS: tuple[KernelVariant, ...] = (
    CONV2D,
    CONV2D_FAST,
    CONV2D_FAST_RQ,
    CONV2D_GEMV_RQ,
    CONV2D_GROUPED,
    DEPTHWISE,
    DEPTHWISE_INPLACE,
    DEPTHWISE_FAST,
    DEPTHWISE_FAST_RQ,
    DEPTHWISE_INPLACE_FAST,
    DEPTHWISE_INPLACE_FAST_RQ,
    DEPTHWISE_INPLACE_ROWS_FAST,
    DEPTHWISE_INPLACE_ROWS_FAST_RQ,
    DEPTHWISE_ROW_FAST,
    DEPTHWISE_ROW_FAST_RQ,
    FULLY_CONNECTED,
    FULLY_CONNECTED_PER_CHANNEL,
    FULLY_CONNECTED_FAST_RQ,
    *OTHERS,
)
BY_NAME: dict[str, KernelVariant] = {v.name: v for v in VARIANTS}

# Public functions of kernels/*.h that are no variant's own kernel or scratch twin.
HELPERS: dict[str, str] = {
    "rip_depthwise_conv2d_scratch_get_buffer_size": "the scratch the planner reserves for any "
    "DEPTHWISE_CONV_2D, whichever variant runs it (planning.scratch.kernel_scratch_bytes)",
    "rip_conv_tap_range": "the taps of one kernel axis inside the input (rip_conv_support.h)",
    "rip_conv_gather_s8": "one output pixel's receptive field, padded taps the input zero "
    "point: every gather-first kernel's first step (rip_conv_support.h)",
    "rip_crc32_update": "the CRC-32 a firmware prints over the outputs (rip_crc32.h)",
    "rip_core_publish": "a core has done a tile's reads: its progress counter + 1 "
    "(rip_cores.h, two cores)",
    "rip_core_wait": "until the other core has published as many tiles (rip_cores.h)",
    "rip_core_barrier": "publish, then wait: between two ops both cores run (rip_cores.h)",
    "rip_core_abandon": "a core that stops lets the other run on (rip_cores.h)",
    "rip_core_reset": "both progress counters to zero before core 1 starts (rip_cores.h)",
    "rip_depthwise_conv2d_row_part_s8": "one core's channels of a fused chain's depthwise "
    "row (rip_depthwise_row_fast.h; two cores, rip_fused.c)",
    "rip_dw_row": "one output row of the fast depthwise engines, which every fast depthwise "
    "variant calls (rip_dw_row_engine.h; compiled once, in rip_dw_row_engine.c)",
}


def variant(name: str) -> KernelVariant:
    """The row of C function ``name`` (KeyError: not a kernel variant)."""
    return BY_NAME[name]


def cheap_twin(name: str) -> str:
    """The ``_rq`` twin of exact variant ``name``: the same traversal, scratch and in-place
    contract with the cheap requantisation (rip_fast_channel records)."""
    twin = BY_NAME[name].cheap_twin
    if twin is None:
        raise KeyError(f"{name} has no cheap-requantisation twin")
    return twin
