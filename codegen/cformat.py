"""C literals for emitted code, used as Jinja2 filters by every template."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


def c_array(values: Iterable[int] | np.ndarray, per_line: int = 16) -> str:
    """The body of a C array initializer: integers, ``per_line`` to a line."""
    flat = [
        int(v)
        for v in np.asarray(list(values) if not isinstance(values, np.ndarray) else values).ravel()
    ]
    lines = [
        ", ".join(str(v) for v in flat[i : i + per_line]) for i in range(0, len(flat), per_line)
    ]
    return ",\n    ".join(lines) if lines else "0"


_INT8_TEXT = [str(v) for v in range(-128, 128)]  # index: the byte XOR 0x80


def c_int8_array(data: bytes, per_line: int = 24) -> str:
    """Raw bytes as int8 literals (``c_array``'s text, from a table of the 256 literals:
    a 16 MiB tensor took 700 MB and 25 s as one Python int and str per element)."""
    words = [_INT8_TEXT[i] for i in (np.frombuffer(data, dtype=np.uint8) ^ 0x80).tolist()]
    lines = [", ".join(words[i : i + per_line]) for i in range(0, len(words), per_line)]
    return ",\n    ".join(lines) if lines else "0"


def c_ident(name: str) -> str:
    """A C identifier from any model or tensor name."""
    out = "".join(ch if ch.isalnum() else "_" for ch in name)
    return out if out and not out[0].isdigit() else f"m_{out}"


def c_comment(text: object) -> str:
    """Any text made safe inside a /* */ comment (a tensor name may hold ``*/``)."""
    return str(text).replace("*/", "* /").replace("/*", "/ *")


def shape(dims: Iterable[int]) -> str:
    """A tensor shape as comments print it: ``1x96x96x3`` (a scalar is ``1``)."""
    return "x".join(str(d) for d in dims) or "1"


def c_float(value: float) -> str:
    """A float literal that reads back as the same float32 (9 significant digits), always
    with a point or an exponent so that the ``f`` suffix is legal: ``0.00392156886f``."""
    if not math.isfinite(value):
        raise ValueError(f"no C float literal for {value}")
    text = f"{float(value):.9g}"
    if not any(ch in text for ch in ".eE"):
        text += ".0"
    return f"{text}f"


FILTERS = {
    "c_float": c_float,
    "c_array": c_array,
    "c_int8_array": c_int8_array,
    "c_ident": c_ident,
    "c_comment": c_comment,
    "shape": shape,
}
