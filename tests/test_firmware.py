"""Pico SDK projects: the files and their shape, main.c's result line, a compile of the
whole project with arm-none-eabi-gcc for both cores against stub SDK headers, the
PICO_SDK_PATH handling (our pico_sdk_import.cmake and --build), and rip-flash."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import cbuild as cb
import pytest
from paths import picotool
from tflite_writer import example_model

from rip.allocator.planning.parallel import plan_model
from rip.allocator.planning.requirements import requirements
from rip.boards import load_board
from rip.cli.flash import main as flash_main
from rip.codegen.emit import EmittedModel, emit_model
from rip.core.errors import RipError
from rip.firmware import flash as flash_mod
from rip.firmware.flash import FlashError, copy_to_drive, find_boot_drives, find_uf2
from rip.firmware.host_project import BuildError, build_host, run_host, write_host_project
from rip.firmware.pico_project import (
    PicoSdkMissing,
    app_name,
    build_pico_project,
    kernel_sources,
    write_pico_project,
)
from rip.firmware.pico_sdk import sdk_version
from rip.firmware.result import parse_result_line
from rip.firmware.uf2 import FLASH_BASE, bin_to_uf2, parse_uf2
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

CHECKSUM = 0x0BADCAFE
ARM_GCC = cb.ARM_GCC
CMAKE = shutil.which("cmake")
BOARDS = {"pico": "cortex-m0plus", "pico2": "cortex-m33"}


@pytest.fixture(scope="module")
def emitted() -> EmittedModel:
    graph = rewrite(read_model(example_model(0), name="example"))
    req = requirements(graph)
    plan = plan_model(graph, req, "rip")
    return emit_model(graph, req, plan, "rip")


@pytest.fixture(scope="module")
def projects(emitted, tmp_path_factory) -> dict[str, Path]:
    out = {}
    for board in BOARDS:
        out[board] = tmp_path_factory.mktemp(board)
        write_pico_project(emitted, out[board], load_board(board), CHECKSUM)
    return out


def position(text: str, needle: str) -> int:
    index = text.find(needle)
    assert index >= 0, f"{needle!r} missing"
    return index


@pytest.mark.parametrize("board", BOARDS)
def test_project_files(projects, board):
    out = projects[board]
    for name in (
        "CMakeLists.txt",
        "pico_sdk_import.cmake",
        "main.c",
        "model/CMakeLists.txt",
        "model/model.c",
        "model/model.h",
        "model/model_data.c",
        "model/model_data.h",
        "README.md",
        "expected.json",
    ):
        assert (out / name).is_file(), name
    kernels = {p.name for p in (out / "model" / "kernels").iterdir()}
    assert set(kernel_sources()) <= kernels and "rip_crc32.h" in kernels


@pytest.mark.parametrize("board", BOARDS)
def test_cmakelists_has_the_shape_pico_users_know(projects, board, emitted):
    text = (projects[board] / "CMakeLists.txt").read_text()
    app = app_name(emitted.name)
    b = load_board(board)
    target = "rip_app"  # the same in every project: the SDK's objects serve every model
    order = [
        "cmake_minimum_required(VERSION 3.13)",
        f"set(PICO_BOARD {b.pico_board} ",
        f"set(PICO_PLATFORM {b.pico_platform} ",
        "include(pico_sdk_import.cmake)",
        f"project({app} C CXX ASM)",
        "pico_sdk_init()",
        "add_subdirectory(model)",
        f"add_executable({target}",
        f"set_target_properties({target} PROPERTIES OUTPUT_NAME {app})",
        f"target_link_libraries({target}",
        f"pico_enable_stdio_usb({target} 1)",
        f"pico_enable_stdio_uart({target} 1)",
        f"pico_add_extra_outputs({target})",
    ]
    places = [position(text, needle) for needle in order]
    assert places == sorted(places)
    link = text[position(text, f"target_link_libraries({target}") :]
    link = link[: link.index(")")]
    assert "pico_stdlib" in link and "rip_model" in link
    # nothing that differs between models reaches the SDK's compile definitions
    assert "pico_set_program_name" not in text and "pico_set_program_description" not in text
    lib_text = (projects[board] / "model" / "CMakeLists.txt").read_text()
    library = lib_text[position(lib_text, "add_library(rip_model STATIC") :]
    library = library[: library.index(")")]
    for source in ["model.c", "model_data.c", *(f"kernels/{k}" for k in kernel_sources())]:
        assert source in library
    code = "\n".join(line for line in lib_text.splitlines() if not line.startswith("#"))
    assert "pico_sdk_init" not in code and "project(" not in code


def test_app_name_is_a_c_identifier():
    assert app_name("mcunet-in3") == "mcunet_in3"
    assert app_name("3net") == "m_3net"
    assert app_name("rip_model") == "rip_model_app"  # never the library's own name


@pytest.mark.parametrize("board", BOARDS)
def test_expected_json(projects, board, emitted):
    data = json.loads((projects[board] / "expected.json").read_text())
    assert data["board"] == board and data["model"] == emitted.name
    assert data["strategy"] == "rip" and data["arena_bytes"] == emitted.arena_bytes
    assert data["checksum"] == f"0x{CHECKSUM:08x}"
    # the result line's cycles= is microseconds on the RP2040, said where it is read
    assert data["cycles_unit"] == {"pico": "us", "pico2": "cycles"}[board]
    readme = (projects[board] / "README.md").read_text()
    assert ("**microseconds** of one inference, not cycles" in readme) == (board == "pico")


def result_format(main_c: str) -> str:
    """The printf format of main.c's result line."""
    m = re.search(r'printf\("(RIP-RESULT [^"]*)\\n"', main_c)
    assert m, "no RIP-RESULT printf"
    return m[1]


