"""Child processes that never outlive rip.

Every tool rip starts (make and the compilers it runs, cmake and ninja, QEMU, picotool)
runs in a process group of its own, so that stopping it stops everything it started:
``subprocess.run`` on Ctrl-C or a timeout kills only its direct child, and make's
compilers were left running. On Linux the child also gets the parent-death signal
(SIGKILL when rip dies, even by SIGKILL, which no cleanup code sees). ``run`` stops the
group on every way out: normal end, timeout, Ctrl-C, SIGTERM (which ``rip.cli.guarded``
turns into the same exception as Ctrl-C).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_libc: Any = None
if sys.platform.startswith("linux"):
    with contextlib.suppress(OSError):
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def die_with_parent(parent: int | None = None) -> None:
    """In a child (a forked worker, or between fork and exec): ask the kernel for SIGKILL
    when the parent goes, and go now if it already has (``parent``: its pid). A no-op
    where the kernel has no such request."""
    if _libc is None:
        return
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(1)  # the parent died before the request: nothing to report to


def spawn(cmd: Sequence[str], **popen: Any) -> subprocess.Popen:
    """``subprocess.Popen`` in a new process group (its id is the child's pid), dying with
    rip on Linux. Stop it with :func:`stop`."""
    parent = os.getpid()
    return subprocess.Popen(
        list(cmd),
        start_new_session=True,
        preexec_fn=(lambda: die_with_parent(parent)) if _libc is not None else None,
        **popen,
    )


def stop(proc: subprocess.Popen) -> None:
    """SIGKILL to the child's whole process group (nothing there can ignore it), then reap
    the child and close its pipes. Only while the child is not reaped: until then its pid,
    the group's id, cannot be reused by another process."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if hasattr(os, "killpg"):
                os.killpg(proc.pid, signal.SIGKILL)
            else:  # Windows: no process groups, the child alone
                proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def run(
    cmd: Sequence[str],
    timeout: float,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    input: bytes | None = None,
) -> subprocess.CompletedProcess:
    """``cmd`` to its end, its output captured (text; bytes when ``input`` bytes are fed to
    its stdin), within ``timeout`` seconds: ``subprocess.TimeoutExpired`` after the group
    is stopped. On Ctrl-C or SIGTERM the group is stopped before the exception goes on."""
    text = input is None
    proc = spawn(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
        text=text,
        errors="replace" if text else None,
        env=env,
        cwd=cwd,
    )
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
    finally:
        stop(proc)
    return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)
