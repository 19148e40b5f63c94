"""Layer geometry shared by every bound and by the simulator (Table 4's convolution setup)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rip.core.errors import LayerError
from rip.core.shapes import conv_out_size, dilated, same_padding


@dataclass(frozen=True)
class ConvGeometry:
    """One convolution-like layer in NHWC, batch 1.

    Padding is asymmetric (top, bottom, left, right); the output extent follows from the
    dilated kernel, ``k_eff = d * (k - 1) + 1`` (Table 4).
    """

    h_in: int
    w_in: int
    c_in: int
    c_out: int
    kh: int = 1
    kw: int = 1
    sh: int = 1
    sw: int = 1
    dh: int = 1
    dw: int = 1
    pad_top: int = 0
    pad_bottom: int = 0
    pad_left: int = 0
    pad_right: int = 0

    def __post_init__(self) -> None:
        for name in ("h_in", "w_in", "c_in", "c_out", "kh", "kw", "sh", "sw", "dh", "dw"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise LayerError(f"{name} must be a positive integer, got {value!r}")
        for name in ("pad_top", "pad_bottom", "pad_left", "pad_right"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise LayerError(f"{name} must be a non-negative integer, got {value!r}")
        if self.kh_eff > self.h_p:
            raise LayerError(
                f"kernel: dilated kernel height {self.kh_eff} exceeds padded input "
                f"height {self.h_p}"
            )
        if self.kw_eff > self.w_p:
            raise LayerError(
                f"kernel: dilated kernel width {self.kw_eff} exceeds padded input width {self.w_p}"
            )

    # Derived extents -------------------------------------------------------------------
    @property
    def kh_eff(self) -> int:
        return dilated(self.kh, self.dh)

    @property
    def kw_eff(self) -> int:
        return dilated(self.kw, self.dw)

    @property
    def h_p(self) -> int:
        return self.h_in + self.pad_top + self.pad_bottom

    @property
    def w_p(self) -> int:
        return self.w_in + self.pad_left + self.pad_right

    @property
    def h_out(self) -> int:
        return conv_out_size(self.h_p, self.kh, self.sh, self.dh)

    @property
    def w_out(self) -> int:
        return conv_out_size(self.w_p, self.kw, self.sw, self.dw)

    @property
    def n_out(self) -> int:
        """Output size in scalars, N_out = H_out W_out C_out."""
        return self.h_out * self.w_out * self.c_out

    @property
    def n_in_dense(self) -> int:
        return self.h_in * self.w_in * self.c_in

    @property
    def n_in_padded(self) -> int:
        return self.h_p * self.w_p * self.c_in

    @property
    def has_padding(self) -> bool:
        return any((self.pad_top, self.pad_bottom, self.pad_left, self.pad_right))

    def transposed(self) -> ConvGeometry:
        """The same layer with H and W exchanged: column-major traversal of this layer is
        row-major traversal of the transposed one, with the input stored transposed."""
        return ConvGeometry(
            h_in=self.w_in,
            w_in=self.h_in,
            c_in=self.c_in,
            c_out=self.c_out,
            kh=self.kw,
            kw=self.kh,
            sh=self.sw,
            sw=self.sh,
            dh=self.dw,
            dw=self.dh,
            pad_top=self.pad_left,
            pad_bottom=self.pad_right,
            pad_left=self.pad_top,
            pad_right=self.pad_bottom,
        )

    def with_channels(self, c_in: int, c_out: int) -> ConvGeometry:
        return replace(self, c_in=c_in, c_out=c_out)


def make_geometry(
    input_hw: tuple[int, int],
    c_in: int,
    c_out: int,
    kernel: tuple[int, int] = (1, 1),
    stride: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
    padding: str | tuple[int, ...] = "valid",
) -> ConvGeometry:
    """Build a geometry from CLI-style fields; ``padding`` is ``same``, ``valid`` or
    ``(top, bottom, left, right)``."""
    (h, w), (kh, kw), (sh, sw), (dh, dw) = input_hw, kernel, stride, dilation
    for name, pair in (
        ("input", input_hw),
        ("kernel", kernel),
        ("stride", stride),
        ("dilation", dilation),
    ):
        if any(not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in pair):
            raise LayerError(f"{name} must be positive integers, got {list(pair)}")
    pads: tuple[int, ...]  # four values, checked below
    if isinstance(padding, str):
        if padding == "valid":
            pads = (0, 0, 0, 0)
        elif padding == "same":
            pads = (*same_padding(h, kh, sh, dh), *same_padding(w, kw, sw, dw))
        else:
            raise LayerError(f"padding must be 'same', 'valid' or T,B,L,R, got {padding!r}")
    else:
        pads = tuple(padding)
        if len(pads) != 4:
            raise LayerError(f"padding needs four values T,B,L,R, got {list(pads)}")
    return ConvGeometry(
        h_in=h,
        w_in=w,
        c_in=c_in,
        c_out=c_out,
        kh=kh,
        kw=kw,
        sh=sh,
        sw=sw,
        dh=dh,
        dw=dw,
        pad_top=pads[0],
        pad_bottom=pads[1],
        pad_left=pads[2],
        pad_right=pads[3],
    )