@pytest.mark.parametrize("board, unit", [("pico", "us"), ("pico2", "cycles")])
def test_main_prints_the_shared_result_line(projects, board, unit):
    """main.c's printf, filled in the way printf would, parses as rip.firmware.result's line."""
    fmt = result_format((projects[board] / "main.c").read_text())
    py = fmt.replace("%llu", "%d").replace("%lu", "%d").replace("%08lx", "%08x")
    line = py.replace("%u", "%d") % ("example", "rip", 16384, CHECKSUM, 99, 125000000, 640)
    result = parse_result_line(line)
    assert result is not None, line
    assert (result.board, result.unit, result.checksum, result.cycles, result.stack) == (
        board,
        unit,
        CHECKSUM,
        99,
        640,
    )
    assert result.clock_hz == 125000000  # the clock the figure was taken at


@pytest.mark.parametrize("board", BOARDS)
def test_main_runs_from_a_fresh_input_every_second(projects, board):
    text = (projects[board] / "main.c").read_text()
    loop = text[position(text, "for (;;)") :]
    # input restored, stack painted, then the timed run, then the line, then a second's wait
    steps = [
        "rip_model_load_default_input();",
        "stack_paint();",
        "rip_model_invoke();",
        "stack_high_water_bytes();",
        "RIP-RESULT",
        "sleep_ms(1000);",
    ]
    places = [position(loop, step) for step in steps]
    assert places == sorted(places)
    assert "__StackBottom" in text and "__StackTop" in text and "0xA5A5A5A5u" in text
    if board == "pico2":
        assert "dwt_cyccnt" in text and "time_us_64" not in text
    else:
        assert "time_us_64()" in text and "m33" not in text


def test_readme_says_how_to_build_flash_and_verify(projects, emitted):
    text = (projects["pico2"] / "README.md").read_text()
    for needle in (
        "PICO_SDK_PATH",
        "cmake -S . -B build",
        "rip-flash",
        "rip-verify",
        f"0x{CHECKSUM:08x}",
        "RP2350",
        f"{app_name(emitted.name)}.uf2",
    ):
        assert needle in text


def test_no_reference_checksum(emitted, tmp_path):
    write_pico_project(emitted, tmp_path, load_board("pico"), None)
    assert json.loads((tmp_path / "expected.json").read_text())["checksum"] is None
    assert "No reference value" in (tmp_path / "README.md").read_text()


def test_host_board_is_refused(emitted, tmp_path):
    with pytest.raises(RipError, match="not a Pico board"):
        write_pico_project(emitted, tmp_path, load_board("host"), None)


# --- compiling the generated C without the SDK -------------------------------------------

STUB_STDLIB = """\
/* The few Pico SDK functions main.c uses, with the SDK's signatures. */
#include <stdbool.h>
#include <stdint.h>
bool stdio_init_all(void);
void sleep_ms(uint32_t ms);
uint64_t time_us_64(void);
"""
STUB_M33 = """\
/* hardware/structs/m33.h, reduced to the DWT and DCB registers main.c touches. */
#include <stdint.h>
typedef struct {
    volatile uint32_t dwt_ctrl;
    volatile uint32_t dwt_cyccnt;
    volatile uint32_t demcr;
} m33_hw_t;
#define m33_hw ((m33_hw_t *)0xe0000000u)
#define M33_DEMCR_TRCENA_BITS 0x01000000u
#define M33_DWT_CTRL_CYCCNTENA_BITS 0x00000001u
"""
STUB_CLOCKS = """\
/* hardware/clocks.h, reduced to clock_get_hz. */
#include <stdint.h>
enum clock_index { clk_gpout0 = 0, clk_ref = 4, clk_sys = 5 };
typedef enum clock_index clock_handle_t;
uint32_t clock_get_hz(clock_handle_t clock);
"""
STUB_BINARY_INFO = """\
/* pico/binary_info.h, reduced to bi_decl: a declaration that keeps `bi_decl(...);` legal C. */
#define bi_decl(_decl) extern const char *rip_stub_binary_info
"""
STUB_IMPL = """\
#include <stdbool.h>
#include <stdint.h>
#include "hardware/clocks.h"
uint32_t clock_get_hz(clock_handle_t clock) { (void)clock; return 125000000u; }
bool stdio_init_all(void) { return true; }
void sleep_ms(uint32_t ms) { (void)ms; }
uint64_t time_us_64(void) { return 0; }
"""


