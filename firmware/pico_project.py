"""Pico SDK projects: the emitted model as a folder a Pico user builds with cmake, and the
build itself (ELF, BIN, UF2) when the SDK is at hand.

The folder has the shape of every ``pico-examples`` project (``pico_sdk_import.cmake``,
``CMakeLists.txt`` with ``pico_sdk_init()``, ``pico_enable_stdio_usb``,
``pico_add_extra_outputs``), with the model as one more library target. ``main.c`` prints
the result line of ``rip.firmware.result`` every second; ``expected.json`` holds what it
should print.
"""

from __future__ import annotations

import os
import re
import shutil
from importlib import resources
from pathlib import Path

from rip.boards import Board
from rip.codegen.cformat import c_ident
from rip.codegen.emit import EmittedModel
from rip.codegen.templating import render
from rip.core import jsonio
from rip.core.errors import PicoSdkMissing, RipError
from rip.firmware.host_project import BuildError, copy_kernels, write_expected
from rip.firmware.result import Result, c_printf, c_result_fields
from rip.firmware.tools import run_tool
from rip.firmware.uf2 import write_uf2

# What the firmware prints as the unit of ``cycles``, by the board file's cycle_counter.
CYCLE_UNITS = {"dwt_cyccnt": "cycles", "timer_us": "us"}
# The volume label of the bootloader's USB drive, by chip.
SDK_HINT = (
    "git clone https://github.com/raspberrypi/pico-sdk && "
    "(cd pico-sdk && git submodule update --init) && export PICO_SDK_PATH=$PWD/pico-sdk"
)


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
    pico_sdk_import.cmake, main.c, README.md, model.c/model.h, kernels/ and expected.json
    (``checksum`` is the host's CRC-32 of the outputs on the default input, or None;
    ``macs``, the model's multiply-accumulates, gives rip-verify the expected inference
    time to wait for)."""
    _require_pico(board)
    out.mkdir(parents=True, exist_ok=True)
    unit = CYCLE_UNITS[board.cycle_counter]
    fields = c_result_fields(
        board.name, unit, "elapsed", clock_expr="clock_get_hz(clk_sys)", stack_expr="stack_bytes"
    )
    example = Result(model.name, board.name, model.strategy, model.arena_bytes, 0, 0, unit,
                     stack=0, clock_hz=board.clock_hz or None).line()  # fmt: skip
    ctx = {
        "m": model,
        "board": board,
        "app": app_name(model.name),
        "dwt": board.cycle_counter == "dwt_cyccnt",
        "unit": unit,
        "result_printf": c_printf(fields),
        "result_example": example.replace("checksum=0x00000000", "checksum=0x<crc32>")
        .replace("cycles=0", "cycles=<n>")
        .replace("stack=0", "stack=<bytes>"),
        "kernel_sources": kernel_sources(),
        "drive": board.boot_drive,
        "checksum": checksum,
        "seconds": expected_inference_seconds(board, macs) if macs else None,
    }
    files = dict(model.files)
    files["main.c"] = render("pico/main.c.j2", **ctx)
    files["CMakeLists.txt"] = render("pico/CMakeLists.txt.j2", **ctx)
    files["pico_sdk_import.cmake"] = render("pico/pico_sdk_import.cmake.j2", **ctx)
    files["README.md"] = render("pico/README.md.j2", **ctx)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    copy_kernels(out)
    write_expected(model, out, board.name, checksum)
    seconds = expected_inference_seconds(board, macs) if macs else None
    if seconds is not None:
        expected = out / "expected.json"
        data = jsonio.loads(expected.read_text(encoding="utf-8"))
        data.update(macs=macs, expected_inference_seconds=seconds)
        expected.write_text(jsonio.dumps(data, indent=2) + "\n", encoding="utf-8")


def _sdk_path() -> Path:
    raw = os.environ.get("PICO_SDK_PATH", "").strip()
    if not raw:
        raise PicoSdkMissing(f"--build needs the Pico SDK: PICO_SDK_PATH is not set ({SDK_HINT})")
    sdk = Path(raw).expanduser()
    if not (sdk / "pico_sdk_init.cmake").is_file():
        raise PicoSdkMissing(
            f"PICO_SDK_PATH={raw} has no pico_sdk_init.cmake: point it at the top folder "
            "of the Pico SDK"
        )
    return sdk.resolve()


def _tool(name: str, why: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BuildError(f"--build needs {name} on PATH ({why})")
    return path


def _run(cmd: list[str], what: str, env: dict[str, str]) -> None:
    proc = run_tool(cmd, what, env=env)
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-15:]
        raise BuildError(f"{what} failed ({' '.join(cmd[:2])} ...):\n" + "\n".join(tail))


def forget_moved_cache(build: Path) -> None:
    """A build folder configured elsewhere and moved here (rip-compile builds in a staging
    folder and then moves the project into ``-o DIR``) holds a CMakeCache.txt that CMake
    refuses ("is different than the directory ... where CMakeCache.txt was created"): drop
    the cache and CMake's own files, so the folder is configured afresh."""
    cache = build / "CMakeCache.txt"
    if not cache.is_file():
        return
    text = cache.read_text(encoding="utf-8", errors="replace")
    made = re.search(r"^CMAKE_CACHEFILE_DIR:INTERNAL=(.*)$", text, re.MULTILINE)
    if made is None or Path(made[1].strip()).resolve() == build.resolve():
        return
    cache.unlink()
    shutil.rmtree(build / "CMakeFiles", ignore_errors=True)


