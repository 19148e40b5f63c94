"""The row-streamed in-place depthwise kernel's schedule (rip_depthwise_conv2d_inplace_rows_
fast_s8) executed by the simulator: saving the rows planning.scratch lists (the schedule the
generator bakes into the call) with the ring it gives, no read returns a byte other than the
input byte it wants and no output byte lands past the input (gap 0); those rows are a subset
of the rows some output row at or after their first reacher reads (rows read in place by
their only reader are left where they are); the simulated minimum ring is never above the
formula and equals it on unit-stride layers, where one slot fewer corrupts."""

from __future__ import annotations

import itertools

import pytest
from conftest import shared_path

from rip.allocator.planning.requirements import conv_geometry
from rip.allocator.planning.scratch import depthwise_ring_rows, depthwise_saved_rows
from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.simulate import (
    depthwise_row_spans,
    simulate_depthwise_ring,
    simulate_depthwise_rows,
)
from rip.core.errors import LayerError
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite


def _args(g: ConvGeometry) -> tuple:
    return (g.h_in, g.w_in, g.h_out, g.w_out, g.kh, g.sh, g.pad_top, g.dh,
            (g.kw, g.sw, g.pad_left, g.dw))  # fmt: skip


def _ring(g: ConvGeometry) -> int:
    return depthwise_ring_rows(*_args(g))


def _saves(g: ConvGeometry) -> set[int]:
    return {i for i, _, _ in depthwise_saved_rows(*_args(g))}


def _geometries():
    for h, w, k, s, d, pt, pl in itertools.product(
        [1, 2, 5, 8], [1, 3, 6], [1, 3, 5], [1, 2], [1, 2], [0, 1, 2], [0, 1, 3]
    ):
        try:
            g = ConvGeometry(h, w, 5, 5, k, k, s, s, d, d, pt, pt, pl, pl)
        except LayerError:
            continue
        if g.h_out * g.w_out <= h * w:
            yield g


# Channels a pass of the kernel's row engine takes: four on DSP cores and hosts, one on
# ARMv6-M (kernels/rip_dw_row_engine.c, rip_dw_row); the ring is the same for both.
GROUPS = (4, 1)


@pytest.mark.parametrize("group", GROUPS)
def test_formula_ring_is_safe_and_its_saves_are_the_schedules(group: int) -> None:
    n = 0
    for g in _geometries():
        rows, saves = _ring(g), _saves(g)
        run = simulate_depthwise_rows(g, rows, group=group, saves=saves)
        assert (run.corrupted, run.writes_outside) == (0, 0), g
        saved = depthwise_saved_rows(*_args(g))
        assert [(i, r) for i, r, _ in saved] == list(run.saved), g
        # the conservative schedule (every row read at or after its first reacher) saves more
        everything = simulate_depthwise_rows(g, max(rows, len(saved)) + 2, group=group)
        assert saves <= {i for i, _ in everything.saved}, g
        least = simulate_depthwise_ring(g, group=group, saves=saves)
        assert least <= rows, g
        if least > 0:
            assert simulate_depthwise_rows(g, least - 1, group=group, saves=saves).corrupted > 0
        same = g.pad_top == g.pad_left == 1 and (g.h_out, g.w_out) == (g.h_in, g.w_in)
        if g.sh == 1 and g.dh == 1 and g.kh == 3 and same and g.h_in > 2:
            assert least == rows == 2, g  # (KH - 1) rows at unit stride, SAME
        n += 1
    assert n > 300


@pytest.mark.parametrize("group", GROUPS)
def test_one_dimensional_valid_layer_saves_nothing(group: int) -> None:
    """A 1-D layer (W = 1, no padding, mlperf-str_ww's shape): every input row's only reader
    after its first reacher is that reacher itself, which reads it before storing: no row is
    saved, no ring, and the simulator finds nothing corrupted. The conservative schedule
    would copy every row it overwrites."""
    g = ConvGeometry(28, 1, 8, 8, 5, 1, 1, 1, 1, 1, 0, 0, 0, 0)
    assert (_saves(g), _ring(g)) == (set(), 0)
    run = simulate_depthwise_rows(g, 0, group=group, saves=set())
    assert (run.corrupted, run.writes_outside) == (0, 0)
    assert len(simulate_depthwise_rows(g, 1, group=group).saved) == g.h_out


