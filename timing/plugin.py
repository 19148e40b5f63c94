"""rip's QEMU plugin (``plugin/pico_timing.c``: the Pico timing model, one core or two),
compiled on first use with the host's C compiler against rip's own declarations of the
plugin API (``plugin/qemu_plugin_api.h``: Debian's QEMU 7.2 exports the API but ships no
header) and kept in the cache folder, keyed by its sources."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from rip.allocator.planning.cache import default_cache_dir
from rip.core.errors import RipError

SOURCES = Path(__file__).parent / "plugin"
CFLAGS = ("-O2", "-shared", "-fPIC", "-std=c11", "-Wall", "-Wextra", "-Werror")
TIMING = "pico_timing"  # the Pico timing model (estimate.py)
# What each plugin serves, for the messages.
PURPOSE = {TIMING: "the Pico timing model"}
SETTLE_SECONDS = 30.0  # after the result line, until QEMU has exited and the plugin written


class PluginError(RipError):
    """A plugin cannot be built here (no host C compiler, or it does not compile)."""

    exit_code = 5


def _digest(name: str) -> str:
    h = hashlib.sha256(" ".join(CFLAGS).encode())
    for source in (f"{name}.c", "qemu_plugin_api.h"):
        h.update((SOURCES / source).read_bytes())
    return h.hexdigest()[:16]


def build_plugin(name: str, cache_dir: Path | None = None) -> Path:
    """The plugin ``plugin/<name>.c`` built (a shared object), compiling it when this
    version of its sources has not been built yet; a PluginError when there is no host
    compiler or it fails."""
    folder = (cache_dir or default_cache_dir()) / name.replace("_", "-")
    so = folder / f"{name}-{_digest(name)}.so"
    if so.is_file():
        return so
    wanted = os.environ.get("CC")
    cc = shutil.which(wanted) if wanted else shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise PluginError(f"{PURPOSE[name]} needs a host C compiler (gcc) for its plugin")
    folder.mkdir(parents=True, exist_ok=True)
    tmp = so.with_suffix(f".{os.getpid()}.tmp")
    proc = subprocess.run(
        [cc, *CFLAGS, f"-I{SOURCES}", str(SOURCES / f"{name}.c"), "-o", str(tmp)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        why = proc.stderr.strip()[-400:]
        raise PluginError(f"the QEMU plugin {name}.c does not compile: {why}")
    os.replace(tmp, so)  # atomic: a parallel build writes the same bytes
    return so


def plugin_path(cache_dir: Path | None = None) -> Path:
    """The built timing plugin (pico_timing)."""
    return build_plugin(TIMING, cache_dir)
