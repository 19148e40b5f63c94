"""Text from a device or a file made safe to print on a terminal.

A board's serial output, a model's tensor names, a file's contents: any of them may hold
ESC, BEL, backspace, a carriage return or a C1 control (0x80-0x9f), which a terminal acts
on (moving the cursor, rewriting a line, changing its title) instead of showing. Before
rip prints such text, every control character but tab is replaced by a visible escape
(``\\x1b``), so nothing is hidden and nothing acts. Unicode bidirectional overrides
(U+202A-U+202E, U+2066-U+2069), which reorder what a line shows, are escaped as well.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` as one line with every control character escaped (newlines included)."""
    return _UNSAFE.sub(_escape, text)


def printable_lines(text: str) -> str:
    """``text`` with its line structure kept (``\\n`` stays) and every other control
    character escaped."""
    return "\n".join(printable(line) for line in text.split("\n"))
