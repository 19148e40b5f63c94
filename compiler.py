"""The compiler driver: every stage of ``rip-compile``, in order, in one place (after Arm
Vela's ``compiler_driver.py``).

    read -> rewrite -> requirements -> plan (per strategy) -> replay -> fit
         -> emit -> write project -> build (Pico) / run (host) -> commit ``-o DIR``

Each stage is one function that takes what earlier stages made and returns its own typed
result; ``compile_model`` runs them in order and collects every result into one frozen
``Compiled``. Nothing here prints or parses arguments (``rip.cli.compile``), or formats
(``rip.report``). Data flows one way: model file -> ``Graph`` (frontend) -> ``Requirements``
and ``Problem`` (planning) -> ``Plan`` -> ``EmittedModel`` (codegen) -> project folder and
firmware (firmware) -> the result line, checked against TFLite Micro's checksum.

``-o DIR`` is a transaction (``rip.firmware.output_dir``): the project is written, built and
run in a staging folder beside DIR and moved into DIR only when all of that succeeded, so a
failure or Ctrl-C leaves DIR as it was.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from rip.allocator.planning import parallel
from rip.allocator.planning.cache import PlanCache
from rip.allocator.planning.fusion_choice import DEFAULT_MAX_OVERHEAD, Choice, choose
from rip.allocator.planning.placement import Plan, Problem
from rip.allocator.planning.replay import replay
from rip.allocator.planning.requirements import Requirements, requirements
from rip.allocator.planning.strategies import STRATEGIES, build_problem
from rip.boards import Board
from rip.codegen.emit import EmittedModel, emit_model
from rip.codegen.reference_process import run_reference
from rip.core.errors import FitError, RipError
from rip.core.terms import Placer, Strategy
from rip.firmware.host_project import build_host, run_host, write_host_project
from rip.firmware.output_dir import Committed, Staging, check_ownership, check_target, transaction
from rip.firmware.pico_project import build_pico_project, write_pico_project
from rip.firmware.qemu_project import macs, write_qemu_project
from rip.firmware.result import Result
from rip.frontend.fusion import FUSED_KIND, fuse
from rip.frontend.ir import Graph
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite
from rip.timing.estimate import Estimate, run_project_timed


@dataclass(frozen=True)
class Options:
    """What to compile for, and how far to go: an ``output`` folder means emit and write a
    project; ``build`` builds Pico firmware; ``run`` builds and runs on the host."""

    strategy: Strategy = Strategy.RIP
    placer: Placer = Placer.MILP
    time_limit: float = 60.0
    strategies: tuple[Strategy, ...] = STRATEGIES  # every strategy planned, for comparison
    output: Path | None = None
    build: bool = False
    run: bool = False
    repeat: int = 1
    force: bool = False  # write code even when the plan does not fit
    progress: bool = False  # stage and solver progress on stderr
    cache: bool = True  # reuse replay-checked plans of an identical model and options
    # fused: estimated instruction budget of the fused chains, a fraction of the unfused
    # model's (None: no budget); fusion_choice.choose
    max_overhead: float | None = DEFAULT_MAX_OVERHEAD


@dataclass(frozen=True)
class Fit:
    """SRAM a plan needs on a board (arena + scratch + SDK static data + stack) against what
    the board has (0: no limit)."""

    needed_bytes: int
    available_bytes: int

    @property
    def fits(self) -> bool:
        return self.available_bytes == 0 or self.needed_bytes <= self.available_bytes

    @property
    def headroom_bytes(self) -> int | None:
        return self.available_bytes - self.needed_bytes if self.available_bytes else None


@dataclass(frozen=True)
class Reference:
    """TFLite Micro's checksum of the default input's outputs, or why there is none."""

    checksum: int | None
    unavailable: str | None = None
    status: str = "ok"  # ok | refused | crashed | timeout (codegen.reference_process)


@dataclass(frozen=True)
class Compiled:
    """Every stage's result. The analysis (source .. plans) is always there; ``model`` and
    the later fields only when the options asked for them."""

    path: Path
    board: Board
    strategy: Strategy  # the selected strategy, whose plan is emitted
    source: Graph  # as read
    graph: Graph  # rewritten: PADs folded, aliases, interface stripped
    req: Requirements
    problems: dict[Strategy, Problem]
    plans: dict[Strategy, Plan]  # every one replayed
    seconds: float  # read to replay
    fused_graph: Graph | None = None  # the graph with fused chains (strategy fused only)
    fused_req: Requirements | None = None
    fusion: Choice | None = None  # which chains were fused, their estimated overhead, budget
    model: EmittedModel | None = None
    reference: Reference | None = None
    output_dir: Path | None = None
    committed: Committed | None = None  # what the -o transaction replaced and removed
    build: dict = field(default_factory=dict)  # the firmware build's paths, sizes, placement
    run: Result | None = None
    # an emulated board's run timed as its Pico (rip.timing), or why it could not be
    estimate: Estimate | str | None = None

    @property
    def plan(self) -> Plan:
        return self.plans[self.strategy]

    def graph_of(self, strategy: Strategy | None = None) -> Graph:
        """The graph a strategy's plan places: with fused chains for ``fused``."""
        if (strategy or self.strategy) == Strategy.FUSED and self.fused_graph is not None:
            return self.fused_graph
        return self.graph

    def req_of(self, strategy: Strategy | None = None) -> Requirements:
        if (strategy or self.strategy) == Strategy.FUSED and self.fused_req is not None:
            return self.fused_req
        return self.req

    @property
    def problem(self) -> Problem:
        return self.problems[self.strategy]

    def fit(self, strategy: Strategy | None = None) -> Fit:
        plan = self.plans[strategy or self.strategy]
        return Fit(*self.board.budget(plan.peak, self.req_of(strategy).scratch_bytes))

    @property
    def match(self) -> bool | None:
        """The run's checksum equals TFLite Micro's; None when there is no run or reference."""
        if self.run is None or self.reference is None or self.reference.checksum is None:
            return None
        return self.run.checksum == self.reference.checksum


