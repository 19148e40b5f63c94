"""The emulated boards end to end: generated firmware built with arm-none-eabi-gcc, run
under QEMU (qemu-m33: mps2-an505, qemu-armv6m: Cortex-M0+ code on mps2-an385), its result
line read through pyserial and compared with TFLite Micro's checksum.

Which shared models run here (CI) and which only in ``make bench-cost``:
- qemu-m33 under dual, tinyengine, rip and fused: the seven smallest shared models with weights
  (CI_M33 below), a few seconds each;
- qemu-armv6m: person-det, mlperf-kws_ref_model, mlperf-ad01 and tflm-micro_speech under
  rip;
- every other shared model with weights (the larger MCUNet models, mbv2, proxyless, the
  Arm model zoo ones), on both boards and under all three strategies: bench-cost only,
  which also checks every checksum.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from tflite_writer import movement_sample_model
from tflite_writer.builder import ModelBuilder

from rip.boards import load_board
from rip.cli.compile import main as compile_main
from rip.cli.verify import main_verify
from rip.codegen.emit import emit_model
from rip.codegen.reference import checksum, reference_outputs
from rip.compiler import Options, analyse
from rip.core.errors import EmulatedFitError, NoAnswerError
from rip.core.terms import Placer, Strategy
from rip.firmware.qemu_project import (
    build_qemu_project,
    macs,
    write_qemu_project,
)
from rip.firmware.qemu_run import calibrate, run_elf, run_on_qemu
from rip.firmware.result import parse_result_line

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"
REFERENCE = SHARED / "reference" / "cmsis-nn-m33-instructions.json"
TOOLS = shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")
pytestmark = pytest.mark.skipif(
    not TOOLS,
    reason="needs arm-none-eabi-gcc and qemu-system-arm (apt: gcc-arm-none-eabi "
    "libnewlib-arm-none-eabi qemu-system-arm)",
)

CI_M33 = [
    "tinyml/tflm-hello_world_int8",
    "tinyml/mlperf-ad01_int8",
    "tinyml/mlperf-str_ww_ref_model",
    "tinyml/tflm-micro_speech_quantized",
    "tinyml/mlperf-kws_ref_model",
    "tinyml/tflm-keyword_scrambled_8bit",  # SVDF: the persistent state, int16 in, int32 out
    "mcunet/person-det",
    "mcunet/mcunet-in0",
]
CI_ARMV6M = [
    "mcunet/person-det",
    "tinyml/mlperf-kws_ref_model",
    "tinyml/mlperf-ad01_int8",  # FULLY_CONNECTED only: the packed GEMV's ARMv6-M loop
    "tinyml/tflm-micro_speech_quantized",  # a one-channel depthwise run as a CONV_2D GEMV
    "tinyml/tflm-keyword_scrambled_8bit",  # int16 / int32 read and stored a byte at a time
]
PICO_OF = {"qemu-m33": "pico2", "qemu-armv6m": "pico"}


def shared_model(name: str) -> Path:
    path = SHARED / "models" / f"{name}.tflite"
    if not path.is_file():
        pytest.skip(f"{path} is not there (../shared beside the checkout)")
    return path


def reference_checksum(name: str) -> int | None:
    """The checksum the reference file lists for the model (TFLite Micro on the M33)."""
    if not REFERENCE.is_file():
        return None
    stem = name.split("/")[-1]
    for m in json.loads(REFERENCE.read_text())["models"]:
        if m["model"] == stem:
            return int(m["checksum"], 16)
    return None


def compile_and_run(name: str, board_name: str, strategy: str, out: Path):
    return run_model(shared_model(name), board_name, strategy, out)


def run_model(path: Path, board_name: str, strategy: str, out: Path):
    board = load_board(board_name)
    compiled = analyse(
        path,
        board,
        Options(
            strategy=Strategy(strategy),
            placer=Placer("milp"),
            time_limit=60.0,
            strategies=(Strategy(strategy),),
        ),
    )
    reference = checksum(reference_outputs(path, compiled.graph))
    graph, req = compiled.variant.graph, compiled.variant.req
    model = emit_model(graph, req, compiled.plan, strategy, compiled.problem.op_buffers)
    write_qemu_project(model, out, board, reference, model_macs=macs(graph))
    result = run_on_qemu(out, board)
    # The stack it went down to must fit the Pico with the same core (painted, startup.c).
    pico = load_board(PICO_OF[board_name])
    assert result.stack is not None and 0 < result.stack <= pico.stack_limit_bytes, result.line()
    return result, reference


@pytest.mark.parametrize("board", ["qemu-m33", "qemu-armv6m"])
def test_systick_calibration(board, tmp_path):
    """A loop of 2 x N instructions takes N x 2 / instructions_per_tick ticks, for two N:
    the board file's instructions per tick is exact (50 on the an505, 40 on the an385)."""
    b = load_board(board)
    for n in (500_000, 1_500_000):
        instructions, ticks = calibrate(b, tmp_path / str(n), n)
        assert instructions == 2 * n
        assert abs(ticks * b.instructions_per_tick - instructions) <= b.instructions_per_tick


