"""`export --redact` on a corpus of realistic secret shapes (tests/support/redact_corpus.py), in each of the
five formats and each export format (issue 31).

Every shape is a line a tool's output would hold. Each goes into a transcript where an export can
show it: a user message, a tool call's name and arguments, its result, and a request's model
(names and models reach the JSON and SVG reports too). The checks:

- redacted, no export holds any 8-character piece of any secret (looked for in the raw text and
  in the text a reader sees: HTML entities decoded, Markdown escapes and SVG tags taken out);
- unredacted, every secret is there (so the check above can fail);
- ordinary lines (paths, commit hashes, UUIDs, token counts, `$VAR` references) come out whole;
- a preview a reader cut at 120 characters through a secret leaves none of its head behind.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from inspector.formats import load
from inspector.replay import Replay
from inspector.report.export import FORMATS, export
from inspector.report.redact import RULES, marker, redact, redact_cut, redact_value, secret_name
from tests.support.redact_corpus import ORDINARY, SHAPES, Shape
from tests.unit.test_hardening_inputs import (
    SESSION,
    T0,
    cc_assistant,
    cc_user,
    cx,
    cx_usage,
    jsonl,
    write,
    write_db,
)

WINDOW = 8
"""No piece of a secret this long may survive."""


def pieces(secret: str) -> Iterator[str]:
    for i in range(len(secret) - WINDOW + 1):
        yield secret[i : i + WINDOW]


def readable(text: str, fmt: str) -> list[str]:
    """`text` as it is, and as a reader of the `fmt` export sees it."""
    out = [text]
    if fmt == "json":
        strings: list[str] = []

        def walk(v: Any) -> None:
            if isinstance(v, str):
                strings.append(v)
            elif isinstance(v, dict):
                for k, x in v.items():
                    strings.append(k)
                    walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)

        walk(json.loads(text))
        out.append("\n".join(strings))
    elif fmt == "md":
        out.append(re.sub(r"\\(.)", r"\1", text).replace("⏎ ", "\n"))
    elif fmt == "html":
        out.append(html.unescape(text))
    else:
        out.append(html.unescape(re.sub(r"<[^>]+>", "", text)).replace("\xa0", " "))
    return out


def leaks(shape: Shape, texts: list[str]) -> list[str]:
    return [p for s in shape.secrets for p in pieces(s) if any(p in t for t in texts)]


# -- the five formats, each holding every line -----------------------------------------------------
def claude_code(folder: Path, lines: list[str]) -> Path:
    records: list[dict[str, Any]] = [{"type": "custom-title", "customTitle": lines[0], "sessionId": SESSION}]
    parent: str | None = None
    for i, line in enumerate(lines):
        records += [
            cc_user(f"u{i}", parent, line),
            cc_assistant(
                f"a{i}",
                f"u{i}",
                f"m{i}",
                [{"type": "tool_use", "id": f"t{i}", "name": line, "input": {"command": line}}],
                model=line,
            ),
            cc_user(f"r{i}", f"a{i}", [{"type": "tool_result", "tool_use_id": f"t{i}", "content": line}]),
            cc_assistant(f"e{i}", f"r{i}", f"n{i}", [{"type": "text", "text": "ok"}]),
        ]
        parent = f"e{i}"
    return write(folder / "session.jsonl", jsonl(records))


def codex(folder: Path, lines: list[str]) -> Path:
    records = [cx("session_meta", {"id": "sess-cx", "base_instructions": {"text": "You are Codex."}})]
    for i, line in enumerate(lines):
        records += [
            cx("turn_context", {"model": line}),
            cx(
                "response_item",
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": line}]},
            ),
            cx(
                "response_item",
                {
                    "type": "function_call",
                    "name": line,
                    "arguments": json.dumps({"command": line}),
                    "call_id": f"c{i}",
                },
            ),
            cx_usage(1000 + 10 * i, 800, 20),
            cx("response_item", {"type": "function_call_output", "call_id": f"c{i}", "output": line}),
            cx(
                "response_item",
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
            ),
            cx_usage(1005 + 10 * i, 900, 5),
        ]
    return write(folder / "rollout-2026-01-01T00-00-00-x.jsonl", jsonl(records))


def _tokens(n: int) -> dict[str, Any]:
    return {"input": 100 + n, "output": 20, "reasoning": 0, "cache": {"read": 900, "write": 0}}


def opencode(folder: Path, lines: list[str]) -> Path:
    records: list[tuple[str, dict[str, Any], list[tuple[str, dict[str, Any]]]]] = []
    for i, line in enumerate(lines):
        t = T0 + 1000 * i
        records.append(
            (
                f"msg_{i:03d}a",
                {"role": "user", "time": {"created": t}},
                [(f"prt_{i:03d}a", {"type": "text", "text": line})],
            )
        )
        tool = {
            "type": "tool",
            "tool": line,
            "callID": f"call_{i}",
            "state": {"status": "completed", "input": {"command": line}, "output": line},
        }
        records.append(
            (
                f"msg_{i:03d}b",
                {"role": "assistant", "modelID": line, "time": {"created": t + 100, "completed": t + 500}},
                [
                    (f"prt_{i:03d}b", {"type": "step-start"}),
                    (f"prt_{i:03d}c", tool),
                    (f"prt_{i:03d}d", {"type": "step-finish", "tokens": _tokens(i)}),
                    (f"prt_{i:03d}e", {"type": "step-start"}),
                    (f"prt_{i:03d}f", {"type": "text", "text": "ok"}),
                    (f"prt_{i:03d}g", {"type": "step-finish", "tokens": _tokens(i + 1)}),
                ],
            )
        )
    return write_db(folder / "opencode.db", records)


def _chat_messages(lines: list[str]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    for i, line in enumerate(lines):
        messages += [
            {"role": "user", "content": line},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": line, "arguments": json.dumps({"command": line})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{i}", "content": line},
            {"role": "assistant", "content": "ok"},
        ]
    return messages


def opencollab(folder: Path, lines: list[str]) -> Path:
    snapshot = {
        "snapshot_version": 1,
        "aid": 0,
        "role": "coder",
        "model": lines[0],
        "messages": _chat_messages(lines),
    }
    return write(folder / "agent_0_coder.json", json.dumps(snapshot).encode())


def generic(folder: Path, lines: list[str]) -> Path:
    return write(
        folder / "chat.json", json.dumps({"model": lines[0], "messages": _chat_messages(lines)}).encode()
    )


WRITERS: dict[str, Callable[[Path, list[str]], Path]] = {
    "claude-code": claude_code,
    "codex": codex,
    "opencode": opencode,
    "opencollab": opencollab,
    "generic": generic,
}
LINES = [s.line for s in SHAPES] + list(ORDINARY)


@pytest.fixture(scope="module", params=sorted(WRITERS))
def exports(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, bool], str]:
    """Every export of the corpus transcript in one format, redacted and not."""
    kind: str = request.param
    path = WRITERS[kind](tmp_path_factory.mktemp(kind), LINES)
    transcript = load(path)
    assert transcript.format.startswith(kind.split("-")[0]) or kind == "generic", transcript.format
    assert not transcript.load_issues, transcript.load_issues
    replay = Replay.open(transcript)
    assert len(replay) >= 1
    return {(fmt, red): export(replay, fmt, redact=red) for fmt in FORMATS for red in (False, True)}


def test_no_piece_of_any_secret_survives_redaction(exports: dict[tuple[str, bool], str]) -> None:
    found = {}
    for fmt in FORMATS:
        texts = readable(exports[(fmt, True)], fmt)
        for shape in SHAPES:
            got = leaks(shape, texts)
            if got:
                found[(fmt, shape.name)] = got[:3]
    assert not found, found


def test_without_redaction_every_secret_is_there(exports: dict[tuple[str, bool], str]) -> None:
    """Each shape reaches at least the JSON report (names, models), and the Markdown and HTML
    ledgers show every one-line shape: the redaction check looks where the secrets are."""
    missing = []
    for fmt in FORMATS:
        texts = readable(exports[(fmt, False)], fmt)
        for shape in SHAPES:
            shown = fmt == "json" or (fmt in ("md", "html") and "\n" not in shape.line)
            if shown and not leaks(shape, texts):
                missing.append((fmt, shape.name))
    assert not missing, missing


def test_ordinary_text_comes_out_whole(exports: dict[tuple[str, bool], str]) -> None:
    for fmt in ("json", "md", "html"):
        texts = readable(exports[(fmt, True)], fmt)
        for line in ORDINARY:
            assert any(line in t for t in texts), (fmt, line)


def test_redacted_exports_say_what_was_there(exports: dict[tuple[str, bool], str]) -> None:
    text = readable(exports[("html", True)], "html")[1]
    for kind in ("anthropic key", "stripe key", "github token", "aws secret key", "private key", "password"):
        assert marker(kind) in text, kind


# -- a preview cut through a secret ---------------------------------------------------------------
CUT = 120
OFFSETS = (4, 12, 20, 40)
"""How far before the reader's cut each secret starts."""


