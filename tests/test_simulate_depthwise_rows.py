"""The row-streamed in-place depthwise kernel's schedule (rip_depthwise_conv2d_inplace_rows_
fast_s8) executed by the simulator: with the ring rip.scratch gives, no read returns a byte
other than the input byte it wants and no output byte lands past the input (gap 0); the
rows it saves are the ones rip.scratch lists; the simulated minimum ring is never above the
formula and equals it on unit-stride layers, where one slot fewer corrupts."""

from __future__ import annotations

import itertools

import pytest
from conftest import shared_path

from rip.allocator.planning.requirements import conv_geometry
from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.simulate import simulate_depthwise_ring, simulate_depthwise_rows
from rip.errors import LayerError
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite
from rip.scratch import depthwise_ring_rows, depthwise_saved_rows


def _ring(g: ConvGeometry) -> int:
    return depthwise_ring_rows(g.h_in, g.w_in, g.h_out, g.w_out, g.kh, g.sh, g.pad_top, g.dh)


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
# ARMv6-M (kernels/rip_depthwise_fast.c, rip_dw_row); the ring is the same for both.
GROUPS = (4, 1)


@pytest.mark.parametrize("group", GROUPS)
def test_formula_ring_is_safe_and_its_saves_are_the_schedules(group: int) -> None:
    n = 0
    for g in _geometries():
        rows = _ring(g)
        run = simulate_depthwise_rows(g, rows, group=group)
        assert (run.corrupted, run.writes_outside) == (0, 0), g
        saved = depthwise_saved_rows(g.h_in, g.w_in, g.h_out, g.w_out, g.kh, g.sh, g.pad_top,
                                     g.dh)  # fmt: skip
        assert [(i, r) for i, r, _ in saved] == list(run.saved), g
        least = simulate_depthwise_ring(g, group=group)
        assert least <= rows, g
        if least > 0:
            assert simulate_depthwise_rows(g, least - 1, group=group).corrupted > 0, g
        same = g.pad_top == g.pad_left == 1 and (g.h_out, g.w_out) == (g.h_in, g.w_in)
        if g.sh == 1 and g.dh == 1 and g.kh == 3 and same and g.h_in > 2:
            assert least == rows == 2, g  # (KH - 1) rows at unit stride, SAME
        n += 1
    assert n > 300


def test_stride_two_needs_at_most_one_row() -> None:
    g = ConvGeometry(64, 80, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1)
    assert _ring(g) == 1
    assert simulate_depthwise_rows(g, 1, channels=4).corrupted == 0


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
        run = simulate_depthwise_rows(g, _ring(g), channels=4, group=group)
        assert (run.corrupted, run.writes_outside) == (0, 0), (model, g)
