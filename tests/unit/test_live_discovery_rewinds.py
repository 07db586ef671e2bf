"""`sessions` counts requests as the reader does, rewinds (abandoned branches) included (issue 27:
thomasjmcgovern-fb36f7a7 was listed with 150 requests where `report` says 148, and
claude-code-log-dag-compact-after-rewind with 5 where it says 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inspector.cli import main
from inspector.formats import load
from inspector.live import discovery as disc
from tests.conftest import CORPUS, corpus_file


def _sessions() -> list[Path]:
    """The corpus's Claude Code session files, as discovery lists them (no subagent files)."""
    if not CORPUS.exists():
        pytest.skip(f"real transcript corpus not found at {CORPUS} (present in CI, absent on a fresh clone)")
    root = CORPUS / "claude-code"
    return sorted(root.glob("*.jsonl")) + sorted(root.glob("*/*.jsonl"))


def _listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    """`context-inspector sessions --json` over a Claude Code home holding links to every corpus
    session (the corpus itself is read, never copied or written), by file name."""
    project = tmp_path / "claude" / "projects" / "-corpus"
    project.mkdir(parents=True)
    for path in _sessions():
        (project / path.name).symlink_to(path)
    for var, value in (
        ("HOME", tmp_path),
        ("CLAUDE_CONFIG_DIR", tmp_path / "claude"),
        ("XDG_DATA_HOME", tmp_path / "xdg"),
        ("XDG_CONFIG_HOME", tmp_path / "config"),
        ("CODEX_HOME", tmp_path / "codex"),
    ):
        monkeypatch.setenv(var, str(value))
    monkeypatch.chdir(tmp_path)
    assert main(["sessions", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    return {Path(r["path"]).name: r for r in rows}


def test_every_corpus_session_is_listed_with_the_readers_request_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = _listed(tmp_path, monkeypatch, capsys)
    sessions = _sessions()
    assert len(listed) == len(sessions) >= 14
    for path in sessions:
        row = listed[path.name]
        assert row["harness"] == "claude-code" and not row["requests_estimated"], path.name
        assert row["requests"] == len(load(str(path)).requests), path.name


def test_the_listing_shows_every_corpus_path_whole_at_160_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 27: `sessions` cut the path column even at 160 columns."""
    listed = _listed(tmp_path, monkeypatch, capsys)
    monkeypatch.setenv("COLUMNS", "160")
    assert main(["sessions"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for row in listed.values():
        assert any(row["path"] in line for line in lines), row["path"]  # whole, on one line


@pytest.mark.parametrize(
    ("name", "requests", "with_the_branch"),
    [
        ("claude-code/thomasjmcgovern-fb36f7a7.jsonl", 148, 150),
        ("claude-code/claude-code-log-dag-compact-after-rewind.jsonl", 4, 5),
    ],
)
def test_a_rewound_branchs_responses_are_not_counted(
    name: str, requests: int, with_the_branch: int, capsys: pytest.CaptureFixture[str]
) -> None:
    path = corpus_file(name)
    assert main(["report", str(path), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["requests"]) == requests
    lines = path.read_bytes().split(b"\n")
    assert disc._claude_count(lines) == requests
    # what counting every main-thread response line gives (the old count): the branch's too
    assert disc._claude_line_count(lines) == with_the_branch


def _cc(uuid: str, parent: str | None, kind: str, msg_id: str | None = None, **extra: Any) -> bytes:
    rec: dict[str, Any] = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s", **extra}
    if kind == "user":
        rec["message"] = {"role": "user", "content": f"prompt {uuid}"}
    elif kind == "assistant":
        rec["message"] = {
            "id": msg_id,
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": 10, "output_tokens": 2},
        }
    return json.dumps(rec).encode()


def test_the_walk_crosses_a_boundary_and_skips_a_rewind_an_api_error_and_a_sidechain(tmp_path: Path) -> None:
    lines = [
        _cc("u1", None, "user"),
        _cc("a1", "u1", "assistant", "m1"),
        _cc("a1b", "a1", "assistant", "m1"),  # the same response, a second line: one request
        _cc("u2", "a1b", "user"),
        _cc("a2", "u2", "assistant", "m2"),  # rewound: the user went back to a1b and asked again
        _cc("u3", "a1b", "user"),
        _cc("s1", "u3", "assistant", "m9", isSidechain=True),  # a subagent's line
        _cc("a3", "u3", "assistant", "m3"),
        b'{"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": null, '
        b'"logicalParentUuid": "a3", "compactMetadata": {"trigger": "auto", "preTokens": 100}}',
        _cc("u4", "b1", "user", isCompactSummary=True),
        _cc("a4", "u4", "assistant", "m4"),
        _cc("e1", "a4", "assistant", "m5", isApiErrorMessage=True),  # an API error: no request
        b'{"type": "user", "uuid": "torn',  # a torn last line
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert len(load(str(path)).requests) == 3  # m1, m3, m4
    assert disc._claude_count(path.read_bytes().split(b"\n")) == 3
    assert disc._claude_line_count(path.read_bytes().split(b"\n")) > 3  # m2 and m5 too
