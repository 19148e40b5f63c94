"""Resident weights (issue 26, allocator/planning/residency.py): the whole constant data in
SRAM, copied from flash at start-up, where it fits beside the arena.

The oracles: the symbols arm-none-eabi-gcc gives the compiled ``model_data.c`` (the bound
the decision is made with must cover every op's real bytes), the board files for what fits
where, the linked firmware's symbol addresses for where the data really is, TFLite Micro's
checksum and the timing model for the run.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from cbuild import ARM_GCC, NEED_ARM, NEED_QEMU, QEMU, compile_c
from paths import REPO, SHARED

from rip.allocator.planning.residency import (
    constant_bytes,
    op_constant_bytes,
    resident_bytes,
    sram_left,
)
from rip.boards import load_board
from rip.cli.compile import main as compile_main
from rip.compiler import Options, analyse, emit
from rip.core.errors import FitError
from rip.core.terms import Placer, Strategy, WeightsIn
from rip.firmware.pico_project import symbol_placement
from rip.frontend.reader import read_model

EXAMPLE = REPO / "examples" / "example-cnn.tflite"
TINYML = SHARED / "models" / "tinyml"
AD = TINYML / "mlperf-ad01_int8.tflite"
# The four MLPerf Tiny models, the other public TinyML models, and MCUNet models with fused
# chains: every kind of constant data the generator emits.
UNSUPPORTED = ("tflm-keyword_scrambled_8bit.tflite",)  # SVDF: state across invokes
BOUND_MODELS = (
    *(f"tinyml/{p.name}" for p in sorted(TINYML.glob("*.tflite")) if p.name not in UNSUPPORTED),
    "mcunet/person-det.tflite",
    "mcunet/mcunet-vww0.tflite",
)


def need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"{path} is not there (../shared beside the checkout)")
    return path


def compiled(path: Path, board: str, strategy: Strategy | None = None, weights=WeightsIn.AUTO):
    options = Options(strategy=strategy, placer=Placer.FIRSTFIT, weights=weights, cache=False)
    return analyse(path, load_board(board), options)


def emitted_bytes_per_op(c, out: Path) -> dict[int, int]:
    """Bytes of every op's constant symbols (``rip_op<N>_...``) in ``model_data.c`` as
    arm-none-eabi-gcc compiles it for the Cortex-M33."""
    for name, text in emit(c).files.items():
        (out / name).write_text(text)
    obj = out / "model_data.o"
    cflags = load_board("qemu-m33").cflags
    flags = (*cflags, "-std=c99", "-Wall", "-Wextra", "-Werror", "-fdata-sections")
    compile_c([ARM_GCC, *flags, f"-I{REPO / 'kernels'}", "-c", str(out / "model_data.c"),
               "-o", str(obj)])  # fmt: skip
    nm = subprocess.run(["arm-none-eabi-nm", "-S", "--defined-only", str(obj)],
                        capture_output=True, text=True, check=True)  # fmt: skip
    per_op: dict[int, int] = defaultdict(int)
    for line in nm.stdout.splitlines():
        parts = line.split()
        m = re.match(r"rip_op(\d+)_", parts[-1]) if len(parts) == 4 else None
        if m:
            per_op[int(m.group(1))] += int(parts[1], 16)
    return per_op


# ---- the decision ---------------------------------------------------------------------------


def test_resident_only_where_it_fits_and_the_board_has_flash():
    g = read_model(need(AD))
    need_bytes = constant_bytes(g)
    assert need_bytes > 256 * 1024  # its dense layers: more than an RP2040's SRAM
    pico, pico2, host = (load_board(b) for b in ("pico", "pico2", "host"))
    assert resident_bytes(g, [pico2], 768, WeightsIn.AUTO, True) == need_bytes
    assert resident_bytes(g, [pico2], 768, WeightsIn.FLASH, True) == 0
    assert resident_bytes(g, [pico], 768, WeightsIn.AUTO, True) == 0  # does not fit
    assert resident_bytes(g, [host], 768, WeightsIn.AUTO, False) == 0  # no flash to avoid
    with pytest.raises(FitError, match=r"--weights sram.*does not fit"):
        resident_bytes(g, [pico], 768, WeightsIn.SRAM, True)
    # the arena counts: an arena that leaves less than the bound keeps them in flash
    left = sram_left([pico2], 0)
    assert left is not None and left > need_bytes
    assert resident_bytes(g, [pico2], left - need_bytes, WeightsIn.AUTO, True) == need_bytes
    assert resident_bytes(g, [pico2], left - need_bytes + 4, WeightsIn.AUTO, True) == 0
    # an emulated board is also held to the Pico it is timed as
    big = load_board("qemu-m33")
    assert resident_bytes(g, [big, pico], 768, WeightsIn.AUTO, True) == 0


def test_plan_records_residency_and_skips_staging():
    c = compiled(need(AD), "qemu-m33")
    staged = c.staged[c.strategy]
    assert staged.resident_bytes == constant_bytes(c.variants[c.strategy].graph)
    assert not staged.buffers and any("resident in SRAM" in n for n in c.plan.notes)
    assert "RIP_CONSTANT __attribute__((section(" in emit(c).files["model_data.c"]
    flash = compiled(need(AD), "qemu-m33", weights=WeightsIn.FLASH)
    assert flash.strategy not in flash.staged or not flash.staged[flash.strategy].resident_bytes
    assert "#define RIP_CONSTANT" not in emit(flash).files["model_data.c"]
    host = compiled(need(AD), "host")
    assert host.strategy not in host.staged


def test_cli_weights_option(capsys):
    path = str(need(AD))
    assert compile_main([path, "--board", "qemu-m33", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["resident_weights_bytes"] > 0
    assert compile_main([path, "--board", "pico2", "--report"]) == 0
    assert "constant data is resident in SRAM" in capsys.readouterr().out
    assert compile_main([path, "--board", "qemu-m33", "--json", "--weights", "flash"]) == 0
    assert json.loads(capsys.readouterr().out)["resident_weights_bytes"] == 0
    assert compile_main([path, "--board", "pico", "--weights", "sram"]) == 3
    err = capsys.readouterr().err
    assert "--weights sram" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as bad:  # argparse's choices
        compile_main([path, "--board", "pico", "--weights", "rom"])
    assert bad.value.code == 2 and "--weights: invalid choice: 'rom'" in capsys.readouterr().err


# ---- the bound against the compiled data ------------------------------------------------------


def check_bound(c, out: Path) -> tuple[int, int]:
    g = c.variants[c.strategy].graph
    real = emitted_bytes_per_op(c, out)
    for i, op in enumerate(g.operators):
        bound = op_constant_bytes(g, op)
        assert real.get(i, 0) <= bound, f"op {i} {op.kind}: {real.get(i, 0)} B > bound {bound} B"
    return sum(real.values()), constant_bytes(g)


@pytest.mark.skipif(not ARM_GCC, reason=NEED_ARM)
@pytest.mark.parametrize("strategy", [Strategy.RIP, Strategy.FUSED])
def test_bound_covers_the_example(strategy, tmp_path):
    real, bound = check_bound(compiled(EXAMPLE, "qemu-m33", strategy), tmp_path)
    assert 0 < real <= bound


@pytest.mark.skipif(not ARM_GCC, reason=NEED_ARM)
@pytest.mark.parametrize("model", BOUND_MODELS)
def test_bound_covers_every_ops_emitted_data(model, tmp_path):
    """Per op, the bound the decision uses is at least what the generator emits, and over
    a model with real weights not far above it (a loose bound would waste SRAM)."""
    c = compiled(need(SHARED / "models" / model), "qemu-m33")
    real, bound = check_bound(c, tmp_path)
    if real > 64 * 1024:
        assert bound <= 1.2 * real, (real, bound)


# ---- the firmware ---------------------------------------------------------------------------


@pytest.mark.skipif(not (ARM_GCC and QEMU), reason=NEED_QEMU)
def test_resident_firmware_reads_sram_and_gives_tflite_micros_checksum(tmp_path, capsys):
    """AD on the emulated M33: with resident weights its filters link into RAM (.data) and
    the run gives TFLite Micro's checksum in fewer estimated Pico 2 cycles than from flash."""
    board = load_board("qemu-m33")
    cycles, where = {}, {}
    for weights in ("auto", "flash"):
        out = tmp_path / weights
        args = [str(need(AD)), "--board", "qemu-m33", "-o", str(out), "--run", "--json"]
        assert compile_main([*args, "--weights", weights]) == 0
        rep = json.loads(capsys.readouterr().out)
        assert rep["match"] is True, rep.get("checksum")
        cycles[weights] = rep["pico2_cycles"]
        sym = symbol_placement(out / "model.elf", ("rip_op0_filter",))["rip_op0_filter"]
        where[weights] = int(sym["address"])
    assert where["auto"] >= int(board.ram_origin or 0) > where["flash"] >= int(board.code_origin)
    assert cycles["auto"] < cycles["flash"]
