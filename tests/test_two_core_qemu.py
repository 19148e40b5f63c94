"""Two cores on QEMU's mps2-an521 (issue 27): the emulated boards' two-core runtime
(templates/qemu/ with cores=2: core 0 starts core 1, each on its own stack) and the critical
path measured by the two_core_count plugin (rip.timing.two_core_run), on a hand-written
program that needs no model: both cores hash their share of every block of an array, with
a barrier per block (kernels/rip_cores.c), and core 0 prints both hashes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rip.boards import Board, load_board
from rip.cli.compile import main as compile_main
from rip.codegen.templating import render
from rip.core.errors import FirmwareError
from rip.firmware.qemu_project import dual_board
from rip.firmware.qemu_run import run_on_qemu
from rip.firmware.tools import run_tool
from rip.timing.two_core_run import TwoCoreEstimate, run_two_core, run_two_core_project

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
TOOLS = shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")
pytestmark = pytest.mark.skipif(
    not TOOLS or not (shutil.which("gcc") or shutil.which("cc")),
    reason="needs arm-none-eabi-gcc, qemu-system-arm and a host C compiler (the plugin)",
)

N, BLOCKS = 16384, 16
PER = N // BLOCKS

PROGRAM = r"""
#include <stdint.h>

#include "rip_cores.h"
#include "rip_qemu.h"

#define N @N@
#define BLOCKS @BLOCKS@
#define PER (N / BLOCKS)
/* SHARE0: the elements of each block core 0 hashes (core 1 the rest); TWO_CORES 0: core 0
 * hashes both shares itself and core 1 is never started. */

static uint32_t data[N];
static volatile uint32_t hashes[2];

/* An instruction of the DSP extension and one of the FPU on the calling core, where the
 * code is built for them (qemu-m33: the kernels use both, and the AN521 image lacks them on
 * CPU 0 unless the board's -global options give them): a fault prints RIP-ERROR. */
static void probe_extensions(void) {
#if defined(__ARM_FEATURE_DSP)
    uint32_t x = 3u;
    __asm__ volatile("smlad %0, %0, %0, %0" : "+r"(x));
#endif
#if defined(__ARM_FP)
    __asm__ volatile("vadd.f32 s0, s0, s0" ::: "s0");
#endif
}

static uint32_t mix(uint32_t h, int from, int to) {
    for (int i = from; i < to; i++) {
        h = h * 31u + data[i];
    }
    return h;
}

/* Core `core`'s share of every block, a barrier after each (its hash stored before it). */
static void share(int core) {
    uint32_t h = 1u;
    for (int b = 0; b < BLOCKS; b++) {
        const int lo = b * PER, mid = lo + SHARE0, hi = lo + PER;
        h = core == 0 ? mix(h, lo, mid) : mix(h, mid, hi);
        hashes[core] = h;
        rip_core_barrier(core);
    }
}

void rip_model_core1_run(void) {
    probe_extensions();
#if FAULT_ON_CORE1
    __asm__ volatile("udf #0"); /* a fault on core 1, while core 0 waits for it */
#endif
    for (;;) {
        rip_core_barrier(1); /* ready, then wait for core 0's go */
        share(1);
    }
}

int main(void) {
    rip_uart_init();
    probe_extensions();
    uint32_t x = 12345u;
    for (int i = 0; i < N; i++) {
        x = x * 1664525u + 1013904223u;
        data[i] = x >> 8;
    }
#if TWO_CORES
    rip_core_reset();
    rip_core1_start();
    rip_inference_mark();
    rip_core_barrier(0); /* go */
    share(0);
    rip_inference_mark();
#else
    rip_inference_mark();
    uint32_t h0 = 1u, h1 = 1u;
    for (int b = 0; b < BLOCKS; b++) {
        const int lo = b * PER, mid = lo + SHARE0, hi = lo + PER;
        h0 = mix(h0, lo, mid);
        h1 = mix(h1, mid, hi);
    }
    hashes[0] = h0;
    hashes[1] = h1;
    rip_inference_mark();
#endif
    rip_uart_puts("RIP-TWO-CORE h0=");
    rip_uart_put_hex32(hashes[0]);
    rip_uart_puts(" h1=");
    rip_uart_put_hex32(hashes[1]);
    rip_uart_puts("\n");
    return 0;
}
"""


def expected_hashes(share0: int) -> tuple[int, int]:
    """The program's two hashes, computed here."""
    x, data = 12345, []
    for _ in range(N):
        x = (x * 1664525 + 1013904223) & 0xFFFFFFFF
        data.append(x >> 8)
    h = [1, 1]
    for b in range(BLOCKS):
        lo, mid, hi = b * PER, b * PER + share0, (b + 1) * PER
        for k, (i, j) in enumerate(((lo, mid), (mid, hi))):
            for v in data[i:j]:
                h[k] = (h[k] * 31 + v) & 0xFFFFFFFF
    return h[0], h[1]


