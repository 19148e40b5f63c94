"""The column-pair engine's group orders for depthwise layers (rip_dw_plane_cols: a group of
four channels at a time over every output row; "window": the widened rows kept from one
output row to the next; "whole": a group's whole plane widened first) executed by the
simulator at gap 0 (output base == input base): wherever the kernel takes a layer in place
(`depthwise_plane_order`, the kernel's own test), no read returns a byte other than the
input byte it wants; where that test refuses the window order in place, the order would
corrupt some, so the test is needed."""

from __future__ import annotations

import itertools

from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.simulate import (
    depthwise_band_order,
    depthwise_plane_order,
    simulate_depthwise_band,
    simulate_depthwise_plane,
)
from rip.core import kernel_variants as kv
from rip.core.errors import LayerError


def _geometries():
    for h, w, k, s, pt, pl, c in itertools.product(
        [1, 2, 5, 8, 13], [1, 3, 6, 11], [1, 3, 5, 7], [1, 2], [0, 1, 2, 3], [0, 1, 3], [4, 8]
    ):
        for kh in {k, 1, 3}:
            try:
                g = ConvGeometry(h, w, c, c, kh, k, s, s, 1, 1, pt, pt, pl, pl)
            except LayerError:
                continue
            if g.h_out * g.w_out <= h * w:
                yield g


def test_the_group_order_is_safe_in_place_wherever_the_kernel_takes_it() -> None:
    taken = {"window": 0, "whole": 0}
    refused = 0
    for g in _geometries():
        order = depthwise_plane_order(g, g.c_in, in_place=True)
        if order is not None:
            taken[order] += 1
            assert simulate_depthwise_plane(g, order=order) == 0, g
        elif depthwise_plane_order(g, g.c_in, in_place=False) == "window":
            refused += 1
            assert simulate_depthwise_plane(g, order="window") > 0, g
        if order == "whole":  # every read first: safe whatever the window would do
            assert simulate_depthwise_plane(g, order="whole") == 0
    assert taken["window"] > 300 and taken["whole"] > 50 and refused > 0


def test_a_window_above_the_input_is_refused_in_place() -> None:
    # five padded rows on top: output row 0 stores over input row 0 before row 1 reads it
    g = ConvGeometry(12, 12, 4, 4, 5, 5, 1, 1, 1, 1, 5, 5, 0, 0)
    assert g.h_out * g.w_out <= g.h_in * g.w_in
    assert depthwise_plane_order(g, 4, in_place=False) == "window"
    assert depthwise_plane_order(g, 4, in_place=True) is None
    assert simulate_depthwise_plane(g, order="window") > 0


def test_the_group_order_takes_what_the_engine_covers_in_one_tile() -> None:
    # a 3x3 row of 88 columns is one tile of the run's 540 words (45 pairs), 90 are two
    wide = ConvGeometry(3, 90, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1)
    assert depthwise_plane_order(wide, 4, in_place=False) is None
    narrow = ConvGeometry(3, 88, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1)
    assert depthwise_plane_order(narrow, 4, in_place=True) == "window"
    assert depthwise_plane_order(narrow, 6, in_place=False) is None  # a channel left over
    dilated = ConvGeometry(9, 9, 4, 4, 3, 3, 1, 1, 2, 1, 2, 2, 1, 1)
    assert depthwise_plane_order(dilated, 4, in_place=False) is None
    kws = ConvGeometry(25, 5, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1)  # 27 rows of 4 pairs
    assert depthwise_plane_order(kws, 64, in_place=True) == "whole"
    taller = ConvGeometry(32, 5, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1)  # 34 rows: the window
    assert depthwise_plane_order(taller, 4, in_place=True) == "window"
    five = ConvGeometry(18, 6, 4, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2)  # 22 rows of 5 pairs
    assert depthwise_plane_order(five, 4, in_place=True) == "whole"
    assert (
        depthwise_plane_order(
            ConvGeometry(19, 6, 4, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2), 4, in_place=True
        )
        == "window"
    )
    seven = ConvGeometry(7, 6, 4, 4, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3)  # 13 rows of 6 pairs
    assert depthwise_plane_order(seven, 4, in_place=True) == "whole"
    wider = ConvGeometry(7, 7, 4, 4, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3)  # 7 columns: the window
    assert depthwise_plane_order(wider, 4, in_place=True) == "window"
    # 3x3's wide layout, 7 pairs a row: 12 columns at stride 1 (MLPerf VWW's 12x12), at
    # most 19 rows; 6 columns at stride 2, its only layout
    vww = ConvGeometry(12, 12, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1)
    assert depthwise_plane_order(vww, 4, in_place=True) == "whole"
    for h, w in ((12, 14), (18, 12)):  # 8 pairs; 20 rows
        g = ConvGeometry(h, w, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1)
        assert depthwise_plane_order(g, 4, in_place=False) == "window", (h, w)
    halved = ConvGeometry(12, 12, 4, 4, 3, 3, 2, 2, 1, 1, 0, 1, 0, 1)  # 13 rows to 6x6
    assert depthwise_plane_order(halved, 4, in_place=True) == "whole"
    assert kv.dw_cols_whole_pairs(3, 3, 2) == kv.dw_cols_whole_pairs(3, 3, 1, wide=True) == 7
    assert kv.dw_cols_whole_pairs(3, 3, 2, wide=True) == 0
    # 5x5's wide run, 8 pairs a row in a tile of 480 words: MCUNet-in3's 11x11 layers (15
    # rows), and to 5x5 at stride 2; 16 rows do not fit
    in3 = ConvGeometry(11, 11, 4, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2)
    assert depthwise_plane_order(in3, 4, in_place=True) == "whole"
    halved5 = ConvGeometry(10, 10, 4, 4, 5, 5, 2, 2, 1, 1, 1, 2, 1, 2)  # 13 rows to 5x5
    assert depthwise_plane_order(halved5, 4, in_place=True) == "whole"
    taller5 = ConvGeometry(12, 11, 4, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2)
    assert depthwise_plane_order(taller5, 4, in_place=False) == "window"


