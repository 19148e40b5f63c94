"""The Pico SDK firmware on an emulated RP2040 (issue 23): ``rip-compile --board pico
--build --emulate`` and ``rip-verify --emulate``, run on rp2040js with the boot ROM in
``../shared/pico`` and read over the emulated UART0 and USB CDC.

What needs what: the refusals need nothing; the runner's own bounds and faults need Node.js
with npm (rp2040js comes from the npm registry by the lock file) and the boot ROM; the
shared models need those, the Pico SDK in ``../shared/pico`` and the Arm toolchain. Each
group skips saying what is missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from paths import REPO, SHARED, shared_path

from rip.boards import load_board
from rip.cli.compile import main as compile_main
from rip.cli.verify import main_verify
from rip.core.errors import FirmwareError, NoAnswerError, RipError
from rip.firmware.pico_project import MODEL_DIR
from rip.firmware.result import Result
from rip.firmware.rp2040_emulator import (
    BOOTROM_ENV,
    checked,
    cycle_bound,
    run_uf2,
    wall_bound,
)
from rip.firmware.uf2 import FLASH_BASE, bin_to_uf2

EXAMPLE = REPO / "examples" / "example-cnn.tflite"
PICO = load_board("pico")
NODE = shutil.which("node") and shutil.which("npm")
needs_node = pytest.mark.skipif(
    not NODE, reason="needs Node.js 18.3+ and npm (Debian: apt-get install nodejs npm)"
)
TOOLS = all(shutil.which(t) for t in ("arm-none-eabi-gcc", "cmake"))
needs_sdk = pytest.mark.skipif(
    not (NODE and TOOLS and (SHARED / "pico" / "pico-sdk" / "pico_sdk_init.cmake").is_file()),
    reason="needs node and npm, cmake, arm-none-eabi-gcc and ../shared/pico/pico-sdk",
)


def bootrom() -> Path:
    return shared_path("pico", "rp2040-bootrom-b1.bin")


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


# --- refusals, before anything is planned or built -------------------------------------------


@pytest.mark.parametrize(
    "board, words",
    [
        ("pico2", "nothing here emulates the RP2350 (pico2)"),
        ("qemu-m33", "qemu-m33 is not a Pico (--run runs it under QEMU)"),
        ("host", "host is not a Pico"),
    ],
)
def test_emulate_refuses_boards_it_cannot_run(board, words, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(BOOTROM_ENV, str(tmp_path / "unused.bin"))
    out = tmp_path / "out"
    code = compile_main([str(EXAMPLE), "--board", board, "-o", str(out), "--emulate"])
    assert code == 2
    assert words in one_line_error(capsys)
    assert not out.exists()


def test_emulate_without_a_boot_rom_says_where_to_get_it(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(BOOTROM_ENV, raising=False)
    out = tmp_path / "out"
    assert compile_main([str(EXAMPLE), "--board", "pico", "-o", str(out), "--emulate"]) == 5
    err = one_line_error(capsys)
    assert "--bootrom FILE or RIP_RP2040_BOOTROM" in err
    assert "raspberrypi/pico-bootrom-rp2040" in err and "does not ship" in err
    assert not out.exists()
    missing = tmp_path / "nowhere.bin"
    code = compile_main([str(EXAMPLE), "--board", "pico", "-o", str(out), "--emulate",
                         "--bootrom", str(missing)])  # fmt: skip
    assert code == 5 and f"--bootrom {missing}: no such file" in one_line_error(capsys)


def test_a_boot_rom_of_the_wrong_size_is_refused(tmp_path, capsys):
    rom = tmp_path / "rom.bin"
    rom.write_bytes(b"\0" * 4096)
    code = compile_main([str(EXAMPLE), "--board", "pico", "-o", str(tmp_path / "out"),
                         "--emulate", "--bootrom", str(rom)])  # fmt: skip
    assert code == 2 and "4,096 B, but the RP2040 boot ROM is 16,384 B" in one_line_error(capsys)


def test_emulate_without_node_says_what_to_install(tmp_path, capsys, monkeypatch):
    rom = tmp_path / "rom.bin"
    rom.write_bytes(b"\0" * 16384)
    monkeypatch.setenv("PATH", str(tmp_path))  # no node, no npm
    code = compile_main([str(EXAMPLE), "--board", "pico", "-o", str(tmp_path / "out"),
                         "--emulate", "--bootrom", str(rom)])  # fmt: skip
    assert code == 5 and "Node.js 18.3 or newer with npm" in one_line_error(capsys)


def test_rip_verify_emulate_refuses_a_pico2_project(tmp_path, capsys):
    (tmp_path / "expected.json").write_text(json.dumps({"model": "m", "board": "pico2"}))
    assert main_verify([str(tmp_path), "--emulate"]) == 2
    assert "nothing here emulates the RP2350" in one_line_error(capsys)


def test_the_bounds_scale_with_the_model():
    """Emulated cycles: a second of boot and twice the board file's inference estimate
    (rip-verify's rule for a real board); wall time: those cycles at a floor of the
    emulator's speed."""
    small, large = cycle_bound(PICO, 1_000_000), cycle_bound(PICO, 10_000_000)
    assert small == int(PICO.clock_hz * (1.0 + 2 * round(1e6 * 35 / PICO.clock_hz, 1)))
    assert large > 5 * small // 2
    assert wall_bound(large) > wall_bound(small) >= 30.0


def test_result_seconds_by_unit():
    def result(count: int, unit: str, clock: int | None = None) -> Result:
        return Result("m", "b", "rip", 0, 0, count, unit, clock_hz=clock)

    assert result(238_442, "us", 125_000_000).seconds == pytest.approx(0.238442)
    assert result(150_000_000, "cycles", 150_000_000).seconds == pytest.approx(1.0)
    assert result(5, "ns").seconds == pytest.approx(5e-9)
    assert result(100, "instructions").seconds is None
    assert result(100, "cycles").seconds is None


# --- the runner: bounds, faults and being stopped (no SDK needed) ----------------------------


def thumb_image(tmp_path: Path, halfwords: list[int], family: int = 0xE48BFF56) -> Path:
    """A UF2 whose flash starts with these Thumb instructions (core 0 starts there)."""
    code = b"".join(h.to_bytes(2, "little") for h in halfwords)
    uf2 = tmp_path / "image.uf2"
    uf2.write_bytes(bin_to_uf2(code + b"\0" * (256 - len(code)), family, FLASH_BASE))
    return uf2


B_SELF, BKPT_0, WFI = 0xE7FE, 0xBE00, 0xBF30


@needs_node
def test_a_firmware_that_never_prints_stops_at_the_cycle_bound(tmp_path):
    run = run_uf2(thumb_image(tmp_path, [B_SELF]), PICO, bootrom(), 3_000_000, 60.0)
    assert run.result is None and run.end is not None
    assert run.end["end"] == "cycle bound" and run.end["core_cycles"] >= 3_000_000
    with pytest.raises(NoAnswerError, match=r"no result line within 3,000,000 emulated cycles"):
        checked(run, PICO)


@needs_node
def test_the_wall_time_bound_holds(tmp_path):
    t0 = time.monotonic()
    run = run_uf2(thumb_image(tmp_path, [B_SELF]), PICO, bootrom(), 10**15, 2.0)
    assert run.result is None and time.monotonic() - t0 < 30
    assert run.end is None or run.end["end"] == "wall-time bound"


@needs_node
def test_a_fault_is_a_firmware_error(tmp_path):
    """The SDK's hard-fault handler is a BKPT: the runner stops there and says where."""
    run = run_uf2(thumb_image(tmp_path, [BKPT_0]), PICO, bootrom(), 10**9, 60.0)
    assert run.end is not None and run.end["end"] == "breakpoint"
    with pytest.raises(FirmwareError, match=r"stopped at BKPT #0, pc=0x1000000"):
        checked(run, PICO)


@needs_node
def test_a_core_asleep_for_ever_ends_the_run(tmp_path):
    run = run_uf2(thumb_image(tmp_path, [WFI, B_SELF]), PICO, bootrom(), 10**9, 60.0)
    assert run.end is not None and run.end["end"] == "asleep with nothing to wake it"


@needs_node
def test_an_rp2350_image_is_refused_in_one_line(tmp_path):
    image = thumb_image(tmp_path, [B_SELF], family=0xE48BFF59)
    with pytest.raises(RipError, match=r"no RP2040 block \(family 0xe48bff59\)"):
        run_uf2(image, PICO, bootrom(), 10**6, 60.0)


def _children(pid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(
                line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line
            )
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid):
            found.append(int(status.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").is_dir() and "zombie" not in Path(f"/proc/{pid}/status").read_text()


@needs_node
@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_runner_dies_with_its_caller(tmp_path, sig):
    """Ctrl-C or SIGTERM to rip while the emulator runs: the runner is killed with its
    process group, and rip exits."""
    image = thumb_image(tmp_path, [B_SELF])
    script = (
        "import sys; from pathlib import Path; from rip.boards import load_board; "
        "from rip.firmware.rp2040_emulator import run_uf2\n"
        "try:\n"
        f"    run_uf2(Path({str(image)!r}), load_board('pico'), Path({str(bootrom())!r}), "
        "10**15, 600.0)\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    runner = []
    while not runner and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        runner = _children(proc.pid)
    assert runner, "the runner never started"
    time.sleep(1.0)  # emulating by now
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == 130
    time.sleep(0.2)
    assert not any(_alive(pid) for pid in runner)


# --- the real firmware: shared models built with the Pico SDK --------------------------------

CMSIS_REFERENCE = SHARED / "reference" / "cmsis-nn-m33-instructions.json"


def listed_checksum(stem: str) -> int | None:
    """TFLite Micro's checksum of the model as the shared reference lists it."""
    if not CMSIS_REFERENCE.is_file():
        return None
    for m in json.loads(CMSIS_REFERENCE.read_text())["models"]:
        if m["model"] == stem:
            return int(m["checksum"], 16)
    return None


@pytest.fixture
def pico_env(monkeypatch):
    monkeypatch.setenv("PICO_SDK_PATH", str(SHARED / "pico" / "pico-sdk"))
    monkeypatch.setenv(BOOTROM_ENV, str(bootrom()))


# Small-ish shared models, one under fused, one streamed, one with state (SVDF): build +
# emulation a few tens of seconds each. (Under the default --max-overhead fused picks four
# chains on vww0, none on kws.) The streamed one reads its input's rows from flash through
# the row source API.
CI_PICO = [
    ("tinyml/mlperf-kws_ref_model", "rip", ()),
    ("tinyml/tflm-keyword_scrambled_8bit", "rip", ()),  # SVDF state, int16 in, int32 out
    ("mcunet/mcunet-vww0", "fused", ()),
    ("mcunet/mcunet-vww0", "fused", ("--stream-input",)),
    ("mcunet/mcunet-in0", "rip", ()),
    ("mcunet/person-det", "rip", ()),
]


@needs_sdk
@pytest.mark.parametrize(
    "name, strategy, extra", CI_PICO, ids=[" ".join((n, *e)) for n, _, e in CI_PICO]
)
def test_pico_firmware_on_rp2040js_equals_tflite_micro(
    name, strategy, extra, tmp_path, capsys, pico_env
):
    """The Pico SDK firmware, USB and UART stdio as a user builds it, on rp2040js: the
    checksum on UART0 and on USB CDC is TFLite Micro's."""
    path = shared_path("models", f"{name}.tflite")
    out = tmp_path / "out"
    code = compile_main([str(path), "--board", "pico", "--strategy", strategy, *extra,
                         "-o", str(out), "--build", "--emulate", "--json", "--quiet"])  # fmt: skip
    rep = json.loads(capsys.readouterr().out)
    assert code == 0, rep.get("result_line")
    assert rep["match"] is True and rep["checksum"] == rep["expected_checksum"]
    listed = listed_checksum(path.stem)
    if listed is not None:  # the measured TFLite Micro build's checksum, same input and CRC
        assert int(rep["expected_checksum"], 16) == listed
    emulation = rep["emulation"]
    assert emulation["serial"] == {"uart0": rep["checksum"], "usb_cdc": rep["checksum"]}
    assert rep["unit"] == "us" and rep["cycles"] > 0 and emulation["clock_hz"] == 125_000_000
    assert rep["inference_seconds"] == pytest.approx(rep["cycles"] / 1e6)
    assert emulation["emulated_cycles"] == round(rep["cycles"] * 125)
    line = rep["result_line"]
    assert f"strategy={strategy}" in line and "board=pico " in line
    stack = int(re.search(r"stack=(\d+)", line)[1])
    assert 0 < stack <= PICO.stack_limit_bytes
    print(f"{name} {strategy}: {rep['cycles']} us, {emulation['wall_seconds']} s emulation")


@needs_sdk
def test_a_broken_weight_on_rp2040js_is_a_mismatch(tmp_path, capsys, pico_env):
    """rip-verify --emulate builds the project and runs it: exit 0 as written; one byte
    of a weight array changed in model_data.c, exit 1. The model is the anomaly-detection
    autoencoder: 640 outputs and no softmax, so one weight shows in the output bytes."""
    path = shared_path("models", "tinyml", "mlperf-ad01_int8.tflite")
    out = tmp_path / "out"
    assert compile_main([str(path), "--board", "pico", "-o", str(out), "--quiet"]) == 0
    assert main_verify([str(out), "--emulate"]) == 0
    assert "match" in capsys.readouterr().out
    data = out / MODEL_DIR / "model_data.c"  # the model library's folder
    text = data.read_text()
    found = list(re.finditer(r"const int8_t (?:__attribute__\(\(aligned\(4\)\)\) )?"
                             r"rip_op\d+_filter\[\d+\] (?:RIP_CONSTANT )?= "
                             r"\{\s*(-?\d+)", text))  # fmt: skip
    assert found, "no weight array found in model_data.c"
    m = found[-1]  # the first weight of the last weighted op: its outputs are the model's
    flipped = 127 if int(m[1]) < 0 else -128
    data.write_text(text[: m.start(1)] + str(flipped) + text[m.end(1) :])
    assert main_verify([str(out), "--emulate"]) == 1
    assert "MISMATCH" in capsys.readouterr().out