@pytest.mark.parametrize("strategy", ["dual", "tinyengine", "rip", "fused"])
@pytest.mark.parametrize("name", CI_M33)
def test_m33_checksum_equals_tflite_micro(name, strategy, tmp_path):
    result, reference = compile_and_run(name, "qemu-m33", strategy, tmp_path)
    assert result.checksum == reference, result.line()
    listed = reference_checksum(name)
    if listed is not None:  # the same input and the same CRC as the measured TFLM build
        assert reference == listed
    assert result.unit == "instructions" and result.instructions > 0
    assert result.board == "qemu-m33" and result.strategy == strategy


@pytest.mark.parametrize("name", CI_ARMV6M)
def test_armv6m_checksum_equals_tflite_micro(name, tmp_path):
    result, reference = compile_and_run(name, "qemu-armv6m", "rip", tmp_path)
    assert result.checksum == reference, result.line()
    elf = tmp_path / "model.elf"
    # ARMv6-M code only: none of ARMv7-M's instructions the M3 would also run
    dis = subprocess.run(
        ["arm-none-eabi-objdump", "-d", str(elf)], capture_output=True, text=True, check=False
    ).stdout
    assert not re.search(r"\s(sdiv|udiv|cbn?z|smlad|umull|it[te]{0,3})\s", dis)