def _wide_geometries():
    # rows long enough that a window holds a few of them: several bands a channel
    for h, w, k, s, pt, pl in itertools.product(
        [2, 7, 16], [24, 45, 70, 125], [1, 3, 5, 7], [1, 2], [0, 1, 2, 5], [0, 1, 3]
    ):
        for kh in {k, 1, 3}:
            try:
                g = ConvGeometry(h, w, 2, 2, kh, k, s, s, 1, 1, pt, pt, pl, pl)
            except LayerError:
                continue
            if g.h_out * g.w_out <= h * w:
                yield g


def test_armv6m_channel_order_is_safe_in_place_wherever_the_kernel_takes_it() -> None:
    # ARMv6-M's bands a channel at a time (rip_dw_plane_cols there): the window keeps the
    # rows the next band reads, so only rows no earlier band has stored over come from memory
    taken = refused = 0
    for g in itertools.chain(_geometries(), _wide_geometries()):
        if depthwise_band_order(g, in_place=True):
            taken += 1
            assert simulate_depthwise_band(g) == 0, g
        elif depthwise_band_order(g, in_place=False):
            refused += 1
            assert simulate_depthwise_band(g) > 0, g
    assert taken > 1000 and refused > 10


def test_armv6m_channel_order_keeps_the_window_between_bands() -> None:
    # 5x5 SAME over 60 columns: a 64-byte window row, six rows a window, bands of two
    # output rows; reading each band's five rows again from memory would find the rows
    # above overwritten, the kept window does not
    g = ConvGeometry(20, 60, 2, 2, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2)
    assert depthwise_band_order(g, in_place=True)
    assert simulate_depthwise_band(g) == 0
    # a kernel's rows wider than the window, a 3x3 one at stride 2 over more than
    # DW1_BAND_3X3_S2_COLS output columns: row by row; over fewer, bands
    wide = ConvGeometry(3, 200, 2, 2, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2)
    assert not depthwise_band_order(wide, in_place=False)
    halves = ConvGeometry(12, 32, 2, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1)
    assert not depthwise_band_order(halves, in_place=False)
    small = ConvGeometry(12, 12, 2, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1)
    assert depthwise_band_order(small, in_place=True)
    assert simulate_depthwise_band(small) == 0
    assert depthwise_band_order(ConvGeometry(12, 12, 2, 2, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2), False)
    # five padded rows on top, a band a row: output row 0 stores over input row 0 first
    above = ConvGeometry(12, 70, 1, 1, 5, 5, 1, 1, 1, 1, 5, 5, 0, 0)
    assert depthwise_band_order(above, in_place=False)
    assert not depthwise_band_order(above, in_place=True)
    assert simulate_depthwise_band(above) > 0


def test_armv6m_tiny_maps_gather_four_channels_at_once() -> None:
    # one band whose four windows fit the 384-byte buffer: 3x3 at stride 2 over 6x6 (a 7x7
    # window of 49 bytes) and 3x3 SAME over 3x3 (5x5); 3x3 SAME over 8x8 holds one band but
    # four of its 100-byte windows do not fit, and 12x12 takes two bands
    assert kv.dw1_group_channels(3, 3, 2, 2, 1, 1, 3, 3) == 4
    assert kv.dw1_group_channels(3, 3, 1, 1, 1, 1, 3, 3) == 4
    assert kv.dw1_group_channels(3, 3, 1, 1, 1, 1, 8, 8) == 1
    assert kv.dw1_group_channels(5, 5, 1, 1, 1, 1, 12, 12) == 1
    # two groups and two channels alone, in place: every read finds its byte
    g = ConvGeometry(6, 6, 10, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1)
    assert depthwise_band_order(g, in_place=True)
    assert simulate_depthwise_band(g) == 0
    assert simulate_depthwise_band(ConvGeometry(3, 3, 10, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1)) == 0
