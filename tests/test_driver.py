"""The compiler driver's seams: stages into one Compiled, the plan checker and its text
picture (no model needed), one shape conversion, one operator description, one CLI
error wrapper."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from tflite_writer import example_model

from rip.allocator.planning.check import CLASH, INPLACE, picture, verify
from rip.allocator.planning.placement import Buffer, Pair, Problem, first_fit
from rip.boards import boot_drives, load_board, uf2_chips
from rip.cli import guarded
from rip.compiler import Options, analyse, compile_model
from rip.core.errors import (
    EXIT_BAD_INPUT,
    EXIT_BUILD_FAILED,
    EXIT_DOES_NOT_FIT,
    EXIT_HANGUP,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_MISMATCH,
    EXIT_NO_REFERENCE,
    EXIT_NO_SPACE,
    EXIT_OK,
    EXIT_TERMINATED,
    BuildError,
    DiskFullError,
    FitError,
    Interrupted,
    LayerError,
    PlacementError,
    PlanError,
    ReplayError,
    RipError,
)
from rip.core.shapes import nhwc
from rip.core.terms import Placer, Strategy
from rip.frontend.ir import Operator, describe
from rip.report import build_report

CHAIN = Problem(
    (Buffer(0, 100, 0, 0), Buffer(1, 150, 0, 1), Buffer(2, 100, 1, 2), Buffer(3, 48, 2, 2)),
    (Pair(0, 0, 1, 60, shiftable=True), Pair(1, 1, 2, 0)),
    4,
)


@pytest.fixture(scope="module")
def example_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("models") / "example.tflite"
    path.write_bytes(example_model(0))
    return path


# --- the plan checker and picture: a Problem and a Plan, no model ----------------------
def test_verify_accepts_first_fit_and_names_what_breaks():
    plan = first_fit(CHAIN)
    verify(CHAIN, plan)
    with pytest.raises(PlanError, match="share bytes"):
        verify(CHAIN, replace(plan, offsets={**plan.offsets, 3: plan.offsets[2]}))
    with pytest.raises(PlanError, match="not a non-negative multiple of 4"):
        verify(CHAIN, replace(plan, offsets={**plan.offsets, 0: 2}))
    with pytest.raises(PlanError, match="misses"):
        verify(CHAIN, replace(plan, offsets={k: v for k, v in plan.offsets.items() if k}))
    with pytest.raises(PlanError, match="says peak"):
        verify(CHAIN, replace(plan, peak=plan.peak + 4))
    assert PlanError.exit_code == ReplayError.exit_code == 70


def test_verify_checks_the_in_place_gap():
    # op 0 writes buffer 1 at most 60 B below buffer 0: 40 B is too little
    plan = first_fit(Problem(CHAIN.buffers[:2], CHAIN.pairs[:1], 4))
    bad = replace(plan, offsets={0: 40, 1: 0}, aliased=CHAIN.pairs[:1], peak=150)
    with pytest.raises(PlanError, match="gap of 40 B; it needs a gap of at least 60 B"):
        verify(Problem(CHAIN.buffers[:2], CHAIN.pairs[:1], 4), bad)


def test_picture_is_time_by_address():
    plan = first_fit(CHAIN)
    text = picture(CHAIN, plan, width=25)
    lines = text.splitlines()
    assert lines[0].startswith("firstfit: peak 250 B (lower bound 160 B); one column = 10 B")
    rows = [line for line in lines if "|" in line]
    assert len(rows) == 3  # one per step
    assert all(len(r.split("|")[1]) == 25 for r in rows)
    assert INPLACE in rows[1] and CLASH not in text  # op 1 writes buffer 2 over buffer 1
    assert "A=0:100B@0[0..0]" in text


def test_picture_counts_an_in_place_output_once():
    """Issue 24: a row's bytes are the arena bytes in use, never above the arena: an
    output written over its input shares its bytes (the old sum said 256 B in 128)."""
    over = Problem((Buffer(0, 128, 0, 1), Buffer(1, 128, 1, 2)), (Pair(1, 0, 1, 0, exact=True),), 4)
    plan = first_fit(over)
    assert plan.peak == 128 and plan.aliased
    rows = [line for line in picture(over, plan, width=8).splitlines() if "|" in line]
    assert [int(r.split("|")[2].split()[0].replace(",", "")) for r in rows] == [128, 128, 128]
    assert INPLACE in rows[1] and rows[1].endswith("128 B in use")


def test_picture_marks_a_clash():
    plan = first_fit(CHAIN)
    bad = replace(plan, offsets={**plan.offsets, 3: plan.offsets[2]})
    assert CLASH in picture(CHAIN, bad)


# --- one shape conversion, one operator description ------------------------------------
@pytest.mark.parametrize(
    ("shape", "want"),
    [
        ((1, 4, 5, 6), (1, 4, 5, 6)),
        ((4, 5, 6), (1, 4, 5, 6)),
        ((5, 6), (1, 1, 5, 6)),
        ((6,), (1, 1, 1, 6)),
        ((), (1, 1, 1, 1)),
    ],
)
def test_nhwc_extends_with_leading_ones(shape, want):
    assert nhwc(shape) == want


def test_nhwc_refuses_five_dimensions():
    with pytest.raises(ValueError, match="more than 4"):
        nhwc((1, 2, 3, 4, 5))


def test_describe_names_kind_index_step_and_output():
    assert describe("CONV_2D", 3) == "operator CONV_2D at index 3"
    assert describe("ADD", 2, step=1, output=7, output_name="y") == (
        "operator ADD at index 2 (step 1, output tensor 7 'y')"
    )
    assert describe("SVDF", 0, output=-1) == "operator SVDF at index 0 (no output tensor)"
    op = Operator("MUL", (0, 1), (2,), None, 5)
    assert op.describe() == "operator MUL at index 5"


# --- boards hold the chip facts ---------------------------------------------------------
def test_chip_facts_come_from_the_board_files():
    assert {label: b.name for label, b in boot_drives().items()} == {
        "RPI-RP2": "pico",
        "RP2350": "pico2",
    }
    assert uf2_chips() == {0xE48BFF56: "RP2040", 0xE48BFF59: "RP2350"}
    assert load_board("host").boot_drive is None


# --- the driver --------------------------------------------------------------------------
def test_analyse_collects_every_stage(example_file):
    board = load_board("host")
    c = analyse(example_file, board, Options(strategy=Strategy.RIP, placer=Placer.FIRSTFIT))
    assert set(c.plans) == set(c.problems) == set(Strategy)
    assert c.plan is c.plans[Strategy.RIP] and c.model is None and c.run is None
    for s, plan in c.plans.items():
        verify(c.problems[s], plan)  # the planner's contract, from the problem alone
    assert c.fit().fits and c.fit().headroom_bytes is None  # the host has no SRAM limit
    rep = build_report(c)
    assert rep["arena_bytes"] == c.plan.peak and "output_dir" not in rep


def test_each_strategy_is_one_variant_and_one_problem(example_file, monkeypatch):
    """The strategy table has one entry per strategy, and the driver builds each
    strategy's placement problem once (strategies.build_problem), on its own variant."""
    from rip.allocator.planning import strategies

    assert tuple(strategies.TABLE) == tuple(Strategy)
    built = []
    real = strategies.build_problem

    def counting(req, strategy, alignment):
        built.append(strategy)
        return real(req, strategy, alignment)

    monkeypatch.setattr(strategies, "build_problem", counting)
    c = analyse(example_file, load_board("host"), Options(placer=Placer.FIRSTFIT, cache=False))
    assert built == list(Strategy)
    assert {s: v.strategy for s, v in c.variants.items()} == {s: s for s in Strategy}
    fused = c.variants[Strategy.FUSED]
    assert fused.fusion is not None and c.variants[Strategy.RIP].graph is c.graph
    assert fused.graph is not c.graph or not fused.fusion.chains  # fused: its own graph


