"""Fused, row-streamed convolution chains in the RiP layout (issue 12; extends Theorems 4
and 13 from one layer to a path of layers).

A *chain* is a path of CONV_2D / DEPTHWISE_CONV_2D / MAX_POOL_2D / AVERAGE_POOL_2D ops,
op i reading op i-1's output, optionally ending in a residual ADD of the chain's input X.
Only X (the first op's input) and Y (the last op's output, or the ADD's) live in the arena;
every intermediate tensor lives in a ring of rows. Everything here is pure geometry, row
indices and byte counts; nothing plans or emits code.

Notation: layers l = 0..L-1 from the input side; layer l reads tensor T_l (T_0 = X, H_0 x
W_0 x C_0) and writes T_{l+1} (T_L = Y, H_L x W_L x C_L); per axis it has kernel k_l,
stride s_l, dilation d_l, leading padding p_l and k_eff_l = d_l (k_l - 1) + 1. All tensors
are NHWC, batch 1, int8 (one byte a scalar); padding is never stored (Appendix F's dense
layout), and a tap on padding reads no memory.

**The row schedule** (:func:`fused_schedule`) is the one order of every read and write,
which the fused C kernel follows:

* Layer l computes only its *needed* rows (every row of the last layer; for l < L-1 the
  rows some needed row of layer l+1 reads), each exactly once, in increasing order, each
  row whole (all W_{l+1} columns, all channels). Rows no one reads are never computed.
* Demand-driven (depth-first) order. ``compute(l, v)``: let ``reads`` be the real rows of
  T_l that row v of layer l reads (its taps v s_l + j d_l - p_l inside [0, H_l), in
  increasing j); if l > 0, first compute, in increasing order, every needed row of layer
  l-1 that is not yet computed and is <= max(reads) (each by ``compute(l-1, u)``); then
  compute row v of layer l from those rows. Step r (r = 0..H_L-1) is ``compute(L-1, r)``;
  the flattened call sequence of step r is ``FusedStep.computes`` (input side first).
  In C-like form (``needed[l]`` from :func:`needed_rows`, ``next[l]`` starting at 0)::

      for r in 0 .. H_L-1:  compute(L-1, r)
      compute(l, v):
          if l > 0 and v reads some real row:
              top = highest real row of T_l that v reads
              while next[l-1] < len(needed[l-1]) and needed[l-1][next[l-1]] <= top:
                  u = needed[l-1][next[l-1]++];  compute(l-1, u)
          row v of T_{l+1} = op_l(its real input rows)  # ring slot, or Y row v

  When a layer's stride is at most its dilated kernel height and its dilation is 1, the
  rows it reads are contiguous and ``needed[l-1]`` is a range (the MCUNet blocks); a stride
  above the kernel or a dilation leaves rows no one reads, which are never computed.
* Layer-0 rows read X rows straight from the arena; every other layer reads the ring of
  its input. Row u of T_l (0 < l < L) goes to ring slot ``i % R_{l-1}`` when it is
  computed, i its ordinal among ``needed[l-1]`` (how many rows of T_l were computed before
  it), overwriting whatever row was there; a reader finds row y at ``ordinal(y) % R``.
  When ``needed[l-1]`` is the range 0..last (every undilated chain whose strides are at
  most its kernels) the slot is simply ``u % R_{l-1}``.
* Writes: only layer L-1 writes the arena, and only in step r, only Y row r, pixel by pixel
  left to right, after every read of X in step r except the residual's (below). When L = 1
  the kernel gathers the row's receptive fields first (a tile of one whole output row,
  ``simulate_rip(..., tile=W_out)``). With the residual ADD, output pixel (r, c) reads X
  pixel (r, c) and then writes Y pixel (r, c): Y pixel (r, c) lies ``gap`` bytes below X
  pixel (r, c), so for any gap >= 0 no pixel of Y row r lands on an X byte that step r
  still has to read, and the interleave costs nothing at row granularity.

**Ring rows** (:func:`ring_rows`): for an intermediate T_{l+1} read by layer l+1,

    R_l = max over needed rows v of layer l+1 of
          #{ needed rows of T_{l+1} in [lo(v), max_{v' <= v} hi(v')] },

with lo(v), hi(v) the lowest and highest real rows that v reads: at the moment v reads, the
newest computed row is the running maximum of hi (rows are computed just in time and in
order), the oldest row v needs is lo(v), and every needed row between them is in the ring.
Since hi(v') <= v s + k_eff - 1 - p and lo(v) >= v s - p, R_l <= min(k_eff_{l+1},
H_{l+1}), with equality when the needed rows are contiguous and one needed row's dilated
window lies wholly inside the tensor: a ring holds the reader's dilated kernel height, no
more (the producer never runs ahead of its reader, so the stride adds nothing), and fewer
when the reader skips rows (a dilation-2, stride-2 reader needs only every other row).
Ring bytes = R_l W_{l+1} C_{l+1}.

**Rows in their input's slot** (:func:`in_slot`, issue 25). A depthwise layer l > 0 whose
reader holds one row of it (R_l = 1) may store its row v in the slot of T_l's ring that
holds the lowest row v reads, instead of a ring of its own, when

* the row fits the slot (W_{l+1} <= W_l; a depthwise keeps its channels),
* that row is dead: no later needed row of layer l reads it (a later row may read lower
  rows, where a dilated kernel clipped by the padding reads out of order), and
* no store reaches a byte a later read of the same compute needs. The row engine
  (kernels/rip_dw_row_engine.c) runs channel group by channel group, output pixels left
  to right, a pixel's taps read before its store; the store of pixel o, channel c covers
  input column o, channel c of that row, which a later pixel o' > o reads only if some tap
  o' s_w + j d_w - p_w = o: never when s_w > p_w (then o' s_w - p_w >= (o + 1) s_w - p_w > o)
  or the row has one pixel.

T_l's ring is not enlarged: with R_l = 1 the reader reads row v right after it is computed
and before layer l-1 computes again (the demand-driven order), and the next row of T_l to
arrive in that slot comes after that. So T_{l+1}'s ring costs nothing
(:func:`planned_rows` gives it 0 rows); the layer before must have a ring of its own.
`rip.allocator.theory.simulate_fused.slot_corruption` and ``chain_evictions`` execute it.

**Composite geometry** (:func:`composite_geometry`): seen from outside, with the rows of
every intermediate unbounded (no clipping), Y row o reads X rows o S + t - P, t in T, per axis

    S = prod_l s_l,   P = sum_l p_l prod_{m<l} s_m,
    T = { sum_l j_l d_l prod_{m<l} s_m : 0 <= j_l < k_l },   K = max T + 1
      = 1 + sum_l (k_eff_l - 1) prod_{m<l} s_m,

one convolution with stride S, leading padding P and dilated extent K (its taps T; T is an
arithmetic progression exactly when the chain is one dilated kernel). Clipping at the
intermediate tensors' borders only removes rows, so the real receptive field is a subset.

**Minimum gap** (Theorem 13 lifted to row steps). Y's base is ``gap`` bytes below X's; Y
row r is written in step r, after step r's reads of X. The debt after step q-1
(q = 1..H_L-1) is

    D(q) = q W_L C_L - C_0 ( W_0 F(q) + c_0 ),
    Delta* = max( 0, N_out - N_in, max_q D(q) ),   workspace = Delta* + N_in,

where q W_L C_L is out_end (Eq. 7 with a whole row per step), W_0 F(q) + c_0 the first X
pixel any later step reads (Eq. 40's next live input): F(q) the lowest X row read by a
layer-0 row computed in step q or later, c_0 the first X column any layer-0 output column
reads. The residual's X row q adds a term q (W_L C_L - W_0 C_0) = 0 (its shapes are
equal), so it never raises the gap. N_out - N_in keeps Y inside the workspace (Eq. 10).

*Fold form* (:func:`fused_gap_fold`, O(k_0^2), safe): F(q) >= FR_0(n(q)) with

* n(q) = 1 + N(q-1) a lower bound on the first layer-0 row not computed before step q. N
  folds the tail (layers 1..L-1) from the output: N_{L-1}(x) = x and
  N_{l-1}(x) = min(s_l N_l(x) + k_eff_l - 1 - p_l, H_l - d'_l) (d'_l = d_l if k_l > 1 else
  1: the highest real tap of a row whose window crosses the bottom border is at least
  H_l - d_l). Unclipped this is n(q) = (q-1) S_t + K_t - P_t with (S_t, K_t, P_t) the tail's
  composite geometry: the chain frees X at layer 0's pace, K_t - S_t ring-held rows ahead of
  the composite receptive field.
* FR_0(u) Theorem 13's suffix minimum (Eq. 40) on layer 0's row axis: the lowest real X
  row read by any layer-0 row >= u (infinite past the last layer-0 row any step needs).

D is then piecewise affine, and its maximum is at the breakpoints (where a layer-0 tap
enters or leaves the real rows, where two taps' suffix minima cross, where the fold clips,
the ends), O(k_0^2) of them. It is loose only where a dilated tail layer's window crosses
the bottom border (the clip H_l - d_l) or the tail skips rows (the suffix minimum counts
layer-0 rows never computed).

*Exact form* (:func:`fused_gap`, what the planner uses): F(q) exactly, from the needed rows
(traced through the readers' taps) and the running maxima of the highest row read, each
evaluation touching O(k_eff / s) rows per layer. Away from every border (more than the
composite receptive field, twice, from either end) the needed rows repeat with period S_t
per step and F(q + 1) = F(q) + S, so D is affine with slope W_L C_L - S W_0 C_0 (Lemma 3's
beta of the composite geometry) and peaks at the edges of the two border strips; D is
evaluated on those strips only, O(K / S) steps whatever H.

For L = 1 both forms reduce to Theorem 13's row-end branch (n(q) = q), so a one-op chain with
W_out = 1 gets exactly ``rip_dense_gap``; in general a one-op chain gets the bound for
gathering a whole output row before writing it. The corruption simulator
(:mod:`rip.allocator.theory.simulate_fused`) executes the schedule and measures the truth.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rip.allocator.theory.bounds import INF, _Axis, check_dense
from rip.allocator.theory.geometry import ConvGeometry
from rip.core.errors import LayerError
from rip.core.operators import SPECS, WINDOW_POOLS, Op

CONV, DEPTHWISE = Op.CONV_2D, Op.DEPTHWISE_CONV_2D
MAX_POOL, AVERAGE_POOL = Op.MAX_POOL_2D, Op.AVERAGE_POOL_2D
CHAIN_KINDS = tuple(s.op for s in SPECS.values() if s.chain_stage)
POOL_KINDS = WINDOW_POOLS
THEOREM = "fused chain: Theorem 13 over row steps (Eq. 7, Eq. 40; Appendix F)"


# --------------------------------------------------------------------------------------
# The chain
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChainOp:
    """One op of a chain: its kind and its geometry (kernel, stride, dilation, padding per
    axis, channels, input extent; the output extent follows)."""

    kind: str
    geom: ConvGeometry

    def __post_init__(self) -> None:
        if self.kind not in CHAIN_KINDS:
            raise LayerError(f"chain: {self.kind} cannot be fused (one of {CHAIN_KINDS})")
        g = self.geom
        if self.kind in POOL_KINDS and (g.c_out != g.c_in or (g.dh, g.dw) != (1, 1)):
            raise LayerError(f"chain: {self.kind} keeps channels and has no dilation")
        if self.kind == DEPTHWISE and g.c_out % g.c_in:
            raise LayerError(
                f"chain: depthwise output channels {g.c_out} are not a multiple of {g.c_in}"
            )
        try:  # every output window reaches a real row and column (Theorem 13's domain)
            check_dense(g)
        except LayerError as e:
            raise LayerError(f"chain: {self.kind}: {e}") from None


@dataclass(frozen=True)
class Chain:
    """A path of ops whose intermediate tensors each have exactly one reader (the next op),
    optionally ending in a residual ADD that reads the chain's input X and writes Y."""

    ops: tuple[ChainOp, ...]
    residual: bool = False

    def __post_init__(self) -> None:
        if not self.ops:
            raise LayerError("chain: needs at least one op")
        for i, (a, b) in enumerate(zip(self.ops, self.ops[1:], strict=False)):
            out = (a.geom.h_out, a.geom.w_out, a.geom.c_out)
            inp = (b.geom.h_in, b.geom.w_in, b.geom.c_in)
            if out != inp:
                raise LayerError(f"chain: op {i} writes {out} but op {i + 1} reads {inp}")
        if self.residual and self.output_hwc != self.input_hwc:
            raise LayerError(
                f"chain: residual ADD needs the output shape {self.output_hwc} to equal the "
                f"input shape {self.input_hwc}"
            )

    @property
    def length(self) -> int:
        return len(self.ops)

    @property
    def input_hwc(self) -> tuple[int, int, int]:
        g = self.ops[0].geom
        return g.h_in, g.w_in, g.c_in

    @property
    def output_hwc(self) -> tuple[int, int, int]:
        g = self.ops[-1].geom
        return g.h_out, g.w_out, g.c_out

    @property
    def n_in(self) -> int:
        """Bytes of X (dense, padding never stored)."""
        return math.prod(self.input_hwc)

    @property
    def n_out(self) -> int:
        """Bytes of Y."""
        return math.prod(self.output_hwc)

    @property
    def intermediates_hwc(self) -> tuple[tuple[int, int, int], ...]:
        """Shapes of T_1 .. T_{L-1}, the tensors held in rings."""
        return tuple((op.geom.h_out, op.geom.w_out, op.geom.c_out) for op in self.ops[:-1])

    def describe(self) -> str:
        parts = []
        for op in self.ops:
            g = op.geom
            parts.append(
                f"{op.kind} {g.kh}x{g.kw}/{g.sh}x{g.sw}"
                + (f" d{g.dh}x{g.dw}" if (g.dh, g.dw) != (1, 1) else "")
                + f" {g.c_in}->{g.c_out}"
            )
        h, w, c = self.input_hwc
        tail = " + ADD(x)" if self.residual else ""
        return f"{h}x{w}x{c}: " + " -> ".join(parts) + tail


