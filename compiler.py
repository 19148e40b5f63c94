"""The compiler driver: every stage of ``rip-compile``, in order, in one place (after Arm
Vela's ``compiler_driver.py``).

    read -> rewrite -> requirements
         -> variants: per strategy, its graph transform, that graph's requirements and
            its placement problem
         -> plan: per variant, a cached plan or a placed one, each replayed once
         -> fit -> emit -> write project -> build (Pico) -> emulate (Pico 1 on rp2040js)
            / run (host, QEMU) -> commit ``-o DIR``

A strategy is one entry of the strategy table (``rip.allocator.planning.strategies``):
which in-place candidates its problem may use and which graph it plans on. ``dual``,
``tinyengine`` and ``rip`` plan on the rewritten graph; ``fused`` plans on the graph whose
chains `fusion_choice.choose` picks under the instruction budget (estimated with the cost
model of the board's core), fused by the front end's ``fuse``, and on that graph's own
requirements. Each variant is planned and replayed on its own graph and emitted from it.

Each stage is one function that takes what earlier stages made and returns its own typed
result; ``compile_model`` runs them in order and collects every result into one frozen
``Compiled``. The planning options are one ``PlanOptions``, built once from the ``Options``
and the board (``Options.planning``). Nothing here prints or parses arguments
(``rip.cli.compile``), or formats (``rip.report``). Data flows one way: model file ->
``Graph`` (frontend) -> ``Requirements`` and ``Problem`` per variant (planning) -> ``Plan``
-> ``EmittedModel`` (codegen) -> project folder and firmware (firmware) -> the result
line, checked against TFLite Micro's checksum.

``-o DIR`` is a transaction (``rip.firmware.output_dir``): the project is written, built and
run in a staging folder beside DIR and moved into DIR only when all of that succeeded, so a
failure or Ctrl-C leaves DIR as it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar, cast

from rip.allocator.planning.cache import PlanCache
from rip.allocator.planning.options import (
    DEFAULT_MAX_OVERHEAD,
    DEFAULT_SHARE_SLACK,
    DEFAULT_STAGE_WEIGHTS,
    DEFAULT_TIME_LIMIT,
    PlanOptions,
)
from rip.allocator.planning.parallel import plan_strategies
from rip.allocator.planning.placement import Plan, Problem
from rip.allocator.planning.requirements import Requirements, requirements
from rip.allocator.planning.selection import Selection, select, total_bytes
from rip.allocator.planning.staging import Staged, stage_strategies
from rip.allocator.planning.strategies import (
    SELECTABLE,
    STRATEGIES,
    STREAMING,
    Variant,
    variants,
)
from rip.boards import Board, board_names, load_board
from rip.codegen.emit import EmittedModel, emit_model
from rip.codegen.reference_process import run_reference
from rip.core.errors import FitError, ModelError, OptionError, RipError
from rip.core.limits import MAX_HOST_DATA_BYTES
from rip.core.terms import Placer, Strategy, WeightsIn
from rip.firmware import rp2040_emulator
from rip.firmware.host_project import build_host, run_host, write_host_project
from rip.firmware.output_dir import Committed, Staging, check_ownership, check_target, transaction
from rip.firmware.pico_build import PicoBuildOptions
from rip.firmware.pico_project import build_pico_project, check_build_request, write_pico_project
from rip.firmware.qemu_project import macs, write_qemu_project
from rip.firmware.result import Result
from rip.firmware.rp2040_emulator import EmulatedRun, checked, emulate_project
from rip.frontend.fusion import ChainSpan
from rip.frontend.ir import Graph
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite
from rip.frontend.streaming import stream_input
from rip.timing.estimate import Estimate, TwoCoreEstimate, run_project_timed


@dataclass(frozen=True)
class Options:
    """What to compile for, and how far to go: an ``output`` folder means emit and write a
    project; ``build`` builds Pico firmware; ``emulate`` runs it on rp2040js (with the boot
    ROM ``bootrom``, else $RIP_RP2040_BOOTROM); ``run`` builds and runs on the host."""

    strategy: Strategy | None = None  # None: the best plan (planning.selection.select)
    placer: Placer = Placer.MILP
    time_limit: float = DEFAULT_TIME_LIMIT
    strategies: tuple[Strategy, ...] = STRATEGIES  # every strategy planned, for comparison
    output: Path | None = None
    build: bool = False
    run: bool = False
    emulate: bool = False
    bootrom: Path | None = None
    repeat: int = 1
    force: bool = False  # write code even when the plan does not fit
    progress: bool = False  # stage and solver progress on stderr
    cache: bool = True  # reuse replay-checked plans of an identical model and options
    # fused: estimated instruction budget of the fused chains, a fraction of the unfused
    # model's (None: no budget); fusion_choice.choose
    max_overhead: float | None = DEFAULT_MAX_OVERHEAD
    # --build: --stdio, --build-type, --cmake-arg, the shared build folder
    pico_build: PicoBuildOptions = field(default_factory=PicoBuildOptions)
    fuse_chains: tuple[ChainSpan, ...] | None = None  # fused: these chains, not the choice
    # flash-aware execution: arena bytes staged filters may add (None: off); staging.py
    stage_weights: int | None = DEFAULT_STAGE_WEIGHTS
    # where inference reads the constant data: auto (SRAM, all or what gains most), flash, sram
    weights: WeightsIn = WeightsIn.AUTO
    # the input streams in row by row (rip.frontend.streaming); only STREAMING strategies
    stream_input: bool = False
    # the cores inference runs on (issue 27): 2 shares ops over both (docs/two-cores.md),
    # those whose scratch per core raises the floor by share_slack (a fraction) at most
    cores: int = 1
    share_slack: float = DEFAULT_SHARE_SLACK

    @property
    def plannable(self) -> tuple[Strategy, ...]:
        """The strategies these options can plan: with a streamed input, those whose
        transform runs it as a fused chain."""
        return STREAMING if self.stream_input else STRATEGIES

    def planning(self, board: Board) -> PlanOptions:
        """The planning stage's options on ``board``: built once per compile."""
        return PlanOptions(
            board=board,
            placer=self.placer,
            time_limit=self.time_limit,
            progress=self.progress,
            max_overhead=self.max_overhead,
            fuse_chains=self.fuse_chains,
            stage_weights=self.stage_weights,
            weights=self.weights,
            cores=self.cores,
            share_slack=self.share_slack,
        )


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
class Prepared:
    """The stages before planning: the model as read, rewritten, its requirements, the
    planning options, and one variant per strategy asked for (in that order)."""

    path: Path
    source: Graph  # as read
    graph: Graph  # rewritten: PADs folded, aliases, interface stripped
    req: Requirements  # of the rewritten graph
    planning: PlanOptions
    variants: dict[Strategy, Variant]
    stage_seconds: dict[str, float]  # wall time of each stage, by name


