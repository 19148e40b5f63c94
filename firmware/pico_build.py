"""How ``rip-compile --build`` runs CMake on a Pico project: the options a user can set
(stdio, build type, extra ``-D`` cache entries), the configured build folder it keeps
between models, the build log, and the short account of what it did.

The Pico SDK compiles its own sources (about 85 files) into every executable, with the
target's compile definitions: a fresh build folder costs a configure and all of those
compiles, about a minute on a loaded machine. A generated project gives its example
application the same target name (``rip_app``; the files are named after the model) and
keeps model-specific text out of the SDK's definitions, so a build folder configured once
per board and options serves every model: only ``main.c``, the model and a link are redone.
Those folders live under ``$RIP_CACHE_DIR/pico-build/`` (the plan cache's root), one per
board, SDK, toolchain, stdio, build type and ``--cmake-arg`` list, each locked while a
build uses it; the project's sources are copied in, a file only when its bytes changed,
so that Ninja (or make) sees what changed. ``--no-cache`` builds in a fresh temporary
folder instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rip.allocator.planning.cache import default_cache_dir
from rip.core import jsonio
from rip.core.errors import BuildError, RipError
from rip.firmware.pico_sdk import TinyUsb


@dataclass(frozen=True)
class Stdio:
    """Where the firmware's stdio (the result line) goes: one row of ``STDIO``."""

    name: str
    usb: bool
    uart: bool


STDIO = {s.name: s for s in (Stdio("both", True, True), Stdio("usb", True, False),
                             Stdio("uart", False, True))}  # fmt: skip
DEFAULT_STDIO = "both"
UART_TEXT = "UART0 (GP0 TX, GP1 RX, 115200 baud)"
# CMake's build types; the Pico SDK's default is Release.
BUILD_TYPES = ("Release", "MinSizeRel", "Debug", "RelWithDebInfo")
DEFAULT_BUILD_TYPE = "Release"
TREE_FORMAT = 1  # bump when a shared build folder's layout changes


@dataclass(frozen=True)
class PicoBuildOptions:
    """``--stdio`` (None: both when the SDK has TinyUSB, else UART only with a warning),
    ``--build-type``, ``--cmake-arg`` (``-DNAME[:TYPE]=VALUE`` each), and whether to use
    the shared build folder (``shared`` False: a fresh temporary one)."""

    stdio: str | None = None
    build_type: str = DEFAULT_BUILD_TYPE
    cmake_args: tuple[str, ...] = ()
    shared: bool = True
    cache_dir: Path | None = None  # None: $RIP_CACHE_DIR (or ~/.cache/rip)
    jobs: int | None = None

    def __post_init__(self) -> None:
        if self.stdio is not None and self.stdio not in STDIO:
            raise RipError(f"--stdio {self.stdio!r}: one of {', '.join(STDIO)}")
        if self.build_type not in BUILD_TYPES:
            raise RipError(f"--build-type {self.build_type!r}: one of {', '.join(BUILD_TYPES)}")
        cmake_defines(self.cmake_args)  # each one checked now, before minutes of planning


# -D cache entries rip sets itself, and what to use instead.
RESERVED = {
    "PICO_SDK_PATH": "set PICO_SDK_PATH in the environment",
    "PICO_BOARD": "the board file sets it (--board)",
    "PICO_PLATFORM": "the board file sets it (--board)",
    "CMAKE_BUILD_TYPE": "use --build-type",
    "RIP_STDIO": "use --stdio",
    "PICO_NO_PICOTOOL": "rip uses picotool when it is on PATH and writes the UF2 otherwise",
}
CMAKE_DEFINE = re.compile(
    r"-D(?P<name>[A-Za-z_][A-Za-z0-9_.+-]*)(?::(?P<type>BOOL|STRING|PATH|FILEPATH))?="
    r"(?P<value>[^\n\r\0]*)",
)