def make_chain(ops: Iterable[tuple[str, ConvGeometry]], residual: bool = False) -> Chain:
    """A chain from (kind, geometry) pairs, input side first."""
    return Chain(tuple(ChainOp(kind, geom) for kind, geom in ops), residual)


# --------------------------------------------------------------------------------------
# One layer on one axis
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AxisLayer:
    """One layer seen along one axis: n_in real input positions, n_out outputs; output o
    reads positions o s + j d - pad, j in [0, k), those inside [0, n_in) being real."""

    n_in: int
    n_out: int
    k: int
    s: int
    d: int
    pad: int

    @property
    def k_eff(self) -> int:
        return self.d * (self.k - 1) + 1

    def reads(self, o: int) -> tuple[int, ...]:
        """Real input positions read by output o, increasing."""
        base = o * self.s - self.pad
        return tuple(base + j * self.d for j in range(self.k) if 0 <= base + j * self.d < self.n_in)


def axis_layer(geom: ConvGeometry, axis: str) -> AxisLayer:
    """The row axis (``"h"``) or the column axis (``"w"``) of a layer."""
    if axis == "h":
        return AxisLayer(geom.h_in, geom.h_out, geom.kh, geom.sh, geom.dh, geom.pad_top)
    if axis == "w":
        return AxisLayer(geom.w_in, geom.w_out, geom.kw, geom.sw, geom.dw, geom.pad_left)
    raise LayerError(f"axis must be 'h' or 'w', got {axis!r}")