@dataclass(frozen=True)
class Compiled:
    """Every stage's result. The analysis (source .. plans) is always there; ``model`` and
    the later fields only when the options asked for them. Each planned strategy has its
    variant (the graph it plans on, that graph's requirements, its problem) and its plan."""

    path: Path
    board: Board
    strategy: Strategy  # the selected strategy, whose plan is emitted
    source: Graph  # as read
    graph: Graph  # rewritten: the graph every strategy's transform starts from
    req: Requirements  # of the rewritten graph
    planning: PlanOptions
    variants: dict[Strategy, Variant]
    plans: dict[Strategy, Plan]  # every one replayed on its variant's graph
    seconds: float  # read to the last replayed plan
    stage_seconds: dict[str, float] = field(default_factory=dict)  # read .. plan, by name
    # the strategies whose plans stage filters in SRAM (flash-aware execution), and what
    staged: dict[Strategy, Staged] = field(default_factory=dict)
    model: EmittedModel | None = None
    reference: Reference | None = None
    output_dir: Path | None = None
    committed: Committed | None = None  # what the -o transaction replaced and removed
    build: dict = field(default_factory=dict)  # the firmware build's paths, sizes, placement
    run: Result | None = None  # the result line of a host, QEMU or emulated-Pico run
    emulation: EmulatedRun | None = None  # the emulated Pico run, when there was one
    # an emulated board's run timed as its Pico (rip.timing), or why it could not be
    estimate: Estimate | TwoCoreEstimate | str | None = None
    # why ``strategy`` was selected, when no strategy was asked for (None: it was asked for)
    selection: Selection | None = None

    @property
    def variant(self) -> Variant:
        return self.variants[self.strategy]

    @property
    def plan(self) -> Plan:
        return self.plans[self.strategy]

    @property
    def problem(self) -> Problem:
        return self.variant.problem

    @property
    def problems(self) -> dict[Strategy, Problem]:
        return {s: v.problem for s, v in self.variants.items()}

    def total_bytes(self, strategy: Strategy | None = None) -> int:
        """A plan's total activation RAM (default: the selected one's), as the default
        plan is chosen by (planning.selection.total_bytes)."""
        s = strategy or self.strategy
        return total_bytes(self.plans[s].peak, self.variants[s])

    def fit(self, strategy: Strategy | None = None) -> Fit:
        """The plan's SRAM need on the board: its arena, the persistent state (variable
        tensors, beside the arena) and the board's overhead."""
        s = strategy or self.strategy
        return Fit(*self.board.budget(self.plans[s].peak + self.graph.state_bytes))

    @property
    def match(self) -> bool | None:
        """The run's checksum equals TFLite Micro's; None when there is no run or reference."""
        if self.run is None or self.reference is None or self.reference.checksum is None:
            return None
        return self.run.checksum == self.reference.checksum


