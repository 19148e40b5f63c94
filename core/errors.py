"""Every user-facing error, and its exit code: each becomes one line at the CLI edge
(``rip.cli.guarded``), as Vela's ``errors.py``.

Exit codes (the README's table; every CLI uses them): 0 ok, 1 a result that does not match
TFLite Micro (or the firmware reported an error), 2 bad input (the default: a model, an
argument, a path that cannot be written), 3 a plan that does not fit the board, 4 ``--run``
ran but there is no TFLite Micro reference to compare with, 5 a build or run of a valid
project failed, 6 no space left on a device (a disk or quota filled while rip wrote), 70 an
internal error (a plan the replay rejects is never output, an unexpected exception),
128 + N stopped by signal N: 130 Ctrl-C (SIGINT), 129 SIGHUP, 143 SIGTERM. The modules
that raise an error import it from here; the old homes (``rip.codegen.emit.CodegenError``,
...) re-import it so both names work.
"""

from __future__ import annotations

import errno

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_BAD_INPUT = 2
EXIT_DOES_NOT_FIT = 3
EXIT_NO_REFERENCE = 4
EXIT_BUILD_FAILED = 5
EXIT_NO_SPACE = 6
EXIT_INTERNAL = 70
EXIT_SIGNAL_BASE = 128  # stopped by signal N: 128 + N, as a shell reports it
EXIT_HANGUP = EXIT_SIGNAL_BASE + 1  # SIGHUP: the terminal went away
EXIT_INTERRUPTED = EXIT_SIGNAL_BASE + 2  # SIGINT: Ctrl-C
EXIT_TERMINATED = EXIT_SIGNAL_BASE + 15  # SIGTERM: kill, a CI runner's cancel, systemd


class RipError(Exception):
    """A problem with the user's input; the message names the field, file or operator."""

    exit_code = 2


# --- input: layers, models, graphs ----------------------------------------------------------
class LayerError(RipError):
    """A layer description that no bound or simulator can accept."""


class ModelError(RipError):
    """A model file rip cannot read or does not support (bad file, unsupported operator or
    data type); the message starts with the file name."""


class GraphError(RipError):
    """A graph whose shapes contradict its operator parameters."""


# --- planning -----------------------------------------------------------------------------
class PlacementError(RipError):
    """A placer could not produce a plan (e.g. the solver is unavailable). The MILP's
    callers fall back to first fit, so one that reaches the CLI is an internal error."""

    exit_code = EXIT_INTERNAL


class ReplayError(RipError):
    """A plan that would corrupt a live tensor: an internal error, never emitted."""

    exit_code = 70


class PlanError(RipError):
    """A plan that breaks its own problem's rules (``allocator.planning.check``): an
    internal error, like a replay failure."""

    exit_code = 70


class FitError(RipError):
    """The plan needs more SRAM than the board has. ``strategies`` and ``boards`` name
    what would fit instead (the message says so too): other strategies on this board, and
    other boards the same plan fits."""

    exit_code = 3

    def __init__(
        self, message: str, strategies: tuple[str, ...] = (), boards: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.strategies = strategies
        self.boards = boards


# --- code generation ----------------------------------------------------------------------
class ParamsError(RipError):
    """An operator TFLite Micro's int8 kernels refuse at Prepare, or rip's kernels cannot run."""


class LoweringError(RipError):
    """An op the code generator cannot emit (it names the op, its index and output)."""


class CodegenError(RipError):
    """A model that cannot be turned into code (e.g. a graph-only model without weights)."""


class ReferenceRunError(RipError):
    """The reference interpreter could not run the model."""


# --- projects, builds and boards ----------------------------------------------------------
class BuildError(RipError):
    """The emitted project did not build or run; the message carries the tool's words."""

    exit_code = 5


class PicoSdkMissing(RipError):
    """``--build`` without a usable Pico SDK: the message says how to get one."""

    exit_code = 5  # a build that could not run, as BuildError


class EmulatorMissing(RipError):
    """``--emulate`` without what it runs on (Node.js, the rp2040js package, the RP2040 boot
    ROM): the message says where to get it."""

    exit_code = 5  # a run that could not start, as PicoSdkMissing


class Uf2Error(RipError):
    """A UF2 file that is not well formed, or a BIN that cannot become one."""


class FlashError(RipError):
    """The UF2 could not be put on a board; the message says what to do."""


class NoDeviceError(RipError):
    """No board to talk to: none found, or the named port would not open."""


class EmulatedFitError(FitError):
    """The model's code and weights, or its RAM, do not fit the emulated (QEMU) machine."""


class NoAnswerError(RipError):
    """The emulated board printed no result line in time (as rip-verify's timeout)."""

    exit_code = EXIT_BAD_INPUT


class FirmwareError(RipError):
    """The firmware ran but reported a kernel error or a fault."""

    exit_code = EXIT_MISMATCH


# errno values that mean "no space left": the disk is full, or the user's quota is spent.
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})


def is_no_space(error: BaseException) -> bool:
    """True for an OSError that says the device (or the quota) is full."""
    return isinstance(error, OSError) and error.errno in NO_SPACE_ERRNOS


class DiskFullError(RipError):
    """No space left on the device (ENOSPC) or the quota is spent (EDQUOT) while rip wrote
    a file or a build wrote its objects: not the input's fault, so not exit 2; whatever was
    being written was removed (``-o`` is left as it was)."""

    exit_code = EXIT_NO_SPACE


class OptionError(RipError):
    """An option rip does not accept (an unknown board, strategy or placer, a number out of
    range); the message names the option and what it accepts (exit 2)."""


class OutputError(RipError):
    """A result file or folder (the sweep's CSV, ``-o DIR``, ``--plot``) that cannot be
    written: the path the user gave is the bad input (exit 2)."""


class Interrupted(RipError):
    """Ctrl-C (SIGINT), also when a solver or a child process caught it first: the work
    stopped and nothing was written."""

    exit_code = EXIT_INTERRUPTED