# --------------------------------------------------------------------------------------
# Composite geometry
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AxisComposite:
    """A chain along one axis as one convolution: output o reads input o S + t - P for t
    in ``taps`` (unclipped), ``extent`` K = max(taps) + 1. ``pad_after`` is the trailing
    padding that makes the envelope give exactly ``n_out`` outputs (negative when trailing
    input rows are reached by no output; never below -(S-1))."""

    n_in: int
    n_out: int
    stride: int
    pad: int
    extent: int
    taps: tuple[int, ...]

    @property
    def pad_after(self) -> int:
        return (self.n_out - 1) * self.stride + self.extent - self.n_in - self.pad

    @property
    def dilation(self) -> int | None:
        """d when the taps are exactly {0, d, ..., (k-1) d}, else None."""
        if len(self.taps) == 1:
            return 1
        d = self.taps[1] - self.taps[0]
        return d if self.taps == tuple(range(0, self.extent, d)) else None

    def window(self, o: int) -> tuple[int, int]:
        """First and last input position of output o's envelope, unclipped."""
        lo = o * self.stride - self.pad
        return lo, lo + self.extent - 1


def compose(layers: Sequence[AxisLayer]) -> AxisComposite:
    """Compose layers along one axis, input side first: after layer l, output o reads
    o (s S) + (j d S + t) - (p S + P) for the previous (S, P, T)."""
    if not layers:
        raise LayerError("compose: needs at least one layer")
    stride, pad, taps = 1, 0, {0}
    for a in layers:
        taps = {t + j * a.d * stride for t in taps for j in range(a.k)}
        pad += a.pad * stride
        stride *= a.s
    ordered = tuple(sorted(taps))
    return AxisComposite(layers[0].n_in, layers[-1].n_out, stride, pad, ordered[-1] + 1, ordered)