# --- the stages, in order ---------------------------------------------------------------
T = TypeVar("T")


def _timed(seconds: dict[str, float], name: str, stage: Callable[[], T]) -> T:
    t0 = time.perf_counter()
    out = stage()
    seconds[name] = time.perf_counter() - t0
    return out


def read(path: Path) -> Graph:
    if not path.is_file():
        raise ModelError(f"{path}: no such file")
    return read_model(path)


def front(path: Path) -> tuple[Graph, Graph]:
    """The front end's stages alone: the model as read, and rewritten."""
    source = read(path)
    return source, rewrite(source)


def planned(options: Options) -> tuple[Strategy, ...]:
    """The strategies to plan, in the table's order: those asked for, with the selected
    one, or every selectable one when the best is to be selected."""
    plannable = options.plannable
    if options.strategy is not None and options.strategy not in plannable:
        raise OptionError(
            f"--stream-input needs --strategy {' or '.join(plannable)} (or none), "
            f"not {options.strategy}: only a fused chain reads rows as they arrive"
        )
    wanted = set(options.strategies)
    wanted |= set(SELECTABLE) if options.strategy is None else {options.strategy}
    return tuple(s for s in plannable if s in wanted)


def prepare(path: Path, board: Board, options: Options = Options()) -> Prepared:
    """read, rewrite, requirements, and each strategy's variant (strategies.variant: the
    table's graph transform, that graph's requirements, the problem)."""
    seconds: dict[str, float] = {}
    planning = options.planning(board)
    source = _timed(seconds, "read", lambda: read(path))
    graph = _timed(seconds, "rewrite", lambda: rewrite(source))
    if options.stream_input:
        graph = stream_input(graph)
    req = _timed(seconds, "requirements", lambda: requirements(graph, cores=options.cores))
    made = _timed(seconds, "variants", lambda: variants(graph, req, planned(options), planning))
    return Prepared(path, source, graph, req, planning, made, seconds)


def plan(
    path: Path, made: dict[Strategy, Variant], planning: PlanOptions, cache: bool = True
) -> dict[Strategy, Plan]:
    """Every variant's plan, replayed on its graph: strategies planned in parallel
    processes, plans of an unchanged model and options taken from the plan cache, keyed by
    the model file's bytes (allocator/planning/parallel.py, cache.py)."""
    store = PlanCache(path.read_bytes()) if cache else None
    return plan_strategies(made, planning, store)


def analyse(path: Path, board: Board, options: Options = Options()) -> Compiled:
    """The model's stages up to replayed plans: read, rewrite, requirements, variants,
    plan."""
    t0 = time.perf_counter()
    p = prepare(path, board, options)
    seconds = dict(p.stage_seconds)
    plans = _timed(seconds, "plan", lambda: plan(path, p.variants, p.planning, options.cache))
    made, plans, staged = _timed(
        seconds, "stage", lambda: stage_strategies(p.variants, plans, p.planning)
    )
    selection = None
    if options.strategy is None:  # on the final plans, staged filters included
        selection = select({s: pl.peak for s, pl in plans.items()}, made)
    return Compiled(
        path=path,
        board=board,
        strategy=selection.strategy if selection else Strategy(options.strategy),
        selection=selection,
        source=p.source,
        graph=p.graph,
        req=p.req,
        planning=p.planning,
        variants=made,
        plans=plans,
        staged=staged,
        seconds=time.perf_counter() - t0,
        stage_seconds=seconds,
    )