def build(
    tmp: Path, board_name: str, share0: int, two_cores: bool, fault: bool = False
) -> tuple[Path, Board]:
    """The program on ``board_name``'s two-core machine, with the boards' own runtime."""
    board = dual_board(load_board(board_name))
    ctx = {"board": board, "profile": False, "error_prefix": "RIP-ERROR", "cores": 2}
    tmp.mkdir(parents=True, exist_ok=True)
    for name in ("startup.c", "rip_qemu.h", "link.ld"):
        (tmp / name).write_text(render(f"qemu/{name}.j2", **ctx), encoding="utf-8")
    (tmp / "main.c").write_text(PROGRAM.replace("@N@", str(N)).replace("@BLOCKS@", str(BLOCKS)))
    elf = tmp / "two.elf"
    cmd = [
        str(shutil.which("arm-none-eabi-gcc")), *board.cflags, "-std=c99", "-Wall", "-Wextra",
        "-Werror", "-nostartfiles", "-T", str(tmp / "link.ld"), f"-I{tmp}", f"-I{KERNELS}",
        f"-DSHARE0={share0}", f"-DTWO_CORES={int(two_cores)}", f"-DFAULT_ON_CORE1={int(fault)}",
        str(tmp / "main.c"),
        str(tmp / "startup.c"), str(KERNELS / "rip_cores.c"), "-o", str(elf),
    ]  # fmt: skip
    proc = run_tool(cmd, "two-core test build")
    assert proc.returncode == 0, proc.stderr
    return elf, board


def run(tmp: Path, board_name: str, share0: int, two_cores: bool = True) -> TwoCoreEstimate:
    elf, board = build(tmp, board_name, share0, two_cores)
    qemu, est = run_two_core(elf, board, 60.0, until="RIP-TWO-CORE")
    line = next(x for x in qemu.lines if x.startswith("RIP-TWO-CORE"))
    h0, h1 = expected_hashes(share0)
    assert line == f"RIP-TWO-CORE h0=0x{h0:08x} h1=0x{h1:08x}", line
    assert est is not None
    return est


