"""Make untrusted transcript text safe for a terminal: nothing in it is ever interpreted.

One sanitizer for everything that reaches a screen (the app, the report, exports someone may `cat`):

- **Control characters are made visible, never emitted.** C0 controls except newline and tab
  (so ESC, BEL, backspace, a lone carriage return, form feed...), DEL and the C1 controls
  (U+0080-U+009F: U+009B is a one-character CSI in some terminals) become escapes such as `\\x1b`,
  so CSI sequences (`\\x1b[31m`), OSC 8 links (`\\x1b]8;;http://x\\x1b\\\\`), OSC 52 clipboard
  writes (`\\x1b]52;c;...\\x07`) and BEL reach the screen as text. A CR LF pair is an ordinary line
  end and reads as a newline; a lone CR (which would let later text overwrite earlier text) is
  escaped. A tab is kept (it moves the cursor, it rewrites nothing).
- **Invisible characters that change what is read are made visible:** the bidi embeddings,
  overrides and isolates (U+202A-U+202E, U+2066-U+2069, the "Trojan Source" characters) and the
  bidi marks U+200E, U+200F, U+061C; the line and paragraph separators U+2028/U+2029; the
  zero-width space U+200B, word joiner and invisible operators U+2060-U+2064 and the BOM U+FEFF
  (they hide text, or split a word so a search misses it); the tag characters U+E0000-U+E007F
  (invisible text that models read: "ASCII smuggling"); lone surrogates (they cannot even be
  written to a UTF-8 terminal).
- **Kept as they are:** the zero-width joiner and non-joiner U+200C/U+200D (emoji sequences and
  several scripts need them) and variation selectors, because they change how text looks, not
  what it says.
- Escapes read `\\xNN` (below U+0100), `\\uNNNN` or `\\UNNNNNNNN`. A backslash already in the
  text is left alone, so a literal `\\x1b` typed in content looks the same as an escaped ESC: this
  is a viewer, and the JSON export keeps the exact text.
- **Markup is never parsed:** `visible` does not touch `[`; callers build `rich.text.Text` (or a
  Textual widget with `markup=False`) from the result, never a markup string.
- `json_safe` does the same for JSON text: serializers escape C0 controls themselves but emit DEL,
  C1, bidi and the other characters above raw; it escapes them as `\\uNNNN` (still valid JSON,
  the same string when decoded).
"""

from __future__ import annotations

import json
import re

import msgspec

_INVISIBLE = (
    "\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
    "\ud800-\udfff\U000e0000-\U000e007f"
)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + _INVISIBLE + "]")
_JSON_UNSAFE = re.compile("[\x7f-\x9f" + _INVISIBLE + "]")
_JSON_UNSAFE_UTF8 = re.compile(
    rb"\x7f|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8b\x8e\x8f\xa8-\xae]|\xe2\x81[\xa0-\xa4\xa6-\xa9]"
    rb"|\xef\xbb\xbf|\xed[\xa0-\xbf]|\xf3\xa0[\x80\x81]"
)
"""`_JSON_UNSAFE`'s characters as their UTF-8 (a lone surrogate as `surrogatepass` writes it)."""
_NOT_LEADS = bytes(sorted(set(range(256)) - set(b"\x7f\xc2\xd8\xe2\xed\xef\xf3")))
"""Every byte but the first bytes of `_JSON_UNSAFE_UTF8`'s matches."""
_LEADS_LOOKED_AT = 4096
"""Up to how many such first bytes `json_safe` looks at one by one (beyond: the regex scans all)."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str, *, newlines: bool = True) -> str:
    """`text` with every control and hiding character made visible; CR LF reads as a newline.

    Newlines (and tabs) are kept unless `newlines` is False: then a newline reads `⏎ ` and a tab a
    space, so the result is one line.
    """
    out = _CONTROL.sub(_escape, text.replace("\r\n", "\n"))
    if not newlines:
        out = out.replace("\n", "⏎ ").replace("\t", " ")
    return out


def one_line(text: str, width: int = 80) -> str:
    """The first non-empty line of `text`, made visible and cut to `width` characters."""
    for line in text.splitlines():
        if line.strip():
            line = visible(line.strip(), newlines=False)
            return line if len(line) <= width else line[: width - 1] + "…"
    return ""


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(value: object) -> str:
    """`value` (a struct of the report, or plain data) as JSON indented by two spaces, made safe by
    `json_safe`. A string that cannot be UTF-8 (a file name that is not: Python holds its bytes as
    lone surrogates) is written as `\\udcff` escapes, which JSON allows and `os.fsencode` undoes."""
    try:
        raw = msgspec.json.encode(value)
    except UnicodeEncodeError:
        return json.dumps(msgspec.to_builtins(value), indent=2)  # (ASCII: nothing for json_safe)
    return json_safe(msgspec.json.format(raw, indent=2).decode())


def json_safe(json_text: str) -> str:
    """Serialized JSON with DEL, C1, bidi and hiding characters escaped as `\\uNNNN`.

    Only valid JSON text is expected (these characters can then only be inside strings, where an
    escape means the same character), so the decoded value is unchanged.
    """
    if json_text.isascii() and "\x7f" not in json_text:
        return json_text  # (nothing to escape: every other such character is beyond ASCII)
    if not _may_be_unsafe(json_text.encode("utf-8", "surrogatepass")):
        return json_text
    return _JSON_UNSAFE.sub(_json_escape, json_text)


def _may_be_unsafe(utf8: bytes) -> bool:
    """Whether `utf8` holds one of `_JSON_UNSAFE`'s characters (False: it surely does not).

    A report's text holds a few characters beyond ASCII (a dash, a middle dot) and, mostly, none
    of these: the bytes that can begin one are picked out in one pass (`translate`, C speed), and
    only those are looked at; the regex over the whole text took 20-40 ms of a 1.8 MB report."""
    leads = utf8.translate(None, _NOT_LEADS)
    if not leads:
        return False
    if len(leads) > _LEADS_LOOKED_AT:
        return _JSON_UNSAFE_UTF8.search(utf8) is not None
    match = _JSON_UNSAFE_UTF8.match
    for lead in set(leads):
        byte = bytes((lead,))
        i = utf8.find(byte)
        while i >= 0:
            if match(utf8, i):
                return True
            i = utf8.find(byte, i + 1)
    return False