def with_every_strategy(c: Compiled, options: Options) -> Compiled:
    """``c`` with every strategy of the table planned: those it lacks (``-o`` alone plans
    only the selected one) planned now with the same options, the plan cache included."""
    every = options.plannable
    missing = tuple(s for s in every if s not in c.plans)
    if not missing:
        return c
    more = analyse(c.path, c.board, replace(options, strategy=missing[0], strategies=missing))
    return replace(
        c,
        variants={s: {**c.variants, **more.variants}[s] for s in every},
        plans={s: {**c.plans, **more.plans}[s] for s in every},
        staged={**more.staged, **c.staged},
    )


def fitting_strategies(c: Compiled) -> dict[Strategy, Fit]:
    """The planned strategies other than the selected one whose plan fits the board,
    smallest first."""
    fits = {s: c.fit(s) for s in c.plans if s != c.strategy}
    return dict(
        sorted(((s, f) for s, f in fits.items() if f.fits), key=lambda x: x[1].needed_bytes)
    )


def fitting_boards(c: Compiled) -> dict[str, Fit]:
    """The other boards of the same kind (Pico, emulated) and alignment that the selected
    plan fits, smallest first; for ``fused``, only boards of the same core, whose cost
    model chose the chains."""

    def kind(b: Board) -> tuple[bool, bool, int]:
        return bool(b.pico_board), bool(b.qemu_machine), b.alignment

    found = {}
    for name in board_names():
        b = load_board(name)
        if name == c.board.name or kind(b) != kind(c.board):
            continue
        if c.strategy == Strategy.FUSED and b.core != c.board.core:
            continue
        fit = Fit(*b.budget(c.plan.peak))
        if fit.fits and fit.available_bytes:
            found[name] = fit
    return dict(sorted(found.items(), key=lambda x: x[1].available_bytes))


def fit_hint(c: Compiled) -> str:
    """What would fit instead, in words: ``--strategy fused fits (125532 B), --board pico2
    fits (321052 of 524288 B)``; or that no strategy fits, with the smallest plan's need."""
    hints = [f"--strategy {s} fits ({f.needed_bytes} B)" for s, f in fitting_strategies(c).items()]
    hints += [
        f"--board {n} fits ({f.needed_bytes} of {f.available_bytes} B)"
        for n, f in fitting_boards(c).items()
    ]
    if hints:
        return ", ".join(hints)
    least = min(c.plans, key=lambda s: c.fit(s).needed_bytes)
    need = c.fit(least).needed_bytes
    return f"no strategy fits {c.board.name} (the smallest plan, {least}'s, needs {need} B)"


def check_fit(c: Compiled, options: Options) -> Fit:
    """The selected plan on the board; FitError (exit 3) when it does not fit, unless
    forced, naming the strategies and boards that would fit (every strategy planned to
    find them); constant data past the board's flash even with ``force``."""
    g = c.graph
    weights = sum(len(t.data) for t in g.tensors.values() if t.data is not None)
    data = weights + sum(g.tensors[t].nbytes for t in g.inputs)  # and the test input
    limit = c.board.flash_bytes or MAX_HOST_DATA_BYTES
    if data > limit:  # no --force: a board cannot link it, the host's compiler cannot hold it
        where = (
            f"the board has {limit:,} B"
            if c.board.flash_bytes
            else f"rip's limit for a board without flash is {limit:,} B"
        )
        raise FitError(
            f"does not fit {c.board.name}: the weights ({weights:,} B) and the test input "
            f"need {data:,} B of constant data; {where}"
        )
    fit = c.fit()
    if not fit.fits and not options.force:
        every = with_every_strategy(c, options)
        raise FitError(
            f"does not fit {c.board.name}: needs {fit.needed_bytes} B, "
            f"has {fit.available_bytes} B; {fit_hint(every)} (--force to generate anyway)",
            tuple(fitting_strategies(every)),
            tuple(fitting_boards(every)),
        )
    return fit


