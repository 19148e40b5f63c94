"""Running the build tools (make, cc, cmake, the size and nm tools): each in a process
group of its own that is stopped on Ctrl-C, SIGTERM and a timeout (``rip.core.processes``),
within a stated time, with a full disk told apart from a broken build."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from rip.core import processes
from rip.core.errors import BuildError, DiskFullError

# A generous bound on one build step: the largest shared model's host build takes about
# a minute here, a cold Pico SDK build a few.
BUILD_SECONDS = 1800.0
NO_SPACE_WORDS = ("No space left on device", "Disk quota exceeded")


def run_tool(
    cmd: Sequence[str],
    what: str,
    timeout: float = BUILD_SECONDS,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``cmd`` to its end (``what`` names the step in messages). A BuildError (exit 5) when
    it runs past ``timeout`` seconds (it is stopped, with everything it started); a
    DiskFullError (exit 6) when it failed because the disk is full. Any other failure is
    the caller's to word: the returncode and output are in the result."""
    try:
        proc = processes.run(cmd, timeout, env=env)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{what} did not finish within {timeout:g} s; stopped") from None
    except OSError as e:
        raise BuildError(f"{what}: cannot run {cmd[0]} ({e.strerror})") from None
    if proc.returncode != 0:
        text = proc.stderr + proc.stdout
        said = next((line for line in text.splitlines() if _no_space(line)), None)
        if said is not None:
            raise DiskFullError(f"{what}: no space left on the device ({said.strip()[-200:]})")
    return proc


def _no_space(line: str) -> bool:
    return any(words in line for words in NO_SPACE_WORDS)
