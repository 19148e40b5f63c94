"""Which chains the fused strategy fuses under an instruction budget (issue 12, "the planner
chooses"): nothing with no budget for overhead, the lowest reachable peak with no budget at
all, a peak that never rises as the budget grows, and ``--max-overhead`` refused in one line
when it is not a fraction or a percentage."""

from __future__ import annotations

import itertools
import math

import pytest
from paths import REPO, shared_path
from tflite_writer.generators import _Calibrated

from rip.allocator.planning.cost_model import CLASSES, CostModel, for_core, load
from rip.allocator.planning.fusion_choice import choose
from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.requirements import fused_chain, requirements
from rip.allocator.planning.strategies import build_problem, variant
from rip.allocator.theory.fused import ring_rows
from rip.boards import load_board
from rip.cli.compile import main, max_overhead
from rip.core.errors import LayerError
from rip.core.terms import Strategy
from rip.frontend.fusion import ChainSpan, candidates, fuse
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

# every op a MAC a unit, every fused chain 1,000 units per row it computes: an overhead that
# is always positive, independent of the calibrated file
UNIT = CostModel(
    "unit",
    {c: {"macs": 1.0, "outputs": 0.0, "pixels": 0.0, "calls": 10.0} for c in CLASSES},
    {"pw_macs": 0.0, "other_macs": 0.0, "rows": 1000.0, "pixels": 0.0, "calls": 500.0},
)
BUDGETS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 5.0, None)


def two_blocks(seed: int = 3) -> bytes:
    """A stem conv, an MBConv block with its residual ADD, then a strided inverted
    bottleneck without one: two candidate chains, one of them ending in an ADD."""
    net = _Calibrated(seed)
    x = net.input((1, 12, 12, 3))
    s = net.conv(x, 8, 3, stride=1, activation="RELU6")
    e = net.conv(s, 24, 1, activation="RELU6")
    d = net.depthwise(e, 3, activation="RELU6")
    b = net.add(net.conv(d, 8, 1), s)
    e2 = net.conv(b, 32, 1, activation="RELU6")
    d2 = net.depthwise(e2, 3, stride=2, activation="RELU6")
    y = net.conv(d2, 12, 1)
    return net.finish([x], [y])


@pytest.fixture(scope="module")
def model():
    graph = rewrite(read_model(two_blocks(), name="m"))
    return graph, requirements(graph)


def lower_bound(graph, chains) -> int:
    """The layer-by-layer limit (Problem.lower_bound) of the graph with ``chains`` fused."""
    return build_problem(requirements(fuse(graph, list(chains))), "fused", 4).lower_bound()


def splits(graph, chain: ChainSpan):
    """Every way to fuse ``chain``: each split of its members into contiguous segments
    (one-op segments left alone), and the whole chain with its residual ADD."""
    n = chain.last - chain.first + 1
    for cuts in itertools.product((False, True), repeat=n - 1):
        segs, start = [], chain.first
        for k, cut in enumerate((*cuts, True)):
            if cut:
                segs.append((start, chain.first + k))
                start = chain.first + k + 1
        yield [(a, b, None) for a, b in segs if b > a]
    if chain.residual is not None:
        yield [(chain.first, chain.last, chain.residual)]


def as_chains(graph, segs) -> list[ChainSpan] | None:
    out = []
    for a, b, res in segs:
        try:
            theory = fused_chain(graph, graph.operators[a : b + 1], res is not None)
        except LayerError:
            return None
        out.append(ChainSpan(a, b, res, ring_rows(theory)))
    return out


def test_no_budget_for_overhead_fuses_nothing(model):
    graph, req = model
    choice = choose(graph, req, 4, 0.0, UNIT)
    assert choice.chains == () and choice.overhead == 0
    assert choice.peak_estimate == lower_bound(graph, [])


def test_unbounded_budget_reaches_the_lowest_peak_of_any_split(model):
    """Against every combination of splits of every candidate chain, each fused and
    bounded by the placement problem's own layer-by-layer limit."""
    graph, req = model
    chains = candidates(graph)
    assert len(chains) == 2 and any(c.residual is not None for c in chains)
    best = math.inf
    for combo in itertools.product(*(list(splits(graph, c)) for c in chains)):
        fused = as_chains(graph, [s for segs in combo for s in segs])
        if fused is not None:
            best = min(best, lower_bound(graph, fused))
    choice = choose(graph, req, 4, None, UNIT)
    assert choice.chains
    assert lower_bound(graph, choice.chains) == best == choice.peak_estimate
    assert best < lower_bound(graph, [])


