"""Untrusted content never reaches a terminal as markup or escape sequences (docs/DESIGN.md §5, §8).

A transcript carries CSI, OSC 8 and OSC 52 sequences, BEL, a C1 CSI, a bidi override and Rich
markup in a user message, a tool name, a tool result, the model name, the title and a rewound
branch. The text report, the JSON and every export show all of it as visible text and emit none
of it.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from inspector.formats import load
from inspector.model.sanitize import json_safe, one_line, visible
from inspector.replay import Replay
from inspector.report.export import export, md
from inspector.report.render import print_report
from inspector.report.summary import replay_report
from tests.unit.test_hardening_inputs import SESSION, cc_assistant, cc_user, jsonl

CSI = "\x1b[31m"
OSC8 = "\x1b]8;;http://x\x1b\\"
OSC52 = "\x1b]52;c;SGVsbG8=\x07"
BEL = "\x07"
C1_CSI = "\x9b2J"
BIDI = "\u202e"
MARKUP = ("[bold red]x[/]", "[link=http://x]y[/link]")
PAYLOAD = f"A{CSI}B{OSC8}C{OSC52}D{BEL}E {MARKUP[0]} {MARKUP[1]} F{C1_CSI}G{BIDI}H"
VISIBLE = visible(PAYLOAD, newlines=False)
RAW = ("\x1b", "\x07", "\x9b", "\u202e")
"""What must never be emitted from content: ESC (so no CSI or OSC), BEL, C1 CSI, bidi override."""


def test_visible_escapes_every_control_and_hiding_character() -> None:
    assert visible(CSI) == "\\x1b[31m"
    assert visible(OSC8) == "\\x1b]8;;http://x\\x1b\\"
    assert visible(OSC52) == "\\x1b]52;c;SGVsbG8=\\x07"
    assert visible("lone \x1b esc, \x08 backspace, \x7f del, \x85 nel, \x9b csi") == (
        "lone \\x1b esc, \\x08 backspace, \\x7f del, \\x85 nel, \\x9b csi"
    )
    assert visible("a\r\nb\rc") == "a\nb\\x0dc"  # CR LF is a line end; a lone CR would overwrite
    assert visible("tab\tkept\nnewline kept") == "tab\tkept\nnewline kept"
    assert visible("a\tb\nc", newlines=False) == "a b⏎ c"
    assert visible("\u202eevil\u202c \u2066x\u2069 \u200e\u200f\u061c") == (
        "\\u202eevil\\u202c \\u2066x\\u2069 \\u200e\\u200f\\u061c"
    )
    assert visible("zero\u200bwidth\u2060joiner\ufeff") == "zero\\u200bwidth\\u2060joiner\\ufeff"
    assert visible("tag\U000e0041\U000e007f") == "tag\\U000e0041\\U000e007f"
    assert visible("lone \ud800 surrogate") == "lone \\ud800 surrogate"
    assert visible("\u2028\u2029") == "\\u2028\\u2029"
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # ZWJ sequences and scripts keep working
    assert visible(family) == family and visible("نی\u200cم") == "نی\u200cم"
    assert visible("[bold]not markup[/]") == "[bold]not markup[/]"  # markup is the caller's job (Text)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", visible("".join(map(chr, range(0xA0)))))


def test_one_line_is_visible_and_cut() -> None:
    assert one_line(f"\n\n  {PAYLOAD}\nsecond") == one_line(VISIBLE, 80)
    assert len(one_line("x" * 500, 40)) == 40 and one_line("x" * 500, 40).endswith("…")
    assert one_line(f"{CSI}" * 100, 10) == "\\x1b[31m\\…"


def test_json_safe_escapes_what_json_encoders_leave_raw() -> None:
    text = json.dumps({"k": PAYLOAD + "\x7f\u2028\U000e0041"}, ensure_ascii=False)
    assert "\x9b" in text and "\u202e" in text  # encoders escape C0 only
    safe = json_safe(text)
    assert not re.search("[\x7f-\x9f\u202e\u2028]", safe) and "\U000e0041" not in safe
    assert json.loads(safe) == json.loads(text)
    # all ASCII: DEL is the one character left to escape; anything else comes back as it was
    assert json_safe('{"k": "a\x7fb"}') == '{"k": "a\\u007fb"}'
    plain = json.dumps({"k": "plain text"})
    assert json_safe(plain) is plain


def hostile_session(folder: Path) -> Path:
    """A Claude Code session with the payload in every place content can reach the screen."""
    records = [
        {"type": "custom-title", "customTitle": PAYLOAD, "sessionId": SESSION},
        cc_user("u1", None, f"task: {PAYLOAD}"),
        cc_assistant(
            "a1",
            "u1",
            "m1",
            [{"type": "tool_use", "id": "t1", "name": PAYLOAD, "input": {"command": PAYLOAD}}],
            model=PAYLOAD,
        ),
        cc_user("u2", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": f"out: {PAYLOAD}"}]),
        cc_user("u9", "u1", f"rewound: {PAYLOAD}"),  # a branch left behind by a rewind
        cc_assistant("a2", "u2", "m2", [{"type": "text", "text": "Done."}], model=PAYLOAD),
    ]
    path = folder / "hostile.jsonl"
    path.write_bytes(jsonl(records))
    return path


def terminal_text(replay: Replay, force_terminal: bool) -> str:
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=400,
        force_terminal=force_terminal,
        color_system="truecolor" if force_terminal else None,
    )
    print_report(replay_report(replay, step=len(replay)), console)
    return buf.getvalue()


@pytest.fixture
def replay(tmp_path: Path) -> Replay:
    t = load(hostile_session(tmp_path))
    assert t.model == PAYLOAD and t.title == PAYLOAD and t.abandoned
    return Replay.open(t)


def test_text_report_shows_content_literally_and_emits_none_of_it(replay: Replay) -> None:
    plain = terminal_text(replay, force_terminal=False)
    styled = terminal_text(replay, force_terminal=True)
    for raw in RAW:
        assert raw not in plain, repr(raw)
    for raw in RAW[1:]:
        assert raw not in styled, repr(raw)
    assert CSI not in styled and "\x1b]" not in styled  # Rich's own styles only: no content CSI, no OSC
    # visible: the model (head), the title, the tool (tool calls table), the rewound branch's preview
    assert plain.count(VISIBLE) >= 2, plain
    assert f"rewound: {VISIBLE}"[:50] in plain  # cut to the column's width
    for markup in MARKUP:
        assert markup in plain  # shown, not interpreted


def test_json_report_escapes_control_characters(replay: Replay) -> None:
    raw_json = msgspec.json.encode(replay_report(replay, step=len(replay))).decode()
    assert "\x1b" not in raw_json and "\x07" not in raw_json  # JSON escapes C0 itself
    exported = export(replay, "json")
    for raw in RAW:
        assert raw not in exported, repr(raw)
    data = json.loads(exported)
    assert data["model"] == PAYLOAD and data["title"] == PAYLOAD and PAYLOAD in data["tool_calls"]


@pytest.mark.parametrize("fmt", ["md", "html", "svg"])
def test_exports_show_content_literally_and_emit_none_of_it(replay: Replay, fmt: str) -> None:
    out = export(replay, fmt)
    for raw in RAW:
        assert raw not in out, repr(raw)
    if fmt == "md":
        assert md(VISIBLE) in out  # the tool name, the model
        # the user message and the tool result, as one-line summaries cut to 100 characters
        assert md(("task: " + VISIBLE)[:90]) in out and md(("out: " + VISIBLE)[:90]) in out
        assert "[bold" not in out.replace("\\[bold", "")  # every bracket escaped: no link, no image
    elif fmt == "html":
        import html

        assert html.escape(VISIBLE) in out and html.escape(("out: " + VISIBLE)[:90]) in out
        assert "<script" not in out and 'http-equiv="Content-Security-Policy"' in out
    else:
        import xml.etree.ElementTree as ET

        ET.fromstring(out)  # well-formed: no raw control characters
        assert "\\x1b[31m" in out.replace("&#160;", " ")


def test_skipped_record_types_are_text_not_markup(tmp_path: Path) -> None:
    """An unknown record type is counted under its own name: that name is content too."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        jsonl(
            [
                cc_user("u1", None, "fix the bug"),
                {"type": f"odd {MARKUP[1]} {CSI}", "uuid": "w"},
                cc_assistant("a1", "u1", "m1", "Done."),
            ]
        )
    )
    replay = Replay.open(load(path))
    for fmt in ("md", "html", "json"):
        out = export(replay, fmt)
        assert "\x1b" not in out
    plain = terminal_text(replay, force_terminal=False)
    assert "\x1b" not in plain


