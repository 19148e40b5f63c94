"""The words every stage shares, one vocabulary each: execution strategy, placer, layer
layout, tap order, traversal order, how an op's output overlays the input it overwrites, and
a fused activation.

Each is a ``str`` enum: members compare equal to their value, so JSON, command-line choices
and messages keep the plain words (``"rip"``, ``"dense"``) while code gets a closed set.
"""

from __future__ import annotations

from enum import Enum
from typing import TypeVar

from rip.core.errors import OptionError

W = TypeVar("W", bound="Word")


class Word(str, Enum):
    """A str enum that prints as its value (``f"{Layout.DENSE}"`` is ``dense``, and
    ``f"{Layout.DENSE!r}"`` is ``'dense'``), so messages read the same as plain words."""

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return repr(self.value)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(m.value for m in cls)

    @classmethod
    def parse(cls: type[W], value: object, what: str) -> W:
        """The member named ``value``; an OptionError naming ``what`` and the members
        otherwise (the API's typed error for a bad word)."""
        try:
            return cls(value)
        except ValueError:
            raise OptionError(
                f"{what} must be one of {', '.join(cls.values())}, got {value!r}"
            ) from None


class Strategy(Word):
    """Which in-place candidates a plan may use (allocator.planning.strategies)."""

    DUAL = "dual"  # nothing in place
    TINYENGINE = "tinyengine"  # depthwise channel in place only: the paper's baseline
    RIP = "rip"  # every candidate of Appendix I
    FUSED = "fused"  # RiP plus fused, row-streamed convolution chains (issue 12)


# Not a strategy but the rule that picks one: the selectable strategy with the lowest total
# activation RAM (allocator.planning.selection); what --strategy and rip.plan default to.
BEST_STRATEGY = "best"


def parse_strategy(value: object) -> Strategy | None:
    """A strategy's word, or ``BEST_STRATEGY`` (None: select the best); an OptionError
    naming every accepted word otherwise."""
    if value == BEST_STRATEGY or value is None:
        return None
    if value in Strategy.values():
        return Strategy(value)
    words = ", ".join((BEST_STRATEGY, *Strategy.values()))
    raise OptionError(f"strategy must be one of {words}, got {value!r}")


class Placer(Word):
    MILP = "milp"  # Pyomo + SCIP, optimal or best within the time limit
    FIRSTFIT = "firstfit"  # TinyEngine's greedy placer


class WeightsIn(Word):
    """Where inference reads the model's constant data on a board with flash (issue 26,
    allocator/planning/residency.py)."""

    AUTO = "auto"  # SRAM: all where it fits beside the arena, else what gains most
    FLASH = "flash"  # in place from flash through the XIP cache, thrashing filters staged
    SRAM = "sram"  # SRAM, copied at start-up; refused when it does not fit


class Layout(Word):
    """How a convolution's input is stored: with its padding materialised (Theorem 4) or
    dense, padding never stored (Theorem 13)."""

    PADDED = "padded"
    DENSE = "dense"


class Taps(Word):
    """Where a kernel reads its taps: the receptive field gathered first (sigma = 0) or
    straight from the workspace (sigma = C_out), Eq. 6."""

    GATHER = "gather"
    WORKSPACE = "workspace"


class Order(Word):
    """Output traversal: row-major, column-major (Sec. 5.3), or the smaller of the two."""

    ROW = "row"
    COL = "col"
    BEST = "best"


class InPlaceKind(Word):
    """How an op's output overlays the input it overwrites: the one relation the planner
    places (allocator) and the kernels execute (codegen)."""

    RIP = "rip"  # output starts `gap` bytes below its input; gather-first conv and pooling
    CHANNEL = "channel"  # depthwise: same base, one channel plane at a time
    REVERSE = "reverse"  # nearest upsampling: same base, traversed backwards (Theorem 14)
    ELEMENTWISE = "elementwise"  # same base, each output reads only its own index
    FUSED = "fused"  # a fused chain's output starts `gap` bytes below the chain's input

    @property
    def exact(self) -> bool:
        """The output must start exactly at its input (no gap can be traded for a shift)."""
        return self in (InPlaceKind.CHANNEL, InPlaceKind.REVERSE)


class Activation(Word):
    """A fused activation, TFLite's ``ActivationFunctionType`` by name. The int8 kernels
    apply the clamping ones (`clamps`) to their output; the reader refuses the others."""

    NONE = "NONE"
    RELU = "RELU"
    RELU_N1_TO_1 = "RELU_N1_TO_1"
    RELU6 = "RELU6"
    TANH = "TANH"
    SIGN_BIT = "SIGN_BIT"

    @property
    def clamps(self) -> bool:
        return self not in (Activation.TANH, Activation.SIGN_BIT)