def stub_sdk(root: Path) -> Path:
    (root / "pico").mkdir(parents=True, exist_ok=True)
    (root / "hardware" / "structs").mkdir(parents=True, exist_ok=True)
    (root / "pico" / "stdlib.h").write_text(STUB_STDLIB)
    (root / "hardware" / "structs" / "m33.h").write_text(STUB_M33)
    (root / "hardware" / "clocks.h").write_text(STUB_CLOCKS)
    (root / "pico" / "binary_info.h").write_text(STUB_BINARY_INFO)
    (root / "stub_sdk.c").write_text(STUB_IMPL)
    return root


def arm_gcc(cpu: str, *args: str) -> None:
    """The SDK's C dialect (C11), warnings as errors (tests/cbuild.py)."""
    cb.arm_gcc(cpu, *args, std="-std=c11")


@pytest.mark.skipif(ARM_GCC is None, reason="arm-none-eabi-gcc is not installed")
@pytest.mark.parametrize("board", BOARDS)
def test_project_compiles_and_links_for_the_core(projects, board, tmp_path):
    """main.c, model.c and every kernel compile warning-free for the board's core; linked
    (newlib, stub SDK functions, the SDK's stack symbols) nothing is left undefined."""
    cpu = BOARDS[board]
    out = projects[board]
    stubs = stub_sdk(tmp_path / "stubs")
    lib = out / "model"
    sources = [out / "main.c", lib / "model.c", lib / "model_data.c",
               *sorted((lib / "kernels").glob("*.c"))]  # fmt: skip
    objects = []
    for source in sources:
        obj = tmp_path / f"{source.stem}.o"
        arm_gcc(cpu, f"-I{stubs}", f"-I{lib}", f"-I{lib / 'kernels'}", "-c", str(source),
                "-o", str(obj))  # fmt: skip
        objects.append(str(obj))
    elf = tmp_path / "app.elf"
    arm_gcc(
        cpu,
        "--specs=nosys.specs",
        "-Wl,--defsym=__StackTop=0x20042000",
        "-Wl,--defsym=__StackBottom=0x20041800",
        *objects,
        str(stubs / "stub_sdk.c"),
        "-o",
        str(elf),
    )
    dis = cb.disassemble(tmp_path / "rip_conv2d.o")
    if board == "pico2" and dis is not None:  # the kernels chose their DSP path by themselves
        assert "smlad" in dis


# --- PICO_SDK_PATH --------------------------------------------------------------------------


