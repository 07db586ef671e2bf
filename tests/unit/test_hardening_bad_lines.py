"""A bad line costs itself, nothing else (issue 31).

Into the middle of every Claude Code session of the corpus that FACTS.json covers, a line that
cannot be read is put on the active branch (between a line and the line that answers it, which is
made to hang off it): torn in the middle (its uuid lost), NaN or 1e400 in its usage, invalid
UTF-8 in its text. The session must load with every request it had, each with its reported
context, and every load issue must name that one line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from inspector.formats import load
from tests.conftest import CORPUS, corpus_file

NEW_UUID = "0badbad0-1111-4222-8333-444455556666"


def _facts_files() -> list[str]:
    facts = CORPUS / "FACTS.json"
    if not facts.exists():
        return []
    return sorted(
        rel
        for rel, f in json.loads(facts.read_text()).items()
        if f["format"] == "claude-code" and rel.endswith(".jsonl")
    )


def _bad_line(kind: str, parent: str, session: str | None) -> bytes:
    text = "a line that will not be read " * 8
    rec: dict[str, Any] = {
        "parentUuid": parent,
        "isSidechain": False,
        "type": "user",
        "sessionId": session,
        "message": {"role": "user", "content": text, "usage": {"input_tokens": 7}},
        "uuid": NEW_UUID,
        "timestamp": "2026-01-01T00:00:00.000Z",
    }
    raw = json.dumps(rec).encode()
    if kind == "torn":
        return raw[: len(raw) * 3 // 5]  # cut inside the message: the uuid after it is gone
    if kind == "nan":
        return raw.replace(b'"input_tokens": 7', b'"input_tokens": NaN')
    if kind == "huge":
        return raw.replace(b'"input_tokens": 7', b'"input_tokens": 1e400')
    assert kind == "utf8"
    return raw.replace(b"will not", b"will \xff\xfe not")


def _with_bad_line(original: Path, kind: str, tmp: Path) -> tuple[Path, int]:
    lines = original.read_bytes().splitlines()
    recs = [json.loads(x) if x.strip() else {} for x in lines]
    # a main-thread conversation line answered by the very next line, from the middle of the file
    pairs = [
        i
        for i in range(len(recs) - 1)
        if recs[i].get("type") in ("user", "assistant")
        and not recs[i].get("isSidechain")
        and recs[i + 1].get("parentUuid") == recs[i].get("uuid")
        and recs[i + 1].get("type") in ("user", "assistant")
    ]
    at = pairs[len(pairs) // 2]
    child = dict(recs[at + 1], parentUuid=NEW_UUID)
    out = [
        *lines[: at + 1],
        _bad_line(kind, recs[at]["uuid"], recs[at].get("sessionId")),
        json.dumps(child).encode(),
    ]
    out += lines[at + 2 :]
    folder = tmp / original.parent.name
    folder.mkdir(exist_ok=True)
    # the session's subagent and compaction-call files, in either layout
    for side in (original.parent / original.stem, original.parent / "subagents"):
        if side.is_dir():
            shutil.copytree(side, folder / side.name, dirs_exist_ok=True)
    path = folder / original.name
    path.write_bytes(b"\n".join(out) + b"\n")
    return path, at + 2


@pytest.mark.parametrize("kind", ["torn", "nan", "huge", "utf8"])
def test_a_bad_line_in_the_middle_loses_only_itself(kind: str, tmp_path: Path) -> None:
    files = _facts_files()
    if not files:
        pytest.skip(f"real transcript corpus not found at {CORPUS}")
    for rel in files:
        original = corpus_file(rel)
        before = load(original)
        if len(before.requests) < 3:
            continue
        path, bad = _with_bad_line(original, kind, tmp_path)
        after = load(path)
        assert [(r.usage.context if r.usage else None) for r in after.requests] == [
            (r.usage.context if r.usage else None) for r in before.requests
        ], rel
        assert len(after.messages) == len(before.messages), rel
        assert after.load_issues and {i.line for i in after.load_issues} == {bad}, (rel, after.load_issues)
        assert not any(k.startswith("detached") or k.startswith("off the active") for k in after.skipped), rel
