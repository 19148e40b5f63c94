"""The pico_timing QEMU plugin, compiled on first use with the host's C compiler against
rip's own declarations of the plugin API (``plugin/qemu_plugin_api.h``: Debian's QEMU 7.2
exports the API but ships no header) and kept in the cache folder, keyed by its sources."""

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


class PluginError(RipError):
    """The timing plugin cannot be built here (no host C compiler, or it does not compile)."""

    exit_code = 5


def _digest() -> str:
    h = hashlib.sha256(" ".join(CFLAGS).encode())
    for name in ("pico_timing.c", "qemu_plugin_api.h"):
        h.update((SOURCES / name).read_bytes())
    return h.hexdigest()[:16]


def plugin_path(cache_dir: Path | None = None) -> Path:
    """The built plugin (a shared object), compiling it when this version of its sources has
    not been built yet; a PluginError when there is no host compiler or it fails."""
    folder = (cache_dir or default_cache_dir()) / "pico-timing"
    so = folder / f"pico_timing-{_digest()}.so"
    if so.is_file():
        return so
    wanted = os.environ.get("CC")
    cc = shutil.which(wanted) if wanted else shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise PluginError("the Pico timing model needs a host C compiler (gcc) for its plugin")
    folder.mkdir(parents=True, exist_ok=True)
    tmp = so.with_suffix(f".{os.getpid()}.tmp")
    proc = subprocess.run(
        [cc, *CFLAGS, f"-I{SOURCES}", str(SOURCES / "pico_timing.c"), "-o", str(tmp)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise PluginError(f"the timing plugin does not compile: {proc.stderr.strip()[-400:]}")
    os.replace(tmp, so)  # atomic: a parallel build writes the same bytes
    return so