def _depthwise_chain(hw: int, c: int, layers, seed: int) -> bytes:
    """Depthwise layers (SAME padding) one after another over a square map of c channels:
    each layer's (stride, activation, a channel whose bias is too large for the three-product
    requantisation, so its group takes the exact arithmetic, or None[, kernel size, 3 if
    not given])."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = mb.activation((1, hw, hw, c), 0.05, 3)
    cur = x
    for i, (stride, act, big, *size) in enumerate(layers):
        k = size[0] if size else 3
        scales = [float(v) for v in rng.uniform(0.002, 0.02, c)]
        w = mb.constant_int8(
            rng.integers(-127, 128, size=(1, k, k, c)).astype(np.int8), scales, 0, 3
        )
        bias = rng.integers(-2000, 2000, size=c)
        if big is not None:
            bias[big] = 1_500_000
        b = mb.bias(bias, 0.05, scales)
        hw = (hw + stride - 1) // stride
        y = mb.activation((1, hw, hw, c), 0.05, -7 + i)
        mb.depthwise_conv2d(cur, w, b, y, padding="SAME", stride=stride, activation=act)
        cur = y
    mb.inputs([x])
    mb.outputs([cur])
    return mb.to_bytes()


def tiny_depthwise_model() -> bytes:
    """Three 3x3 depthwise layers over tiny maps of 10 channels, the shapes ARMv6-M's
    channel order gathers four channels at a time (two groups and two channels alone):
    6x6 to 3x3 at stride 2 (int8's range: the pair loop, then the odd column's single
    loop), 3x3 to 3x3 (RELU6's range; channel 5's bias too large for the three-product
    requantisation, so a group's channel takes the general path), 3x3 to 2x2 at stride 2."""
    return _depthwise_chain(6, 10, [(2, "NONE", None), (1, "RELU6", 5), (2, "NONE", None)], 7)


def mid_depthwise_model() -> bytes:
    """Four 3x3 depthwise layers of two channel groups over maps the Cortex-M33's group
    order widens whole at seven column pairs a row (rip_dwc_whole_pairs' wide layout):
    11x11 at stride 1 (int8's range: quads, a pair and a last pixel a row), again with
    RELU6 and channel 5's bias too large for the cheap arithmetic (a group exact, a group
    clamped), 11x11 to 6x6 at stride 2, then 6x6 at stride 1 (the narrow layout)."""
    layers = [(1, "NONE", None), (1, "RELU6", 5), (2, "NONE", None), (1, "NONE", None)]
    return _depthwise_chain(11, 8, layers, 9)


def mid_depthwise5_model() -> bytes:
    """Three 5x5 depthwise layers of two channel groups the Cortex-M33 widens whole at
    eight column pairs a row (the 5x5 wide run): 11x11 at stride 1 (15 rows, the wide
    tile full), again with RELU6 and channel 5's bias too large for the cheap arithmetic,
    then 11x11 to 6x6 at stride 2."""
    layers = [(1, "NONE", None, 5), (1, "RELU6", 5, 5), (2, "NONE", None, 5)]
    return _depthwise_chain(11, 8, layers, 10)


def pointwise_expansions_model() -> bytes:
    """Two pointwise layers of more channels out than taps in: 8 to 17 channels over 7x7
    (an odd last channel: the Cortex-M33's general triple loop; 49 pixels, 16 triples and
    a lone one), then 17 to 48 (an even count: the one-core loop of doubled triples,
    rip_rq_pairs3_sat2)."""
    rng = np.random.default_rng(11)
    mb = ModelBuilder()
    x = mb.activation((1, 7, 7, 8), 0.05, 3)
    cur, c_in = x, 8
    for i, c_out in enumerate((17, 48)):
        scales = [float(v) for v in rng.uniform(0.002, 0.02, c_out)]
        w = mb.constant_int8(
            rng.integers(-127, 128, size=(c_out, 1, 1, c_in)).astype(np.int8), scales, 0, 0
        )
        b = mb.bias(rng.integers(-4000, 4000, size=c_out), 0.05, scales)
        y = mb.activation((1, 7, 7, c_out), 0.05, 2 - i)
        mb.conv2d(cur, w, b, y, padding="VALID")
        cur, c_in = y, c_out
    mb.inputs([x])
    mb.outputs([cur])
    return mb.to_bytes()


@pytest.mark.parametrize("board", ["qemu-armv6m", "qemu-m33"])
@pytest.mark.parametrize(
    "build",
    [tiny_depthwise_model, mid_depthwise_model, mid_depthwise5_model, pointwise_expansions_model],
    ids=lambda f: f.__name__,
)
def test_small_models_equal_tflite_micro(board, build, tmp_path):
    path = tmp_path / "model.tflite"
    path.write_bytes(build())
    result, reference = run_model(path, board, "rip", tmp_path / "out")
    assert result.checksum == reference, result.line()


def test_compile_run_json_and_a_broken_weight(tmp_path, capsys):
    """rip-compile --run --json reports checksum, expected_checksum, match and
    instructions; one byte of a weight array changed in model_data.c makes rip-verify report a
    mismatch (exit 1). The model is the anomaly-detection autoencoder: 640 outputs and no
    softmax, so one weight shows in the output bytes."""
    path = shared_model("tinyml/mlperf-ad01_int8")
    out = tmp_path / "out"
    code = compile_main([str(path), "--board", "qemu-m33", "-o", str(out), "--run", "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0
    assert rep["match"] is True and rep["checksum"] == rep["expected_checksum"]
    assert rep["instructions"] > 0
    assert code == 0 and main_verify([str(out)]) == 0
    text = (out / "model_data.c").read_text()
    # the first weight of the last weighted op: its outputs are the model's
    # (packed filters, which the fast kernels read a word pair at a time, are 4-byte aligned)
    found = list(
        re.finditer(
            r"const int8_t (?:__attribute__\(\(aligned\(4\)\)\) )?rip_op\d+_filter\[\d+\] "
            r"(?:RIP_CONSTANT )?= \{\s*(-?\d+)",
            text,
        )
    )
    assert found, "no weight array found in model_data.c"
    m = found[-1]
    flipped = 127 if int(m[1]) < 0 else -128
    broken = text[: m.start(1)] + str(flipped) + text[m.end(1) :]
    (out / "model_data.c").write_text(broken)
    capsys.readouterr()
    assert main_verify([str(out)]) == 1
    assert "MISMATCH" in capsys.readouterr().out


def test_a_board_that_never_answers(tmp_path, capsys):
    """A firmware that never prints: exit 2 with a clear message, and QEMU stopped."""
    path = shared_model("tinyml/tflm-hello_world_int8")
    out = tmp_path / "out"
    assert compile_main([str(path), "--board", "qemu-m33", "-o", str(out), "--quiet"]) == 0
    main_c = (out / "main.c").read_text()
    (out / "main.c").write_text(main_c.replace("    rip_uart_init();", "    for (;;) {\n    }"))
    with pytest.raises(NoAnswerError, match="printed no result line within 2 s"):
        run_on_qemu(out, timeout=2.0)
    capsys.readouterr()
    assert main_verify([str(out), "--timeout", "2"]) == 2
    assert "no result line from QEMU mps2-an505 within 2 s" in capsys.readouterr().err


def test_a_model_too_big_for_the_machine_is_refused(tmp_path):
    path = shared_model("tinyml/mlperf-kws_ref_model")
    board = replace(load_board("qemu-m33"), code_bytes=16384)
    compiled = analyse(
        path, board, Options(Strategy.RIP, Placer("firstfit"), 10.0, strategies=(Strategy.RIP,))
    )
    model = emit_model(compiled.graph, compiled.variants["rip"].req, compiled.plans["rip"], "rip")
    write_qemu_project(model, tmp_path, board, None)
    with pytest.raises(EmulatedFitError, match=r"does not fit qemu-m33: the code and weights"):
        build_qemu_project(tmp_path, board)


def test_profiling_build_marks_every_op(tmp_path):
    """The profiling build's per-op figures add up to the whole inference (the marks cost
    a few instructions each) and the checksum is unchanged."""
    path = shared_model("tinyml/mlperf-kws_ref_model")
    board = load_board("qemu-m33")
    compiled = analyse(
        path, board, Options(Strategy.RIP, Placer("milp"), 60.0, strategies=(Strategy.RIP,))
    )
    model = emit_model(compiled.graph, compiled.variants["rip"].req, compiled.plans["rip"], "rip")
    marks = write_qemu_project(model, tmp_path, board, None, profile=True)
    assert len(marks) >= len(model.ops)
    run = run_elf(build_qemu_project(tmp_path, board), board, 60.0)
    figures = [int(x.split("instructions=")[1]) for x in run.lines if "RIP-PROFILE" in x]
    assert len(figures) == len(marks)
    result = parse_result_line(run.lines[-1])
    assert result is not None and abs(sum(figures) - result.instructions) <= 50 * len(marks)


def test_m33_issue14_operators(tmp_path):
    """Issue 14's data-movement, resampling and normalization kernels on the Cortex-M33
    (tflite_writer.movement_sample_model under rip): TFLite Micro's checksum."""
    path = tmp_path / "movement.tflite"
    path.write_bytes(movement_sample_model())
    board = load_board("qemu-m33")
    compiled = analyse(
        path, board, Options(Strategy.RIP, Placer("milp"), 60.0, strategies=(Strategy.RIP,))
    )
    reference = checksum(reference_outputs(path, compiled.graph))
    model = emit_model(compiled.graph, compiled.variants["rip"].req, compiled.plans["rip"], "rip")
    out = tmp_path / "out"
    write_qemu_project(model, out, board, reference, model_macs=macs(compiled.graph))
    result = run_on_qemu(out, board)
    assert result.checksum == reference, result.line()
