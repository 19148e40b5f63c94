"""Herringbone peak debt (Sec. 3, Appendices C-E): the baseline RiP is measured against.

Three closed forms, all for the herringbone traversal with taps read from the workspace over
the padded layout:

* :func:`gm_eq1_gap`: Gural & Murmann's as-published Eq. 1 (kept to show its two limitations);
* :func:`corollary1_gap`: the corrected restricted form, Eq. 2-3;
* :func:`herringbone_gap`: the generalized Theorem 11, Eq. 23-38, with the degenerate
  single-row case of Sec. E.3.
"""

from __future__ import annotations

from rip.allocator.theory.bounds import Bound
from rip.allocator.theory.geometry import ConvGeometry
from rip.core.errors import LayerError


def _restricted(geom: ConvGeometry, name: str) -> int:
    """The domain of [9]: valid padding, unit stride and dilation, odd square kernel,
    square input. Returns k."""
    problems = []
    if geom.has_padding:
        problems.append("valid padding")
    if (geom.sh, geom.sw) != (1, 1):
        problems.append("stride 1")
    if (geom.dh, geom.dw) != (1, 1):
        problems.append("dilation 1")
    if geom.kh != geom.kw or geom.kh % 2 == 0:
        problems.append("an odd square kernel")
    if geom.h_in != geom.w_in:
        problems.append("a square input")
    if problems:
        raise LayerError(f"scheme: {name} is defined only for " + ", ".join(problems))
    return geom.kh


def gm_eq1_gap(geom: ConvGeometry) -> int:
    """Eq. 1, as published by Gural & Murmann [9, Eq. 2]:
    (H_out W_out - floor(x*)^2) C_out - (H_in W_in - (floor(x*) + k - 1)^2 - k) C_in.

    Under-allocates by (k-1) C_in mod (C_out - C_in) when x* is not an integer (Lemma 9) and
    overestimates without bound once floor(x*) leaves the output grid (Limitation 2).
    With C_out <= C_in, x* is undefined and the form reduces to its alpha <= 0 reading,
    the write-before-clear headroom C_out.
    """
    k = _restricted(geom, "gm-eq1")
    alpha, rho = geom.c_out - geom.c_in, (k - 1) * geom.c_in
    if alpha <= 0:
        return geom.c_out
    x = rho // alpha  # floor(x*)
    return (geom.h_out * geom.w_out - x * x) * geom.c_out - (
        geom.h_in * geom.w_in - (x + k - 1) ** 2 - k
    ) * geom.c_in


def corollary1_gap(geom: ConvGeometry) -> int:
    """Corollary 1 (corrected restricted form), Eq. 2-3: clamp the critical leg to the grid,
    x_hat = min(floor(x*), W_out - 1), and add the partial-leg remainder rho - alpha x_hat.
    D_hb = C_out when alpha = C_out - C_in <= 0."""
    k = _restricted(geom, "corollary1")
    alpha, rho = geom.c_out - geom.c_in, (k - 1) * geom.c_in
    if alpha <= 0:
        return geom.c_out
    x_hat = min(rho // alpha, geom.w_out - 1)
    return (
        (geom.h_out * geom.w_out - x_hat * x_hat) * geom.c_out
        - (geom.h_in * geom.w_in - (x_hat + k - 1) ** 2 - k) * geom.c_in
        + (rho - alpha * x_hat)
    )


def herringbone_gap(geom: ConvGeometry) -> int:
    """Theorem 11 (generalized herringbone peak debt), Eq. 38.

    Residual footprints w_r, h_r and slopes of Eq. 23-24 relabelled by the longer output
    axis; the running debt is a downward parabola per leg type (Eq. 32, 35) evaluated at
    the integers either side of its vertex (Eq. 33, 36), plus the last major leg (Eq. 37)
    and the write-before-clear floor C_out. With one output row or column only the last
    leg exists (Sec. E.3).
    """
    c_in, c_out = geom.c_in, geom.c_out
    h_out, w_out = geom.h_out, geom.w_out
    big, small = max(h_out, w_out), min(h_out, w_out)
    delta = big - small
    w_r = geom.w_p - geom.sw * (w_out - 1)
    h_r = geom.h_p - geom.sh * (h_out - 1)
    alpha = c_out - geom.sh * geom.sw * c_in
    rho_r, rho_c = geom.sh * c_in * (w_r - geom.sw), geom.sw * c_in * (h_r - geom.sh)
    r_r, r_c = w_r * geom.sh * c_in, h_r * geom.sw * c_in
    if w_out >= h_out:
        rho_maj, rho_min, r_min = rho_r, rho_c, r_c
    else:
        rho_maj, rho_min, r_min = rho_c, rho_r, r_r
    beta = c_out - r_min
    rho = rho_maj + rho_min
    base = alpha * big * big - big * (rho + alpha * delta) + c_out

    def leg_y(x: int, minor: bool) -> int:
        # within-leg maximum: the leg's end when debt grows along it, else its start
        if alpha > 0:
            return x - delta - 1 if minor else x
        return 1

    def l_maj(x: int, y: int) -> int:  # Eq. 32
        return -alpha * x * x + (rho + alpha * delta) * x + base + alpha * (y - 1)

    def l_min(x: int, y: int) -> int:  # Eq. 35
        return -alpha * x * x + (rho + alpha * (delta + 1)) * x + base - rho_maj + alpha * (y - 1)

    def candidates(vertex_twice: int, denom: int) -> set[int]:
        # floor and ceil of vertex_twice / denom, clipped to the leg domain [delta+2, M]
        lo, hi = delta + 2, big
        if alpha <= 0:
            return {lo, hi}
        v = (vertex_twice // denom, -((-vertex_twice) // denom))
        return {min(max(x, lo), hi) for x in v}

    l_last = l_min(delta + 2, 1) - r_min + c_out + max(0, beta * delta)  # Eq. 37
    if small == 1:  # Sec. E.3: no minor leg exists
        return max(c_out, l_last)
    # x*_maj = rho / (2 alpha) + delta / 2 = (rho + alpha delta) / (2 alpha), Eq. 33;
    # x*_min = x*_maj + 1/2, Eq. 36.
    two_alpha = 2 * alpha if alpha > 0 else 1
    c_maj = candidates(rho + alpha * delta, two_alpha)
    c_min = candidates(rho + alpha * (delta + 1), two_alpha)
    return max(
        c_out,
        l_last,
        max(l_maj(x, leg_y(x, False)) for x in c_maj),
        max(l_min(x, leg_y(x, True)) for x in c_min),
    )


def herringbone_bound(geom: ConvGeometry, scheme: str = "herringbone") -> Bound:
    """Gap and workspace (gap + H_p W_p C_in) of a herringbone closed form."""
    forms = {
        "herringbone": (herringbone_gap, "Theorem 11 (Eq. 38)"),
        "gm-eq1": (gm_eq1_gap, "Gural & Murmann Eq. 1"),
        "corollary1": (corollary1_gap, "Corollary 1 (Eq. 3)"),
    }
    if scheme not in forms:
        raise LayerError(f"scheme must be one of {sorted(forms)}, got {scheme!r}")
    fn, theorem = forms[scheme]
    gap = fn(geom)
    return Bound(
        scheme,
        "padded",
        "workspace",
        "herringbone",
        gap,
        gap + geom.n_in_padded,
        (geom.h_out, geom.w_out),
        theorem,
    )
