"""Names that travel: a model's and a board's name go into C strings, Makefile and CMake
comments, the result line a board prints (``model=<name>``), ``expected.json`` and file
names. One safe character set for all of them: ASCII letters, digits and ``_ . + -``, so
that no name can end a string or a comment, start a Make or CMake expansion (``$``), hold
a space the result line would split at, or a control character a terminal would act on.
"""

from __future__ import annotations

import re

NAME_CHARS = "A-Za-z0-9_.+-"
MAX_NAME = 128
NAME = re.compile(f"[{NAME_CHARS}]{{1,{MAX_NAME}}}", re.ASCII)
_OTHER = re.compile(f"[^{NAME_CHARS}]", re.ASCII)


def token(name: str, default: str = "model") -> str:
    """``name`` in the safe set: every other character becomes ``_``, at most 128 of them
    (``default`` for an empty name)."""
    return _OTHER.sub("_", name)[:MAX_NAME] or default


def is_token(name: str) -> bool:
    """True when ``name`` is already in the safe set."""
    return NAME.fullmatch(name) is not None
