"""Pico SDK projects: the emitted model as a folder a Pico user builds with cmake, and the
build itself (ELF, BIN, UF2) when the SDK is at hand.

The folder has the shape of every ``pico-examples`` project (``pico_sdk_import.cmake``,
``CMakeLists.txt`` with ``pico_sdk_init()``, ``pico_enable_stdio_usb``,
``pico_add_extra_outputs``). The model is a library in ``model/`` (its own
``CMakeLists.txt``, ``model.h`` with the C API, the kernels) that any Pico application can
``add_subdirectory()``; ``main.c`` is the example application: it prints the result line of
``rip.firmware.result`` every second, and ``expected.json`` holds what it should print.
How ``--build`` runs CMake (options, the shared build folder, the log) is
``rip.firmware.pico_build``; what it checks of the SDK first is ``rip.firmware.pico_sdk``.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from importlib import resources
from pathlib import Path

from rip.boards import Board
from rip.codegen.cformat import c_ident
from rip.codegen.emit import EmittedModel
from rip.codegen.templating import render
from rip.core import jsonio
from rip.core.errors import PicoSdkMissing, RipError
from rip.firmware.host_project import BuildError, copy_kernels, read_expected, write_expected
from rip.firmware.pico_build import (
    BuildLog,
    BuildTree,
    PicoBuildOptions,
    build_tree,
    choose_stdio,
    cmake_defines,
    sync_sources,
    timed,
    tool_identity,
    tool_warnings,
    tree_key,
)
from rip.firmware.pico_sdk import SDK_HINT, find_tinyusb, sdk_path, sdk_version
from rip.firmware.result import Result, c_printf, c_result_fields
from rip.firmware.tools import run_tool
from rip.firmware.uf2 import write_uf2

__all__ = ["SDK_HINT", "PicoSdkMissing", "build_pico_project", "write_pico_project"]

# What the firmware prints as the unit of ``cycles``, by the board file's cycle_counter.
CYCLE_UNITS = {"dwt_cyccnt": "cycles", "timer_us": "us"}
# ... and what that unit means, for expected.json and the READMEs.
CYCLE_MEANINGS = {
    "cycles": "CPU cycles of one inference (DWT CYCCNT)",
    "us": "microseconds of one inference (the RP2040's timer), not CPU cycles",
}
MODEL_DIR = "model"  # the library's folder inside the project
APP_TARGET = "rip_app"  # the example application's CMake target in every project
# The files of the built example application, beside the ELF (pico_add_extra_outputs).
OUTPUT_SUFFIXES = (".elf", ".bin", ".hex", ".dis", ".elf.map", ".uf2")
# Symbols that say which stdio the firmware really has (stdio_init_all calls them).
STDIO_SYMBOLS = {"usb": "stdio_usb_init", "uart": "stdio_uart_init"}


def app_name(model_name: str) -> str:
    """The CMake executable target (and .elf/.bin/.uf2 file stem) for a model: a C
    identifier, so that every generator and file system accepts it, and never the
    library's own name."""
    name = c_ident(model_name)
    return f"{name}_app" if name == "rip_model" else name


def kernel_sources() -> list[str]:
    """The kernel .c files shipped with rip (those copy_kernels puts in ``kernels/``)."""
    return sorted(
        entry.name
        for entry in resources.files("rip").joinpath("kernels").iterdir()
        if entry.name.endswith(".c")
    )


def _require_pico(board: Board) -> int:
    """The board's UF2 family id, after checking the board file describes a Pico."""
    if board.pico_board is None or board.pico_platform is None or board.uf2_family is None:
        raise RipError(f"board {board.name!r} is not a Pico board (no pico_board in its file)")
    if board.cycle_counter not in CYCLE_UNITS:
        raise RipError(
            f"board {board.name!r}: cycle_counter {board.cycle_counter!r} is not one of "
            f"{', '.join(CYCLE_UNITS)}"
        )
    return board.uf2_family


def expected_inference_seconds(board: Board, macs: int) -> float | None:
    """A generous estimate of one inference's time on ``board`` (board file figures), so
    that a verifier knows how long the first result line may take."""
    if not board.clock_hz or not board.cycles_per_mac_estimate:
        return None
    return round(macs * board.cycles_per_mac_estimate / board.clock_hz, 1)


