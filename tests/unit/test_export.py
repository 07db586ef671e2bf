"""Exports (`inspector.report.export`) and secret redaction (`inspector.report.redact`)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import msgspec
import pytest

from inspector.formats import load
from inspector.replay import Replay, ReplayError
from inspector.report.export import FORMATS, ExportError, export, ledger_table, md
from inspector.report.redact import redact, redact_value
from inspector.report.summary import Report, replay_report
from tests.unit.test_hardening_inputs import SESSION, cc_assistant, cc_user, cc_valid, jsonl

# -- redaction ------------------------------------------------------------------------------------
SECRETS: dict[str, str] = {
    "anthropic key": "sk-ant-api03-Xy7_Q2-abcdefGHIJKLmnopqrSTUVwxyz0123456789-ABCDEF_ghijkl",
    "openai key": "sk-proj-4fE5aB6cD7eF8gH9iJ0kL1mN2oP3qR4sT5uV6wX7yZ8",
    "openai legacy key": "sk-4fE5aB6cD7eF8gH9iJ0kT3BlbkFJL1mN2oP3qR4sT5uV6wX",
    "github token": "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "github oauth token": "gho_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "github fine-grained token": "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsT",
    "aws access key": "AKIAIOSFODNN7EXAMPLE",
    "aws secret key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "slack token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "google api key": "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "bearer token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "private key": "MIIEowIBAAKCAQEAwJz7cRz8k1w9eXAMPLEkeyMATERIALnotArealKEYatALL0123456789abcdef",
    "url password": "hunter2-Pa55word",
}
"""Each secret, by kind; SEEDED shows how each appears in text."""

SEEDED: dict[str, str] = {
    "anthropic key": f"export ANTHROPIC_API_KEY={SECRETS['anthropic key']}",
    "openai key": f"OPENAI_API_KEY='{SECRETS['openai key']}'",
    "openai legacy key": f"key {SECRETS['openai legacy key']} (old style)",
    "github token": f"git clone https://x-access-token:{SECRETS['github token']}@github.com/o/r.git",
    "github oauth token": f"token: {SECRETS['github oauth token']}",
    "github fine-grained token": f"GH_TOKEN={SECRETS['github fine-grained token']}",
    "aws access key": f"aws_access_key_id = {SECRETS['aws access key']}",
    "aws secret key": f"aws_secret_access_key = {SECRETS['aws secret key']}",
    "slack token": f"SLACK_BOT_TOKEN={SECRETS['slack token']}",
    "google api key": f"https://maps.googleapis.com/maps/api/js?key={SECRETS['google api key']}&v=3",
    "bearer token": f'curl -H "Authorization: Bearer {SECRETS["bearer token"]}" https://api.example.com',
    "private key": "-----BEGIN RSA PRIVATE KEY-----\n"
    + "\n".join(SECRETS["private key"][i : i + 32] for i in range(0, len(SECRETS["private key"]), 32))
    + "\n-----END RSA PRIVATE KEY-----",
    "url password": f"postgres://admin:{SECRETS['url password']}@db.internal:5432/app",
}


@pytest.mark.parametrize("kind", sorted(SEEDED))
def test_redact_removes_each_shape_and_keeps_the_text_around_it(kind: str) -> None:
    text = f"before {SEEDED[kind]} after"
    out = redact(text)
    assert SECRETS[kind] not in out
    for piece in SECRETS[kind].split("\n"):
        assert piece not in out
    assert out.startswith("before ") and out.endswith(" after")
    assert "[redacted: " in out
    assert redact(out) == out  # idempotent


def test_redact_names_what_it_removed() -> None:
    assert (
        redact(SEEDED["github token"])
        == "git clone https://x-access-token:[redacted: github token]@github.com/o/r.git"
    )
    assert redact("t " + SECRETS["github oauth token"]) == "t [redacted: github token]"
    assert redact(SEEDED["aws secret key"]) == "aws_secret_access_key = [redacted: aws secret key]"
    assert redact(SEEDED["bearer token"]).startswith(
        'curl -H "Authorization: Bearer [redacted: bearer token]"'
    )
    assert redact(SEEDED["url password"]) == "postgres://admin:[redacted: password]@db.internal:5432/app"
    assert redact(SEEDED["private key"]) == "[redacted: private key]"


def test_redact_leaves_ordinary_text_alone() -> None:
    ordinary = [
        "task-ant-x and desk-abc and sk-short",
        "Authorization: Bearer $TOKEN",
        "https://example.com/path:with:colons@not-a-password-form",
        "https://example.com:8080/x",
        "AKIA is a prefix, AKIAshort is not a key",
        "the word bearer alone",
        "def test_sk_ant_detection(): pass",
        "ghp_ short",
    ]
    for text in ordinary:
        assert redact(text) == text, text


def test_a_private_key_cut_before_its_end_line_is_still_removed() -> None:
    cut = "log:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\nc2gtZWQyNTUxOQ\nnext line of the log"
    out = redact(cut)
    assert "b3BlbnNz" not in out and "c2gtZWQy" not in out
    assert out == "log:\n[redacted: private key]\nnext line of the log"


def test_redact_value_walks_structures() -> None:
    value = {
        "env": {"KEY": SECRETS["anthropic key"]},
        "args": [SEEDED["slack token"], 3, None],
        SECRETS["google api key"]: 1,
    }
    out = json.dumps(redact_value(value))
    assert not any(
        s in out for s in (SECRETS["anthropic key"], SECRETS["slack token"], SECRETS["google api key"])
    )


# -- the exports ---------------------------------------------------------------------------------
def seeded_session(folder: Path) -> Path:
    """Every secret shape in a user message, a tool call's arguments, a tool result, a tool name,
    the title, a rewound branch and a file name in the folder path (kept: paths are not content)."""
    text = "\n".join(f"{kind}: {seeded} :end" for kind, seeded in SEEDED.items())
    records = [
        {"type": "custom-title", "customTitle": f"title {SEEDED['github token']} end", "sessionId": SESSION},
        cc_user("u1", None, f"please deploy\n{text}"),
        cc_assistant(
            "a1",
            "u1",
            "m1",
            [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": f"Bash_{SECRETS['aws access key']}",
                    "input": {"command": SEEDED["bearer token"], "env": {"TOKEN": SECRETS["slack token"]}},
                }
            ],
        ),
        cc_user("u2", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": f"ran it\n{text}"}]),
        cc_user("u9", "u1", f"rewound {SEEDED['openai key']} end"),
        cc_assistant("a2", "u2", "m2", [{"type": "text", "text": f"Done. {SEEDED['anthropic key']} end"}]),
    ]
    path = folder / "keys-in-path" / "session.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(jsonl(records))
    return path


@pytest.fixture
def seeded(tmp_path: Path) -> Replay:
    return Replay.open(load(seeded_session(tmp_path)))


def _pieces(secret: str) -> list[str]:
    """A secret and the parts of it an export could show on their own (the lines of a key block)."""
    return [secret, *(line for line in secret.split("\n") if len(line) >= 12)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_redacted_exports_hold_no_secret_and_keep_the_rest(seeded: Replay, fmt: str) -> None:
    out = export(seeded, fmt, redact=True)
    flat = out.replace("&#160;", " ")
    for kind, secret in SECRETS.items():
        for piece in [*_pieces(secret), secret[:24]]:
            assert piece not in out and piece not in flat, (kind, piece)
    assert "keys-in-path" in out  # paths are kept
    if fmt in ("md", "html"):
        assert "please deploy" in out and "ran it" in out and "[redacted: " in out.replace("\\", "")
    if fmt != "svg":  # the SVG shows the report only (no message text)
        assert "redacted: github token" in out.replace("\\", "") or "redacted: password" in out.replace(
            "\\", ""
        )


def test_unredacted_exports_do_show_the_secrets(seeded: Replay) -> None:
    """The check above means something: without --redact the secrets are there."""
    out = export(seeded, "md") + export(seeded, "html") + export(seeded, "json")
    assert SECRETS["aws access key"] in out  # in the tool name
    assert SECRETS["github token"][:20] in out  # in the title


def test_json_export_is_the_report(seeded: Replay) -> None:
    data = json.loads(export(seeded, "json"))
    report = msgspec.convert(data, Report)
    assert report.step == len(seeded) and report.layers is not None
    from inspector.report.summary import attach_cost

    expected = attach_cost(replay_report(seeded, step=len(seeded)), seeded.transcript)  # as `report --json`
    assert data == msgspec.json.decode(msgspec.json.encode(expected))
    assert json.loads(export(seeded, "json", step=1))["step"] == 1


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag not in ("meta", "br"):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack.pop() == tag, (tag, self.stack)


def test_markdown_html_and_svg_have_every_section(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(jsonl(cc_valid()))
    replay = Replay.open(load(path), policy="opencollab", window=36_000)
    text = export(replay, "md")
    for heading in (
        "# Context report: s.jsonl",
        "## Pipeline at request 2",
        "## Ledger at request 2",
        "## Context per request",
    ):
        assert heading in text
    assert "| # | message | role | tool | weight | per-tool budget |" in text
    assert md("fix the bug") in text and "Read" in text
    page = export(replay, "html", step=1)
    checker = _Checker()
    checker.feed(page)
    assert checker.stack == [] and "script" not in checker.tags and "img" not in checker.tags
    assert "Pipeline at request 1" in page and "Ledger at request 1" in page
    svg = export(replay, "svg")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and "Session" in svg


def test_ledger_table_gives_each_message_its_fate_in_each_layer(tmp_path: Path) -> None:
    """With a small window the old tool outputs are cleared: the table says so, layer by layer."""
    records = [cc_user("u0", None, "read everything")]
    parent = "u0"
    for i in range(12):
        records.append(
            cc_assistant(
                f"a{i}",
                parent,
                f"m{i}",
                [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": f"f{i}.py"}}],
                usage={"input_tokens": 5, "cache_read_input_tokens": 4_000 * (i + 1), "output_tokens": 5},
            )
        )
        records.append(
            cc_user(
                f"r{i}",
                f"a{i}",
                [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x = 1\n" * 2_000}],
            )
        )
        parent = f"r{i}"
    records.append(
        cc_assistant(
            "end", parent, "mend", "Done.", usage={"input_tokens": 5, "cache_read_input_tokens": 52_000}
        )
    )
    path = tmp_path / "s.jsonl"
    path.write_bytes(jsonl(records))
    replay = Replay.open(load(path), policy="opencollab", window=45_000)
    k = len(replay)
    table = ledger_table(replay, k)
    assert table.layers[:2] == ("per-tool budget", "tool output clear")
    fates = {row.id: row.fates for row in table.rows}
    assert fates["r0"][1] == "cleared" and fates["r11"][1] in ("kept (recent)", "·")
    assert any("—" in f for f in fates.values()) or all(row.sent for row in table.rows)
    assert "cleared" in export(replay, "md") and 'class="cleared"' in export(replay, "html")


def test_errors(seeded: Replay, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="unknown export format 'pdf'"):
        export(seeded, "pdf")
    with pytest.raises(ReplayError, match="does not exist"):
        export(seeded, "md", step=999)
    path = tmp_path / "no-requests.jsonl"
    path.write_bytes(jsonl([cc_user("u1", None, "hello")]))
    empty = Replay.open(load(path))
    for fmt in FORMATS:
        out = export(empty, fmt)
        assert "Pipeline" not in out and "Ledger" not in out