def _cut_lines(shape: Shape) -> list[str]:
    """The shape's first line with its first secret starting OFFSETS characters before the cut
    (those that put the cut inside the secret)."""
    first = shape.line.split("\n")[0]
    secret = shape.secrets[0]
    at = first.find(secret)
    out = []
    for offset in OFFSETS:
        pad = CUT - offset - at - 1
        if at < 0 or pad < 0 or offset >= len(secret):
            continue
        out.append("x" * pad + " " + first)
    return out


def test_a_preview_cut_through_a_secret_keeps_none_of_it(tmp_path: Path) -> None:
    """Abandoned branches (rewinds) and inline subagents keep the first 120 characters of their
    first line: a secret straddling the cut is redacted whole, its head too."""
    cases = [(shape, line) for shape in SHAPES for line in _cut_lines(shape)]
    assert len(cases) > 2 * len(SHAPES)
    records: list[dict[str, Any]] = [cc_user("u0", None, "start")]
    parent = "u0"
    for i, (_, line) in enumerate(cases):
        records.append(cc_assistant(f"a{i}", parent, f"m{i}", [{"type": "text", "text": "ok"}]))
        records.append(cc_user(f"stray{i}", f"a{i}", line))  # left behind by a rewind
        records.append(cc_user(f"u{i + 1}", f"a{i}", "go on"))
        parent = f"u{i + 1}"
    records.append(cc_assistant("end", parent, "mend", [{"type": "text", "text": "done"}]))
    path = write(tmp_path / "s.jsonl", jsonl(records))
    transcript = load(path)
    assert len(transcript.abandoned) == len(cases)
    assert all(len(a.preview) == CUT for a in transcript.abandoned)  # the reader did cut them
    replay = Replay.open(transcript)
    unredacted = export(replay, "json")
    assert any(leaks(shape, [unredacted]) for shape, _ in cases)
    for fmt in FORMATS:
        texts = readable(export(replay, fmt, redact=True), fmt)
        for shape, line in cases:
            assert not leaks(shape, texts), (fmt, shape.name, line[:130])