@dataclass(frozen=True)
class CompositeGeometry:
    """The chain seen from outside, per axis (rows, cols)."""

    rows: AxisComposite
    cols: AxisComposite

    def as_conv(self, c_in: int, c_out: int) -> ConvGeometry:
        """The envelope convolution: kernel K x K', stride S x S', dilation 1, padding
        (P, max(0, pad_after)) per axis. Its output extent is the chain's."""
        r, c = self.rows, self.cols
        return ConvGeometry(
            h_in=r.n_in,
            w_in=c.n_in,
            c_in=c_in,
            c_out=c_out,
            kh=r.extent,
            kw=c.extent,
            sh=r.stride,
            sw=c.stride,
            pad_top=r.pad,
            pad_bottom=max(0, r.pad_after),
            pad_left=c.pad,
            pad_right=max(0, c.pad_after),
        )


def composite_geometry(chain: Chain) -> CompositeGeometry:
    """Composite stride, padding, extent and taps of the whole chain, per axis."""
    return CompositeGeometry(
        compose([axis_layer(op.geom, "h") for op in chain.ops]),
        compose([axis_layer(op.geom, "w") for op in chain.ops]),
    )


# --------------------------------------------------------------------------------------
# The row schedule
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RowCompute:
    """Compute row ``row`` of layer ``layer``'s output, reading ``reads`` (real rows of the
    layer's input, increasing: X rows for layer 0, ring rows of T_layer otherwise). The
    row goes to ring slot :meth:`FusedSchedule.slot` unless the layer is the last, whose
    row is Y's row of the step."""

    layer: int
    row: int
    reads: tuple[int, ...]


