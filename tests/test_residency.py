"""Resident weights (issue 26, allocator/planning/residency.py): the whole constant data in
SRAM, copied from flash at start-up, where it fits beside the arena.

The oracles: the symbols arm-none-eabi-gcc gives the compiled ``model_data.c`` (the bound
the decision is made with must cover every op's real bytes), the board files for what fits
where, the linked firmware's symbol addresses for where the data really is, TFLite Micro's
checksum and the timing model for the run.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from cbuild import ARM_GCC, NEED_ARM, NEED_QEMU, QEMU, compile_c
from paths import REPO, SHARED

from rip.allocator.planning.residency import (
    KNAPSACK_CELLS,
    constant_bytes,
    most_gain,
    op_constant_bytes,
    resident_ops,
    sram_left,
)
from rip.allocator.planning.staging import FlashCache, flash_stalls
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
UNSUPPORTED: tuple[str, ...] = ()
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
    every = tuple(range(len(g.operators)))
    total = constant_bytes(g)
    assert total > 256 * 1024  # its dense layers: more than an RP2040's SRAM
    pico, pico2, host = (load_board(b) for b in ("pico", "pico2", "host"))
    gains = dict.fromkeys(every, 1)
    assert resident_ops(g, [pico2], 768, WeightsIn.AUTO, gains) == (every, total)
    assert resident_ops(g, [pico2], 768, WeightsIn.FLASH, gains) == ((), 0)
    assert resident_ops(g, [host], 768, WeightsIn.AUTO, None) == ((), 0)  # no flash model
    assert resident_ops(g, [host], 768, WeightsIn.SRAM, None) == (every, total)
    with pytest.raises(FitError, match=r"--weights sram.*does not fit"):
        resident_ops(g, [pico], 768, WeightsIn.SRAM, gains)
    # the arena counts: one byte more than leaves room for all of it keeps some in flash
    left = sram_left([pico2], 0)
    assert left is not None and left > total
    assert resident_ops(g, [pico2], left - total, WeightsIn.AUTO, gains)[0] == every
    assert resident_ops(g, [pico2], left - total + 4, WeightsIn.AUTO, gains)[0] != every
    # an emulated board is also held to the Pico it is timed as
    assert resident_ops(g, [load_board("qemu-m33"), pico], 768, WeightsIn.AUTO, gains)[0] != every


def test_partial_residency_takes_the_most_stall_that_fits():
    """Where the whole does not fit, the ops chosen fit what the arena leaves and save the
    most stall any subset that fits saves (every subset of AD's ten ops tried, sizes in the
    fill's steps), at least what a greedy fill by gain per byte saves; an op without a gain
    is never chosen."""
    g = read_model(need(AD))
    pico = load_board("pico")
    sizes = [op_constant_bytes(g, op) for op in g.operators]
    gains = {i: ((i * 7919) % 101 + 1) * sizes[i] // 64 for i in range(len(sizes))}  # mixed
    gains[3] = 0  # an op without a gain
    chosen, used = resident_ops(g, [pico], 768, WeightsIn.AUTO, gains)
    left = sram_left([pico], 768)
    assert left is not None and 0 < used <= left and used == sum(sizes[i] for i in chosen)
    assert 3 not in chosen and len(chosen) < len(sizes)  # partial: AD outgrows the Pico
    step = max(64, -(-left // KNAPSACK_CELLS))
    units = [-(-n // step) for n in sizes]
    best = max(
        sum(gains[i] for i in subset)
        for k in range(len(sizes) + 1)
        for subset in itertools.combinations(range(len(sizes)), k)
        if sum(units[i] for i in subset) <= left // step
    )
    assert sum(gains[i] for i in chosen) == best
    greedy, room = 0, left
    for i in sorted(gains, key=lambda i: -gains[i] / sizes[i]):
        if gains[i] and sizes[i] <= room:
            greedy, room = greedy + gains[i], room - sizes[i]
    assert best >= greedy


def test_the_exact_fill_beats_a_greedy_one_where_they_differ():
    """Three items, room for two small ones or the big one: by gain per byte the big one
    goes first and blocks both small ones, whose sum gains more."""
    assert most_gain([600 * 64, 500 * 64, 500 * 64], [700, 500, 500], 1000 * 64) == (1, 2)
    assert most_gain([64, 64], [5, 0], 64) == (0,)  # no gain: never taken
    assert most_gain([65], [9], 64) == ()  # rounded up, it does not fit
    assert most_gain([10], [9], 0) == ()


def test_plan_records_residency_and_skips_staging():
    c = compiled(need(AD), "qemu-m33")
    staged = c.staged[c.strategy]
    g = c.variants[c.strategy].graph
    assert staged.resident_bytes == constant_bytes(g)
    assert staged.resident_ops == tuple(range(len(g.operators)))
    assert not staged.buffers and any("resident in SRAM" in n for n in c.plan.notes)
    text = emit(c).files["model_data.c"]
    assert text.count("#define RIP_CONSTANT RIP_IN_SRAM") == len(g.operators)
    flash = compiled(need(AD), "qemu-m33", weights=WeightsIn.FLASH)
    assert flash.strategy not in flash.staged or not flash.staged[flash.strategy].resident_ops
    assert "RIP_IN_SRAM" not in emit(flash).files["model_data.c"]
    host = compiled(need(AD), "host")
    assert host.strategy not in host.staged
    # on the Pico 1 part of it: the ops chosen, and only those, are defined in SRAM
    part = compiled(need(AD), "qemu-armv6m")
    ops = part.staged[part.strategy].resident_ops
    assert 0 < len(ops) < len(part.variants[part.strategy].graph.operators)
    text = emit(part).files["model_data.c"]
    marked = re.findall(r"/\* op (\d+) \(TFLite operator \d+\): [A-Z_0-9]+, resident", text)
    assert tuple(int(i) for i in marked) == ops
    assert text.count("#define RIP_CONSTANT RIP_IN_SRAM") == len(ops)


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
@pytest.mark.parametrize("board", ["qemu-m33", "qemu-armv6m"])
def test_resident_firmware_reads_sram_and_gives_tflite_micros_checksum(board, tmp_path, capsys):
    """AD on the emulated cores: the filters of the ops marked resident (all of them timed
    as a Pico 2, those that fit a Pico 1) link into RAM (.data), the others stay in flash,
    and the run gives TFLite Micro's checksum in fewer estimated Pico cycles than from
    flash."""
    b = load_board(board)
    label = "pico2" if board == "qemu-m33" else "pico1"
    cycles, resident = {}, {}
    for weights in ("auto", "flash"):
        out = tmp_path / weights
        args = [str(need(AD)), "--board", board, "-o", str(out), "--run", "--json"]
        assert compile_main([*args, "--weights", weights]) == 0
        rep = json.loads(capsys.readouterr().out)
        assert rep["match"] is True, rep.get("checksum")
        cycles[weights] = rep[f"{label}_cycles"]
        text = (out / "model_data.c").read_text()
        ops = [int(i) for i in re.findall(r"/\* op (\d+) \(TFLite operator \d+\): ", text)]
        marked = {int(i) for i in re.findall(r"/\* op (\d+) [^*]*, resident in SRAM", text)}
        names = tuple(f"rip_op{i}_filter" for i in ops)
        found = symbol_placement(out / "model.elf", names)
        for i in ops:
            if f"rip_op{i}_filter" in found:
                address = int(found[f"rip_op{i}_filter"]["address"])
                assert (address >= int(b.ram_origin or 0)) == (i in marked), (weights, i)
        resident[weights] = marked
    assert not resident["flash"] and resident["auto"]
    assert (len(resident["auto"]) == 10) == (board == "qemu-m33")  # AD's ten ops
    assert cycles["auto"] < cycles["flash"]


def test_depthwise_layers_gain_their_rereads():
    """A depthwise layer rereads its filter and records every output row: one whose
    constants outgrow half the cache (the other half the kernels' code) is estimated to
    stall on every row, one within it on its first row alone (its compulsory misses)."""
    path = need(SHARED / "models" / "mcunet" / "mcunet-in0.tflite")
    g = read_model(path)
    cache = FlashCache.of(load_board("pico2"))
    assert cache is not None
    stalls = flash_stalls(g, cache, "cortex-m33")
    seen = set()
    for i, op in enumerate(g.operators):
        if op.kind != "DEPTHWISE_CONV_2D":
            continue
        nbytes = op_constant_bytes(g, op)
        once = cache.lines(nbytes) * cache.line_cycles
        rows = g.tensors[op.outputs[0]].hwc[0]
        big = nbytes > cache.cache_bytes // 2 and rows > 1
        assert (stalls[i] > once) == big, (i, nbytes, rows)
        seen.add(big)
    assert seen == {True, False}