def test_only_reader_with_left_padding_still_saves() -> None:
    """KH = 1, KW = 3, SAME: output row r reads input row r only, but on ARMv6-M's engine
    pixel x reads column x - 1, which pixel x - 1 has already stored: the row is saved, and
    leaving any one unsaved corrupts. The column-pair engine (DSP cores, hosts) reads the
    row's tile whole before storing, and four channels a pass: it needs none of them, and
    a fifth channel, one pixel at a time, needs them all again."""
    g = ConvGeometry(6, 5, 8, 8, 1, 3, 1, 1, 1, 1, 0, 0, 1, 1)
    saves = _saves(g)
    assert saves == set(range(6))
    assert _ring(g) == 1
    for group in GROUPS:
        assert simulate_depthwise_rows(g, 1, group=group, saves=saves).corrupted == 0
    for i in saves:
        assert simulate_depthwise_rows(g, 1, group=1, saves=saves - {i}).corrupted > 0, i
    assert simulate_depthwise_rows(g, 0, group=4, saves=set()).corrupted == 0
    assert simulate_depthwise_rows(g, 0, channels=5, group=4, saves=set()).corrupted > 0


def test_stride_two_needs_no_row() -> None:
    """3x3, stride 2, SAME: only input row 0 is still read (by output row 0) once output
    bytes reach it, and output row 0 reads each column at or right of the pixel it stores:
    nothing is saved (the conservative schedule copies row 0 into a one-row ring)."""
    g = ConvGeometry(64, 80, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1)
    assert (_ring(g), _saves(g)) == (0, set())
    assert depthwise_ring_rows(*_args(g)[:-1]) == 1
    assert simulate_depthwise_rows(g, 0, channels=4, saves=set()).corrupted == 0


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("model", ["person-det", "mcunet-in0"])
def test_every_depthwise_layer_of_the_model(model: str, group: int) -> None:
    """Every depthwise layer of the model, at its real geometry (4 channels: the row
    schedule does not depend on C), is safe with the formula's ring."""
    graph = rewrite(read_model(shared_path("models", "mcunet", f"{model}.tflite")))
    layers = [op for op in graph.operators if op.kind == "DEPTHWISE_CONV_2D"]
    assert layers
    for op in layers:
        g = conv_geometry(graph, op)
        run = simulate_depthwise_rows(g, _ring(g), channels=4, group=group, saves=_saves(g))
        assert (run.corrupted, run.writes_outside) == (0, 0), (model, g)


def test_row_spans_are_the_engines_border_sides() -> None:
    """A 7x7 SAME row of 11 pixels: pixels 0-2 read padding on the left and 8-10 on the
    right (each side gathered once, one span), 3-7 every tap inside the input (one span a
    pixel); a row without any kernel row inside the input, or without an interior, is one
    span."""
    g = ConvGeometry(11, 11, 4, 4, 7, 7, pad_top=3, pad_bottom=3, pad_left=3, pad_right=3)
    spans = depthwise_row_spans(g, True)
    assert spans == [range(0, 3), *(range(x, x + 1) for x in range(3, 8)), range(8, 11)]
    assert depthwise_row_spans(g, False) == [range(11)]
    narrow = ConvGeometry(3, 3, 4, 4, 7, 7, pad_top=3, pad_bottom=3, pad_left=3, pad_right=3)
    assert depthwise_row_spans(narrow, True) == [range(3)]


@pytest.mark.parametrize("group", GROUPS)
def test_a_column_layer_run_as_a_row_is_safe(group: int) -> None:
    """A one-column layer with a kernel along H runs as the one-row layer its bytes are
    (codegen.conv_params.column_as_row: H <-> W, mlperf-str_ww's temporal layers). At that
    geometry too the formula's schedule is safe under the simulator, in place over the
    shared base, for every kernel height, stride, dilation and top/bottom padding here."""
    n = 0
    for h, k, s, d, pt, pb in itertools.product(
        [2, 5, 15, 28, 30], [1, 3, 5, 7, 10, 15], [1, 2], [1, 2], [0, 1, 2], [0, 1]
    ):
        try:
            column = ConvGeometry(h, 1, 4, 4, k, 1, s, 1, d, 1, pt, pb, 0, 0)
        except LayerError:
            continue
        if column.h_out > h:
            continue
        row = ConvGeometry(1, h, 4, 4, 1, k, 1, s, 1, d, 0, 0, pt, pb)
        assert (row.h_out, row.w_out) == (1, column.h_out)
        run = simulate_depthwise_rows(row, _ring(row), channels=4, group=group, saves=_saves(row))
        assert (run.corrupted, run.writes_outside) == (0, 0), (h, k, s, d, pt, pb)
        n += 1
    assert n > 100
