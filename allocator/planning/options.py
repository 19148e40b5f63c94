"""How a model's plans are made: one frozen value, built once by the driver (``rip.compiler``)
and handed unchanged to every planning step (the strategies' graph transforms, the planner,
the placer). The planning defaults live here and nowhere else."""

from __future__ import annotations

from dataclasses import dataclass, field

from rip.allocator.planning.placement import Plan
from rip.boards import Board, load_board
from rip.core.terms import Placer, WeightsIn
from rip.frontend.fusion import ChainSpan

DEFAULT_TIME_LIMIT = 60.0  # seconds for the whole planning stage (every solve shares it)
DEFAULT_MAX_OVERHEAD = 0.05  # of the unfused model's estimated instructions (issue 12)
DEFAULT_STAGE_WEIGHTS = 0  # extra arena bytes staged filters may add (issue 23): none
DEFAULT_BOARD = "host"  # alignment 4, no SRAM limit: what a bare planning call assumes


def _default_board() -> Board:
    return load_board(DEFAULT_BOARD)


DEFAULT_SHARE_SLACK = 0.02  # two cores: the floor sharing an op may add (scratch_choice.share)


@dataclass(frozen=True)
class PlanOptions:
    """The planning stage's options.

    * ``board``: its alignment V rounds every gap and offset (Sec. 4.3); its core picks the
      cost model the ``fused`` budget is estimated with (cost_model.for_core).
    * ``placer``, ``time_limit`` (the whole stage), ``progress`` (stage wall times on stderr).
    * ``deadline``: time.monotonic() past which no solve runs; the planner sets it from
      ``time_limit`` when the stage starts, so every solve shares one limit.
    * ``warm_starts``: plans every solve may start from (the MILP checks each); the planner
      adds, per strategy, the plan of the strategy it warm-starts from (strategies.py).
    * ``max_overhead``: the ``fused`` strategy's instruction budget, a fraction of the
      unfused model's estimate (None: no budget), fusion_choice.choose.
    * ``fuse_chains``: the ``fused`` strategy fuses exactly these chains instead of
      choosing (the cost model's calibration measures chosen chain sets).
    * ``stage_weights``: flash-aware execution (staging.py) on a board with a flash cache
      model: the arena bytes staged filters may add above the plan's peak (0: only bytes
      free under it, memory never worse; None: off).
    * ``weights``: where inference reads the constant data (residency.py): ``auto`` makes it
      resident in SRAM where it fits beside the plan's arena (then nothing is staged).
    * ``cores``: the cores inference runs on (issue 27): 2 gives every op both cores share a
      scratch per core (requirements.per_cores); ``share_slack`` is how much, as a fraction
      of the one-core layer-by-layer limit, that may raise an op's step above the limit
      (scratch_choice.share; issue 27 allows 2%).
    """

    board: Board = field(default_factory=_default_board)
    placer: Placer = Placer.MILP
    time_limit: float = DEFAULT_TIME_LIMIT
    deadline: float | None = None
    progress: bool = False
    warm_starts: tuple[Plan, ...] = ()
    max_overhead: float | None = DEFAULT_MAX_OVERHEAD
    fuse_chains: tuple[ChainSpan, ...] | None = None
    stage_weights: int | None = DEFAULT_STAGE_WEIGHTS
    weights: WeightsIn = WeightsIn.AUTO
    cores: int = 1
    share_slack: float = DEFAULT_SHARE_SLACK

    @property
    def alignment(self) -> int:
        return self.board.alignment