def test_peak_never_rises_with_the_budget(model):
    graph, req = model
    peaks = []
    for budget in BUDGETS:
        choice = choose(graph, req, 4, budget, UNIT)
        assert choice.overhead <= choice.budget
        assert choice.overheads == tuple(
            UNIT.overhead(graph, graph.operators[c.first : c.last + 1],
                          None if c.residual is None else graph.operators[c.residual])
            for c in choice.chains
        )  # fmt: skip
        peaks.append(lower_bound(graph, choice.chains))
        assert peaks[-1] == choice.peak_estimate
    assert peaks == sorted(peaks, reverse=True)
    assert peaks[0] > peaks[-1]


def test_a_chain_below_the_peak_stays_unfused():
    """A chain whose steps all stay below the model's peak costs instructions for nothing:
    left alone even with no budget (a pool over the big input sets the peak)."""
    net = _Calibrated(5)
    x = net.input((1, 24, 24, 8))
    p = net.pool(x, "avg", 2, 2, "VALID")
    e = net.conv(p, 16, 1, activation="RELU6")
    d = net.depthwise(e, 3, activation="RELU6")
    y = net.conv(d, 8, 1)
    graph = rewrite(read_model(net.finish([x], [y]), name="m"))
    req = requirements(graph)
    (chain,) = candidates(graph)
    assert chain.first == 1
    choice = choose(graph, req, 4, None, UNIT)
    assert choice.chains == () and choice.peak_estimate == lower_bound(graph, [])
    # fusing it anyway would not lower the limit either
    assert lower_bound(graph, as_chains(graph, [(1, 3, None)])) == lower_bound(graph, [])


def test_calibrated_model_covers_both_boards_and_every_class():
    for board in ("qemu-m33", "qemu-armv6m"):
        cm = load(board)
        assert cm.board == board
        assert all(cm.ops[c]["macs"] >= 0 for c in cm.ops)
        assert {"conv1x1", "dw", "elementwise"} <= set(cm.ops)


@pytest.mark.parametrize(
    "board,column",
    [("qemu-m33", "qemu-m33"), ("pico2", "qemu-m33"), ("qemu-armv6m", "qemu-armv6m"),
     ("pico", "qemu-armv6m"), ("host", "qemu-m33")],
)  # fmt: skip
def test_the_budget_is_estimated_with_the_cost_model_of_the_boards_core(model, board, column):
    """The column measured on the board's core (the host has none: the M33's)."""
    assert for_core(load_board(board).core) == load(column)
    graph, req = model
    options = PlanOptions(board=load_board(board))
    fused = variant(Strategy.FUSED, graph, req, options)
    assert fused.fusion is not None and fused.fusion.board == column
    assert fused.fusion == choose(graph, req, 4, options.max_overhead, load(column))


def test_default_budget_on_a_real_model_stays_within_it():
    path = shared_path("models", "mcunet", "mcunet-in3.tflite")
    graph = rewrite(read_model(path))
    req = requirements(graph)
    cm = load()
    choice = choose(graph, req, 4)
    assert choice.max_overhead == 0.05
    assert choice.overhead <= 0.05 * cm.model(graph)
    free = choose(graph, req, 4, None)
    assert free.peak_estimate <= choice.peak_estimate
    assert free.peak_estimate < lower_bound(graph, [])


@pytest.mark.parametrize(
    "text,value", [("0.05", 0.05), ("5%", 0.05), (" 12.5% ", 0.125), ("0", 0.0), ("none", None)]
)
def test_max_overhead_accepts_fractions_and_percentages(text, value):
    got = max_overhead(text)
    assert got is None if value is None else got == pytest.approx(value)


@pytest.mark.parametrize("bad", ["abc", "-0.1", "-5%", "nan", "", "%", "5%%", "1e400"])
def test_bad_max_overhead_is_one_line_exit_2(capsys, bad):
    code = main([str(REPO / "examples" / "example-cnn.tflite"), "--board", "host",
                 f"--max-overhead={bad}"])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "--max-overhead" in err and "Traceback" not in err
