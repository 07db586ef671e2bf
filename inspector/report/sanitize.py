"""Make untrusted transcript text safe for a terminal: nothing in it is ever interpreted.

Control characters (C0 except newline and tab, DEL, C1) are shown as visible escapes, so CSI
sequences, OSC 8 links, OSC 52 clipboard writes and BEL reach the screen as text like `\\x1b]52;`
and never as commands. Markup is never parsed: callers build `rich.text.Text` from the result,
never a markup string.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    ch = match.group(0)
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, newlines: bool = True) -> str:
    """`text` with every control character made visible; newlines kept unless `newlines` is False."""
    out = _CONTROL.sub(_escape, text)
    if not newlines:
        out = out.replace("\r\n", "\n").replace("\n", "⏎ ").replace("\t", " ")
    return out


def one_line(text: str, width: int = 80) -> str:
    """The first non-empty line of `text`, made visible and cut to `width` characters."""
    for line in text.splitlines():
        if line.strip():
            line = visible(line.strip(), newlines=False)
            return line if len(line) <= width else line[: width - 1] + "…"
    return ""