def write_pico_project(
    model: EmittedModel,
    out: Path,
    board: Board,
    checksum: int | None,
    macs: int | None = None,
) -> None:
    """The Pico SDK project for ``model`` on ``board`` in ``out``: CMakeLists.txt,
    pico_sdk_import.cmake, main.c, README.md and expected.json, and the model library in
    model/ (CMakeLists.txt, model.c/model.h, model_data.c/.h, kernels/). ``checksum`` is the
    host's CRC-32 of the outputs on the default input, or None; ``macs``, the model's
    multiply-accumulates, gives rip-verify the expected inference time to wait for."""
    _require_pico(board)
    library = out / MODEL_DIR
    library.mkdir(parents=True, exist_ok=True)
    unit = CYCLE_UNITS[board.cycle_counter]
    fields = c_result_fields(
        board.name, unit, "elapsed", clock_expr="clock_get_hz(clk_sys)", stack_expr="stack_bytes"
    )
    example = Result(model.name, board.name, model.strategy, model.arena_bytes, 0, 0, unit,
                     stack=0, clock_hz=board.clock_hz or None).line()  # fmt: skip
    seconds = expected_inference_seconds(board, macs) if macs else None
    ctx = {
        "m": model,
        "board": board,
        "app": app_name(model.name),
        "target": APP_TARGET,
        "dwt": board.cycle_counter == "dwt_cyccnt",
        "unit": unit,
        "result_printf": c_printf(fields),
        "result_example": example.replace("checksum=0x00000000", "checksum=0x<crc32>")
        .replace("cycles=0", "cycles=<n>")
        .replace("stack=0", "stack=<bytes>"),
        "kernel_sources": kernel_sources(),
        "drive": board.boot_drive,
        "checksum": checksum,
        "seconds": seconds,
    }
    files = {f"{MODEL_DIR}/{name}": text for name, text in model.files.items()}
    files[f"{MODEL_DIR}/CMakeLists.txt"] = render("pico/model_CMakeLists.txt.j2", **ctx)
    files["main.c"] = render("pico/main.c.j2", **ctx)
    files["CMakeLists.txt"] = render("pico/CMakeLists.txt.j2", **ctx)
    files["pico_sdk_import.cmake"] = render("pico/pico_sdk_import.cmake.j2", **ctx)
    files["README.md"] = render("pico/README.md.j2", **ctx)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    copy_kernels(library)
    write_expected(model, out, board.name, checksum)
    expected = out / "expected.json"
    data = jsonio.loads(expected.read_text(encoding="utf-8"))
    data.update(cycles_unit=unit, cycles_means=CYCLE_MEANINGS[unit])
    if seconds is not None:
        data.update(macs=macs, expected_inference_seconds=seconds)
    expected.write_text(jsonio.dumps(data, indent=2) + "\n", encoding="utf-8")


def _tool(name: str, why: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BuildError(f"--build needs {name} on PATH ({why})")
    return path


def _build_tools() -> tuple[str, str]:
    """cmake and arm-none-eabi-gcc, or a BuildError saying which is missing."""
    return (
        _tool("cmake", "the Pico SDK builds with CMake 3.13 or newer"),
        _tool("arm-none-eabi-gcc", "the Arm GNU toolchain compiles for the Pico"),
    )


def section_sizes(elf: Path, size_tool: str = "arm-none-eabi-size") -> dict[str, dict[str, int]]:
    """Every allocated section of ``elf``: {name: {"bytes": n, "address": a}}, from
    ``arm-none-eabi-size -A`` (System V format, decimal)."""
    proc = run_tool([size_tool, "-A", "-d", str(elf)], size_tool, timeout=60.0)
    if proc.returncode != 0:
        raise BuildError(f"{size_tool} {elf}: {proc.stderr.strip()}")
    sections = {}
    for line in proc.stdout.splitlines():
        m = re.fullmatch(r"\s*(\.\S+)\s+(\d+)\s+(\d+)\s*", line)
        if m:
            sections[m[1]] = {"bytes": int(m[2]), "address": int(m[3])}
    return sections


def symbol_placement(
    elf: Path, names: tuple[str, ...] = ("rip_arena",), nm: str = "arm-none-eabi-nm"
) -> dict[str, dict[str, int | str]]:
    """Address, size and nm type letter ('b' is .bss) of the named symbols in ``elf``."""
    proc = run_tool([nm, "-S", "--defined-only", str(elf)], nm, timeout=60.0)
    found: dict[str, dict[str, int | str]] = {}
    if proc.returncode != 0:
        return found
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] in names:
            found[parts[3]] = {
                "address": int(parts[0], 16),
                "bytes": int(parts[1], 16),
                "type": parts[2],
            }
    return found


def _step(cmd: list[str], step: str, env: dict[str, str], log: BuildLog) -> None:
    """One CMake command of the build, timed and logged; a BuildError with the tail of its
    output when it fails."""
    start = time.monotonic()
    proc = run_tool(cmd, f"cmake {step}", env=env)
    log.record(step, cmd, time.monotonic() - start, proc.returncode, proc.stdout, proc.stderr)
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-15:]
        raise BuildError(f"cmake {step} failed ({' '.join(cmd[:2])} ...):\n" + "\n".join(tail))