def test_fit_error_before_any_file_is_written(example_file, tmp_path):
    tiny = replace(load_board("pico"), sram_bytes=1024)
    out = tmp_path / "out"
    with pytest.raises(FitError, match="does not fit pico") as e:
        compile_model(example_file, tiny, Options(placer=Placer.FIRSTFIT, output=out))
    assert e.value.exit_code == 3 and not out.exists()


def test_run_and_build_need_an_output_and_the_right_board(example_file, tmp_path):
    host, pico = load_board("host"), load_board("pico2")
    with pytest.raises(RipError, match="need -o DIR"):
        compile_model(example_file, host, Options(placer=Placer.FIRSTFIT, run=True))
    with pytest.raises(RipError, match="--build is for Pico boards"):
        compile_model(
            example_file, host, Options(placer=Placer.FIRSTFIT, output=tmp_path, build=True)
        )
    with pytest.raises(RipError, match="--run builds and runs on the host"):
        compile_model(
            example_file, pico, Options(placer=Placer.FIRSTFIT, output=tmp_path, run=True)
        )


# --- one CLI error wrapper ----------------------------------------------------------------
def test_guarded_turns_errors_into_one_line_and_a_code(capsys):
    def bad() -> int:
        raise LayerError("kernel: too large")

    assert guarded("rip-x", bad) == 2
    assert capsys.readouterr().err == "rip-x: error: kernel: too large\n"
    assert guarded("rip-x", lambda: 0) == 0

    def interrupted() -> int:
        raise KeyboardInterrupt

    assert guarded("rip-x", interrupted, interrupted=7) == 7
    capsys.readouterr()
    assert guarded("rip-x", interrupted) == 130
    assert capsys.readouterr().err == "rip-x: interrupted\n"