def _configure(
    cmake: str, out: Path, build: Path, sdk: Path, use_picotool: bool, env: dict[str, str]
) -> None:
    cmd = [
        cmake,
        "-S",
        str(out),
        "-B",
        str(build),
        f"-DPICO_SDK_PATH={sdk}",
        f"-DPICO_NO_PICOTOOL={0 if use_picotool else 1}",
    ]
    # A build folder remembers its generator; choosing Ninja again for it would fail.
    if not (build / "CMakeCache.txt").is_file() and shutil.which("ninja"):
        cmd += ["-G", "Ninja"]
    _run(cmd, "cmake configure", env)


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
    elf: Path, names: tuple[str, ...] = ("rip_arena", "rip_scratch"), nm: str = "arm-none-eabi-nm"
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


def build_pico_project(
    out: Path, board: Board, jobs: int | None = None, use_picotool: bool | None = None
) -> dict:
    """Configure and build the project in ``out`` with the Pico SDK at ``PICO_SDK_PATH``.

    ``use_picotool`` None means: when picotool is on PATH (and ``PICO_NO_PICOTOOL`` is not
    set in the environment) the SDK makes the UF2 with it; otherwise the build runs with
    ``PICO_NO_PICOTOOL=1`` (the SDK would else try to download picotool) and the UF2 is
    written here from the BIN, errata block included. Returns the output paths, which tool
    wrote the UF2, and the ELF's section sizes and arena/scratch placement for the
    linker-placement check.
    """
    family = _require_pico(board)
    sdk = _sdk_path()
    expected = out / "expected.json"
    if not expected.is_file():
        raise RipError(f"{out}: no expected.json; is this a project written by rip-compile?")
    app = app_name(jsonio.loads(expected.read_text(encoding="utf-8"))["model"])
    cmake = _tool("cmake", "the Pico SDK builds with CMake 3.13 or newer")
    _tool("arm-none-eabi-gcc", "the Arm GNU toolchain compiles for the Pico")
    size_tool = _tool("arm-none-eabi-size", "it measures .bss and .data")
    auto = use_picotool is None
    if use_picotool is None:
        use_picotool = shutil.which("picotool") is not None and os.environ.get(
            "PICO_NO_PICOTOOL", "0"
        ) in ("", "0")

    build = out / "build"
    forget_moved_cache(build)
    env = dict(os.environ, PICO_SDK_PATH=str(sdk))
    note = None
    try:
        _configure(cmake, out, build, sdk, use_picotool, env)
    except BuildError as e:
        # picotool on PATH is not always one the SDK can use (it looks for picotool's
        # installed CMake package, and else downloads and builds it): build without it.
        if not (auto and use_picotool):
            raise
        note = f"the SDK could not use picotool, so rip wrote the UF2 ({str(e).splitlines()[-1]})"
        use_picotool = False
        _configure(cmake, out, build, sdk, use_picotool, env)
    _run(
        [cmake, "--build", str(build), "--parallel", str(jobs or os.cpu_count() or 1)],
        "cmake build",
        env,
    )

    elf, bin_path, uf2 = (build / f"{app}{ext}" for ext in (".elf", ".bin", ".uf2"))
    for path in (elf, bin_path):
        if not path.is_file():
            raise BuildError(f"the build finished without {path}")
    # picotool's UF2 when it made a fresh one; ours otherwise (a stale UF2 from an
    # earlier build must not survive a rebuild).
    fresh = uf2.is_file() and uf2.stat().st_mtime >= elf.stat().st_mtime
    if use_picotool and fresh:
        writer = "picotool"
    else:
        write_uf2(bin_path, uf2, family, board.uf2_errata_family)
        writer = "rip"
    sections = section_sizes(elf, size_tool)
    nm = shutil.which("arm-none-eabi-nm") or "arm-none-eabi-nm"
    return {
        "build_dir": str(build),
        "elf": str(elf),
        "bin": str(bin_path),
        "uf2": str(uf2),
        "uf2_writer": writer,
        "bss_bytes": sections.get(".bss", {}).get("bytes", 0),
        "data_bytes": sections.get(".data", {}).get("bytes", 0),
        "image_bytes": bin_path.stat().st_size,  # what goes to flash: code, weights, .data
        "flash_bytes": board.flash_bytes,
        "sections": sections,
        "symbols": symbol_placement(elf, nm=nm),
        **({"note": note} if note else {}),
    }
