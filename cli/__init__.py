"""Command-line entry points. Each parses its arguments, calls the library, prints, and hands
its work to ``guarded``: the one place a RipError becomes one line on stderr and its exit
code (the codes are listed in ``rip.errors``)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from rip.errors import RipError


def guarded(prog: str, work: Callable[[], int], *, interrupted: int | None = None) -> int:
    """Run ``work`` and return its exit code; a RipError prints ``prog: error: message`` and
    returns the error's exit code. Ctrl-C returns ``interrupted`` when given (a tool that
    waits for a board), and is raised otherwise."""
    try:
        return work()
    except RipError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        if interrupted is None:
            raise
        return interrupted