def _configure(
    cmake: str,
    tree: BuildTree,
    settings: list[str],
    use_picotool: bool,
    generator: str | None,
    env: dict[str, str],
    log: BuildLog,
) -> None:
    cmd = [cmake, "-S", str(tree.source), "-B", str(tree.build), *settings,
           f"-DPICO_NO_PICOTOOL={0 if use_picotool else 1}"]  # fmt: skip
    # A build folder remembers its generator; choosing one again for it would fail.
    if generator and not (tree.build / "CMakeCache.txt").is_file():
        cmd += ["-G", generator]
    _step(cmd, "configure", env, log)


def _configure_tree(
    cmake: str,
    tree: BuildTree,
    settings: list[str],
    use_picotool: bool,
    auto: bool,
    generator: str | None,
    env: dict[str, str],
    log: BuildLog,
) -> tuple[bool, str | None]:
    """Configure ``tree``; returns whether the SDK uses picotool, and a note when it could
    not. A shared folder that no longer configures (left half-made by a killed run, or by
    a tool that changed) is started afresh once; picotool on PATH is not always one the
    SDK can use (it looks for picotool's installed CMake package, and else downloads and
    builds it), so an automatic choice of it falls back to rip's own UF2 writer."""
    note = None
    while True:
        try:
            _configure(cmake, tree, settings, use_picotool, generator, env, log)
            return use_picotool, note
        except BuildError as e:
            if tree.reused:
                shutil.rmtree(tree.build, ignore_errors=True)
                tree.reused = False
            elif auto and use_picotool:
                why = str(e).splitlines()[-1]
                note = f"the SDK could not use picotool, so rip wrote the UF2 ({why})"
                use_picotool = False
            else:
                raise


def _kept_log(tree: BuildTree) -> Path:
    """The build log of a failed build, where it survives the build folder: in the shared
    folder itself, else copied out of the temporary one."""
    if tree.shared or not tree.log.is_file():
        return tree.log
    fd, name = tempfile.mkstemp(prefix="rip-pico-build-", suffix=".log")
    os.close(fd)
    shutil.copyfile(tree.log, name)
    return Path(name)


def check_build_request(board: Board, options: PicoBuildOptions | None = None) -> None:
    """What ``--build`` needs, checked before minutes of planning: the SDK, the tools, and
    TinyUSB when the stdio asked for needs it (each a one-line error, exit 5)."""
    options = options or PicoBuildOptions()
    _require_pico(board)
    sdk = sdk_path()
    _build_tools()
    choose_stdio(options.stdio, find_tinyusb(sdk, cmake_defines(options.cmake_args)))