@dataclass(frozen=True)
class FusedStep:
    """Step r: ``computes`` in order (the last is (L-1, r)); ``x_rows`` the X rows the
    layer-0 computes read in this step, in read order (a row may repeat); ``residual_row``
    the X row the residual ADD reads (pixel by pixel, interleaved with Y row r's writes)."""

    row: int
    computes: tuple[RowCompute, ...]
    x_rows: tuple[int, ...]
    residual_row: int | None


@dataclass(frozen=True)
class FusedSchedule:
    chain: Chain
    steps: tuple[FusedStep, ...]
    ring_rows: tuple[int, ...]  # per intermediate T_1 .. T_{L-1}
    ring_bytes: tuple[int, ...]
    needed: tuple[tuple[int, ...], ...]  # per layer, the rows it computes (needed_rows)

    def slot(self, layer: int, row: int) -> int:
        """Ring slot of row ``row`` of layer ``layer``'s output (layer < L-1): its
        ordinal among the layer's needed rows, modulo the ring's rows."""
        rows = self.needed[layer]
        i = bisect.bisect_left(rows, row)
        if i == len(rows) or rows[i] != row:
            raise LayerError(f"schedule: layer {layer} never computes row {row}")
        return i % self.ring_rows[layer]

    def computes(self) -> list[RowCompute]:
        """Every row computation in execution order."""
        return [c for step in self.steps for c in step.computes]

    def computed_rows(self, layer: int) -> tuple[int, ...]:
        """Rows of layer ``layer``'s output in the order they are computed."""
        return tuple(c.row for c in self.computes() if c.layer == layer)


def needed_rows(chain: Chain) -> list[list[int]]:
    """Per layer, the rows it computes, increasing: all rows of the last layer, and for
    l < L-1 the rows some needed row of layer l+1 reads."""
    axes = [axis_layer(op.geom, "h") for op in chain.ops]
    needed: list[list[int]] = [[] for _ in axes]
    needed[-1] = list(range(axes[-1].n_out))
    for layer in range(len(axes) - 1, 0, -1):
        rows: set[int] = set()
        for v in needed[layer]:
            rows.update(axes[layer].reads(v))
        needed[layer - 1] = sorted(rows)
    return needed


def fused_schedule(chain: Chain) -> FusedSchedule:
    """The demand-driven row schedule of the module docstring: step r computes Y row r and,
    just before, every intermediate row it needs that is not computed yet, each once."""
    axes = [axis_layer(op.geom, "h") for op in chain.ops]
    needed = needed_rows(chain)
    nxt = [0] * len(axes)  # index of the next row to compute in needed[l]
    out: list[RowCompute] = []

    def compute(layer: int, v: int) -> None:
        reads = axes[layer].reads(v)
        if layer > 0 and reads:
            below, top = needed[layer - 1], max(reads)
            while nxt[layer - 1] < len(below) and below[nxt[layer - 1]] <= top:
                u = below[nxt[layer - 1]]
                nxt[layer - 1] += 1
                compute(layer - 1, u)
        out.append(RowCompute(layer, v, reads))

    steps = []
    for r in range(axes[-1].n_out):
        out = []
        nxt[-1] += 1  # needed[L-1] is every row: step r computes row r
        compute(len(axes) - 1, r)
        x_rows = tuple(y for c in out if c.layer == 0 for y in c.reads)
        steps.append(FusedStep(r, tuple(out), x_rows, r if chain.residual else None))
    rings = ring_rows(chain)
    return FusedSchedule(
        chain, tuple(steps), rings, ring_bytes(chain, rings), tuple(map(tuple, needed))
    )


def ring_rows(chain: Chain) -> tuple[int, ...]:
    """R_l for every intermediate T_{l+1} (module docstring): the most needed rows, over
    the needed rows v of its reader, from the oldest row v reads to the newest row computed
    by then (the running maximum of the highest row read)."""
    axes = [axis_layer(op.geom, "h") for op in chain.ops]
    needed = needed_rows(chain)
    rings = []
    for reader in range(1, len(axes)):
        made = needed[reader - 1]
        newest, most = -1, 1
        for v in needed[reader]:
            reads = axes[reader].reads(v)
            if reads:
                newest = max(newest, reads[-1])
                held = bisect.bisect_right(made, newest) - bisect.bisect_left(made, reads[0])
                most = max(most, held)
        rings.append(most)
    return tuple(rings)


def slot_candidate(chain: Chain, layer: int, rows: int, before_in_slot: bool) -> bool:
    """Whether the fused kernel can store T_{layer+1}'s rows in its input's ring slot at
    all (whether it is safe is `in_slot`'s, and the simulator's, question): a depthwise
    layer after the first that keeps its channels, read one row at a time (``rows``, its
    ring's rows, is 1), after a layer with a ring of its own (``before_in_slot`` False)."""
    op = chain.ops[layer]
    return (
        layer > 0
        and not before_in_slot
        and op.kind == DEPTHWISE
        and op.geom.c_out == op.geom.c_in
        and rows == 1
    )