# --- the stages, in order ---------------------------------------------------------------
def read(path: Path) -> Graph:
    if not path.is_file():
        raise RipError(f"{path}: no such file")
    return read_model(path)


def plan_strategies(
    path: Path,
    graph: Graph,
    req: Requirements,
    board: Board,
    options: Options,
    fused: tuple[Graph, Requirements] | None = None,
) -> tuple[dict[Strategy, Problem], dict[Strategy, Plan]]:
    """One placement problem per strategy, and its plan: strategies planned in parallel
    processes, plans of an unchanged model and options taken from the plan cache
    (allocator/planning/parallel.py, cache.py). ``fused``: the graph with fused chains and
    its requirements, which the ``fused`` strategy plans on."""
    model_bytes = path.read_bytes() if options.cache else b""  # the cache's key
    problems: dict[Strategy, Problem] = {}
    plans: dict[Strategy, Plan] = {}
    groups = [(graph, req, tuple(s for s in options.strategies if s != Strategy.FUSED))]
    if fused is not None and Strategy.FUSED in options.strategies:
        groups.append((*fused, (Strategy.FUSED,)))
    for g, r, strategies in groups:
        if not strategies:
            continue
        # the fused graph depends on the chains chosen (the budget): part of the cache key
        cache = PlanCache(model_bytes + _fused_identity(g)) if options.cache else None
        problems.update({s: build_problem(r, s, board.alignment) for s in strategies})
        done = parallel.plan_strategies(
            g, r, strategies, options.placer, board.alignment, options.time_limit,
            options.progress, cache,
        )  # fmt: skip
        plans.update({Strategy(s): plan for s, plan in done.items()})
    return problems, {s: plans[s] for s in options.strategies if s in plans}


def replay_plans(
    graphs: dict[Strategy, Graph], plans: dict[Strategy, Plan], alignment: int
) -> None:
    """Every plan replayed over a byte map, on the graph it places; a ReplayError (exit 70)
    stops the compile."""
    for s, plan in plans.items():
        replay(graphs[s], plan, alignment)


def _fused_identity(graph: Graph) -> bytes:
    """The fused chains of ``graph`` (members and ring rows), b"" when it has none."""
    chains = [
        ([m.source_index for m in op.params.ops], list(op.params.ring_rows))
        for op in graph.operators
        if op.kind == FUSED_KIND
    ]
    return f"\0fused {chains}".encode() if chains else b""


def fused_stage(
    graph: Graph,
    req: Requirements,
    alignment: int,
    max_overhead: float | None = DEFAULT_MAX_OVERHEAD,
    choice: Choice | None = None,
) -> tuple[Graph, Requirements]:
    """The ``fused`` strategy's graph: the chains `fusion_choice.choose` picks under the
    budget (or ``choice``), fused."""
    if choice is None:
        choice = choose(graph, req, alignment, max_overhead)
    fgraph = fuse(graph, list(choice.chains))
    return fgraph, requirements(fgraph)


def analyse(path: Path, board: Board, options: Options = Options()) -> Compiled:
    """The model's stages up to replayed plans: read, rewrite, requirements, plan, replay."""
    t0 = time.perf_counter()
    source = read(path)
    graph = rewrite(source)
    req = requirements(graph)
    fused = choice = None
    if Strategy.FUSED in options.strategies:
        choice = choose(graph, req, board.alignment, options.max_overhead)
        fused = fused_stage(graph, req, board.alignment, choice=choice)
    problems, plans = plan_strategies(path, graph, req, board, options, fused)
    graphs = {s: fused[0] if s == Strategy.FUSED and fused else graph for s in plans}
    replay_plans(graphs, plans, board.alignment)
    return Compiled(
        path=path,
        board=board,
        strategy=Strategy(options.strategy),
        source=source,
        graph=graph,
        req=req,
        problems=problems,
        plans=plans,
        seconds=time.perf_counter() - t0,
        fused_graph=fused[0] if fused else None,
        fused_req=fused[1] if fused else None,
        fusion=choice,
    )