def cmake_defines(args: Sequence[str]) -> dict[str, str]:
    """``--cmake-arg`` values as {name: value}: each a ``-DNAME[:TYPE]=VALUE`` cache entry
    (CMake receives it as one argument, never through a shell), none that rip sets itself;
    a RipError (exit 2) naming the first bad one."""
    defines: dict[str, str] = {}
    for arg in args:
        m = CMAKE_DEFINE.fullmatch(arg)
        if m is None:
            raise RipError(
                f"--cmake-arg {arg!r}: give a cache entry -DNAME=VALUE or -DNAME:TYPE=VALUE "
                "(TYPE BOOL, STRING, PATH or FILEPATH; no line breaks)"
            )
        if m["name"] in RESERVED:
            raise RipError(f"--cmake-arg {arg!r}: rip sets {m['name']}; {RESERVED[m['name']]}")
        defines[m["name"]] = m["value"]
    return defines


def choose_stdio(requested: str | None, tinyusb: TinyUsb) -> tuple[Stdio, list[str]]:
    """The stdio to build and rip's warnings about it. USB serial needs TinyUSB: without
    it an explicit ``--stdio usb`` or ``both`` is refused (exit 5), and the default
    becomes UART only, with one line naming TinyUSB and the fix."""
    if tinyusb.present:
        return STDIO[requested or DEFAULT_STDIO], []
    if requested is not None and STDIO[requested].usb:
        raise BuildError(
            f"--stdio {requested} needs USB serial, but {tinyusb.problem}: {tinyusb.fix}, "
            "or build with --stdio uart"
        )
    warnings = []
    if requested is None:
        warnings.append(
            f"no USB serial: {tinyusb.problem}, so the firmware talks on {UART_TEXT} only; "
            f"for USB serial {tinyusb.fix}"
        )
    return STDIO["uart"], warnings


# --- the build folder ----------------------------------------------------------------------


@dataclass
class BuildTree:
    """A configured (or to be configured) CMake build: ``source`` holds a copy of the
    project, ``build`` the CMake tree, ``log`` the log of the current build."""

    root: Path
    shared: bool
    reused: bool = False  # a CMakeCache.txt was there before this build

    @property
    def source(self) -> Path:
        return self.root / "project"

    @property
    def build(self) -> Path:
        return self.root / "build"

    @property
    def log(self) -> Path:
        return self.root / "build.log"


def tree_key(**facts: object) -> str:
    """A short hash of everything a configured build folder depends on."""
    text = jsonio.dumps({"format": TREE_FORMAT, **facts}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def tool_identity(path: str) -> str:
    """A tool's path, size and modification time: an upgraded compiler is another key."""
    st = os.stat(path)
    return f"{path}:{st.st_size}:{int(st.st_mtime)}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created) while the block runs: two builds never
    share a folder at once; the second waits."""
    with open(path, "a+b") as f:
        if sys.platform == "win32":  # pragma: no cover
            import msvcrt

            f.seek(0)
            msvcrt.locking(f.fileno(), msvcrt.LK_LOCK, 1)
        else:
            import fcntl

            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if sys.platform != "win32":
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def build_tree(options: PicoBuildOptions, name: str, key: str, facts: dict) -> Iterator[BuildTree]:
    """The shared folder ``<cache>/pico-build/<name>-<key>`` (locked while in use), or a
    fresh temporary one removed afterwards."""
    if not options.shared:
        root = Path(tempfile.mkdtemp(prefix="rip-pico-build-"))
        try:
            yield BuildTree(root, shared=False)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        return
    root = (options.cache_dir or default_cache_dir()) / "pico-build" / f"{name}-{key}"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BuildError(
            f"cannot make the shared build folder {root} ({e.strerror}); "
            "set RIP_CACHE_DIR or use --no-cache"
        ) from None
    with _locked(root / "lock"):
        (root / "key.json").write_text(jsonio.dumps(facts, indent=2, default=str) + "\n")
        yield BuildTree(root, shared=True, reused=(root / "build" / "CMakeCache.txt").is_file())


def sync_sources(src: Path, dest: Path, skip: tuple[str, ...] = ("build",)) -> int:
    """Make ``dest`` hold exactly the files of ``src`` (less its top-level ``skip``
    folders and hidden files), writing a file only when its bytes differ, so the build
    tool's timestamps see what changed. Returns how many files were written."""
    wanted = set()
    written = 0
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if rel.parts[0] in skip or any(p.startswith(".") for p in rel.parts) or not path.is_file():
            continue
        wanted.add(rel)
        target = dest / rel
        data = path.read_bytes()
        if not target.is_file() or target.read_bytes() != data:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            written += 1
    if dest.is_dir():
        for path in sorted(dest.rglob("*"), reverse=True):  # files before their folders
            rel = path.relative_to(dest)
            if path.is_file() and rel not in wanted:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    return written


# --- the log and what it says ----------------------------------------------------------------


@dataclass
class BuildLog:
    """Every command of a build with its output and duration, written as it goes."""

    path: Path
    seconds: dict[str, float] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)

    def start(self, header: str) -> None:
        self.path.write_text(header.rstrip("\n") + "\n", encoding="utf-8")

    def record(self, step: str, cmd: Sequence[str], seconds: float, rc: int, out: str,
               err: str) -> None:  # fmt: skip
        self.seconds[step] = self.seconds.get(step, 0.0) + seconds
        self.texts.append(out + "\n" + err)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(f"\n=== {step}: {shlex.join(cmd)}\n=== exit {rc} after {seconds:.1f} s\n")
            for name, text in (("stdout", out), ("stderr", err)):
                if text.strip():
                    f.write(f"--- {name}\n{text.rstrip()}\n")

    def note(self, step: str, seconds: float, text: str) -> None:
        self.seconds[step] = self.seconds.get(step, 0.0) + seconds
        with self.path.open("a", encoding="utf-8") as f:
            f.write(f"\n=== {step}: {text} ({seconds:.1f} s)\n")