def test_redact_cut_drops_the_word_the_cut_went_through() -> None:
    head = "token " + "sk-ant-api03-Xy7Q"
    assert redact(head) == head  # too short a head for any pattern
    assert redact_cut(head, len(head)) == "token …"
    assert redact_cut("short and whole", 120) == "short and whole"
    assert redact_cut("x" * 120, 120) == "…"
    ended = "k " * 40 + marker("password")
    assert redact_cut(ended, len(ended)) == ended


# -- the rules themselves ------------------------------------------------------------------------
def test_every_rule_names_the_scanner_rule_it_follows_and_a_trigger_it_needs() -> None:
    for rule in RULES:
        assert rule.source and rule.kind and rule.triggers, rule
        assert all(t == t.lower() for t in rule.triggers), rule
        re.compile(rule.pattern, rule.flags)


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_each_shape_alone(shape: Shape) -> None:
    out = redact(shape.line)
    assert not leaks(shape, [out]), out
    assert "[redacted: " in out
    assert redact(out) == out  # idempotent: a marker is never taken for a secret


def test_ordinary_lines_alone() -> None:
    for line in ORDINARY:
        assert redact(line) == line


def test_placeholders_are_not_secrets() -> None:
    for line in (
        "DB_PASSWORD=$DB_PASSWORD",
        "password: ${{ secrets.DB_PASSWORD }}",
        'api_key = os.environ["API_KEY"]',
        "token: <your token here>",
        "SECRET_KEY=None",
        "password = self.password",
        "PASSWORD=changeme",
        "max_tokens=4096",
        "credentials: ~/.aws/credentials",
    ):
        assert redact(line) == line, line