def build_pico_project(
    out: Path,
    board: Board,
    jobs: int | None = None,
    use_picotool: bool | None = None,
    options: PicoBuildOptions | None = None,
) -> dict:
    """Configure and build the project in ``out`` with the Pico SDK at ``PICO_SDK_PATH``.

    TinyUSB is checked before anything runs (``pico_build.choose_stdio``: ``--stdio usb``
    without it is refused, the default falls back to UART with a warning), and the ELF is
    checked after: the stdio reported is the one the firmware has. The build runs in a
    shared configured folder (``rip.firmware.pico_build``) or a temporary one, and its
    outputs (ELF, BIN, HEX, DIS, map, UF2) and ``build.log`` land in ``out/build``.

    ``use_picotool`` None means: when picotool is on PATH (and ``PICO_NO_PICOTOOL`` is not
    set in the environment) the SDK makes the UF2 with it; otherwise the build runs with
    ``PICO_NO_PICOTOOL=1`` (the SDK would else try to download picotool) and the UF2 is
    written here from the BIN, errata block included. Returns the output paths, which tool
    wrote the UF2, the stdio, each step's seconds, the tools' warnings and rip's own, and
    the ELF's section sizes and arena placement for the linker-placement check.
    """
    options = options or PicoBuildOptions()
    family = _require_pico(board)
    sdk = sdk_path()
    model = read_expected(out)["model"]
    app = app_name(model)
    cmake, gcc = _build_tools()
    size_tool = _tool("arm-none-eabi-size", "it measures .bss and .data")
    env = dict(os.environ, PICO_SDK_PATH=str(sdk))
    tinyusb = find_tinyusb(sdk, cmake_defines(options.cmake_args), env)
    stdio, notes = choose_stdio(options.stdio, tinyusb)
    auto = use_picotool is None
    if use_picotool is None:
        use_picotool = shutil.which("picotool") is not None and os.environ.get(
            "PICO_NO_PICOTOOL", "0"
        ) in ("", "0")
    generator = "Ninja" if shutil.which("ninja") else None
    settings = [f"-DPICO_SDK_PATH={sdk}", f"-DCMAKE_BUILD_TYPE={options.build_type}",
                f"-DRIP_STDIO={stdio.name}", *options.cmake_args]  # fmt: skip
    facts = {
        "board": [board.name, board.pico_board, board.pico_platform],
        "sdk": [str(sdk), sdk_version(sdk)],
        "settings": settings,
        "picotool": use_picotool,
        "generator": generator,
        "tools": [tool_identity(cmake), tool_identity(gcc)],
    }
    dest = out / "build"
    dest.mkdir(exist_ok=True)
    name = f"{board.name}-{options.build_type}-{stdio.name}"
    with build_tree(options, name, tree_key(**facts), facts) as tree:
        log = BuildLog(tree.log)
        how = ("shared, " + ("reused" if tree.reused else "new")) if tree.shared else "temporary"
        log.start(
            f"rip-compile --build of {app} (model {model}) for {board.name}\n"
            f"Pico SDK {sdk_version(sdk)} at {sdk}; TinyUSB "
            f"{'at ' + str(tinyusb.path) if tinyusb.present else 'absent: ' + tinyusb.problem}\n"
            f"build folder {tree.root} ({how})"
        )
        try:
            with timed("copy", log):
                sync_sources(out, tree.source)
            use_picotool, note = _configure_tree(
                cmake, tree, settings, use_picotool, auto, generator, env, log
            )
            parallel = str(options.jobs or jobs or os.cpu_count() or 1)
            _step([cmake, "--build", str(tree.build), "--parallel", parallel], "compile", env, log)
            for suffix in OUTPUT_SUFFIXES:
                built = tree.build / f"{app}{suffix}"
                if built.is_file():
                    shutil.copy2(built, dest / built.name)
            elf, bin_path, uf2 = (dest / f"{app}{ext}" for ext in (".elf", ".bin", ".uf2"))
            for path in (elf, bin_path):
                if not path.is_file():
                    raise BuildError(f"the build finished without {path.name}")
            # picotool's UF2 when it made a fresh one; ours otherwise (a stale UF2 from an
            # earlier build must not survive a rebuild).
            fresh = uf2.is_file() and uf2.stat().st_mtime >= elf.stat().st_mtime
            if use_picotool and fresh:
                writer = "picotool"
            else:
                with timed("uf2", log):
                    write_uf2(bin_path, uf2, family, board.uf2_errata_family)
                writer = "rip"
        except BuildError as e:
            raise BuildError(f"{e}\nfull build log: {_kept_log(tree)}") from None
        shutil.copyfile(tree.log, dest / "build.log")
        shared = {"path": str(tree.root), "shared": tree.shared, "reused": tree.reused}
    warnings = tool_warnings(log.texts)
    sections = section_sizes(elf, size_tool)
    nm = shutil.which("arm-none-eabi-nm") or "arm-none-eabi-nm"
    symbols = symbol_placement(elf, names=("rip_arena", *STDIO_SYMBOLS.values()),
                               nm=nm)  # fmt: skip
    has = {kind: symbols.pop(sym, None) is not None for kind, sym in STDIO_SYMBOLS.items()}
    if stdio.usb and not has["usb"]:
        raise BuildError(
            f"{elf.name} has no USB serial (no stdio_usb_init), although the build asked for "
            f"it (--stdio {stdio.name}): check TinyUSB at {tinyusb.path}, or use --stdio uart"
        )
    return {
        "build_dir": str(dest),
        "elf": str(elf),
        "bin": str(bin_path),
        "uf2": str(uf2),
        "uf2_writer": writer,
        "log": str(dest / "build.log"),
        "build_type": options.build_type,
        "cmake_args": list(options.cmake_args),
        "stdio": {"requested": options.stdio or "default", **has},
        "tinyusb": str(tinyusb.path) if tinyusb.present else None,
        "seconds": {k: round(v, 1) for k, v in log.seconds.items()},
        "tree": shared,
        "warnings": warnings,
        "notes": [*notes, *([note] if note else [])],
        "bss_bytes": sections.get(".bss", {}).get("bytes", 0),
        "data_bytes": sections.get(".data", {}).get("bytes", 0),
        "image_bytes": bin_path.stat().st_size,  # what goes to flash: code, weights, .data
        "flash_bytes": board.flash_bytes,
        "sections": sections,
        "symbols": symbols,
    }