@pytest.mark.parametrize("board", ["qemu-m33", "qemu-armv6m"])
def test_balanced_split_halves_the_critical_path(board: str, tmp_path: Path) -> None:
    """Both cores hash half of every block: the right hashes on both cores' code, and the
    critical path about half the one-core count (a barrier per block costs a few dozen
    instructions), each core busy nearly all of it; timed as the Pico's cores over one XIP
    cache, the cycles halve as well."""
    one_run = run(tmp_path / "one", board, PER // 2, two_cores=False)
    two_run = run(tmp_path / "two", board, PER // 2)
    one, two = one_run.path, two_run.path
    assert one.busy[1] == 0 and one.syncs == 0
    assert two.syncs == BLOCKS + 1  # go, then a barrier per block
    ratio = two.length / one.length
    cycles = two_run.cycles.length / one_run.cycles.length
    print(f"{board}: one core {one.length}, two cores {two.length} ({ratio:.3f}), busy "
          f"{two.busy}, idle share {two.idle_share}; cycles {one_run.cycles.length} -> "
          f"{two_run.cycles.length} ({cycles:.3f})")  # fmt: skip
    assert 0.5 < ratio < 0.54
    assert max(two.idle_share) < 0.03
    # not as close to half: core 1's loop branches back to a 32-bit load that straddles two
    # fetch words, a cycle more per iteration on the M33 than core 0's aligned one
    assert 0.5 < cycles < 0.6 and two_run.cycles.length > two.length
    assert two_run.model.label == ("pico2" if board == "qemu-m33" else "pico1")


@pytest.mark.parametrize("board", ["qemu-m33", "qemu-armv6m"])
def test_unbalanced_split_shows_idle_on_the_lighter_core(board: str, tmp_path: Path) -> None:
    """Core 0 hashes a quarter of every block, core 1 three quarters: the critical path is
    core 1's share, and core 0 idles about two thirds of it."""
    one = run(tmp_path / "one", board, PER // 4, two_cores=False).path
    two = run(tmp_path / "two", board, PER // 4).path
    print(f"{board}: one core {one.length}, two cores {two.length}, "
          f"busy {two.busy}, idle share {two.idle_share}")  # fmt: skip
    assert 0.75 < two.length / one.length < 0.79
    assert 0.62 < two.idle_share[0] < 0.68
    assert two.idle_share[1] < 0.03


@pytest.mark.parametrize("board", ["qemu-m33", "qemu-armv6m"])
def test_a_fault_on_core_1_prints_the_error_line(board: str, tmp_path: Path) -> None:
    """Core 1 shares the fault handler: its fault ends the run with the error line, and no
    critical path is claimed."""
    elf, b = build(tmp_path, board, PER // 2, True, fault=True)
    qemu, est = run_two_core(elf, b, 60.0)
    assert qemu.result == "RIP-ERROR op=-1 status=-1 fault" and est is None


SHARED_MODELS = Path(__file__).resolve().parents[1] / ".." / "shared" / "models"
# (model, board, --share-slack, --strategy): KWS's every layer sets its floor, so it shares
# at slack 1; fused is the MCUNet models' default plan (chains split by channels per row)
TWO_CORE_MODELS = [
    ("tinyml/mlperf-kws_ref_model.tflite", "qemu-m33", "1", "rip"),
    ("tinyml/mlperf-kws_ref_model.tflite", "qemu-armv6m", "1", "rip"),
    ("mcunet/mcunet-in0.tflite", "qemu-m33", "0.02", "rip"),
    ("mcunet/mcunet-vww0.tflite", "qemu-armv6m", "0.02", "rip"),
    ("tinyml/mlperf-str_ww_ref_model.tflite", "qemu-armv6m", "1", "rip"),
    ("mcunet/mcunet-vww0.tflite", "qemu-m33", "1", "fused"),
    ("tinyml/mlperf-vww_96_int8.tflite", "qemu-armv6m", "1", "fused"),
]


@pytest.mark.parametrize(("model", "board", "slack", "strategy"), TWO_CORE_MODELS, ids=str)
def test_a_two_core_model_runs_and_reports_its_critical_path(
    tmp_path: Path, model: str, board: str, slack: str, strategy: str
) -> None:
    """rip-compile --cores 2 on the emulated boards (M33 and ARMv6-M code): the project runs
    on mps2-an521, gives TFLite Micro's checksum with both cores working, and its result
    line's instructions are the critical path; without the two-core plugin's run it is
    refused, not timed by SysTick (which counts both cores' instructions as one)."""
    path_in = SHARED_MODELS / model
    if not path_in.is_file():
        pytest.skip(f"{path_in} is absent (CI keeps ../shared beside the checkout)")
    out = tmp_path / "out"
    args = ["--cores", "2", "--share-slack", slack, "--strategy", strategy, "--quiet"]
    assert compile_main([str(path_in), "--board", board, *args, "-o", str(out)]) == 0
    expected = json.loads((out / "expected.json").read_text())
    assert expected["cores"] == 2 and expected["qemu_machine"] == "mps2-an521"
    result, est = run_two_core_project(out)
    path = est.path
    assert 0 < est.cycles.busy[1] <= est.cycles.length and est.cycles.length > path.length
    assert f"0x{result.checksum:08x}" == expected["checksum"], result.line()
    assert result.cores == 2 and result.instructions == path.length
    assert result.line().endswith(" cores=2")
    # either core may be the busier: the split is by channels, whose costs differ a little
    # (an ARMv6-M depthwise channel rip_rq3_prepare refuses takes the C run)
    assert all(0 < b <= path.length for b in path.busy)
    assert path.busy[1] > path.length // 3  # core 1 does a real share
    if strategy == "fused":  # the chains too: core 1 about as busy as core 0
        assert path.busy[1] > 0.8 * path.busy[0], path
    with pytest.raises(FirmwareError, match="two-core"):
        run_on_qemu(out, build=False)
