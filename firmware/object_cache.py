"""A compiler launcher that reuses kernel objects across generated projects.

Every project rip writes carries the same kernel sources, and compiling them is most of a
project's build time (about 13 s of gcc at -O2/-O3 here, against under a second for the
model). Run as ``CC_LAUNCHER="python -m rip.firmware.object_cache"`` (the generated
Makefiles put ``$(CC_LAUNCHER)`` before the compiler), a ``-c`` compile of a file in a
``kernels/`` folder is keyed by what decides the object: the compiler (its path, size and
time), every argument but the output and include paths, and the preprocessed source (so
every header it includes and every macro is in the key). A hit copies the stored object;
a miss compiles and stores it. Anything else runs the compiler unchanged. Where ccache is
installed it does the same job for every file; this one needs nothing.

The cache lives in ``RIP_OBJECT_CACHE`` (default ``~/.cache/rip/objects``); entries are
written to a temporary name and renamed, so parallel builds may share it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path


def _cache_dir() -> Path:
    env = os.environ.get("RIP_OBJECT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "rip" / "objects"


def _kernel_compile(args: list[str]) -> tuple[str, str] | None:
    """(source, object) for ``... -c kernels/x.c -o kernels/x.o``, else None."""
    if "-c" not in args or "-o" not in args or "-E" in args:
        return None
    sources = [a for a in args if a.endswith(".c")]
    out_at = args.index("-o") + 1
    if len(sources) != 1 or out_at >= len(args) or Path(sources[0]).parent.name != "kernels":
        return None
    return sources[0], args[out_at]


def _key(cc: str, args: list[str], source: str, obj: str) -> str | None:
    """The hash of the compile, or None when the preprocessor fails (the compile then runs
    as given and reports the error itself)."""
    kept = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif not a.startswith("-I") and a != obj:
            kept.append(a)
    pre = [a for a in args if a != "-c"]
    pre = pre[: pre.index("-o")] + pre[pre.index("-o") + 2 :]
    done = subprocess.run([cc, "-E", "-P", *pre], capture_output=True, check=False)
    if done.returncode != 0:
        return None
    h = hashlib.sha256()
    driver = os.path.realpath(str(shutil.which(cc)))
    stat = os.stat(driver)  # an upgraded compiler is a new key, as ccache's compiler_check
    for part in (driver, f"{stat.st_size}:{stat.st_mtime_ns}", "\0".join(kept)):
        h.update(part.encode() + b"\0")
    h.update(done.stdout)
    return h.hexdigest()


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m rip.firmware.object_cache CC ARGS...", file=sys.stderr)
        return 2
    cc, args = argv[0], argv[1:]
    if shutil.which(cc) is None:
        print(f"{cc}: compiler not found", file=sys.stderr)
        return 127
    found = _kernel_compile(args)
    key = _key(cc, args, *found) if found else None
    if key is None:
        return subprocess.call([cc, *args])
    stored = _cache_dir() / key[:2] / f"{key}.o"
    obj = Path(found[1])  # type: ignore[index]
    if stored.is_file():
        shutil.copyfile(stored, obj)
        return 0
    rc = subprocess.call([cc, *args])
    if rc == 0:
        stored.parent.mkdir(parents=True, exist_ok=True)
        tmp = stored.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(obj, tmp)
        os.replace(tmp, stored)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
