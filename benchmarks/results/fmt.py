"""How the page prints a value: the renderer formats, it never computes. Each helper takes
one value of the result data; ``None`` prints as the absence it is."""

from __future__ import annotations

NOT_MEASURED = "not measured in this run"
DASH = "–"


def b(n: int | None) -> str:
    """Bytes or counts: thousands separated."""
    return DASH if n is None else f"{n:,}"


def f(x: float | None, digits: int = 2) -> str:
    return DASH if x is None else f"{x:,.{digits}f}"


def pct(x: float | None, digits: int = 1) -> str:
    return DASH if x is None else f"{x:.{digits}f}%"


def g(x: float | None) -> str:
    """Short general form (the paper's x* column: 0.5, 3.3, 12)."""
    return DASH if x is None else f"{x:g}"


def ratio(fraction: str | None, decimal: float | None, digits: int = 3) -> str:
    """An exact fraction where the data has one (``"3/4"``), else the decimal."""
    if fraction:
        return fraction
    return f(decimal, digits)


def yes(v: bool | None) -> str:
    return DASH if v is None else ("yes" if v else "no")


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table, one list of cells per row."""
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out