def _stores_behind_reads(geom: ConvGeometry) -> bool:
    """Whether the row engine, storing output pixel x over input column x once it has read
    x's taps (pixels left to right, per channel group), overwrites only columns no later
    pixel reads: no pixel x' reads a column c < x' (column c already holds output pixel c).
    Always so when the stride is greater than the left padding."""
    cols = axis_layer(geom, "w")
    return not any(c < x for x in range(1, geom.w_out) for c in cols.reads(x))


def in_slot(chain: Chain, rows: Sequence[int] | None = None) -> tuple[bool, ...]:
    """Per intermediate T_1 .. T_{L-1}: whether its rows are stored in the slot of its
    input's ring that held the lowest row each reads (module docstring), given the ring
    rows ``rows`` (default `ring_rows`)."""
    rows = ring_rows(chain) if rows is None else tuple(rows)
    axes = [axis_layer(op.geom, "h") for op in chain.ops]
    needed = needed_rows(chain)
    out: list[bool] = []
    for layer in range(chain.length - 1):
        g = chain.ops[layer].geom
        ok = (
            slot_candidate(chain, layer, rows[layer], bool(out) and out[-1])
            and g.w_out <= g.w_in
            and _stores_behind_reads(g)
        )
        if ok:  # each needed row's lowest read is read by no later needed row
            reads = [axes[layer].reads(v) for v in needed[layer]]
            ok = all(a and all(a[0] not in b for b in reads[i + 1 :])
                     for i, a in enumerate(reads))  # fmt: skip
        out.append(ok)
    return tuple(out)


def planned_rows(chain: Chain) -> tuple[int, ...]:
    """The rows of each intermediate's own ring as planned: `ring_rows`, 0 where the rows
    live in their input's slot (`in_slot`)."""
    rows = ring_rows(chain)
    return tuple(0 if own else r for r, own in zip(rows, in_slot(chain, rows), strict=True))


def source_rows(chain: Chain) -> int:
    """Rows of X held when X streams in (issue 25, ``--stream-input``): the source delivers
    every X row once, in order, each just before the first layer-0 row that reads it (the
    kernel pulls rows up to the highest one that row reads), into slot ``row % R``. So, over
    the layer-0 rows v in compute order, R is the most rows from the oldest row v reads to
    the newest row delivered by then (the running maximum of the highest row read), every
    row between them counted: unlike a ring of T_l, no X row is skipped. At most the first
    layer's dilated kernel height k_eff_0 (fewer where windows are clipped by the border);
    `rip.allocator.theory.simulate_fused.source_evictions` executes it."""
    axis = axis_layer(chain.ops[0].geom, "h")
    newest, most = -1, 1
    for v in needed_rows(chain)[0]:
        reads = axis.reads(v)
        if reads:
            newest = max(newest, reads[-1])
            most = max(most, newest - reads[0] + 1)
    return most


def source_bytes(chain: Chain, rows: int | None = None) -> int:
    """Bytes of the streamed input's ring: ``rows`` (default `source_rows`) rows of W_0 C_0."""
    _, w, c = chain.input_hwc
    return (source_rows(chain) if rows is None else rows) * w * c


def ring_bytes(chain: Chain, rows: Sequence[int] | None = None) -> tuple[int, ...]:
    """Bytes of each ring: R_l rows of W_{l+1} C_{l+1} (``rows`` default `planned_rows`:
    nothing for rows stored in their input's slot)."""
    rows = planned_rows(chain) if rows is None else rows
    return tuple(r * w * c for r, (_, w, c) in zip(rows, chain.intermediates_hwc, strict=True))


# --------------------------------------------------------------------------------------
# The closed-form gap
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FusedBound:
    """The in-place requirement of a fused chain: Y's base ``gap`` bytes below X's, the
    pair spanning ``workspace`` bytes; rings are separate arena tensors living for the op."""

    gap: int
    workspace: int
    ring_rows: tuple[int, ...]
    ring_bytes: tuple[int, ...]
    composite: CompositeGeometry
    theorem: str = THEOREM


@dataclass(frozen=True)
class _Fold:
    """x -> min(a x + b, c): the tail's lower bound on the highest row of T_1 needed by Y
    rows <= x (module docstring, N)."""

    a: int
    b: int
    c: float

    def __call__(self, x: int) -> float:
        return min(self.a * x + self.b, self.c)


def _tail_fold(chain: Chain) -> _Fold:
    fold = _Fold(1, 0, INF)
    for op in reversed(chain.ops[1:]):
        a = axis_layer(op.geom, "h")
        drop = a.d if a.k > 1 else 1
        e = a.k_eff - 1 - a.pad
        fold = _Fold(a.s * fold.a, a.s * fold.b + e, min(a.s * fold.c + e, a.n_in - drop))
    return fold


