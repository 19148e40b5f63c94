"""Flash-aware execution (issue 23, allocator/planning/staging.py): filters whose reuse
thrashes the Pico's XIP cache staged in free arena SRAM as op-lived buffers.

The oracles: an LRU cache simulated sweep by sweep for the miss estimate, the independent
replay for every staged plan (and a staged buffer moved onto a live tensor for its
refusal), the board files for which boards stage, TFLite Micro's checksum for a QEMU run.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from rip.allocator.planning.placement import WEIGHTS, Buffer, OpBuffer, Plan, Problem
from rip.allocator.planning.replay import replay
from rip.allocator.planning.staging import (
    STAGE_TO_BOARD,
    Candidate,
    FlashCache,
    candidates,
    stage,
)
from rip.boards import load_board
from rip.cli.compile import main as compile_main
from rip.codegen.emit import emit_model
from rip.compiler import Options, analyse
from rip.core.errors import LoweringError, ReplayError
from rip.core.terms import Placer, Strategy, WeightsIn

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"
PERSON_DET = SHARED / "models" / "mcunet" / "person-det.tflite"
TOOLS = shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")


def weights(problem) -> tuple:
    """The problem's staged filters (its other op buffers are the kernels' scratch)."""
    return tuple(b for b in problem.op_buffers if b.role == WEIGHTS)


def person_det() -> Path:
    if not PERSON_DET.is_file():
        pytest.skip(f"{PERSON_DET} is not there (../shared beside the checkout)")
    return PERSON_DET


def compiled(board: str, strategy: Strategy, stage_weights: int | None = 0):
    options = Options(
        strategy=strategy,
        placer=Placer.MILP,
        strategies=(strategy,),
        stage_weights=stage_weights,
        weights=WeightsIn.FLASH,  # staging is the flash path (person-det's fit SRAM on a Pico 2)
    )
    return analyse(person_det(), load_board(board), options)


# ---- the cache estimate against a simulated LRU cache -----------------------------------


def simulated_misses(cache: FlashCache, nbytes: int, sweeps: int = 3) -> int:
    """Misses of the last of ``sweeps`` sweeps over ``nbytes`` from flash offset 0, with a
    set-associative LRU cache simulated line by line."""
    sets = cache.cache_bytes // (cache.ways * cache.line_bytes)
    ways: list[list[int]] = [[] for _ in range(sets)]  # most recent last
    misses = 0
    for _ in range(sweeps):
        misses = 0
        for line in range(-(-nbytes // cache.line_bytes)):
            s = ways[line % sets]
            if line in s:
                s.remove(line)
            else:
                misses += 1
                if len(s) == cache.ways:
                    s.pop(0)
            s.append(line)
    return misses


@pytest.mark.parametrize("board", ["pico", "pico2"])
@pytest.mark.parametrize("kib", [1, 8, 16, 17, 20, 24, 31, 33, 55, 150])
def test_sweep_misses_equal_a_simulated_lru_cache(board, kib):
    cache = FlashCache.of(load_board(board))
    assert cache is not None
    assert cache.sweep_misses(kib * 1024 + 4) == simulated_misses(cache, kib * 1024 + 4)


def test_boards_with_a_flash_model():
    """The Picos, and the QEMU boards timed as them, stage; the host does not."""
    assert FlashCache.of(load_board("host")) is None
    for board, pico in [("pico", "pico"), ("pico2", "pico2"), ("qemu-armv6m", "pico"),
                        ("qemu-m33", "pico2")]:  # fmt: skip
        cache = FlashCache.of(load_board(board))
        chip = load_board(pico)
        assert cache is not None and cache.board == pico
        assert (cache.cache_bytes, cache.ways, cache.line_bytes) == (
            chip.xip_cache_bytes,
            chip.xip_cache_ways,
            chip.xip_line_bytes,
        )


# ---- stage(): the budget ---------------------------------------------------------------


def small_problem() -> tuple[Problem, Plan]:
    """Tensor 0 (100 B, ops 0-2) and 1 (100 B, op 1 only), side by side: at op 0 the bytes
    100..200 are free under the peak of 200 B, at op 1 none are."""
    problem = Problem((Buffer(0, 100, 0, 2), Buffer(1, 100, 1, 1)), (), 4)
    plan = Plan(offsets={0: 0, 1: 100}, aliased=(), shifts=(), peak=200, placer="firstfit")
    return problem, plan


def test_budget_zero_stages_only_into_free_bytes():
    problem, plan = small_problem()
    found = [Candidate(1, 0, 60, 10, 1000), Candidate(0, 0, 60, 10, 500)]
    p2, plan2, kept, saved = stage(problem, plan, found, 0)
    assert [(b.op, b.size) for b in kept] == [(0, 60)] and saved == (500,)
    assert plan2.peak == 200 and plan2.offsets[kept[0].id] == 100
    assert kept[0].id not in (0, 1) and p2.op_buffers == kept
    assert kept[0].buffer in p2.buffers


@pytest.mark.parametrize("budget, staged_at_op1", [(59, False), (60, True), (1000, True)])
def test_a_byte_budget_is_honoured(budget, staged_at_op1):
    problem, plan = small_problem()
    found = [Candidate(1, 0, 60, 10, 1000), Candidate(0, 0, 60, 10, 500)]
    _, plan2, kept, _ = stage(problem, plan, found, budget)
    assert any(b.op == 1 for b in kept) == staged_at_op1
    assert plan2.peak <= plan.peak + budget
    # the board's limit caps the budget
    _, plan3, kept3, _ = stage(problem, plan, found, budget, limit=200)
    assert plan3.peak == 200 and all(b.op == 0 for b in kept3)


# ---- real plans: replay, fault injection, host unaffected ------------------------------


@pytest.mark.parametrize("strategy", [Strategy.RIP, Strategy.FUSED])
def test_staged_plans_replay_and_keep_the_peak(strategy):
    on = compiled("qemu-m33", strategy)
    off = compiled("qemu-m33", strategy, None)
    staged = on.staged[strategy]
    assert staged.buffers and staged.staged_bytes > 0 and staged.estimated_saved_cycles > 0
    assert on.plan.peak == off.plan.peak == staged.base_peak  # budget 0: memory never worse
    assert not off.staged and not weights(off.problem)
    assert weights(on.problem) == staged.buffers
    graph = on.variant.graph
    assert replay(graph, on.plan, on.problem.alignment, on.problem.op_buffers) == on.plan.peak
    # the report's memory: the arena (the staged filters live in it), and what was staged
    from rip.report import build_report, plan_summary

    summary = plan_summary(on, strategy)
    assert summary["arena_bytes"] == on.plan.peak
    assert summary["staged_weights"]["staged_bytes"] == staged.staged_bytes
    rows = build_report(on)["op_table"]
    assert sum(r["staged_filter_bytes"] for r in rows) == staged.staged_bytes
    assert {r["index"] for r in rows if r["staged_filter_bytes"]} == {b.op for b in staged.buffers}


def test_replay_refuses_a_staged_buffer_over_a_live_tensor():
    c = compiled("qemu-m33", Strategy.RIP)
    graph, problem = c.variant.graph, c.problem
    staged = weights(problem)[0]
    op = graph.operators[staged.op]
    live = graph.storage(op.inputs[0])  # the op's input: read while the copy would land
    moved = replace(c.plan, offsets={**c.plan.offsets, staged.id: c.plan.offsets[live]})
    with pytest.raises(ReplayError, match="overwrites live tensor"):
        replay(graph, moved, problem.alignment, problem.op_buffers)
    # and one without an offset, or at no op, is refused too
    gone = {k: v for k, v in c.plan.offsets.items() if k != staged.id}
    with pytest.raises(ReplayError, match="no offset"):
        replay(graph, replace(c.plan, offsets=gone), problem.alignment, problem.op_buffers)
    stray = (OpBuffer(staged.id, len(graph.operators), staged.size, "weights"),)
    with pytest.raises(ReplayError, match="belongs to no op"):
        replay(graph, c.plan, problem.alignment, stray)


def test_the_board_budget_stays_within_the_pico_it_times():
    """``board`` (STAGE_TO_BOARD): more staged than with 0, the arena grown by what was
    added, and the plan still fits the Pico 1 the emulated ARMv6-M board is timed as."""
    zero = compiled("qemu-armv6m", Strategy.FUSED)
    full = compiled("qemu-armv6m", Strategy.FUSED, STAGE_TO_BOARD)
    st = full.staged[Strategy.FUSED]
    assert st.staged_bytes >= zero.staged[Strategy.FUSED].staged_bytes
    assert full.plan.peak == st.base_peak + st.summary(full.plan.peak)["extra_arena_bytes"]
    needed, available = load_board("pico").budget(full.plan.peak)  # the scratch inside
    assert needed <= available
    g = full.variant.graph
    assert replay(g, full.plan, full.problem.alignment, full.problem.op_buffers) == full.plan.peak


def test_host_board_stages_nothing():
    c = compiled("host", Strategy.RIP)
    assert not c.staged and not weights(c.problem)
    # the same model's candidates exist on a Pico: it is the board that decides
    pico2 = load_board("pico2")
    cache = FlashCache.of(pico2)
    assert cache is not None and candidates(c.variant.graph, cache, pico2.core)


def test_generated_code_copies_each_staged_filter_once():
    c = compiled("qemu-m33", Strategy.FUSED)
    model = emit_model(c.variant.graph, c.variant.req, c.plan, "fused", c.problem.op_buffers)
    text = model.files["model.c"]
    copies = re.findall(r"memcpy\(\(rip_arena \+ (\d+)\), (rip_op\d+(?:_s\d+)?_filter),", text)
    assert len(copies) == len(weights(c.problem))
    assert len(model.staged) == len(weights(c.problem))  # model.c's header lists those alone
    assert {int(x) for x, _ in copies} == {c.plan.offsets[b.id] for b in weights(c.problem)}
    # a staged buffer smaller than the filter its kernel reads is refused
    small = tuple(replace(b, size=4) for b in weights(c.problem))
    with pytest.raises(LoweringError, match="staged 4 B"):
        emit_model(c.variant.graph, c.variant.req, c.plan, "fused", small)


def test_cli_stage_weights_option(tmp_path, capsys):
    path = person_det()
    flash = [str(path), "--json", "--weights", "flash"]  # staging is the flash path
    code = compile_main([*flash, "--board", "qemu-m33", "--stage-weights", "off"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and rep["staged_weights"] is None
    code = compile_main([*flash, "--board", "qemu-m33"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and rep["staged_weights"]["staged_filters"] >= 1
    code = compile_main([*flash, "--board", "pico", "--stage-weights", "board"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and rep["fits"] and rep["staged_weights"]["staged_filters"] >= 1
    assert compile_main([str(path), "--board", "qemu-m33", "--stage-weights", "-3"]) == 2
    err = capsys.readouterr().err
    assert "--stage-weights" in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not TOOLS, reason="needs arm-none-eabi-gcc and qemu-system-arm")
@pytest.mark.parametrize("board", ["qemu-m33", "qemu-armv6m"])
def test_staged_firmware_on_qemu_gives_tflite_micros_checksum(board, tmp_path, capsys):
    """The firmware with staged filters runs to TFLite Micro's checksum, and its estimated
    Pico cycles are no higher than without staging."""
    path = person_det()
    cycles = {}
    label = "pico2" if board == "qemu-m33" else "pico1"
    for flag in ("0", "off"):
        out = tmp_path / flag
        args = [
            str(path),
            "--board",
            board,
            "-o",
            str(out),
            "--run",
            "--json",
            "--weights",
            "flash",
        ]
        code = compile_main([*args, "--strategy", "fused", "--stage-weights", flag])
        rep = json.loads(capsys.readouterr().out)
        assert code == 0 and rep["match"] is True, rep.get("checksum")
        assert ("memcpy((rip_arena" in (out / "model.c").read_text()) == (flag == "0")
        cycles[flag] = rep[f"{label}_cycles"]
    assert cycles["0"] <= cycles["off"]