def check_fit(c: Compiled, force: bool) -> Fit:
    """The selected plan on the board; FitError (exit 3) when it does not fit, unless forced."""
    fit = c.fit()
    if not fit.fits and not force:
        raise FitError(
            f"does not fit {c.board.name}: needs {fit.needed_bytes} B, "
            f"has {fit.available_bytes} B (--force to generate anyway)"
        )
    return fit


def emit(c: Compiled) -> EmittedModel:
    return emit_model(c.graph_of(), c.req_of(), c.plan, c.strategy)


def reference(path: Path, graph: Graph) -> Reference:
    """TFLite Micro's checksum, computed in a child process with a time limit so that a
    model it crashes on cannot take the compiler down; ``unavailable`` says why not
    (refused, crashed, timed out)."""
    outcome = run_reference(path, graph)
    return Reference(outcome.checksum, outcome.reason, outcome.status)


def write_project(
    board: Board, graph: Graph, model: EmittedModel, out: Path, ref: Reference
) -> None:
    """The project folder of the board's kind: a bare-metal project for an emulated board
    (QEMU), a Pico SDK project, or a host C project. ``macs`` lets a verifier wait as long
    as an inference takes."""
    if board.qemu_machine:
        write_qemu_project(model, out, board, ref.checksum, model_macs=macs(graph))
    elif board.pico_board:
        write_pico_project(model, out, board, ref.checksum, macs=macs(graph))
    else:
        write_host_project(model, out, ref.checksum)


def check_request(board: Board, options: Options) -> None:
    """``--build`` and ``--run`` against the board's kind, before any file is written."""
    if options.run and board.pico_board:
        raise RipError(
            f"--run builds and runs on the host; for {board.name} use --build, "
            "then rip-flash and rip-verify"
        )
    if options.build and not board.pico_board:
        raise RipError(f"--build is for Pico boards; for {board.name} use --run")


def build(board: Board, out: Path, arena_bytes: int) -> dict:
    """Pico boards: the firmware built with the Pico SDK, and the arena found in ``.bss``."""
    return check_placement(build_pico_project(out, board), arena_bytes)


def check_placement(build: dict, arena_bytes: int) -> dict:
    """After a firmware build: the arena must be a .bss symbol of the planned size."""
    arena = build.get("symbols", {}).get("rip_arena")
    if arena is None or arena.get("type", "") not in ("b", "B") or arena["bytes"] < arena_bytes:
        raise RipError(
            f"{build.get('elf')}: rip_arena is not a {arena_bytes} B .bss symbol ({arena})"
        )
    build["arena_in_bss"] = True
    return build


def run(board: Board, out: Path, repeat: int) -> tuple[Result, Estimate | str | None]:
    """Build and run the written project and return its result line: under QEMU for an
    emulated board (built with arm-none-eabi-gcc; QEMU is stopped on any error or Ctrl-C),
    timed as the board's Pico by the timing plugin (rip.timing), on the host with the
    system compiler otherwise."""
    if board.qemu_machine:
        return run_project_timed(out, board)
    build_host(out)
    return run_host(out, repeat), None


def output_stages(c: Compiled, model: EmittedModel, ref: Reference, options: Options) -> Compiled:
    """Write, build and run inside the ``-o`` transaction: in a staging folder, moved into
    DIR only when every step succeeded (a user's file in the way is refused right after
    the write, before a build). Paths the build reports are given as they are in DIR."""
    assert options.output is not None
    board = c.board
    with transaction(options.output) as stage:
        write_project(board, c.graph, model, stage.path, ref)
        check_ownership(stage)
        built = build(board, stage.path, model.arena_bytes) if options.build else {}
        result, estimate = run(board, stage.path, options.repeat) if options.run else (None, None)
    return replace(
        c,
        model=model,
        reference=ref,
        output_dir=options.output,
        committed=stage.committed,
        build=_moved(built, stage),
        run=result,
        estimate=estimate,
    )


def _moved(value: object, stage: Staging) -> object:
    """The build's report with staging paths replaced by their place in DIR."""
    if isinstance(value, str):
        return stage.final(value)
    if isinstance(value, dict):
        return {k: _moved(v, stage) for k, v in value.items()}
    return value


def compile_model(path: Path, board: Board, options: Options = Options()) -> Compiled:
    """Every stage the options ask for, in order; each result lands in the ``Compiled``."""
    if options.output is not None:
        check_target(options.output)  # before minutes of planning
    elif options.run or options.build:
        raise RipError("--run and --build need -o DIR for the generated project")
    c = analyse(path, board, options)
    if options.output is None:
        return c
    check_fit(c, options.force)
    check_request(board, options)
    model = emit(c)
    ref = reference(path, c.graph)
    return output_stages(c, model, ref, options)