def _last_needed_layer0_row(chain: Chain) -> int:
    """An upper bound on the highest row of T_1 any step computes."""
    top = chain.ops[-1].geom.h_out - 1
    for op in reversed(chain.ops[1:]):
        a = axis_layer(op.geom, "h")
        top = min(a.n_in - 1, top * a.s + a.k_eff - 1 - a.pad)
    return top


@dataclass(frozen=True)
class _Debt:
    """D(q) of the module docstring, evaluated directly."""

    row_out: int  # W_L C_L
    row_in: int  # W_0 C_0
    c_in: int
    first_col: float  # c_0
    rows0: _Axis  # layer 0's row axis, outputs up to the last needed
    fold: _Fold

    def n(self, q: int) -> int:
        return max(0, int(1 + self.fold(q - 1)))

    def __call__(self, q: int) -> float:
        first_row = self.rows0.first_read(self.n(q), onwards=True)
        if first_row == INF or self.first_col == INF:
            return -INF  # no later step reads X (the residual's term is 0)
        return q * self.row_out - self.row_in * first_row - self.c_in * self.first_col


def _debt(chain: Chain) -> _Debt:
    g0 = chain.ops[0].geom
    rows0 = _Axis(g0.h_in, _last_needed_layer0_row(chain) + 1, g0.kh, g0.sh, g0.dh, g0.pad_top)
    cols0 = _Axis(g0.w_in, g0.w_out, g0.kw, g0.sw, g0.dw, g0.pad_left)
    _, w_out, c_out = chain.output_hwc
    return _Debt(
        w_out * c_out,
        g0.w_in * g0.c_in,
        g0.c_in,
        cols0.first_read(0, onwards=True),
        rows0,
        _tail_fold(chain),
    )


def _row_breakpoints(a: _Axis) -> set[int]:
    """Integers u around which the suffix minimum FR(u) = a.first_read(u, onwards=True) may
    change slope: each tap's entry and exit (the ends of its real window) and where one
    tap's constant prefix meets another tap's affine part, each with its neighbours."""
    points = {0, 1, a.n_out - 1, a.n_out, a.n_out + 1}
    windows = [a._window(i) for i in range(a.k)]
    for i, (lo, hi) in enumerate(windows):
        points.update((lo - 1, lo, lo + 1, hi, hi + 1, hi + 2))
        for j in range(a.k):
            if j != i:  # u s + j d = lo s + i d
                x = lo + (i - j) * a.d / a.s
                points.update((math.floor(x), math.ceil(x), math.ceil(x) + 1))
    return {u for u in points if u >= 0}


def _q_breakpoints(chain: Chain, debt: _Debt) -> set[int]:
    """Steps q at which D(q) may change slope, clipped to [1, H_L - 1]: n(q) is affine
    (slope S_t) until the fold clips, then constant, so each u-breakpoint of FR maps to
    the two q on either side of it."""
    h_last = chain.output_hwc[0]
    fold = debt.fold
    qs = {1, h_last - 1}
    # n(q) = 1 + fold.a (q - 1) + fold.b while unclipped
    for u in _row_breakpoints(debt.rows0):
        x = (u - 1 - fold.b) / fold.a + 1
        qs.update((math.floor(x), math.ceil(x)))
    if fold.c != INF:
        x = (fold.c - fold.b) / fold.a + 1
        qs.update((math.floor(x), math.ceil(x), math.ceil(x) + 1))
    return {q for q in qs if 1 <= q <= h_last - 1}


def fused_gap_fold(chain: Chain) -> int:
    """A safe gap (bytes) for writing Y over X in the RiP layout under
    :func:`fused_schedule` in O(k_0^2): Theorem 13 (Appendix F) lifted to whole-row steps,
    the tail folded into n(q), max over the breakpoints of D (module docstring); at least
    N_out - N_in (Eq. 10's second term). Equal to :func:`fused_gap` unless the tail is
    dilated at a border or skips rows.

    The fold composes each tail layer's rows read as an affine map, which assumes every
    output row of a tail layer reads at least one real row. Where some row reads padding
    only (a dilated kernel over a short input: such a row needs nothing, so the schedule
    computes it before the rows the fold counts as consumed), the fold would overstate
    what is consumed; the exact form is used there (found by the property test: a 3-row
    chain whose last layer's first output row lies wholly in its padding, fold 0, truth 1)."""
    if _tail_row_reads_nothing(chain):
        return fused_gap(chain)
    return _fold_form(chain)


def _fold_form(chain: Chain) -> int:
    """The fold form itself: D at its breakpoints, at least N_out - N_in."""
    debt = _debt(chain)
    worst = max((debt(q) for q in _q_breakpoints(chain, debt)), default=-INF)
    return int(max(0, chain.n_out - chain.n_in, worst))


