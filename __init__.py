"""rip: Right In-Place convolution compiler for int8 TFLite models on microcontrollers.

The Python API (``rip.api``: ``plan``, ``emit``, ``reference``, their result types and
errors) is re-exported here and imported on first use, so that
``import rip`` and every ``import rip.<stage>`` stay light."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from rip.api import (
        BuildError,
        Compilation,
        Fit,
        FitError,
        ModelError,
        OptionError,
        OutputError,
        Reference,
        RipError,
        StrategyPlan,
        emit,
        plan,
        reference,
    )

__all__ = [
    "BuildError",
    "Compilation",
    "Fit",
    "FitError",
    "ModelError",
    "OptionError",
    "OutputError",
    "Reference",
    "RipError",
    "StrategyPlan",
    "__version__",
    "emit",
    "plan",
    "reference",
]


def __getattr__(name: str) -> Any:
    """``rip.plan`` and the rest of the API, imported from ``rip.api`` when first used; an
    AttributeError for any other name (so ``from rip import compiler`` imports the
    submodule)."""
    if name in __all__:
        from rip import api

        return getattr(api, name)
    raise AttributeError(f"module 'rip' has no attribute {name!r}")
