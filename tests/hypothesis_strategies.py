"""Hypothesis strategies for random layers (stride, dilation, asymmetric padding,
rectangular kernels, thin and degenerate grids)."""

from __future__ import annotations

from hypothesis import assume
from hypothesis import strategies as st

from rip.allocator.theory.geometry import ConvGeometry
from rip.core.errors import LayerError


@st.composite
def layers(
    draw,
    max_extent: int = 10,
    max_channels: int = 6,
    max_kernel: int = 4,
    max_stride: int = 3,
    max_dilation: int = 3,
    max_pad: int = 3,
) -> ConvGeometry:
    """A valid convolution geometry; thin (extent 1) and small grids are drawn often."""
    extent = st.one_of(st.integers(1, 3), st.integers(1, max_extent))
    fields = dict(
        h_in=draw(extent),
        w_in=draw(extent),
        c_in=draw(st.integers(1, max_channels)),
        c_out=draw(st.integers(1, max_channels)),
        kh=draw(st.integers(1, max_kernel)),
        kw=draw(st.integers(1, max_kernel)),
        sh=draw(st.integers(1, max_stride)),
        sw=draw(st.integers(1, max_stride)),
        dh=draw(st.integers(1, max_dilation)),
        dw=draw(st.integers(1, max_dilation)),
        pad_top=draw(st.integers(0, max_pad)),
        pad_bottom=draw(st.integers(0, max_pad)),
        pad_left=draw(st.integers(0, max_pad)),
        pad_right=draw(st.integers(0, max_pad)),
    )
    try:
        return ConvGeometry(**fields)
    except LayerError:
        assume(False)
        raise  # unreachable


@st.composite
def restricted_layers(draw, max_extent: int = 14, max_channels: int = 12) -> ConvGeometry:
    """The domain of Gural & Murmann: valid, stride 1, dilation 1, odd square kernel,
    square input."""
    k = draw(st.sampled_from([1, 3, 5, 7]))
    hw = draw(st.integers(k, max(k, max_extent)))
    return ConvGeometry(
        hw, hw, draw(st.integers(1, max_channels)), draw(st.integers(1, max_channels)), k, k
    )
