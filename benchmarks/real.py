"""Real-shaped transcripts for the benchmarks: chained copies of a real corpus session.

The synthetic sessions (`benchmarks.synth`) are one generator's idea of a session; these are made
of a real one (`spotter-fa812bfe`, Claude Code 2.1.39: 1,881 lines, 157 requests, one auto
compaction, 71% progress lines), copied end to end, each copy with its own uuids, tool call ids,
response and request ids (so no two copies share a line, a call or a response) and its timestamps
moved after the copy before. The session's requests, its tool traffic and its lines are the real
ones; what grows with the number of copies is the session's length, so its requests and its tree.

Three shapes, each at any number of copies:
- `chained`: a copy goes on where the one before ended, after a compaction (a `compact_boundary`
  line, its `logicalParentUuid` the copy before's last conversation line, and an `isCompactSummary`
  line the copy hangs off): a long session that compacts now and then.
- `rewind`: the copies chained with no compaction at all (each copy's own compaction taken out:
  its boundary and summary lines dropped, what hung off them hung off the boundary's logical
  parent), and an early rewind: from the middle copy on, the session goes on from a line early in
  the first copy, so every line of the copies between is a branch the rewind abandoned (a 1M-window
  model's session rarely compacts; a rewind far back leaves a long branch beside the chain).
- `detached`: `chained`, and after every compaction a few `isMeta` reminder lines whose parent is
  not in the file (what a compaction call's injected context leaves in a 2.1 session): the session
  always has lines beside the chain that no rule absorbs.

Files are generated into the user's cache folder (`$XDG_CACHE_HOME/context-inspector-bench/`, or
`~/.cache/...`), never into the repository or next to the corpus, keyed by shape, copies and a hash
of the source and of this module: a second run reuses them.

    python -m benchmarks.real SHAPE COPIES    # make one (prints its path and size)
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
SOURCE = (
    ROOT.parent
    / "shared"
    / "corpus"
    / "claude-code"
    / "spotter-fa812bfe"
    / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
)
SHAPES = ("chained", "rewind", "detached")
NAMESPACE = uuid.UUID("0c8d1f58-3a7e-4d0a-9a55-4f0e8f7d2b61")
DETACHED_PER_COPY = 3
SPAN = timedelta(minutes=45)
"""How far each copy's timestamps are moved after the one before (the session lasts 42 minutes)."""

_TOKEN = re.compile(
    rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    rb"|(?:toolu|msg|req)_[0-9A-Za-z]{8,}"
    rb"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"
)
_LINK = b"@@link@@"
"""Stands for the parent of a copy's first root line (set per copy)."""


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "context-inspector-bench"


_CACHE = _cache_root()
"""Where the files are kept, as the environment said when this module was imported (the runner
points XDG_CACHE_HOME at a folder of its own run, for what the measured commands cache)."""


def cache_dir() -> Path:
    return _CACHE


def available() -> bool:
    return SOURCE.is_file()


@dataclass(frozen=True)
class Real:
    """One real-shaped transcript on disk."""

    shape: str
    copies: int
    path: Path
    bytes: int
    lines: int


def _fingerprint() -> str:
    h = hashlib.sha256()
    h.update(SOURCE.read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:12]


class _Copier:
    """Renders the source's lines for copy k: every uuid (but the session's), tool call, response
    and request id given copy k's own, every timestamp moved by k spans."""

    def __init__(self, lines: list[bytes], session_id: str) -> None:
        self.session = session_id.encode()
        self.parts: list[list[bytes]] = [_TOKEN.split(line) for line in lines]
        self.tokens: list[list[bytes]] = [_TOKEN.findall(line) for line in lines]

    def token(self, tok: bytes, k: int) -> bytes:
        if tok == self.session:
            return tok
        if tok[0:1].isdigit() and tok[4:5] == b"-" and tok.endswith(b"Z"):  # a timestamp
            when = datetime.fromisoformat(tok.decode().replace("Z", "+00:00")) + k * SPAN
            return when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3].encode() + b"Z"
        if tok[8:9] == b"-":  # a uuid: its last six digits name the copy
            return tok[:-6] + f"{k:06x}".encode()
        return tok[:-5] + f"{k:05d}".encode()  # toolu_/msg_/req_: still 0-9A-Za-z

    def render(self, k: int) -> list[bytes]:
        memo: dict[bytes, bytes] = {}
        out: list[bytes] = []
        for parts, toks in zip(self.parts, self.tokens, strict=True):
            if not toks:
                out.append(parts[0])
                continue
            pieces = [parts[0]]
            for tok, part in zip(toks, parts[1:], strict=True):
                new = memo.get(tok)
                if new is None:
                    new = memo[tok] = self.token(tok, k)
                pieces.append(new)
                pieces.append(part)
            out.append(b"".join(pieces))
        return out

    def uuid_of(self, u: str, k: int) -> str:
        return self.token(u.encode(), k).decode()


def _base(compact_inside: bool) -> tuple[list[bytes], list[dict[str, object]], str]:
    """The source's lines (their first root's parent made `_LINK`; without its compaction unless
    `compact_inside`), their records, and the session id."""
    raw = [line for line in SOURCE.read_bytes().splitlines() if line.strip()]
    recs = [orjson.loads(line) for line in raw]
    session_id = next(str(r["sessionId"]) for r in recs if isinstance(r.get("sessionId"), str))
    if not compact_inside:
        drop: dict[str, str] = {}  # the boundary's and its summary's uuid -> the boundary's logical parent
        for r in recs:
            if r.get("subtype") == "compact_boundary":
                drop[str(r["uuid"])] = str(r["logicalParentUuid"])
            elif r.get("isCompactSummary") and r.get("parentUuid") in drop:
                drop[str(r["uuid"])] = drop[str(r["parentUuid"])]
        keep_raw: list[bytes] = []
        keep_recs: list[dict[str, object]] = []
        for line, r in zip(raw, recs, strict=True):
            if r.get("uuid") in drop:
                continue
            if r.get("parentUuid") in drop:
                r = dict(r, parentUuid=drop[str(r["parentUuid"])])
                line = orjson.dumps(r)
            keep_raw.append(line)
            keep_recs.append(r)
        raw, recs = keep_raw, keep_recs
    root = next(i for i, r in enumerate(recs) if r.get("uuid") and r.get("parentUuid") is None)
    raw[root] = orjson.dumps(dict(recs[root], parentUuid=_LINK.decode()))
    return raw, recs, session_id