COMPILER_WARNING = re.compile(r"^(?P<line>\S.*?: warning: .+)$", re.M)
CMAKE_WARNING = re.compile(
    r"^CMake Warning(?: \(dev\))?(?: at (?P<where>[^\n]+?))?:\n(?P<body>(?:(?:  [^\n]*)?\n)+)",
    re.M,
)


def tool_warnings(texts: Sequence[str]) -> list[str]:
    """Every distinct compiler, linker and CMake warning in the tools' output, one line
    each, in the order they came."""
    found: dict[str, None] = {}
    for text in texts:
        for m in CMAKE_WARNING.finditer(text + "\n"):
            body = " ".join(line.strip() for line in m["body"].splitlines() if line.strip())
            where = f" at {m['where']}" if m["where"] else ""
            found[f"CMake warning{where}: {body[:300]}"] = None
        for m in COMPILER_WARNING.finditer(text):
            found[m["line"].strip()[:300]] = None
    return list(found)


def timed(step: str, log: BuildLog) -> contextlib.AbstractContextManager:
    """Time a step that runs no command (copying sources, writing the UF2)."""

    @contextlib.contextmanager
    def _timer() -> Iterator[None]:
        start = time.monotonic()
        yield
        log.note(step, time.monotonic() - start, "done")

    return _timer()


SHOWN_WARNINGS = 3


def summary_lines(build: dict) -> list[str]:
    """What ``--build`` did, for stderr: rip's own warnings, the stdio the firmware has,
    each step's time and whether the build folder was reused, and the tools' warnings
    (the first few; all of them are in the log)."""
    lines = [f"warning: {w}" for w in build.get("notes", [])]
    stdio = build.get("stdio")
    if stdio:
        usb = "on" if stdio["usb"] else "off"
        uart = "on" if stdio["uart"] else "off"
        lines.append(f"stdio: USB serial {usb}, {UART_TEXT} {uart}")
    seconds = build.get("seconds", {})
    if seconds:
        steps = ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items())
        tree = build.get("tree", {})
        how = (
            ("reused" if tree.get("reused") else "new") + f" shared build folder {tree['path']}"
            if tree.get("shared")
            else "fresh build folder (--no-cache)"
        )
        lines.append(f"build {build.get('build_type', '')}: {steps} ({how})")
    warnings = build.get("warnings", [])
    log = build.get("log", "")
    if warnings:
        more = len(warnings) - SHOWN_WARNINGS
        lines.append(f"{len(warnings)} build warning{'s' * (len(warnings) > 1)} (all in {log}):")
        lines += [f"  {w}" for w in warnings[:SHOWN_WARNINGS]]
        if more > 0:
            lines.append(f"  ... and {more} more")
    elif log:
        lines.append(f"no build warnings; log {log}")
    return lines
