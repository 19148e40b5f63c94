"""JSON in and out, strictly: every JSON text rip writes is valid JSON (RFC 8259 has no
NaN or Infinity, which Python's ``json`` writes by default), and every JSON file rip reads
holds only finite numbers (Python's ``json`` reads ``NaN``, ``Infinity`` and ``1e400``
as floats that make later arithmetic, and the waits computed from it, unbounded).

Every ``json.dump``/``json.dumps`` in rip goes through :func:`dumps` or :func:`dump`
(``tests/test_reliability_json.py`` checks the source tree for others).
"""

from __future__ import annotations

import json
import math
from typing import IO, Any


class JsonNumberError(ValueError):
    """A JSON text holding NaN, Infinity or a number too large for a float."""


def dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` that refuses NaN and Infinity (ValueError) instead of writing them."""
    return json.dumps(obj, allow_nan=False, **kwargs)


def dump(obj: Any, fp: IO[str], **kwargs: Any) -> None:
    """``json.dump`` that refuses NaN and Infinity (ValueError)."""
    json.dump(obj, fp, allow_nan=False, **kwargs)


def _refuse_constant(name: str) -> float:
    raise JsonNumberError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonNumberError(f"{text[:40]} is too large for a number")
    return value


def loads(text: str) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity``, ``-Infinity`` and numbers that
    overflow a float (``1e400``): a JsonNumberError (a ValueError) naming the token. Deep
    nesting still raises RecursionError, integers of over 4,300 digits ValueError."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
