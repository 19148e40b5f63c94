"""The Node side of ``--emulate``: rip's runner script (``firmware/rp2040js/run.mjs``) and the
npm packages its lock file pins (rp2040js), installed on first use.

The packages go to ``$RIP_RP2040JS_DIR`` when set (CI prepares one with ``python -m
rip.firmware.rp2040js_install``), else to ``rp2040js-<hash of the lock file>`` in rip's
cache folder (``$RIP_CACHE_DIR``, else ``~/.cache/rip``), with ``npm ci``: exactly the
locked versions, no install scripts. An install is made in a sibling folder and renamed
into place, so two processes installing at once cannot leave a half-made one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from rip.allocator.planning.cache import default_cache_dir
from rip.core.errors import EmulatorMissing

PACKAGE_FILES = ("package.json", "package-lock.json")
RUNNER = "run.mjs"
STAMP = ".rip-installed"  # holds the key of the lock file the folder was installed from
MIN_NODE = (18, 3)  # node:util parseArgs
NODE_HINT = "Node.js 18.3 or newer with npm (Debian: apt-get install nodejs npm)"
NPM_SECONDS = 600.0


def _source(name: str) -> bytes:
    return (resources.files("rip") / "firmware" / "rp2040js" / name).read_bytes()


def lock_key() -> str:
    """A hash of package.json and package-lock.json: a changed pin is a new install."""
    h = hashlib.sha256()
    for name in PACKAGE_FILES:
        h.update(name.encode() + b"\0" + _source(name) + b"\0")
    return h.hexdigest()[:16]


def locked_version(package: str = "rp2040js") -> str:
    """The version of ``package`` the lock file pins."""
    lock = json.loads(_source("package-lock.json"))
    return str(lock["packages"][f"node_modules/{package}"]["version"])


def install_dir() -> Path:
    """Where the runner and its packages live (see the module docstring)."""
    named = os.environ.get("RIP_RP2040JS_DIR", "").strip()
    if named:
        return Path(named).expanduser()
    return default_cache_dir() / f"rp2040js-{lock_key()}"


def node() -> str:
    """The ``node`` executable, checked to be new enough; EmulatorMissing otherwise."""
    path = shutil.which("node")
    if path is None:
        raise EmulatorMissing(f"--emulate runs rp2040js, which needs {NODE_HINT}: no node on PATH")
    proc = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    m = re.match(r"v(\d+)\.(\d+)", proc.stdout.strip())
    if m is None or (int(m[1]), int(m[2])) < MIN_NODE:
        raise EmulatorMissing(
            f"--emulate needs {NODE_HINT}; {path} is {proc.stdout.strip() or 'unknown'}"
        )
    return path


def _installed(folder: Path, key: str) -> bool:
    stamp = folder / STAMP
    return stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == key


def _npm_ci(folder: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise EmulatorMissing(f"--emulate installs rp2040js with npm, which needs {NODE_HINT}")
    cmd = [npm, "ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund",
           "--prefer-offline", "--loglevel=error"]  # fmt: skip
    try:
        proc = subprocess.run(
            cmd, cwd=folder, capture_output=True, text=True, timeout=NPM_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        proc = None
    if proc is None or proc.returncode != 0:
        words = " ".join((proc.stderr or proc.stdout).split())[-300:] if proc else "timed out"
        raise EmulatorMissing(
            f"npm ci of rp2040js {locked_version()} failed ({words}); where the npm registry "
            f"is reachable run: python -m rip.firmware.rp2040js_install"
        )


def install() -> Path:
    """The install folder, with the locked packages (``npm ci`` when they are missing or
    pinned differently) and the current runner script; returns its ``run.mjs``."""
    node()
    folder = install_dir()
    key = lock_key()
    if not _installed(folder, key):
        folder.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
        try:
            for name in PACKAGE_FILES:
                (work / name).write_bytes(_source(name))
            _npm_ci(work)
            (work / STAMP).write_text(key + "\n", encoding="utf-8")
            if not _installed(folder, key):  # another process may have finished first
                shutil.rmtree(folder, ignore_errors=True)
                try:
                    work.rename(folder)
                except OSError:
                    if not _installed(folder, key):
                        raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    runner = folder / RUNNER
    text = _source(RUNNER)
    if not runner.is_file() or runner.read_bytes() != text:
        tmp = folder / f".{RUNNER}.{os.getpid()}"
        tmp.write_bytes(text)
        os.replace(tmp, runner)
    return runner


def main() -> int:
    """``python -m rip.firmware.rp2040js_install``: install now (CI, or a machine that is
    offline later) and print the folder."""
    try:
        runner = install()
    except EmulatorMissing as e:
        print(f"rp2040js_install: error: {e}", file=sys.stderr)
        return e.exit_code
    print(f"rp2040js {locked_version()} and rip's runner in {runner.parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