def _tail_row_reads_nothing(chain: Chain) -> bool:
    """Some output row of a layer after the first reads no real row of its input."""
    for op in chain.ops[1:]:
        a = axis_layer(op.geom, "h")
        if any(not a.reads(o) for o in range(a.n_out)):
            return True
    return False


# --------------------------------------------------------------------------------------
# The exact gap: the same debt with the next live input exact, on the border strips
# --------------------------------------------------------------------------------------
class _Exact:
    """D(q) with n(q) and FR exact (module docstring, "exact form"): which rows are needed
    (traced through the readers' taps, memoised), the running maximum of the highest row
    read over needed rows, and the lowest X row read by a needed layer-0 row still to come.
    Each evaluation touches O(k_eff / s) rows per layer, independent of H."""

    def __init__(self, chain: Chain) -> None:
        self.axes = [axis_layer(op.geom, "h") for op in chain.ops]
        self.last = len(self.axes) - 1
        self.memo: dict[tuple[int, int], bool] = {}
        debt = _debt(chain)
        self.row_out, self.row_in, self.c_in = debt.row_out, debt.row_in, debt.c_in
        self.first_col = debt.first_col

    def needed(self, layer: int, v: int) -> bool:
        """Row v of layer ``layer``'s output is computed by the schedule."""
        if not 0 <= v < self.axes[layer].n_out:
            return False
        if layer == self.last:
            return True
        key = (layer, v)
        if key not in self.memo:
            a = self.axes[layer + 1]  # its reader
            self.memo[key] = any(
                (v + a.pad - j * a.d) % a.s == 0
                and self.needed(layer + 1, (v + a.pad - j * a.d) // a.s)
                for j in range(a.k)
            )
        return self.memo[key]

    def running_top(self, layer: int, x: int) -> int:
        """Highest input row read by the needed rows v <= x of ``layer`` (-1 if none):
        the newest row of its input computed once row x is."""
        a, best = self.axes[layer], -1
        v = min(x, a.n_out - 1)
        while v >= 0 and v * a.s + a.k_eff - 1 - a.pad > best:
            if self.needed(layer, v) and (reads := a.reads(v)):
                best = max(best, reads[-1])
            v -= 1
        return best

    def first_later(self, top: int) -> float:
        """Lowest X row read by a needed layer-0 row above ``top``."""
        a, best = self.axes[0], INF
        u = top + 1
        while u < a.n_out and max(0, u * a.s - a.pad) < best:
            if self.needed(0, u) and (reads := a.reads(u)):
                best = min(best, reads[0])
            u += 1
        return best

    def __call__(self, q: int) -> float:
        top = q - 1  # the newest row of each layer once steps 0..q-1 ran
        for layer in range(self.last, 0, -1):
            top = self.running_top(layer, top)
        first_row = self.first_later(top)
        if first_row == INF or self.first_col == INF:
            return -INF
        return q * self.row_out - self.row_in * first_row - self.c_in * self.first_col


def _strips(chain: Chain) -> set[int]:
    """Steps within reach of a border: the first and last M steps, M covering the composite
    receptive field twice over. Between them every row the debt looks at is clear of every
    tensor's border, the needed rows repeat with period S_t, and D is affine with slope
    W_L C_L - S W_0 C_0 (the composite beta of Lemma 3), so its maximum there is at the
    strips' edges."""
    rows = composite_geometry(chain).rows
    h_last = chain.output_hwc[0]
    m = 2 * (-(-(rows.extent + rows.pad) // rows.stride)) + 6
    return set(range(1, min(h_last, m + 1))) | set(range(max(1, h_last - 1 - m), h_last))


def fused_gap(chain: Chain) -> int:
    """Minimum safe gap (bytes) for writing Y over X in the RiP layout under
    :func:`fused_schedule`: the debt D of :func:`fused_gap_fold` (Theorem 13 over row
    steps) with the next live input exact (needed rows traced, running maxima exact),
    evaluated on the two border strips (O(K / S) steps of O(k_eff / s) work per layer; D is
    affine in between); at least N_out - N_in (Eq. 10's second term). Never above
    :func:`fused_gap_fold`."""
    exact = _Exact(chain)
    worst = max((exact(q) for q in _strips(chain)), default=-INF)
    return int(max(0, chain.n_out - chain.n_in, worst))


def fused_bound(chain: Chain) -> FusedBound:
    """Gap (:func:`fused_gap`), workspace (gap + N_in), ring rows and bytes, and the
    composite geometry."""
    gap = fused_gap(chain)
    rings = ring_rows(chain)
    return FusedBound(
        gap, gap + chain.n_in, rings, ring_bytes(chain, rings), composite_geometry(chain)
    )
