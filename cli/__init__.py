"""Command-line entry points. Each parses its arguments, calls the library, prints, and hands
its work to ``guarded``: the one place where anything that escapes the work becomes one line
on stderr and an exit code (the table is in the README and ``rip.core.errors``)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rip.core.errors import (
    EXIT_INTERNAL,
    EXIT_NO_SPACE,
    EXIT_OK,
    EXIT_SIGNAL_BASE,
    RipError,
    is_no_space,
)
from rip.core.printable import printable

REPORT_HINT = "a bug in rip: please report it with the command line and the model"
# Signals that stop rip as Ctrl-C does: the same cleanup (children stopped, staging folder
# removed, nothing written), exit 128 + N.
STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the main thread is, like Ctrl-C's KeyboardInterrupt,
    so that every ``finally`` and ``except BaseException`` that cleans up after Ctrl-C
    (the ``-o`` staging folder, planning workers, make, QEMU) cleans up after it too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _stop(signum: int, _frame: object) -> None:
    # a second SIGTERM or SIGHUP must not cut the cleanup short (SIGKILL still can)
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Stopped(signum)


@contextmanager
def stop_signals_as_interrupts() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Stopped` while the block runs (main thread only:
    Python runs signal handlers there); the previous handlers are restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _stop) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def guarded(prog: str, work: Callable[[], int], *, interrupted: int | None = None) -> int:
    """Run ``work`` and return its exit code, never a traceback, so that scripts and CI can
    rely on the code alone:

    * a RipError prints ``prog: error: message`` and returns the error's exit code;
    * Ctrl-C prints ``prog: interrupted`` and returns 130 (or ``interrupted``, for a tool
      whose normal end is Ctrl-C); SIGTERM and SIGHUP are handled the same way (the same
      cleanup) and return 143 and 129, as a shell reports a process those signals stopped;
    * no space left on a device (ENOSPC, EDQUOT), wherever it happens, is one line naming
      the file, exit 6;
    * a closed stdout (``rip-compile ... | head -0``) is the reader's choice, not an error:
      stdout is pointed at /dev/null so Python's exit flush cannot fail either, and the
      work's code stands (0 when the pipe closed before it returned);
    * any other exception is a bug: one line naming it, a hint to report it, exit 70.

    Every message is printed with its control characters escaped (it may quote a file's
    or a device's bytes).
    """

    def say(text: str) -> None:
        print(printable(f"{prog}: {text}"), file=sys.stderr)

    try:
        with stop_signals_as_interrupts():
            code = work()
            sys.stdout.flush()  # a closed pipe shows up here, not in Python's exit handler
        return code
    except RipError as e:
        say(f"error: {e}")
        return e.exit_code
    except Stopped as e:
        say(f"stopped by {signal.Signals(e.signum).name}")
        return EXIT_SIGNAL_BASE + e.signum
    except KeyboardInterrupt:
        say("interrupted")
        return EXIT_SIGNAL_BASE + signal.SIGINT if interrupted is None else interrupted
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_OK
    except OSError as e:
        if not is_no_space(e):
            return _bug(say, e)
        where = f" writing {e.filename}" if e.filename else ""
        say(f"error: no space left on the device{where} ({e.strerror}); free some and run again")
        if e.filename is None:  # stdout itself (a redirect to a full disk)
            _silence_stdout()
        return EXIT_NO_SPACE
    except Exception as e:
        return _bug(say, e)


def _bug(say: Callable[[str], None], e: Exception) -> int:
    """A bug: one line, not a traceback (RIP_TRACEBACK=1 shows it)."""
    if os.environ.get("RIP_TRACEBACK"):
        raise e
    words = " ".join(str(e).split())[:200]
    say(
        f"internal error: {type(e).__name__}: {words} ({REPORT_HINT}; "
        "RIP_TRACEBACK=1 shows the traceback)"
    )
    return EXIT_INTERNAL


def _silence_stdout() -> None:
    """Point the stdout file descriptor at /dev/null: the reader has gone (or the disk
    behind it is full), and Python's own flush at exit would otherwise print 'Exception
    ignored ... BrokenPipeError'."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (pytest's capture)
        pass
