"""The Pico timing model (rip.timing): the QEMU plugin builds and loads; on a hand-written
firmware of known instruction mix (tests/data/timing/mix.S) its cycles equal the sum of
docs/pico-timing.md's cost tables, worked out here by hand per instruction; its XIP cache
model gives the hits and misses a synthetic access pattern must give (an 8 KB array read
repeatedly fits the 16 KB two-way cache, a 32 KB one thrashes it); its instruction count of
an inference agrees with SysTick's; and ``rip-compile --run --json`` carries the
estimate beside the instruction count."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from rip.boards import load_board
from rip.cli.compile import main as compile_main
from rip.codegen.templating import render
from rip.timing.estimate import Segment, parse_segments, run_timed
from rip.timing.model import TimingModel
from rip.timing.plugin import PluginError, plugin_path

DATA = Path(__file__).parent / "data" / "timing"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "example-cnn.tflite"
TOOLS = (
    shutil.which("arm-none-eabi-gcc")
    and shutil.which("qemu-system-arm")
    and (shutil.which("gcc") or shutil.which("cc"))
)
pytestmark = pytest.mark.skipif(
    not TOOLS, reason="needs arm-none-eabi-gcc, qemu-system-arm and a host C compiler"
)

# Segment 1 of mix.S, instruction by instruction (docs/pico-timing.md's tables):
#   Cortex-M0+: ALU 1, MULS 1, loads/stores 2, PUSH/POP 1+N, POP {..., PC} 3+N (N: the low
#   registers), LDM 1+N, B<cond> 1 / 2 taken, B 2, BL 3, BX 2; a call into __divsi3 costs
#   the SIO-divider routine (19) in all.
M0PLUS = [
    ("bx lr (rip_systick_ticks)", 2), ("movs", 1), ("adds", 1), ("muls", 1),
    ("ldr literal", 2), ("ldr", 2), ("ldrb", 2), ("sub sp", 1), ("str", 2), ("ldr", 2),
    ("add sp", 1), ("push 3", 4), ("pop 2", 3), ("pop 1", 2), ("movs", 1),
    ("subs x3", 3), ("bne taken x2", 4), ("bne not taken", 1), ("bl func", 3),
    ("push {r4, lr}", 3), ("pop {r4, pc}", 4), ("b", 2), ("ldm 2", 3), ("bl __divsi3", 3),
    ("SIO divider routine", 19),
    ("bl rip_systick_ticks", 3),
]  # fmt: skip
M0PLUS_INSTRUCTIONS = 32
#   Cortex-M33 (the Cortex-M4 TRM's table): taken branch 1 + P (P 1 for an immediate target,
#   2 for a register one, 3 after a load into the PC), loads 2 but 1 when pipelined behind an
#   independent load, LDM/STM/PUSH/POP 1+N (the PC counted), an
#   immediate-offset store 1, +1 when the address register was written by the instruction
#   just before, IT folded after a 16-bit instruction, SDIV 12 (the top of 2..12), UMULL
#   and SMLAD 1, a conditional load 1 + 1 when its condition passes.
M33 = [
    ("bx lr (rip_systick_ticks)", 3), ("movs", 1), ("adds", 1), ("muls", 1),
    ("ldr literal", 2), ("ldr [r1] after ldr r1", 2), ("ldrb pipelined", 1), ("sub sp", 1),
    ("str [sp] after sub sp", 2), ("ldr", 2), ("add sp", 1), ("push 3", 4), ("pop 2", 3),
    ("pop 1", 2), ("movs", 1), ("subs x3", 3), ("bne taken x2", 4), ("bne not taken", 1),
    ("bl func", 2), ("push {r4, lr}", 3), ("pop {r4, pc}", 6), ("b", 2), ("ldm 2", 3),
    ("movs", 1), ("movs", 1),
    ("sdiv", 12), ("umull", 1), ("smlad", 1), ("cmp", 1), ("it (folded)", 0),
    ("ldreq (passes)", 2), ("it (folded)", 0), ("ldrne (fails)", 1),
    ("bl rip_systick_ticks", 2),
]  # fmt: skip
M33_INSTRUCTIONS = 37


def build(board_name: str, tmp: Path, **defines: int) -> Path:
    """mix.S for the emulated board, linked with rip's QEMU linker script."""
    board = load_board(board_name)
    (tmp / "link.ld").write_text(render("qemu/link.ld.j2", board=board), encoding="utf-8")
    elf = tmp / f"mix-{board_name}.elf"
    flags = [f for f in board.cflags if f.startswith(("-mcpu", "-mthumb", "-march"))]
    defs = [f"-D{k}={v}" for k, v in {"UART_BASE": board.uart_base, **defines}.items()]
    subprocess.run(
        ["arm-none-eabi-gcc", *flags, *defs, "-nostartfiles", "-nostdlib", "-T",
         str(tmp / "link.ld"), str(DATA / "mix.S"), "-o", str(elf)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return elf


def timed(board_name: str, elf: Path, cache: bool = True) -> tuple[Segment, ...]:
    board = load_board(board_name)
    model = TimingModel.of(board, cache=cache)
    run, estimate = run_timed(elf, board, 60.0, model, until="RIP-DONE")
    assert any("RIP-DONE" in x for x in run.lines)
    return estimate.segments


def test_plugin_builds_and_is_reused(tmp_path: Path) -> None:
    first = plugin_path(tmp_path)
    assert first.is_file() and first.stat().st_size > 0
    assert plugin_path(tmp_path) == first  # keyed by its sources: built once


def test_plugin_without_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(PluginError):
        plugin_path(tmp_path / "cache")


@pytest.mark.parametrize(
    ("board", "table", "instructions"),
    [("qemu-armv6m", M0PLUS, M0PLUS_INSTRUCTIONS), ("qemu-m33", M33, M33_INSTRUCTIONS)],
)
def test_known_mix(tmp_path: Path, board: str, table: list, instructions: int) -> None:
    elf = build(board, tmp_path, MIX=1)
    segments = timed(board, elf, cache=False)
    assert len(segments) == 3  # before, between and after the two marker calls
    mix = segments[1]
    assert mix.instructions == instructions
    assert mix.cycles == sum(c for _, c in table)
    assert mix.stall == 0 and mix.unknown == 0 and mix.exceptions == 0
    if board == "qemu-armv6m":
        assert (mix.replaced_calls, mix.replaced_instructions) == (1, 4)
    else:
        assert mix.divides == 1
    # the cache only adds stall cycles: the core's cost is the same with it
    cached = timed(board, elf)[1]
    assert cached.cycles - cached.stall == mix.cycles
    assert cached.misses > 0 and cached.stall == miss_stall(board, cached)


def miss_stall(board: str, s: Segment) -> int:
    """The stall the board's cache figures give ``s``'s misses."""
    chip = TimingModel.of(load_board(board)).chip
    full = s.misses - s.sequential_misses
    return full * chip.xip_miss_cycles + s.sequential_misses * chip.xip_sequential_miss_cycles


# (board, array bytes): data hits and misses of 4 passes over the array, word by word. The
# RP2040 fills 4 bytes a miss (one half of an 8-byte line), the RP2350 a whole line.
CACHE = {
    ("qemu-armv6m", 8192): (3 * 2048, 2048),  # fits: only the first pass misses
    ("qemu-armv6m", 32768): (0, 4 * 8192),  # 4 lines per set of 2 ways: every word misses
    ("qemu-m33", 8192): (4 * 2048 - 1024, 1024),
    ("qemu-m33", 32768): (4 * 4096, 4 * 4096),  # each line's second word hits
}


@pytest.mark.parametrize(("board", "size"), list(CACHE))
def test_cache_pattern(tmp_path: Path, board: str, size: int) -> None:
    elf = build(board, tmp_path, MIX=0, ARRAY_BYTES=size, PASSES=4)
    window = timed(board, elf)[1]
    assert (window.data_hits, window.data_misses) == CACHE[(board, size)]
    assert window.fetch_misses <= 8  # only the loop code's first fetches
    assert window.stall == miss_stall(board, window)
    if board == "qemu-m33":  # a sweep continues the open QSPI transfer, but not across 1 KB
        assert window.data_misses - window.sequential_misses >= window.data_misses * 8 // 1024
        assert window.sequential_misses > 0.9 * window.data_misses
    else:
        assert window.sequential_misses == 0


def test_parse_segments_incomplete() -> None:
    with pytest.raises(Exception, match="incomplete"):
        parse_segments("pico_timing core=m33\nsegment index=0 instructions=1 cycles=2\n")


@pytest.mark.parametrize(("board", "label"), [("qemu-m33", "pico2"), ("qemu-armv6m", "pico1")])
def test_run_json_carries_estimate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], board: str, label: str
) -> None:
    out = tmp_path / "project"
    rc = compile_main([str(EXAMPLE), "--board", board, "-o", str(out), "--run", "--json",
                       "--no-cache"])  # fmt: skip
    assert rc == 0
    rep = json.loads(capsys.readouterr().out)
    n = rep["instructions"]
    cycles = rep[f"{label}_cycles"]
    timing = rep[f"{label}_timing"]
    # the plugin's count of the same window agrees with SysTick's, within one tick
    tick = load_board(board).instructions_per_tick
    assert abs(timing["instructions"] - n) <= tick
    assert cycles > n  # no Cortex-M core retires more than one instruction a cycle here
    assert 0 <= rep[f"{label}_flash_miss_share"] < 1
    assert rep[f"{label}_flash_stall_cycles"] == timing["stall"]
    clock = TimingModel.of(load_board(board)).chip.clock_hz
    assert rep[f"{label}_ms"] == pytest.approx(1e3 * cycles / clock, abs=1e-3)
    assert timing["unknown"] == 0


def test_model_of_board_without_timing() -> None:
    with pytest.raises(Exception, match="no timing model"):
        TimingModel.of(replace(load_board("qemu-m33"), timing_board=None))