def emit(c: Compiled, strategy: Strategy | None = None) -> EmittedModel:
    """The C of a strategy's plan (default: the selected one), lowered from its variant."""
    s = strategy or c.strategy
    v = c.variants[s]
    staged = c.staged.get(s)
    resident = staged.resident_ops if staged else ()
    return emit_model(v.graph, v.req, c.plans[s], s, v.problem.op_buffers, resident)


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
    if options.emulate and not options.build:
        raise RipError("--emulate runs the firmware --build makes: add --build")


def build(
    board: Board, out: Path, arena_bytes: int, options: PicoBuildOptions | None = None
) -> dict:
    """Pico boards: the firmware built with the Pico SDK, and the arena found in ``.bss``."""
    return check_placement(build_pico_project(out, board, options=options), arena_bytes)


def check_placement(build: dict, arena_bytes: int) -> dict:
    """After a firmware build: the arena must be a .bss symbol of the planned size."""
    arena = build.get("symbols", {}).get("rip_arena")
    if arena is None or arena.get("type", "") not in ("b", "B") or arena["bytes"] < arena_bytes:
        raise RipError(
            f"{build.get('elf')}: rip_arena is not a {arena_bytes} B .bss symbol ({arena})"
        )
    build["arena_in_bss"] = True
    return build


def emulate(board: Board, out: Path, bootrom: Path | None) -> EmulatedRun:
    """Pico boards with an emulator: the UF2 just built, run on rp2040js with the boot ROM
    and read over the emulated UART0 and USB CDC; no result line within a bound that
    scales with the model's MACs is a NoAnswerError (exit 2), a kernel error or a fault a
    FirmwareError (exit 1)."""
    emulated = emulate_project(out, board, bootrom)
    checked(emulated, board)
    return emulated


def run(
    board: Board, out: Path, repeat: int
) -> tuple[Result, Estimate | TwoCoreEstimate | str | None]:
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
        built = (
            build(board, stage.path, model.arena_bytes, options.pico_build) if options.build else {}
        )
        emulated = emulate(board, stage.path, options.bootrom) if options.emulate else None
        result, estimate = run(board, stage.path, options.repeat) if options.run else (None, None)
    return replace(
        c,
        model=model,
        reference=ref,
        output_dir=options.output,
        committed=stage.committed,
        build=cast(dict, _moved(built, stage)),
        run=emulated.result_line if emulated is not None else result,
        emulation=emulated,
        estimate=estimate,
    )


def _moved(value: object, stage: Staging) -> object:
    """The build's report with staging paths replaced by their place in DIR."""
    if isinstance(value, str):
        return stage.final(value)
    if isinstance(value, dict):
        return {k: _moved(v, stage) for k, v in value.items()}
    return value


def generate(c: Compiled, options: Options, ref: Reference | None = None) -> Compiled:
    """The stages after the plans, for the selected strategy: fit, emit, TFLite Micro's
    reference (unless given), and write, build and run in the ``-o`` transaction."""
    assert options.output is not None
    check_fit(c, options)
    check_request(c.board, options)
    model = emit(c)
    ref = reference(c.path, c.graph) if ref is None else ref
    return output_stages(c, model, ref, options)


def check_output_request(board: Board, options: Options) -> None:
    """What ``-o``, ``--build`` and ``--emulate`` need, checked before minutes of planning:
    the output folder, the emulator (board, boot ROM, runner), the Pico SDK and its
    TinyUSB for the stdio asked for."""
    if options.output is not None:
        check_target(options.output)
    elif options.run or options.build:
        raise RipError("--run and --build need -o DIR for the generated project")
    if options.emulate:
        rp2040_emulator.prepare(board, options.bootrom)
    if options.build and options.output is not None and board.pico_board:
        check_build_request(board, options.pico_build)


def compile_model(path: Path, board: Board, options: Options = Options()) -> Compiled:
    """Every stage the options ask for, in order; each result lands in the ``Compiled``."""
    check_output_request(board, options)
    c = analyse(path, board, options)
    if options.output is None:
        return c
    return generate(c, options)
