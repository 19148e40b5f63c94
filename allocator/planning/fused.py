"""The fused chain as the planner sees it: its row schedule, the gap at which its output
may overwrite its input (RiP layout), and the choice of which chains to fuse.

The row schedule is the one kernels/rip_fused.c executes (``rip_fused_chain_s8``), a lazy
pull: for each output row of the last stage in order, a stage computes row t only after
pulling, in order, every row of the stage before it that row t's window ends at; a row is
computed once and only when some row of its reader needs it. `schedule` lists that order,
and `simulate_gap` executes it at row granularity: the smallest gap such that no output row
is stored over an input byte that a later step still reads (stage 0's windows, and the
residual ADD's row, read elementwise just before the output row of the same index is
stored). It is an execution of the schedule, not a closed form; the replay calls it for
every fused pair.
"""

from __future__ import annotations

from dataclasses import dataclass

from rip.allocator.theory.geometry import ConvGeometry
from rip.frontend.fusion import FusedParams
from rip.frontend.ir import Graph


@dataclass(frozen=True)
class StageRows:
    """One member along H: input and output rows, kernel height, stride, dilation, top
    padding, and the bytes of one input and one output row."""

    h_in: int
    h_out: int
    kh: int
    sh: int
    dh: int
    pad: int
    in_row: int
    out_row: int

    def window(self, t: int) -> list[int]:
        """Input rows output row ``t`` reads (taps inside the input only)."""
        rows = (t * self.sh - self.pad + k * self.dh for k in range(self.kh))
        return [r for r in rows if 0 <= r < self.h_in]

    def last_needed(self, t: int) -> int:
        """The highest input row output row ``t`` reads, -1 if none."""
        w = self.window(t)
        return w[-1] if w else -1


def stage_rows(geom: ConvGeometry) -> StageRows:
    return StageRows(
        geom.h_in, geom.h_out, geom.kh, geom.sh, geom.dh, geom.pad_top,
        geom.w_in * geom.c_in, geom.w_out * geom.c_out,
    )  # fmt: skip


def chain_stages(geometries: list[ConvGeometry]) -> list[StageRows]:
    """The members' row geometry (``conv_geometry`` of each member, in order)."""
    return [stage_rows(g) for g in geometries]


def schedule(stages: list[StageRows]) -> list[tuple[int, int]]:
    """(stage, row) in the order rip_fused_chain_s8 computes them: the lazy pull."""
    done = [0] * len(stages)
    order: list[tuple[int, int]] = []

    def pull(j: int, t: int) -> None:
        if j > 0:
            need = stages[j].last_needed(t)
            while done[j - 1] <= need:
                pull(j - 1, done[j - 1])
        order.append((j, t))
        done[j] = t + 1

    last = len(stages) - 1
    for y in range(stages[last].h_out):
        pull(last, y)
    return order


def simulate_gap(stages: list[StageRows], residual: bool) -> int:
    """The smallest gap (bytes, output start below input start) at which running the
    schedule never stores an output row over input bytes read later. Output row y spans
    [y * out_row, (y + 1) * out_row) from the output's start; input row m starts at
    gap + m * in_row. A residual ADD reads input row y elementwise as it stores output row
    y (same row size): element j is read before element j is stored, so that row only
    needs gap >= 0."""
    first, last = stages[0], stages[-1]
    order = schedule(stages)
    # lowest input row read at or after each step
    future = [first.h_in] * (len(order) + 1)
    for k in range(len(order) - 1, -1, -1):
        j, t = order[k]
        low = future[k + 1]
        if j == 0:
            w = first.window(t)
            if w:
                low = min(low, w[0])
        if residual and j == len(stages) - 1:
            low = min(low, t)  # the ADD reads input row t while it stores output row t
        future[k] = low
    gap = 0
    for k, (j, y) in enumerate(order):
        if j != len(stages) - 1 or future[k + 1] >= first.h_in:
            continue  # not a last-stage row, or no input row is read after it
        end = (y + 1) * last.out_row
        gap = max(gap, end - future[k + 1] * first.in_row)
    return gap


def ring_bytes(graph: Graph, params: FusedParams) -> int:
    return sum(graph.tensors[r].nbytes for r in params.rings)


def simulate_rings(stages: list[StageRows]) -> list[int]:
    """Rows each intermediate's ring must hold when the schedule runs: at every step where
    stage j + 1 computes a row, its whole window of stage j's rows must still be in the
    ring of the rows stage j computed last."""
    done = [0] * len(stages)
    need = [1] * (len(stages) - 1)
    for j, t in schedule(stages):
        if j > 0:
            window = stages[j].window(t)
            if window:
                need[j - 1] = max(need[j - 1], done[j - 1] - window[0])
        done[j] = t + 1
    return need