def test_skipped_record_types_are_not_interpreted_as_markup(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        jsonl(
            [
                cc_user("u1", None, "fix the bug"),
                {"type": f"odd {MARKUP[1]}", "uuid": "w"},
                cc_assistant("a1", "u1", "m1", "Done."),
            ]
        )
    )
    styled = terminal_text(Replay.open(load(path)), force_terminal=True)
    assert "\x1b]8;" not in styled and MARKUP[1] in styled


def test_explain_shows_message_ids_literally(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from inspector.cli import main

    path = tmp_path / "s.jsonl"
    late = f"zz{OSC52}"
    path.write_bytes(
        jsonl([cc_user("u1", None, "hi"), cc_assistant("a1", "u1", "m1", "ok"), cc_user(late, "a1", "late")])
    )
    assert main(["explain", str(path), "zz"]) == 0
    out = capsys.readouterr().out
    assert "never sent" in out and "\x1b" not in out and "\x07" not in out


_EDGES = "".join(
    chr(c)
    for lo, hi in (
        (0x7E, 0xA1),
        (0xB6, 0xB8),
        (0x61B, 0x61D),
        (0x2009, 0x2030),
        (0x205F, 0x206A),
        (0x2212, 0x2213),
        (0xFEFE, 0xFF00),
        (0xD7FF, 0xD801),
        (0xDFFF, 0xE001),
        (0xE0000, 0xE0001),
        (0xE007E, 0xE0081),
        (0x1F600, 0x1F601),
    )
    for c in range(lo, hi + 1)
)
"""Characters on both sides of every range `json_safe` escapes, and a few it keeps."""


@given(st.text(alphabet=st.sampled_from("ab \n" + _EDGES), max_size=60))
def test_json_safe_finds_every_unsafe_character_its_regex_finds(text: str) -> None:
    from inspector.model.sanitize import _JSON_UNSAFE, _json_escape, _may_be_unsafe

    assert _may_be_unsafe(text.encode("utf-8", "surrogatepass")) == (_JSON_UNSAFE.search(text) is not None)
    assert json_safe(text) == _JSON_UNSAFE.sub(_json_escape, text)


def test_json_safe_looks_at_each_candidate_byte() -> None:
    # many candidates before the one unsafe character, and past the count looked at one by one
    for n in (3, 5000):
        text = "–·" * n + "x\u202ey"
        assert json_safe(text).endswith("x\\u202ey")
        assert json_safe("–·" * n) == "–·" * n