def configure(
    out: Path, build: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess:
    assert CMAKE is not None
    return subprocess.run(
        [CMAKE, "-S", str(out), "-B", str(build), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


@pytest.mark.skipif(CMAKE is None, reason="cmake is not installed")
def test_sdk_import_without_pico_sdk_path(projects, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PICO_SDK_PATH"}
    proc = configure(projects["pico2"], tmp_path / "b1", env)
    assert proc.returncode != 0
    assert "Raspberry Pi Pico SDK was not found: set PICO_SDK_PATH" in proc.stderr
    proc = configure(projects["pico2"], tmp_path / "b2", dict(env, PICO_SDK_PATH=str(tmp_path)))
    assert proc.returncode != 0 and "no pico_sdk_init.cmake" in proc.stderr


FAKE_SDK = """\
# A stand-in Pico SDK that records the calls the project makes. FAKE_NO_TINYUSB: as an SDK
# whose lib/tinyusb is empty, it defines no pico_stdio_usb.
if (DEFINED PROJECT_NAME)
    message(FATAL_ERROR "pico_sdk_init.cmake included after project()")
endif ()
function(pico_sdk_init)
    message(STATUS "FAKE pico_sdk_init board=${PICO_BOARD} platform=${PICO_PLATFORM}")
    add_library(pico_stdlib INTERFACE)
    if (NOT FAKE_NO_TINYUSB)
        add_library(pico_stdio_usb INTERFACE)
    endif ()
endfunction()
foreach (f pico_enable_stdio_usb pico_enable_stdio_uart pico_add_extra_outputs
         pico_set_program_name pico_set_program_description)
    cmake_language(EVAL CODE "
        function(${f} target)
            if (NOT TARGET \\${target})
                message(FATAL_ERROR \\"${f}: no target \\${target}\\")
            endif ()
            message(STATUS \\"FAKE ${f} \\${target} \\${ARGN}\\")
        endfunction()")
endforeach ()
"""


def fake_sdk(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pico_sdk_init.cmake").write_text(FAKE_SDK)
    return root


def fake_calls(proc: subprocess.CompletedProcess) -> list[str]:
    return [line.split("FAKE ", 1)[1] for line in proc.stdout.splitlines() if "FAKE " in line]


NEED_CC = pytest.mark.skipif(
    CMAKE is None or shutil.which("cc") is None, reason="needs cmake and cc"
)


@NEED_CC
def test_cmakelists_configures_against_a_stand_in_sdk(projects, tmp_path):
    """Our pico_sdk_import.cmake finds the SDK from the environment and includes it before
    project(); every SDK function is called on a target that exists; the example
    application's target is rip_app, and its stdio is USB and UART by default."""
    sdk = fake_sdk(tmp_path / "sdk")
    proc = configure(projects["pico"], tmp_path / "build", dict(os.environ, PICO_SDK_PATH=str(sdk)))
    assert proc.returncode == 0, proc.stderr
    assert fake_calls(proc) == [
        "pico_sdk_init board=pico platform=rp2040",
        "pico_enable_stdio_usb rip_app 1",
        "pico_enable_stdio_uart rip_app 1",
        "pico_add_extra_outputs rip_app ",
    ]


@NEED_CC
@pytest.mark.parametrize(
    "stdio, usb, uart", [("usb", "1", "0"), ("uart", "0", "1"), ("both", "1", "1")]
)
def test_rip_stdio_chooses_the_sdk_calls(projects, tmp_path, stdio, usb, uart):
    sdk = fake_sdk(tmp_path / "sdk")
    env = dict(os.environ, PICO_SDK_PATH=str(sdk))
    proc = configure(projects["pico"], tmp_path / "build", env, f"-DRIP_STDIO={stdio}")
    assert proc.returncode == 0, proc.stderr
    calls = fake_calls(proc)
    assert f"pico_enable_stdio_usb rip_app {usb}" in calls
    assert f"pico_enable_stdio_uart rip_app {uart}" in calls


@NEED_CC
def test_a_hand_build_without_tinyusb_stops_and_says_why(projects, tmp_path):
    """The SDK alone builds a firmware with no USB serial when lib/tinyusb is empty; the
    project's configure stops instead, naming TinyUSB and the fix, unless RIP_STDIO=uart."""
    sdk = fake_sdk(tmp_path / "sdk")
    env = dict(os.environ, PICO_SDK_PATH=str(sdk))
    for stdio in ("both", "usb"):
        proc = configure(projects["pico"], tmp_path / f"b-{stdio}", env,
                         "-DFAKE_NO_TINYUSB=1", f"-DRIP_STDIO={stdio}")  # fmt: skip
        assert proc.returncode != 0
        words = " ".join(proc.stderr.split())
        assert "has no TinyUSB" in words and "git submodule update --init lib/tinyusb" in words
    proc = configure(projects["pico"], tmp_path / "b-uart", env, "-DFAKE_NO_TINYUSB=1",
                     "-DRIP_STDIO=uart")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "pico_enable_stdio_usb rip_app 0" in fake_calls(proc)
    proc = configure(projects["pico"], tmp_path / "b-bad", env, "-DRIP_STDIO=serial")
    assert proc.returncode != 0 and "give usb, uart or both" in proc.stderr


def test_build_without_pico_sdk_path_is_one_line(projects, monkeypatch):
    monkeypatch.delenv("PICO_SDK_PATH", raising=False)
    with pytest.raises(PicoSdkMissing) as info:
        build_pico_project(projects["pico2"], load_board("pico2"))
    message = str(info.value)
    assert "PICO_SDK_PATH is not set" in message and "\n" not in message
    assert "export PICO_SDK_PATH=" in message
    assert info.value.exit_code != 0


def test_build_with_a_wrong_pico_sdk_path(projects, monkeypatch, tmp_path):
    monkeypatch.setenv("PICO_SDK_PATH", str(tmp_path))
    with pytest.raises(PicoSdkMissing, match=r"no pico_sdk_init\.cmake"):
        build_pico_project(projects["pico2"], load_board("pico2"))


def real_sdk() -> Path | None:
    """$PICO_SDK_PATH when it names an SDK, else ../shared/pico's (CI keeps it beside the
    checkout); None without one or without the Arm toolchain."""
    shared = Path(__file__).resolve().parents[2] / "shared" / "pico" / "pico-sdk"
    for path in (os.environ.get("PICO_SDK_PATH"), shared):
        if path and (Path(path) / "pico_sdk_init.cmake").is_file() and ARM_GCC is not None:
            return Path(path)
    return None


@pytest.mark.skipif(
    real_sdk() is None, reason="no Pico SDK ($PICO_SDK_PATH or ../shared/pico/pico-sdk)"
)
@pytest.mark.parametrize("board", BOARDS)
def test_build_with_the_pico_sdk(emitted, tmp_path, board, monkeypatch):
    """With a real SDK: ELF, BIN and UF2 (ours when picotool is absent); the arena (the
    kernels' scratch inside it) is a .bss symbol in SRAM."""
    monkeypatch.setenv("PICO_SDK_PATH", str(real_sdk()))
    b = load_board(board)
    write_pico_project(emitted, tmp_path, b, CHECKSUM)
    info = build_pico_project(tmp_path, b)
    for key in ("elf", "bin", "uf2"):
        assert Path(info[key]).is_file()
    blocks = parse_uf2(Path(info["uf2"]).read_bytes())
    assert blocks[-1].family == b.uf2_family
    image = Path(info["bin"]).read_bytes()
    if info["uf2_writer"] == "rip":
        assert Path(info["uf2"]).read_bytes() == bin_to_uf2(
            image, b.uf2_family, FLASH_BASE, b.uf2_errata_family
        )
    arena = info["symbols"]["rip_arena"]
    assert arena["type"] in "bB" and arena["bytes"] >= emitted.arena_bytes
    assert 0x20000000 <= arena["address"] < 0x20000000 + b.sram_bytes
    assert info["bss_bytes"] >= emitted.arena_bytes
    tool = picotool()
    if tool is not None:  # Raspberry Pi's own reading of the image (no RP2350 emulator here)
        shown = subprocess.run([tool, "info", "-a", info["uf2"]], capture_output=True,
                               text=True, check=True).stdout  # fmt: skip
        fields = dict(re.findall(r"^ ([a-z_ ]+):\s+(.+)$", shown, re.MULTILINE))
        assert fields["sdk version"] == sdk_version(real_sdk())  # type: ignore[arg-type]
        assert fields["pico_board"] == b.pico_board and fields["name"] == "example"
        assert "USB stdin / stdout" in shown  # the SDK's default stdio, with TinyUSB
        if board == "pico2":  # an RP2350 image carries an IMAGE_DEF block
            assert fields["target chip"] == "RP2350" and fields["image type"] == "ARM Secure"


# --- rip-flash -----------------------------------------------------------------------------


@pytest.fixture
def built(tmp_path) -> Path:
    """A project folder with a UF2 for the RP2350 in build/."""
    out = tmp_path / "out"
    (out / "build").mkdir(parents=True)
    (out / "expected.json").write_text(json.dumps({"model": "example"}))
    uf2 = bin_to_uf2(b"\x01" * 700, 0xE48BFF59, FLASH_BASE, 0xE48BFF57)
    (out / "build" / "example.uf2").write_bytes(uf2)
    return out


def boot_drive(root: Path, label: str) -> Path:
    drive = root / label
    drive.mkdir(parents=True)
    board_id = "RPI-RP2" if label == "RPI-RP2" else "RP2350"
    (drive / "INFO_UF2.TXT").write_text(f"UF2 Bootloader v1.0\nModel: x\nBoard-ID: {board_id}\n")
    return drive


def no_picotool(monkeypatch) -> None:
    real = shutil.which
    monkeypatch.setattr(flash_mod.shutil, "which", lambda n: None if n == "picotool" else real(n))


def test_find_uf2(built):
    assert find_uf2(built).name == "example.uf2"
    assert find_uf2(built / "build" / "example.uf2").name == "example.uf2"
    (built / "build" / "other.uf2").write_bytes(b"")
    assert find_uf2(built).name == "example.uf2"  # named after expected.json's model
    empty = built / "empty"
    empty.mkdir()
    with pytest.raises(FlashError, match=r"no \.uf2"):
        find_uf2(empty)
    with pytest.raises(FlashError, match="no such file"):
        find_uf2(built / "missing")


def test_copy_to_a_drive_given_on_the_command_line(built, tmp_path, capsys):
    drive = boot_drive(tmp_path / "media" / "user", "RP2350")
    assert flash_main([str(built), "--drive", str(drive)]) == 0
    assert (drive / "example.uf2").read_bytes() == (built / "build" / "example.uf2").read_bytes()
    assert "copied example.uf2" in capsys.readouterr().out


def test_drive_for_the_other_chip_is_refused(built, tmp_path):
    drive = boot_drive(tmp_path, "RPI-RP2")
    with pytest.raises(FlashError, match=r"is for the RP2350 but .* RP2040"):
        copy_to_drive(find_uf2(built), drive)


def test_drives_are_found_by_label_and_info_file(tmp_path):
    boot_drive(tmp_path / "media" / "ann", "RP2350")
    (tmp_path / "media" / "bob" / "RPI-RP2").mkdir(parents=True)  # no INFO_UF2.TXT: not one
    found = find_boot_drives(
        [str(tmp_path / "media" / "*" / label) for label in ("RPI-RP2", "RP2350")]
    )
    assert found == [tmp_path / "media" / "ann" / "RP2350"]


def test_found_drive_is_used_without_picotool(built, tmp_path, monkeypatch, capsys):
    drive = boot_drive(tmp_path, "RP2350")
    no_picotool(monkeypatch)
    monkeypatch.setattr(flash_mod, "find_boot_drives", lambda: [drive])
    assert flash_main([str(built)]) == 0
    assert (drive / "example.uf2").is_file()


def test_no_drive_no_picotool_is_one_line_exit_2(built, monkeypatch, capsys):
    no_picotool(monkeypatch)
    monkeypatch.setattr(flash_mod, "find_boot_drives", lambda: [])
    assert flash_main([str(built)]) == 2
    err = capsys.readouterr().err
    assert "BOOTSEL" in err and "--drive" in err and err.count("\n") == 1


def fake_picotool(bin_dir: Path, log: Path, status: int) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "picotool"
    script.write_text(
        f'#!/bin/sh\necho "$@" >> {log}\n'
        f'[ {status} -eq 0 ] || echo "No accessible RP2040/RP2350 devices in BOOTSEL mode were '
        f'found." >&2\nexit {status}\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.mark.skipif(os.name == "nt", reason="a shell script stands in for picotool")
def test_picotool_load_when_installed(built, tmp_path, monkeypatch, capsys):
    log = tmp_path / "picotool.log"
    fake_picotool(tmp_path / "bin", log, 0)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert flash_main([str(built)]) == 0
    uf2 = built / "build" / "example.uf2"
    assert log.read_text().split() == ["load", "-x", str(uf2), "-f"]
    assert "picotool" in capsys.readouterr().out


@pytest.mark.skipif(os.name == "nt", reason="a shell script stands in for picotool")
def test_picotool_failure_falls_back_to_a_drive_or_says_why(built, tmp_path, monkeypatch, capsys):
    fake_picotool(tmp_path / "bin", tmp_path / "log", 1)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(flash_mod, "find_boot_drives", lambda: [])
    assert flash_main([str(built)]) == 2
    assert "No accessible RP2040/RP2350 devices" in capsys.readouterr().err
    drive = boot_drive(tmp_path, "RP2350")
    monkeypatch.setattr(flash_mod, "find_boot_drives", lambda: [drive])
    assert flash_main([str(built)]) == 0
    assert (drive / "example.uf2").is_file()


# --- main.c running on an emulated Cortex-M33 ----------------------------------------------

QEMU = cb.QEMU
# A bare-metal stand-in for the SDK on QEMU's mps2-an505 (a Cortex-M33): vector table and
# C start-up, CMSDK UART0 as stdout, the DWT/DCB registers at their architectural addresses,
# and a sleep_ms that ends the run through semihosting after the third result line.
HARNESS_C = """\
#include <stdbool.h>
#include <stdint.h>
#include "hardware/clocks.h"
extern int main(void);
extern uint32_t __data_load, __data_start, __data_end, __bss_start, __bss_end, __StackTop;
#define UART0 ((volatile uint32_t *)0x50200000u)
static void semihost_exit(void) {
    register uint32_t r0 __asm("r0") = 0x18;    /* SYS_EXIT */
    register uint32_t r1 __asm("r1") = 0x20026; /* ADP_Stopped_ApplicationExit */
    __asm volatile("bkpt 0xab" : : "r"(r0), "r"(r1) : "memory");
    for (;;) {
    }
}
void reset_handler(void) {
    uint32_t *src = &__data_load, *dst = &__data_start;
    while (dst < &__data_end) {
        *dst++ = *src++;
    }
    for (dst = &__bss_start; dst < &__bss_end;) {
        *dst++ = 0;
    }
    main();
    semihost_exit();
}
static void fault_handler(void) { semihost_exit(); }
__attribute__((section(".vectors"), used)) static const void *const vectors[16] = {
    &__StackTop, reset_handler, fault_handler, fault_handler, fault_handler, fault_handler,
    fault_handler, 0, 0, 0, 0, fault_handler, fault_handler, 0, fault_handler, fault_handler};
bool stdio_init_all(void) {
    UART0[4] = 16; /* BAUDDIV */
    UART0[2] = 1;  /* CTRL: TX enable */
    return true;
}
static unsigned sleeps;
void sleep_ms(uint32_t ms) {
    (void)ms;
    if (++sleeps == 3) {
        semihost_exit();
    }
}
uint64_t time_us_64(void) { return 0; }
uint32_t clock_get_hz(clock_handle_t clock) { (void)clock; return 150000000u; }
int _write(int fd, const char *buf, int n) {
    (void)fd;
    for (int i = 0; i < n; i++) {
        while (UART0[1] & 1u) { /* STATE.TXFULL */
        }
        UART0[0] = (uint8_t)buf[i];
    }
    return n;
}
"""
HARNESS_M33 = """\
#include <stdint.h>
typedef struct {
    uint8_t pad0[0x1000];
    volatile uint32_t dwt_ctrl;   /* 0xe0001000 */
    volatile uint32_t dwt_cyccnt; /* 0xe0001004 */
    uint8_t pad1[0xedfc - 0x1008];
    volatile uint32_t demcr;      /* 0xe000edfc */
} m33_hw_t;
#define m33_hw ((m33_hw_t *)0xe0000000u)
#define M33_DEMCR_TRCENA_BITS 0x01000000u
#define M33_DWT_CTRL_CYCCNTENA_BITS 0x00000001u
"""
# Code in the an505's flash alias, data in its SRAM; the stack symbols as the SDK's linker
# script defines them (PICO_STACK_SIZE, which the project sets to the board's
# stack_limit_bytes) at the top of RAM.
HARNESS_LD = """\
MEMORY { FLASH (rx) : ORIGIN = 0x10000000, LENGTH = 4M
         RAM (rwx) : ORIGIN = 0x38000000, LENGTH = 1M }
SECTIONS {
  .text : { KEEP(*(.vectors)) *(.text*) *(.rodata*) . = ALIGN(4); } > FLASH
  .ARM.exidx : { *(.ARM.exidx*) } > FLASH
  .data : { __data_start = .; *(.data*) . = ALIGN(4); __data_end = .; } > RAM AT > FLASH
  __data_load = LOADADDR(.data);
  .bss (NOLOAD) : { __bss_start = .; *(.bss*) *(COMMON) . = ALIGN(4); __bss_end = .; } > RAM
  end = .;
  __StackTop = ORIGIN(RAM) + LENGTH(RAM);
  __StackBottom = __StackTop - STACK_BYTES;
}
"""


@pytest.fixture(scope="module")
def host_checksum(emitted, tmp_path_factory) -> int:
    out = tmp_path_factory.mktemp("host")
    write_host_project(emitted, out)
    try:
        build_host(out)
    except BuildError as e:
        pytest.skip(str(e))
    return run_host(out).checksum


@pytest.mark.skipif(ARM_GCC is None or QEMU is None, reason="needs arm-none-eabi-gcc and QEMU")
@pytest.mark.parametrize("board", BOARDS)
def test_main_on_qemu_prints_the_host_checksum_every_time(emitted, host_checksum, tmp_path, board):
    """The generated main.c on an emulated Cortex-M33 (the RP2040's ARMv6-M build runs there
    too, through its non-DSP kernels): every repetition restores the input and prints the
    host's checksum; the painted stack gives one plausible figure."""
    out = tmp_path / "project"
    write_pico_project(emitted, out, load_board(board), host_checksum)
    harness = tmp_path / "harness"
    (harness / "hardware" / "structs").mkdir(parents=True)
    (harness / "pico").mkdir()
    (harness / "pico" / "stdlib.h").write_text(STUB_STDLIB)
    (harness / "hardware" / "structs" / "m33.h").write_text(HARNESS_M33)
    (harness / "hardware" / "clocks.h").write_text(STUB_CLOCKS)
    (harness / "pico" / "binary_info.h").write_text(STUB_BINARY_INFO)
    (harness / "harness.c").write_text(HARNESS_C)
    stack_limit = load_board(board).stack_limit_bytes
    (harness / "link.ld").write_text(HARNESS_LD.replace("STACK_BYTES", str(stack_limit)))
    elf = tmp_path / "app.elf"
    lib = out / "model"
    arm_gcc(
        BOARDS[board],
        f"-I{harness}",
        f"-I{lib}",
        f"-I{lib / 'kernels'}",
        "--specs=nosys.specs",
        "-nostartfiles",
        "-T",
        str(harness / "link.ld"),
        str(harness / "harness.c"),
        str(out / "main.c"),
        str(lib / "model.c"),
        str(lib / "model_data.c"),
        *map(str, sorted((lib / "kernels").glob("*.c"))),
        "-o",
        str(elf),
    )
    _, output = cb.run_qemu("mps2-an505", elf, "-icount", "shift=0", "-serial", "stdio",
                            timeout=300)  # fmt: skip
    results = [r for r in map(parse_result_line, output.splitlines()) if r is not None]
    assert len(results) == 3, output
    expected = json.loads((out / "expected.json").read_text())
    assert {f"0x{r.checksum:08x}" for r in results} == {expected["checksum"]}
    assert {(r.model, r.board, r.arena) for r in results} == {
        (emitted.name, board, emitted.arena_bytes)
    }
    stacks = {r.stack for r in results}
    # Below the whole painted stack: a figure equal to it would mean an overflow.
    assert len(stacks) == 1 and 0 < stacks.pop() < stack_limit


SHARED_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models" / "mcunet"


@pytest.mark.skipif(ARM_GCC is None, reason="arm-none-eabi-gcc is not installed")
@pytest.mark.parametrize("name", ["mcunet-in0", "person-det"])
def test_shared_model_firmware_compiles_for_both_cores(name, tmp_path):
    """Issue 6: for MCUNet-in0 and Person-Det, the generated project's model and kernels
    compile with arm-none-eabi-gcc for cortex-m0plus and cortex-m33 with -Werror."""
    path = SHARED_MODELS / f"{name}.tflite"
    if not path.is_file():
        pytest.skip(f"{path} is absent (CI keeps ../shared beside the checkout)")
    graph = rewrite(read_model(path))
    req = requirements(graph)
    model = emit_model(graph, req, plan_model(graph, req, "rip"), "rip")
    for board, cpu in BOARDS.items():
        out = tmp_path / board
        write_pico_project(model, out, load_board(board), CHECKSUM)
        lib = out / "model"
        for source in [lib / "model.c", lib / "model_data.c",
                       *sorted((lib / "kernels").glob("*.c"))]:  # fmt: skip
            arm_gcc(cpu, f"-I{lib}", f"-I{lib / 'kernels'}", "-c", str(source),
                    "-o", str(tmp_path / f"{board}-{source.stem}.o"))  # fmt: skip


@pytest.mark.parametrize(
    "content, words",
    [
        (b"", "is empty"),
        (b"\x00" * 512, "bad magic"),
        (b"x" * 100, "not a multiple of 512"),
        (bin_to_uf2(b"\x01" * 300, 0x12345678, FLASH_BASE), "not a Pico's"),
        (bin_to_uf2(b"\x01" * 300, 0xE48BFF56, FLASH_BASE), "is for the RP2040, but the project"),
    ],
    ids=["empty", "bad-magic", "truncated", "foreign-family", "other-pico"],
)
def test_a_bad_uf2_is_refused_before_any_copy(built, tmp_path, capsys, content, words):
    """rip-flash copied an empty or wrong-family UF2 and exited 0; now one line, exit 2,
    and the drive is untouched."""
    expected = json.loads((built / "expected.json").read_text())
    (built / "expected.json").write_text(json.dumps({**expected, "board": "pico2"}))
    (built / "build" / "example.uf2").write_bytes(content)
    drive = boot_drive(tmp_path / "media", "RP2350")
    assert flash_main([str(built), "--drive", str(drive)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err, err
    assert not (drive / "example.uf2").exists()


@pytest.mark.skipif(ARM_GCC is None, reason="arm-none-eabi-gcc is not installed")
@pytest.mark.parametrize("opt", ["-O0", "-Og", "-Os", "-O3"])
@pytest.mark.parametrize("cpu", ["cortex-m0plus", "cortex-m33"])
def test_kernels_compile_at_every_pico_sdk_optimisation(cpu, opt, tmp_path):
    """A Pico project may be built Debug (-O0 / -Og), MinSizeRel (-Os) or Release: every
    kernel compiles warning-free at each, for both cores (the hand-scheduled inline asm,
    which needs an optimising build's registers, steps aside where it cannot fit)."""
    for source in sorted(cb.KERNELS.glob("*.c")):
        cb.cross_compile(source, cpu, tmp_path / f"{source.stem}.o", opt=opt)
