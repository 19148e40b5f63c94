"""``rip-compile --build`` for the Pico boards: its options (``--stdio``, ``--build-type``,
``--cmake-arg``), TinyUSB found or missing before configure, the shared configured build
folder, the build log and what it says on stderr. The real builds use the Pico SDK at
``../shared/pico/pico-sdk`` and skip with a reason when it (or the Arm toolchain) is absent."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from paths import SHARED

from rip.cli.compile import joined_option_values
from rip.cli.compile import main as compile_main
from rip.core.errors import EXIT_BAD_INPUT, EXIT_BUILD_FAILED, BuildError, RipError
from rip.firmware.pico_build import (
    PicoBuildOptions,
    choose_stdio,
    cmake_defines,
    summary_lines,
    sync_sources,
    tool_warnings,
)
from rip.firmware.pico_project import symbol_placement
from rip.firmware.pico_sdk import TINYUSB_TEST_PATH, find_tinyusb, sdk_version

SDK = SHARED / "pico" / "pico-sdk"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "example-cnn.tflite"
FAST = ("--placer", "firstfit", "--quiet")


def real_sdk() -> Path:
    if not (SDK / "pico_sdk_init.cmake").is_file():
        pytest.skip(f"{SDK} is absent (CI keeps ../shared beside the checkout)")
    for tool in ("cmake", "arm-none-eabi-gcc"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    return SDK


@pytest.fixture(scope="module")
def sdk_without_tinyusb(tmp_path_factory) -> Path:
    """The shared SDK as a plain clone without --recurse-submodules has it: every file
    there (symbolic links), but lib/tinyusb an empty folder."""
    sdk = real_sdk()
    root = tmp_path_factory.mktemp("sdk-no-tinyusb") / "pico-sdk"
    root.mkdir()
    for entry in sdk.iterdir():
        if entry.name != "lib":
            (root / entry.name).symlink_to(entry)
    (root / "lib" / "tinyusb").mkdir(parents=True)
    return root


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = compile_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- options --------------------------------------------------------------------------------


def test_cmake_args_are_cache_entries_and_never_rips_own():
    assert cmake_defines(["-DFOO=1", "-DPICO_TINYUSB_PATH:PATH=/x y", "-DA.B=$(rm -rf)"]) == {
        "FOO": "1",
        "PICO_TINYUSB_PATH": "/x y",
        "A.B": "$(rm -rf)",  # one argv element: no shell ever sees it
    }
    for bad, words in [
        ("-G Ninja", "give a cache entry"),
        ("FOO=1", "give a cache entry"),
        ("-DFOO", "give a cache entry"),
        ("-DFOO=a\nb", "no line breaks"),
        ("-DFOO:LIST=1", "give a cache entry"),
        ("-DRIP_STDIO=usb", "use --stdio"),
        ("-DCMAKE_BUILD_TYPE=Debug", "use --build-type"),
        ("-DPICO_BOARD=pico2", "--board"),
        ("-DPICO_SDK_PATH=/sdk", "PICO_SDK_PATH in the environment"),
    ]:
        with pytest.raises(RipError, match=words) as info:
            cmake_defines([bad])
        assert "\n" not in str(info.value)
    with pytest.raises(RipError, match="--build-type"):
        PicoBuildOptions(build_type="Fast")
    with pytest.raises(RipError, match="--stdio"):
        PicoBuildOptions(stdio="jtag")


def test_cmake_arg_values_may_start_with_a_dash():
    argv = ["m.tflite", "--cmake-arg", "-DX=1", "--cmake-arg=-DY=2", "--build"]
    assert joined_option_values(argv) == ["m.tflite", "--cmake-arg=-DX=1", "--cmake-arg=-DY=2",
                                          "--build"]  # fmt: skip


def test_build_options_need_build(capsys, tmp_path):
    for extra in (["--stdio", "uart"], ["--build-type", "Debug"], ["--cmake-arg", "-DX=1"]):
        code, _, err = run(capsys, str(EXAMPLE), "--board", "pico", "-o", str(tmp_path / "o"),
                           *FAST, *extra)  # fmt: skip
        assert code == EXIT_BAD_INPUT and "only with --build" in err and err.count("\n") == 1


def test_a_bad_cmake_arg_is_refused_before_planning(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PICO_SDK_PATH", str(tmp_path))  # never reached
    start = time.monotonic()
    code, _, err = run(capsys, str(EXAMPLE), "--board", "pico", "-o", str(tmp_path / "o"),
                       "--build", "--cmake-arg", "-DRIP_STDIO=usb", *FAST)  # fmt: skip
    assert code == EXIT_BAD_INPUT and "use --stdio" in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists() and time.monotonic() - start < 30


# --- TinyUSB ----------------------------------------------------------------------------------


def fake_sdk(root: Path, tinyusb: bool) -> Path:
    (root / "lib" / "tinyusb").mkdir(parents=True)
    (root / "pico_sdk_init.cmake").write_text("")
    (root / "pico_sdk_version.cmake").write_text(
        "set(PICO_SDK_VERSION_MAJOR 2)\nset(PICO_SDK_VERSION_MINOR 2)\n"
        "set(PICO_SDK_VERSION_REVISION 0)\n"
    )
    if tinyusb:
        (root / "lib" / "tinyusb" / TINYUSB_TEST_PATH).mkdir(parents=True)
    return root


def test_tinyusb_is_looked_for_where_the_sdk_looks(tmp_path):
    with_usb = fake_sdk(tmp_path / "a", True)
    without = fake_sdk(tmp_path / "b", False)
    assert sdk_version(with_usb) == "2.2.0"
    assert find_tinyusb(with_usb, {}, {}).present
    missing = find_tinyusb(without, {}, {})
    assert not missing.present and "lib/tinyusb" in missing.problem
    assert missing.fix == f"run git submodule update --init lib/tinyusb in {without}"
    # PICO_TINYUSB_PATH on the command line wins over the environment, which wins over lib/
    elsewhere = with_usb / "lib" / "tinyusb"
    assert find_tinyusb(without, {}, {"PICO_TINYUSB_PATH": str(elsewhere)}).present
    told = find_tinyusb(with_usb, {"PICO_TINYUSB_PATH": str(tmp_path)}, {})
    assert not told.present and told.origin == "-DPICO_TINYUSB_PATH"


def test_stdio_choice_without_tinyusb(tmp_path):
    present = find_tinyusb(fake_sdk(tmp_path / "a", True), {}, {})
    absent = find_tinyusb(fake_sdk(tmp_path / "b", False), {}, {})
    assert choose_stdio(None, present) == (choose_stdio("both", present)[0], [])
    stdio, warnings = choose_stdio(None, absent)
    assert (stdio.name, stdio.usb, stdio.uart) == ("uart", False, True)
    assert len(warnings) == 1 and "TinyUSB" in warnings[0]
    assert "git submodule update --init lib/tinyusb" in warnings[0]
    assert choose_stdio("uart", absent) == (stdio, [])  # asked for: nothing to warn about
    for asked in ("usb", "both"):
        with pytest.raises(BuildError, match=r"needs USB serial.*TinyUSB") as info:
            choose_stdio(asked, absent)
        assert info.value.exit_code == EXIT_BUILD_FAILED and "\n" not in str(info.value)


def test_stdio_usb_without_tinyusb_exits_5_before_planning(capsys, tmp_path, monkeypatch):
    if shutil.which("cmake") is None or shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("needs cmake and arm-none-eabi-gcc")
    sdk = fake_sdk(tmp_path / "sdk", False)
    monkeypatch.setenv("PICO_SDK_PATH", str(sdk))
    code, _, err = run(capsys, str(EXAMPLE), "--board", "pico", "-o", str(tmp_path / "o"),
                       "--build", "--stdio", "usb", *FAST)  # fmt: skip
    assert code == EXIT_BUILD_FAILED and err.count("\n") == 1, err
    assert "TinyUSB" in err and "git submodule update --init lib/tinyusb" in err
    assert not (tmp_path / "o").exists()


# --- the build folder, the log --------------------------------------------------------------


def test_sync_writes_only_what_changed(tmp_path):
    src, dest = tmp_path / "src", tmp_path / "dest"
    (src / "model" / "kernels").mkdir(parents=True)
    (src / "build").mkdir()
    (src / "main.c").write_text("a")
    (src / "model" / "kernels" / "k.c").write_text("k")
    (src / "build" / "x.elf").write_text("not a source")
    (src / ".rip-manifest.json").write_text("{}")
    assert sync_sources(src, dest) == 2
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "main.c",
        "model/kernels/k.c",
    ]
    kernel = dest / "model" / "kernels" / "k.c"
    os.utime(kernel, (1, 1))
    (src / "main.c").write_text("b")
    (dest / "stale.c").write_text("gone")
    assert sync_sources(src, dest) == 1
    assert kernel.stat().st_mtime == 1  # unchanged bytes, untouched: not rebuilt
    assert (dest / "main.c").read_text() == "b" and not (dest / "stale.c").exists()
    shutil.rmtree(src / "model")
    sync_sources(src, dest)
    assert not (dest / "model").exists()


def test_tool_warnings_are_found_once_each():
    cmake = (
        "-- Configuring\n"
        "CMake Warning at /sdk/src/rp2_common/tinyusb/CMakeLists.txt:14 (message):\n"
        "  TinyUSB submodule has not been initialized; USB support will be unavailable\n"
        "\n"
        "  hint: try 'git submodule update --init' from your SDK directory\n"
        "\n"
        "Call Stack (most recent call first):\n"
        "  /sdk/src/CMakeLists.txt:3 (add_subdirectory)\n"
        "\n"
        "CMake Warning:\n"
        "  Manually-specified variables were not used by the project:\n"
        "\n"
        "    FOO\n"
        "\n"
        "-- Generating done\n"
    )
    gcc = (
        "[3/9] Building C object main.c.o\n"
        "/p/main.c:12:9: warning: unused variable 'x' [-Wunused-variable]\n"
        "   12 |     int x;\n"
        "[4/9] Building C object other.c.o\n"
        "/p/main.c:12:9: warning: unused variable 'x' [-Wunused-variable]\n"
        "/usr/bin/arm-none-eabi-ld: warning: app.elf has a LOAD segment with RWX permissions\n"
    )
    found = tool_warnings([cmake, gcc])
    assert len(found) == 4, found
    assert found[0].startswith("CMake warning at /sdk/src/rp2_common/tinyusb/CMakeLists.txt:14")
    assert "TinyUSB submodule has not been initialized" in found[0]
    assert "Manually-specified variables were not used by the project: FOO" in found[1]
    assert found[2] == "/p/main.c:12:9: warning: unused variable 'x' [-Wunused-variable]"
    assert "RWX permissions" in found[3]
    assert tool_warnings(["[1/2] Building C object a.c.o\n-- Configuring done\n"]) == []


def test_summary_says_what_the_build_did():
    build = {
        "notes": ["no USB serial: TinyUSB ..."],
        "stdio": {"requested": "default", "usb": False, "uart": True},
        "seconds": {"copy": 0.0, "configure": 2.2, "compile": 3.2},
        "tree": {"path": "/c/pico-build/pico-Release-uart-0", "shared": True, "reused": True},
        "build_type": "Release",
        "warnings": [f"w{i}" for i in range(5)],
        "log": "out/build/build.log",
    }
    lines = summary_lines(build)
    assert lines[0] == "warning: no USB serial: TinyUSB ..."
    assert lines[1].startswith("stdio: USB serial off, UART0")
    assert "configure 2.2 s, compile 3.2 s" in lines[2] and "reused shared build folder" in lines[2]
    assert lines[3] == "5 build warnings (all in out/build/build.log):"
    assert lines[4:7] == ["  w0", "  w1", "  w2"] and lines[7] == "  ... and 2 more"


# --- real builds -----------------------------------------------------------------------------


def built(capsys, monkeypatch, sdk: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    monkeypatch.setenv("PICO_SDK_PATH", str(sdk))
    return run(capsys, str(EXAMPLE), "--board", "pico", "-o", str(out), "--build", *FAST, *extra)


def test_without_tinyusb_the_build_warns_and_is_uart_only(
    capsys, monkeypatch, tmp_path, sdk_without_tinyusb
):
    """A plain SDK clone (lib/tinyusb empty): the build goes on with UART0 only, says so in
    one line with the fix, and the firmware indeed has no USB serial."""
    out = tmp_path / "o"
    code, _, err = built(capsys, monkeypatch, sdk_without_tinyusb, out)
    assert code == 0, err
    warning = [line for line in err.splitlines() if "warning: no USB serial" in line]
    assert len(warning) == 1 and "TinyUSB" in warning[0], err
    assert f"git submodule update --init lib/tinyusb in {sdk_without_tinyusb}" in warning[0]
    assert "rip-compile: stdio: USB serial off, UART0" in err
    elf = out / "build" / "example_cnn.elf"
    symbols = symbol_placement(elf, ("stdio_usb_init", "stdio_uart_init"))
    assert "stdio_uart_init" in symbols and "stdio_usb_init" not in symbols
    # the SDK's own warning is not swallowed: it is in the summary and the log
    assert "TinyUSB submodule has not been initialized" in err
    assert "TinyUSB submodule has not been initialized" in (out / "build" / "build.log").read_text()


def test_with_the_shared_sdk_usb_is_on_and_the_build_folder_is_reused(
    capsys, monkeypatch, tmp_path
):
    """With ../shared/pico/pico-sdk (TinyUSB present) the firmware has USB serial and says
    so; a second model reuses the configured folder and compiles none of the SDK again."""
    sdk = real_sdk()
    unused = ("--cmake-arg", "-DRIP_UNUSED=1")
    code, _, err = built(capsys, monkeypatch, sdk, tmp_path / "a", *unused)
    assert code == 0, err
    assert "rip-compile: stdio: USB serial on, UART0 (GP0 TX, GP1 RX, 115200 baud) on" in err
    assert "warning: no USB serial" not in err
    # an unused -D is CMake's warning, passed on in the summary
    assert "Manually-specified variables were not used by the project: RIP_UNUSED" in err
    symbols = symbol_placement(tmp_path / "a" / "build" / "example_cnn.elf", ("stdio_usb_init",))
    assert "stdio_usb_init" in symbols
    code, _, err = built(capsys, monkeypatch, sdk, tmp_path / "b", *unused, "--strategy", "dual")
    assert code == 0, err
    assert "(reused shared build folder" in err, err
    log = (tmp_path / "b" / "build" / "build.log").read_text()
    compiled = [line for line in log.splitlines() if "Building" in line]
    assert compiled and not [line for line in compiled if "pico-sdk" in line], compiled
    assert {"model.c", "main.c"} <= {line.rsplit("/", 1)[-1][:-2] for line in compiled}
    for name in ("example_cnn.elf", "example_cnn.bin", "example_cnn.uf2", "build.log"):
        assert (tmp_path / "b" / "build" / name).is_file()
    assert not (tmp_path / "b" / "build" / "CMakeCache.txt").exists()  # outputs only


def test_stdio_uart_and_build_type(capsys, monkeypatch, tmp_path):
    """``--stdio uart`` is the README's clean-timing build: no USB serial in the firmware;
    ``--build-type`` reaches CMake."""
    sdk = real_sdk()
    code, _, err = built(capsys, monkeypatch, sdk, tmp_path / "o", "--stdio", "uart",
                         "--build-type", "MinSizeRel")  # fmt: skip
    assert code == 0, err
    assert "USB serial off" in err and "build MinSizeRel" in err
    assert "-DCMAKE_BUILD_TYPE=MinSizeRel" in (tmp_path / "o" / "build" / "build.log").read_text()
    symbols = symbol_placement(tmp_path / "o" / "build" / "example_cnn.elf", ("stdio_usb_init",))
    assert "stdio_usb_init" not in symbols


@pytest.mark.parametrize("board", ["pico", "pico2"])
def test_two_core_firmware_launches_core1_with_the_sdk(capsys, monkeypatch, tmp_path, board):
    """``--cores 2`` (issue 27): the firmware links the SDK's multicore library, launches
    core 1 into the model's loop, and gives core 1 the whole SCRATCH_X bank for its stack.
    rp2040js emulates core 0 alone, so these builds are checked, not run."""
    sdk = real_sdk()
    monkeypatch.setenv("PICO_SDK_PATH", str(sdk))
    out = tmp_path / "o"
    code, _, err = run(capsys, str(EXAMPLE), "--board", board, "-o", str(out), "--build",
                       "--cores", "2", "--share-slack", "1", *FAST)  # fmt: skip
    assert code == 0, err
    elf = out / "build" / "example_cnn.elf"
    wanted = ("multicore_launch_core1", "rip_model_core1_run", "rip_core_barrier")
    assert set(symbol_placement(elf, wanted)) == set(wanted)
    assert "PICO_CORE1_STACK_SIZE=0x1000" in (out / "CMakeLists.txt").read_text()
    assert "multicore_launch_core1(rip_model_core1_run);" in (out / "main.c").read_text()