def test_values_under_a_secret_name_go_whole() -> None:
    assert secret_name("password") and secret_name("DB_PASSWORD") and secret_name("apiKey")
    assert secret_name("X-API-Key") and not secret_name("max_tokens") and not secret_name("bypass")
    out = redact_value({"password": "correct horse battery staple", "user": "alice", "n": 3})
    assert out == {"password": marker("secret"), "user": "alice", "n": 3}


# -- time: linear in the text, whatever it holds ---------------------------------------------------
HOSTILE = {
    "camel-case run": "aBc",
    "dotted run after a scheme": "https://" + "a.",
    "snake-case run": "a_",
    "key after key": "key",
    "curl after curl": "curl ",
    "mysql after mysql": "mysql ",
    "assignment after assignment": "a=1,",
    "secret assignments": "password=x ",
    "jwt heads": "eyJ",
    "key blocks without an end": "-----BEGIN PRIVATE KEY-----\nAAAA\n",
    "cookies": "Cookie: a=bbbbbbbb;",
    "csv header lines": "password,token\n",
    "url credentials": "http://a:b@",
    "authorization headers": "Authorization: ",
    "open quotes": 'password="',
}
"""Texts that make a careless pattern scan on from every place it could start."""


GROWTH_PROBE = """
import re, sys, time
from inspector.report.redact import redact
FLOOR = re.compile(r"(?<![A-Za-z0-9_.-])\\x00{4}")  # one look at every character, never a match
def seconds(fn):
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
def relative(text):  # redaction's time over the floor's on the same text (caches cost both alike)
    return seconds(lambda: redact(text)) / seconds(lambda: FLOOR.search(text))
body = sys.argv[1]
n = 30_000 // len(body)
small = "password=1 " + body * n
large = "password=1 " + body * (16 * n)
print(relative(large) / relative(small))
"""
"""Prints how much more redacting a text 16 times as long costs, against a single pass over it."""


@pytest.mark.parametrize("body", list(HOSTILE.values()), ids=list(HOSTILE))
def test_redaction_time_grows_linearly(body: str) -> None:
    """Sixteen times the text (30 KB, then 480 KB) costs about sixteen times as much, as a single
    pass over it does (a few times more as the text outgrows the caches): a pattern that rescans
    from every start costs sixteen times more again. In a child process with a time limit, so
    such a pattern fails the test instead of holding it for hours."""

    def growth() -> float:
        try:
            done = subprocess.run(
                [sys.executable, "-c", GROWTH_PROBE, body],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
        except subprocess.TimeoutExpired:
            return float("inf")
        return float(done.stdout)

    ratio = growth()
    if 6 < ratio < float("inf"):
        ratio = growth()  # a shared machine: measure once more
    assert ratio <= 6, f"{ratio:.1f}x the floor's growth"


def test_no_pattern_backtracks_exponentially() -> None:
    """A name of many camel-case humps before an assignment once took seconds per hump pair
    added (2.6 s at 22): it is one linear pass now (a bound a million times what it takes)."""
    t0 = time.perf_counter()
    assert redact("aB" * 40 + "x password=hunter2x") == "aB" * 40 + "x password=" + marker("secret")
    assert time.perf_counter() - t0 < 1.0
