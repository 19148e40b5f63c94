"""Command-line entry points. Each parses its arguments, calls the library, prints, and hands
its work to ``guarded``: the one place where anything that escapes the work becomes one line
on stderr and an exit code (the table is in the README and ``rip.core.errors``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from rip.core.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, RipError

REPORT_HINT = "a bug in rip: please report it with the command line and the model"


def guarded(prog: str, work: Callable[[], int], *, interrupted: int | None = None) -> int:
    """Run ``work`` and return its exit code, never a traceback, so that scripts and CI can
    rely on the code alone:

    * a RipError prints ``prog: error: message`` and returns the error's exit code;
    * Ctrl-C prints ``prog: interrupted`` and returns 130 (or ``interrupted``, for a tool
      whose normal end is Ctrl-C);
    * a closed stdout (``rip-compile ... | head -0``) is the reader's choice, not an error:
      stdout is pointed at /dev/null so Python's exit flush cannot fail either, and the
      work's code stands (0 when the pipe closed before it returned);
    * any other exception is a bug: one line naming it, a hint to report it, exit 70.
    """
    try:
        code = work()
        sys.stdout.flush()  # a closed pipe shows up here, not in Python's exit handler
        return code
    except RipError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED if interrupted is None else interrupted
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_OK
    except Exception as e:  # a bug: one line, not a traceback (RIP_TRACEBACK=1 shows it)
        if os.environ.get("RIP_TRACEBACK"):
            raise
        words = " ".join(str(e).split())[:200]
        print(
            f"{prog}: internal error: {type(e).__name__}: {words} ({REPORT_HINT}; "
            "RIP_TRACEBACK=1 shows the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _silence_stdout() -> None:
    """Point the stdout file descriptor at /dev/null: the reader has gone, and Python's own
    flush at exit would otherwise print 'Exception ignored ... BrokenPipeError'."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (pytest's capture)
        pass