def _last_conversation(recs: list[dict[str, object]]) -> str:
    return next(
        str(r["uuid"])
        for r in reversed(recs)
        if r.get("type") in ("user", "assistant") and not r.get("isSidechain")
    )


def _fork_point(recs: list[dict[str, object]]) -> str:
    """An early line to rewind to: the tenth assistant line (a response early in the session)."""
    lines = [str(r["uuid"]) for r in recs if r.get("type") == "assistant" and not r.get("isSidechain")]
    return lines[min(9, len(lines) - 1)]


def _new_uuid(*parts: object) -> str:
    return str(uuid.uuid5(NAMESPACE, "/".join(map(str, parts))))


def _compaction(template: dict[str, object], after: str, k: int, stamp: str) -> tuple[bytes, bytes, str]:
    """A compact_boundary line and its summary line before copy k; the summary's uuid."""
    boundary = _new_uuid("boundary", k)
    summary = _new_uuid("summary", k)
    env: dict[str, object] = {
        key: template[key]
        for key in ("userType", "cwd", "sessionId", "version", "gitBranch")
        if key in template
    }
    b: dict[str, object] = {
        "parentUuid": None,
        "logicalParentUuid": after,
        "isSidechain": False,
        **env,
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "isMeta": False,
        "timestamp": stamp,
        "uuid": boundary,
        "level": "info",
        "compactMetadata": {"trigger": "auto", "preTokens": 167_117},
    }
    s: dict[str, object] = {
        "parentUuid": boundary,
        "isSidechain": False,
        **env,
        "type": "user",
        "message": {
            "role": "user",
            "content": "This session is being continued from a previous conversation that ran out of "
            f"context. The conversation is summarized below:\nSummary of part {k}.",
        },
        "isVisibleInTranscriptOnly": True,
        "isCompactSummary": True,
        "uuid": summary,
        "timestamp": stamp,
    }
    return orjson.dumps(b), orjson.dumps(s), summary


def _detached(template: dict[str, object], k: int, stamp: str) -> list[bytes]:
    """Reminder lines whose parent is not in the file (a compaction call's injected context)."""
    env = {
        key: template[key]
        for key in ("userType", "cwd", "sessionId", "version", "gitBranch")
        if key in template
    }
    out = []
    for j in range(DETACHED_PER_COPY):
        out.append(
            orjson.dumps(
                {
                    "parentUuid": _new_uuid("absent", k, j),
                    "isSidechain": False,
                    **env,
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": f"<system-reminder>Hook output {k}.{j}: 0 errors, 0 warnings.</system-reminder>",
                    },
                    "isMeta": True,
                    "uuid": _new_uuid("detached", k, j),
                    "timestamp": stamp,
                }
            )
        )
    return out


def write(shape: str, copies: int, path: Path) -> int:
    """Write `copies` copies of the source in `shape` to `path`; its line count."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}: one of {', '.join(SHAPES)}")
    raw, recs, session_id = _base(compact_inside=shape != "rewind")
    copier = _Copier(raw, session_id)
    last = _last_conversation(recs)
    template = next(r for r in recs if r.get("type") == "user")
    first_stamp = next(str(r["timestamp"]) for r in recs if isinstance(r.get("timestamp"), str))
    fork = _fork_point(recs)
    n = 0
    tmp = path.with_name(path.name + ".part")
    with tmp.open("wb") as fh:
        for k in range(copies):
            lines = copier.render(k)
            stamp = copier.token(first_stamp.encode(), k).decode()
            if k == 0:
                link: str | None = None
            elif shape == "rewind":
                link = copier.uuid_of(fork, 0) if k == copies // 2 else copier.uuid_of(last, k - 1)
            else:
                b, s, link = _compaction(template, copier.uuid_of(last, k - 1), k, stamp)
                fh.write(b + b"\n" + s + b"\n")
                n += 2
                if shape == "detached":
                    for d in _detached(template, k, stamp):
                        fh.write(d + b"\n")
                        n += 1
            target = b"null" if link is None else b'"' + link.encode() + b'"'
            for line in lines:
                if _LINK in line:
                    line = line.replace(b'"' + _LINK + b'"', target)
                fh.write(line + b"\n")
                n += 1
    tmp.replace(path)
    return n


def make(shape: str, copies: int, folder: Path | None = None) -> Real:
    """The transcript of `copies` copies in `shape`, made once and then reused."""
    folder = folder if folder is not None else cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"real-{shape}-{copies}-{_fingerprint()}.jsonl"
    if not path.exists():
        for stale in folder.glob(f"real-{shape}-{copies}-*.jsonl"):
            stale.unlink()
        write(shape, copies, path)
    data = path.read_bytes()
    return Real(shape, copies, path, len(data), data.count(b"\n"))


def main(argv: list[str]) -> int:
    made = make(argv[0], int(argv[1]))
    sys.stdout.write(f"{made.path} {made.bytes / 1e6:,.1f} MB {made.lines:,} lines\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