def test_guarded_turns_a_bug_into_one_line_and_exit_70(capsys, monkeypatch):
    monkeypatch.delenv("RIP_TRACEBACK", raising=False)

    def bug() -> int:
        return {}["missing"]

    assert guarded("rip-x", bug) == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rip-x: internal error: KeyError")
    assert "report" in err and "Traceback" not in err


def test_exit_codes_are_the_documented_ones():
    """The README's table, as the constants every CLI uses."""
    assert (EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_DOES_NOT_FIT) == (0, 1, 2, 3)
    assert (EXIT_NO_REFERENCE, EXIT_BUILD_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED) == (
        4, 5, 70, 130,
    )  # fmt: skip
    assert (EXIT_NO_SPACE, EXIT_HANGUP, EXIT_TERMINATED) == (6, 129, 143)
    assert RipError.exit_code == 2 and FitError.exit_code == 3 and BuildError.exit_code == 5
    assert Interrupted.exit_code == 130 and PlacementError.exit_code == 70
    assert DiskFullError.exit_code == 6
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    for code in (0, 1, 2, 3, 4, 5, 6, 70, "128 + N"):
        assert f"| {code} |" in readme
    row = next(line for line in readme.splitlines() if line.startswith("| 128 + N |"))
    assert "130 Ctrl-C" in row and "143 SIGTERM" in row and "129 SIGHUP" in row


def test_guarded_turns_sigterm_and_sighup_into_128_plus_n(capsys):
    """The signals stop the work as Ctrl-C does: the same exception, so the same cleanup."""
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers run in the main thread only")
    cleaned = []

    def work(sig: int) -> int:
        try:
            os.kill(os.getpid(), sig)
            time.sleep(5)  # the handler raises here
            return 0
        finally:
            cleaned.append(sig)

    for sig, code in ((signal.SIGTERM, 143), (signal.SIGHUP, 129)):
        before = signal.getsignal(sig)
        assert guarded("rip-x", lambda sig=sig: work(sig)) == code
        assert capsys.readouterr().err == f"rip-x: stopped by {signal.Signals(sig).name}\n"
        assert signal.getsignal(sig) is before  # restored after the work
    assert cleaned == [signal.SIGTERM, signal.SIGHUP]


def test_guarded_says_no_space_in_one_line_and_escapes_control_characters(capsys):
    import errno

    def full() -> int:
        raise OSError(errno.ENOSPC, "No space left on device", "/x/model_data.c")

    assert guarded("rip-x", full) == 6
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no space left on the device writing /x/model_data.c" in err

    def hostile() -> int:
        raise RipError("tensor 'a\x1b[2J\x07b' is bad")

    assert guarded("rip-x", hostile) == 2
    assert capsys.readouterr().err == "rip-x: error: tensor 'a\\x1b[2J\\x07b' is bad\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["rip-compile", "{model}", "--placer", "firstfit", "--board", "host"],
        ["rip-bounds", "--kernel", "3", "--input", "8", "--cin", "4", "--cout", "4"],
    ],
)
def test_a_closed_stdout_is_not_a_traceback(argv, example_file):
    """``rip-compile ... | head -0``: the reader went away; no traceback, no error line."""
    exe = Path(sys.executable).parent / argv[0]
    cmd = [str(exe), *(a.format(model=example_file) for a in argv[1:])]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # as `| head -0` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
