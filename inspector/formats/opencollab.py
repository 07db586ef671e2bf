"""OpenCollab runs (`.opencollab/sessions/<run>/`; docs/DESIGN.md §4, docs/notes/opencollab.md §2, §5).

What a run folder holds, and how it becomes a transcript:
- `agent_<aid>_<role>.json`: one agent's transcript snapshot, pretty JSON
  `{snapshot_version, aid, role, model, session_state, ..., "_autosave_sequence": N, "messages": [...]}`.
  Messages are OpenAI-style chat messages (read by :func:`inspector.formats.generic.parse_chat`)
  plus a `timestamp` and, on startup messages, `_ctx {name, layer, priority}`.
- `agent_<aid>_<role>.json.journal`: JSON Lines of autosave deltas
  `{journal_version, sequence, replace_from, message_count, messages, meta}`. The ledger is the
  snapshot's messages, then every journal record with `sequence` > the snapshot's
  `_autosave_sequence` (0 when absent), in file order: `ledger = ledger[:replace_from] + messages`
  (the one-message overlap lets a record rewrite the last user turn), `meta` replaces the
  snapshot's metadata. A record with `sequence` <= `_autosave_sequence` is already folded into
  the snapshot (a checkpoint rewrote the base and the journal was not yet truncated): skipped and
  counted in `skipped`, not an issue. A torn last line (no newline, not whole JSON: what a crash
  mid-write leaves) is ignored and counted in `skipped`. Load issues: a `message_count` that
  differs from the ledger's length after its record, a `sequence` not after the last one applied,
  a `replace_from` past the end of the ledger, malformed lines and fields.
- the trajectory: `trajectory.jsonl`, else the first (by name) `*.jsonl` in the folder whose first
  record is a tracer line `{timestamp, step, run_id, type, payload, metrics}`. Only records whose
  `payload.aid` is the agent's are read (records without an `aid` count for a run of one agent).
- `team.json` and the `.lock` files are not read (and nothing is ever written: no lock is taken).

Sources: `_ctx.layer` gives the kind (identity, team, skill, task; `project` is the repository
map; unknown layers are conversation) and `_ctx.priority` the priority, as given (OpenCollab pins
priority >= 70 whatever the layer). A message without `_ctx` is never pinned in OpenCollab
(tool work, later turns, and a goal that arrived as a plain user message): it keeps the kind the
generic reader gives it (identity for a system message, task for the first user text, tool
output, conversation) with priority 0.

Requests, from the trajectory's `llm_call` records of the agent, in file order: request k
(1-based) is the agent's k-th `llm_call`, and its response is the k-th assistant message of the
ledger, so `ledger_len` is the number of ledger messages before that assistant message (the
whole ledger when the call has no reply in the ledger yet). Assistant messages beyond the last
`llm_call` (a trajectory cut short, or none at all) are requests without usage. `usage`: whole
input = `input_tokens` (or OpenAI `prompt_tokens`; cached tokens are inside it), of which
`cache_read_tokens` / `cache_read` / `prompt_tokens_details.cached_tokens` /
`prompt_cache_hit_tokens` were read from the cache and `cache_creation_tokens` /
`cache_creation` written to it; Anthropic-named fields (`cache_read_input_tokens`,
`cache_creation_input_tokens`) are counted beside `input_tokens`, as Anthropic reports them. A
usage the harness marks `estimated` (the provider sent none) is not a report: the request has
no usage.

Recorded shaping, from `context_shaping` records `{seq, aid, rung, tokens_before, tokens_after}`
(one per rung that fired, in pipeline order; one `rung: "none"` when nothing fired): each fired
rung is a `RecordedEvent(kind=layer_fired, layer=rung, pre_tokens=tokens_before,
post_tokens=tokens_after)`; `none` records are counted in `skipped`. How `seq` maps to requests:
OpenCollab shapes right before the model call of the same step, and its tracer writes records in
order from one queue, so a `context_shaping` record shaped the agent's next `llm_call` in the
file: shaping before request k has `after_request = k - 1` (0 before the first request), which is
where `replay.fidelity` places a simulated layer firing at request k. `seq` is the session's
`step_count` then; when that `llm_call` also carries a `seq` and it differs, that is a load issue
(the order is kept). Rung names are the pipeline's layer names (`per_tool_budget`, `eager_clear`,
`tool_output_clear`, `old_history_snip`, `auto_compact`), kept as written. The trace does not
say which results tool output clear cleared; the reader derives them from OpenCollab's rule
(`tool_output_clear_ids`) into the event's `cleared_tool_ids`.

`session.history_compaction` (once per session): `context_window_tokens` -> `Transcript.window`
(the trigger and target it states are derived from that window by the budget module; the
transcript has no field of its own for them). Snapshot metadata `model` -> `Transcript.model`.

A run folder with several agents loads the agent with the lowest aid and lists the others as
subagents (their snapshot paths); `OpencollabFormat().load(path, agent=aid)` picks one. A
snapshot file loads that agent, with the journal beside it and the trajectory of its folder;
a `.journal` file loads the snapshot it belongs to.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from msgspec.structs import replace

from inspector.model import (
    EventKind,
    LoadIssue,
    Message,
    Origin,
    ReasoningBlock,
    RecordedEvent,
    Request,
    Role,
    Segment,
    Source,
    SourceKind,
    SubagentRef,
    Transcript,
    Usage,
)
from inspector.model.message import DEFAULT_PRIORITY

from .base import (
    MAX_LINE_BYTES,
    MAX_TOKENS,
    LineSplitter,
    LoaderError,
    LoadIssues,
    Overlong,
    Progress,
    decode_json_line,
    describe,
    issue_total,
    open_regular,
    read_regular,
    short,
    token_count,
)
from .generic import parse_chat

FORMAT = "opencollab"
READ_CHUNK = 1 << 20
MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024
"""A snapshot is read whole (OpenCollab caps its own at 64 MiB); beyond this it is refused."""
MAX_AGENT_FILES = 1_000
"""At most this many `*.json` files of a folder are looked at for agent snapshots."""
TRAJECTORY = "trajectory.jsonl"
JOURNAL_SUFFIX = ".journal"
SNIFF_HEAD = 4096
"""The snapshot's metadata comes first (`snapshot_version` is its first key): only this much is
looked at for it, so a huge `session_state` before `messages` does not matter."""

AGENT_FILE = re.compile(r"^agent_(\d+)_(.+)\.json$")
_SNAPSHOT_KEY = re.compile(rb'"snapshot_version"\s*:')
_JOURNAL_KEY = re.compile(rb'"journal_version"\s*:')

LAYER_KINDS: dict[str, SourceKind] = {
    "identity": SourceKind.IDENTITY,
    "team": SourceKind.TEAM,
    "skill": SourceKind.SKILL,
    "task": SourceKind.TASK,
    "project": SourceKind.PROJECT_MAP,
    "project_map": SourceKind.PROJECT_MAP,
    "repo_map": SourceKind.PROJECT_MAP,
    "project_instructions": SourceKind.PROJECT_INSTRUCTIONS,
    "instructions": SourceKind.PROJECT_INSTRUCTIONS,
    "tool_output": SourceKind.TOOL_OUTPUT,
    "tool": SourceKind.TOOL_OUTPUT,
    "conversation": SourceKind.CONVERSATION,
}
"""`_ctx.layer` (OpenCollab `ContextLayer`, compared in lower case) -> source kind."""

MAX_PRIORITY = 1_000_000
"""A `_ctx.priority` beyond +/- this is absurd: the layer's default priority is used instead."""

SKIP_NONE = "context_shaping (rung none: nothing fired)"
SKIP_FOLDED = "journal record already in the snapshot"
SKIP_TORN = "journal: torn last line (a crash mid-write)"
SKIP_TORN_TRACE = "trajectory: torn last line"
SKIP_OTHER_AGENTS = "trajectory records of other agents"
SKIP_ESTIMATED = "llm_call usage estimated by the harness (not a provider report)"
SKIP_PENDING = "pending messages (not yet in the ledger)"


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _when(v: Any) -> str | None:
    """A tracer timestamp (epoch seconds) or an ISO string, as an ISO-8601 string."""
    if isinstance(v, str):
        return v
    if isinstance(v, int | float) and not isinstance(v, bool):
        try:
            return datetime.fromtimestamp(float(v), UTC).isoformat(timespec="milliseconds")
        except (OverflowError, OSError, ValueError):
            return None
    return None


# -- snapshot + journal --------------------------------------------------------------------------


@dataclass
class RawLedger:
    """One agent's ledger as raw message dicts: the snapshot with its journal applied.

    `origins[i]` is where `messages[i]` was last written: the snapshot (line = its 1-based place
    in the snapshot's `messages`) or the journal (line = the record's line).
    """

    snapshot: Path
    meta: dict[str, Any]
    messages: list[Any]
    origins: list[Origin]
    base_sequence: int
    sequence: int
    """The last sequence applied (the snapshot's own when no journal record was)."""
    issues: list[LoadIssue] = field(default_factory=LoadIssues)
    skipped: Counter[str] = field(default_factory=Counter)


def _read_json(path: Path) -> Any:
    size = path.stat().st_size
    if size > MAX_SNAPSHOT_BYTES:
        raise LoaderError(f"{path} is {size:,} bytes, over the {MAX_SNAPSHOT_BYTES:,} limit for a snapshot")
    raw = read_regular(path).removeprefix(b"\xef\xbb\xbf")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        # OpenCollab also loads a legacy JSONL of messages
        lines = [ln for ln in raw.split(b"\n") if ln.strip()]
        try:
            values = [orjson.loads(ln) for ln in lines]
        except orjson.JSONDecodeError:
            values = []
        if lines and all(isinstance(v, dict) and "role" in v for v in values):
            return values
        raise LoaderError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None


def read_ledger(snapshot: str | Path) -> RawLedger:
    """Read a snapshot and apply its journal (`<snapshot>.journal`), never writing anything."""
    path = Path(snapshot)
    file = str(path)
    value = _read_json(path)
    issues: list[LoadIssue] = LoadIssues()
    if isinstance(value, list):  # a legacy bare list of messages
        meta: dict[str, Any] = {}
        messages: list[Any] = list(value)
    elif isinstance(value, dict):
        raw_messages = value.get("messages")
        if not isinstance(raw_messages, list):
            raise LoaderError(f"{path} is not an OpenCollab snapshot (no `messages` list)")
        meta = {k: v for k, v in value.items() if k not in ("messages", "_autosave_sequence")}
        messages = list(raw_messages)
    else:
        raise LoaderError(f"{path} is not an OpenCollab snapshot (a JSON {type(value).__name__})")
    base = value.get("_autosave_sequence") if isinstance(value, dict) else None
    if base is not None and (_int(base) is None or base < 0):
        issues.append(
            LoadIssue(file=file, line=1, reason=f"`_autosave_sequence` is {describe(base)}; read as 0")
        )
        base = None
    base_sequence = base if isinstance(base, int) else 0
    ledger = RawLedger(
        snapshot=path,
        meta=meta,
        messages=messages,
        origins=[Origin(file=file, line=i) for i in range(1, len(messages) + 1)],
        base_sequence=base_sequence,
        sequence=base_sequence,
        issues=issues,
    )
    journal = path.with_name(path.name + JOURNAL_SUFFIX)
    if journal.is_file():
        _apply_journal(ledger, journal)
    pending = meta.get("pending_messages")
    if isinstance(pending, list) and pending:
        ledger.skipped[SKIP_PENDING] += len(pending)
    return ledger


def _apply_journal(ledger: RawLedger, journal: Path) -> None:
    file = str(journal)
    lines = LineSplitter(max_line=MAX_LINE_BYTES)
    with open_regular(journal) as fh:
        while chunk := fh.read(READ_CHUNK):
            for line_no, raw in lines.feed(chunk):
                rec = decode_json_line(raw, file, line_no, ledger.issues)
                if rec is not None:
                    _apply_record(ledger, rec, file, line_no)
    for line_no, raw in lines.flush():
        scratch: list[LoadIssue] = []
        rec = None if isinstance(raw, Overlong) else decode_json_line(raw, file, line_no, scratch)
        if rec is None:
            if raw.strip() or isinstance(raw, Overlong):
                ledger.skipped[SKIP_TORN] += 1
            continue
        _apply_record(ledger, rec, file, line_no)  # whole JSON, only its newline is missing


def _apply_record(ledger: RawLedger, rec: dict[str, Any], file: str, line: int) -> None:
    def issue(reason: str) -> None:
        ledger.issues.append(LoadIssue(file=file, line=line, reason=reason))

    seq = _int(rec.get("sequence"))
    if seq is None:
        issue(f"journal record `sequence` is {describe(rec.get('sequence'))}, not a whole number; skipped")
        return
    if seq <= ledger.base_sequence:
        ledger.skipped[SKIP_FOLDED] += 1
        return
    if seq <= ledger.sequence:
        issue(f"journal sequence {seq:,} is not after {ledger.sequence:,} (stale or conflicting); skipped")
        return
    version = rec.get("journal_version")
    if version is not None and version != 1:
        issue(f"journal_version {describe(version)} is not 1; read as version 1")
    start = _int(rec.get("replace_from"))
    messages = rec.get("messages")
    if start is None or start < 0:
        issue(f"journal record `replace_from` is {describe(rec.get('replace_from'))}; skipped")
        return
    if not isinstance(messages, list):
        issue(f"journal record `messages` is {describe(messages)}, not a list; skipped")
        return
    have = len(ledger.messages)
    if start > have:
        issue(f"journal `replace_from` {start:,} is past the end of the ledger ({have:,} messages); appended")
        start = have
    ledger.messages[start:] = messages
    ledger.origins[start:] = [Origin(file=file, line=line)] * len(messages)
    ledger.sequence = seq
    count = rec.get("message_count")
    if count is not None and count != len(ledger.messages):
        issue(
            f"journal sequence {seq:,}: `message_count` is {describe(count)}, "
            f"but the ledger holds {len(ledger.messages):,} messages after it"
        )
    meta = rec.get("meta")
    if isinstance(meta, dict):
        _merge_meta(ledger, meta, rec)


def _merge_meta(ledger: RawLedger, meta: dict[str, Any], rec: dict[str, Any]) -> None:
    """A record's `meta` (the snapshot's minus `session_state.seen_result_hashes`, which the record
    gives as `seen_result_hashes_added` / `_reset`) replaces the metadata, as OpenCollab's load does."""
    old_state = ledger.meta.get("session_state")
    state = meta.get("session_state")
    if isinstance(state, dict) and "seen_result_hashes" not in state:
        seen = old_state.get("seen_result_hashes") if isinstance(old_state, dict) else None
        hashes = (
            [] if rec.get("seen_result_hashes_reset") is True or not isinstance(seen, list) else list(seen)
        )
        added = rec.get("seen_result_hashes_added")
        if isinstance(added, list):
            hashes += [h for h in added if h not in hashes]
        if isinstance(seen, list) or hashes:
            state = {**state, "seen_result_hashes": hashes}
        meta = {**meta, "session_state": state}
    ledger.meta = {**ledger.meta, **meta}


# -- sources ---------------------------------------------------------------------------------------


def _ctx_source(ctx: Any, problems: list[str]) -> Source | None:
    """The source an `_ctx` tag names (None: no usable tag), exactly as OpenCollab recorded it
    (`ContextPlan.startup_system_messages` / `startup_user_messages`, docs/notes/opencollab.md §2):

    | category | marker | kind · priority |
    |---|---|---|
    | identity (role prompt) | `_ctx.layer` "identity" | identity · `_ctx.priority` (100 by default) |
    | team ("Your team") | "team" | team · (90) |
    | skill catalog | "skill" | skill · (85) |
    | task (DelegationTask) | "task" | task · (80) |
    | repository map | "project", "project_map", "repo_map" | project map · (30) |
    | project instructions | "project_instructions", "instructions" | project instructions · (75) |
    | tool output, conversation | "tool_output"/"tool", "conversation" | as named · (0) |
    | any other layer | (kept as given) | conversation · `_ctx.priority` |

    The name is `_ctx.name` (else the layer). The priority is `_ctx.priority` whenever it is an
    integer (OpenCollab pins >= 70 whatever the layer: `is_pinned`); a missing or unusable one
    falls back to the layer's default. A message without `_ctx` is never pinned."""
    if ctx is None:
        return None
    if not isinstance(ctx, dict):
        problems.append(f"`_ctx` is {describe(ctx)}, not an object; ignored")
        return None
    layer = _str(ctx.get("layer"))
    name = _str(ctx.get("name")) or layer or ""
    kind = (
        LAYER_KINDS.get(layer.strip().lower(), SourceKind.CONVERSATION) if layer else SourceKind.CONVERSATION
    )
    raw = ctx.get("priority")
    priority = _int(raw)
    if priority is None or not -MAX_PRIORITY <= priority <= MAX_PRIORITY:
        if raw is not None:
            problems.append(
                f"`_ctx.priority` is {describe(raw)}, not a priority; the layer's default is used"
            )
        priority = DEFAULT_PRIORITY[kind]
    return Source(kind=kind, name=short(name), priority=priority)


def _response_reasoning(raw: dict[str, Any]) -> ReasoningBlock | None:
    """Encrypted reasoning an assistant message carries in `response_items` (sent back, so it costs)."""
    items = raw.get("response_items")
    if not isinstance(items, list):
        return None
    texts: list[str] = []
    enc_chars = 0
    found = False
    for item in items:
        if not isinstance(item, dict) or item.get("type") != "reasoning":
            continue
        found = True
        enc = item.get("encrypted_content")
        enc_chars += len(enc) if isinstance(enc, str) else 0
        for part in (item.get("summary"), item.get("content")):
            if isinstance(part, list):
                texts += [str(p.get("text", "")) for p in part if isinstance(p, dict) and p.get("text")]
    if not found:
        return None
    text = "\n".join(texts)
    return ReasoningBlock(
        text=text, signed=enc_chars > 0, redacted=enc_chars > 0 and not text, signature_chars=enc_chars
    )


def messages_of(ledger: RawLedger) -> tuple[list[Message], list[LoadIssue]]:
    """The ledger as Messages (ids `m1`.. by ledger position) and the load issues met.

    A message that cannot be read (unknown role, nested too deep) is left out with a load issue;
    the others keep their position-based ids, so ids never shift.
    """
    placeholder = "<opencollab ledger>"
    parsed = parse_chat(ledger.messages, placeholder)
    issues = LoadIssues()
    issues.total = issue_total(parsed.load_issues) - len(parsed.load_issues)  # those not kept
    for i in parsed.load_issues:
        if i.file == placeholder and 1 <= i.line <= len(ledger.origins):
            where = ledger.origins[i.line - 1]
            issues.append(LoadIssue(file=where.file, line=where.line, reason=i.reason))
        else:
            issues.append(i)
    out: list[Message] = []
    for m in parsed.messages:
        # parse_chat numbers the records of a list 1.. (its `Origin.line`): the ledger position + 1
        pos = m.origin.line - 1 if m.origin is not None else -1
        if not 0 <= pos < len(ledger.messages) or not isinstance(ledger.messages[pos], dict):
            continue  # not a message of ours (cannot happen with a list of records)
        raw: dict[str, Any] = ledger.messages[pos]
        where = ledger.origins[pos]
        problems: list[str] = []
        source = _ctx_source(raw.get("_ctx"), problems)
        if source is None:
            source = Source(kind=m.source.kind, name=m.source.name, priority=0)
        blocks = m.blocks
        if m.role is Role.ASSISTANT and not m.has_reasoning:
            reasoning = _response_reasoning(raw)
            if reasoning is not None:
                blocks = (reasoning, *blocks)
        issues.extend(LoadIssue(file=where.file, line=where.line, reason=p) for p in problems)
        out.append(
            replace(
                m,
                id=f"m{pos + 1}",
                origin=where,
                source=source,
                blocks=blocks,
                timestamp=_str(raw.get("timestamp")),
                is_summary=raw.get("compacted") is True,
            )
        )
    calls = {c.id for m in out for c in m.tool_calls}
    for m in out:
        for r in m.tool_results:
            if r.call_id not in calls:
                assert m.origin is not None
                issues.append(
                    LoadIssue(
                        file=m.origin.file,
                        line=m.origin.line,
                        reason=f"tool result for call {short(r.call_id)!r}, which no message makes (an orphan)",
                    )
                )
    return out, issues


# -- trajectory ------------------------------------------------------------------------------------


def _looks_like_trace(head: bytes) -> bool:
    first = next((ln for ln in head.split(b"\n") if ln.strip()), b"")
    try:
        rec = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return (
        isinstance(rec, dict)
        and isinstance(rec.get("type"), str)
        and isinstance(rec.get("payload"), dict)
        and ("step" in rec or "run_id" in rec)
    )


def find_trajectory(folder: Path) -> Path | None:
    """The run's trajectory: `trajectory.jsonl`, else the first `*.jsonl` holding tracer records."""
    named = folder / TRAJECTORY
    if named.is_file():
        return named
    try:
        candidates = sorted(p for p in folder.glob("*.jsonl") if p.is_file())
    except OSError:
        return None
    for p in candidates:
        try:
            with open_regular(p) as fh:
                head = fh.read(64 * 1024)
        except OSError:
            continue
        if _looks_like_trace(head):
            return p
    return None


USAGE_KEYS = (
    "input_tokens",
    "prompt_tokens",
    "output_tokens",
    "completion_tokens",
    "cache_read_tokens",
    "cache_read",
    "cache_creation_tokens",
    "cache_creation",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "prompt_cache_hit_tokens",
    "reasoning_tokens",
    "reasoning",
)


def usage_of(raw: Any, problems: list[str]) -> Usage | None:
    """An `llm_call` usage as `Usage`, so that `Usage.context` is the request's whole input."""
    if not isinstance(raw, dict):
        if raw is not None:
            problems.append(f"`usage` is {describe(raw)}, not an object; ignored")
        return None
    n = {k: token_count(raw, k, "usage", problems) for k in USAGE_KEYS}
    details = raw.get("prompt_tokens_details")
    cached_detail = (
        token_count(details, "cached_tokens", "usage.prompt_tokens_details", problems)
        if isinstance(details, dict)
        else 0
    )
    out_details = raw.get("completion_tokens_details")
    reasoning_detail = (
        token_count(out_details, "reasoning_tokens", "usage.completion_tokens_details", problems)
        if isinstance(out_details, dict)
        else 0
    )
    output = n["output_tokens"] or n["completion_tokens"]
    reasoning = n["reasoning_tokens"] or n["reasoning"] or reasoning_detail
    if n["cache_read_input_tokens"] or n["cache_creation_input_tokens"]:
        # Anthropic: input_tokens is the uncached part, the cache figures come beside it
        return Usage(
            input=n["input_tokens"],
            cache_read=n["cache_read_input_tokens"],
            cache_write=n["cache_creation_input_tokens"],
            output=output,
            reasoning=reasoning,
        )
    whole = n["input_tokens"] or n["prompt_tokens"]
    read = n["cache_read_tokens"] or n["cache_read"] or cached_detail or n["prompt_cache_hit_tokens"]
    written = n["cache_creation_tokens"] or n["cache_creation"]
    if read + written > whole:
        problems.append(
            f"usage reads {read:,} + writes {written:,} cached tokens, more than its {whole:,} input; "
            "the cache figures are counted beside the input"
        )
        fresh = whole
    else:
        fresh = whole - read - written
    return Usage(input=fresh, cache_read=read, cache_write=written, output=output, reasoning=reasoning)


@dataclass
class _Call:
    seq: int | None
    model: str | None
    usage: Usage | None
    finish: str | None
    timestamp: str | None
    line: int


@dataclass
class _Shaping:
    seq: int | None
    rung: str
    before: int | None
    after: int | None
    calls_before: int
    timestamp: str | None
    line: int


@dataclass
class _Trace:
    file: str | None = None
    calls: list[_Call] = field(default_factory=list)
    shaping: list[_Shaping] = field(default_factory=list)
    window: int | None = None
    target: int | None = None
    model: str | None = None
    calls_by_aid: Counter[int] = field(default_factory=Counter)
    issues: list[LoadIssue] = field(default_factory=LoadIssues)
    skipped: Counter[str] = field(default_factory=Counter)


def read_trajectory(path: Path | None, aid: int | None, single_agent: bool) -> _Trace:
    """The agent's `llm_call`, `context_shaping` and `session.history_compaction` records."""
    trace = _Trace()
    if path is None:
        return trace
    file = trace.file = str(path)
    lines = LineSplitter(max_line=MAX_LINE_BYTES)

    def take(line_no: int, raw: bytes, last: bool) -> None:
        issues = [] if last else trace.issues
        rec = decode_json_line(raw, file, line_no, issues)
        if rec is None:
            if last and (raw.strip() or isinstance(raw, Overlong)):
                trace.skipped[SKIP_TORN_TRACE] += 1
            return
        _trace_record(trace, rec, file, line_no, aid, single_agent)

    with open_regular(path) as fh:
        while chunk := fh.read(READ_CHUNK):
            for line_no, raw in lines.feed(chunk):
                take(line_no, raw, False)
    for line_no, raw in lines.flush():
        take(line_no, raw, True)
    return trace


def _trace_record(
    trace: _Trace, rec: dict[str, Any], file: str, line: int, aid: int | None, single: bool
) -> None:
    rtype = _str(rec.get("type"))
    payload = rec.get("payload")
    if rtype is None or not isinstance(payload, dict):
        trace.skipped["trajectory: not a tracer record"] += 1
        return
    who = _int(payload.get("aid"))
    if rtype == "llm_call" and who is not None:
        trace.calls_by_aid[who] += 1
    if who is None and not single:
        trace.skipped[f"trajectory/{short(rtype)} (no aid)"] += 1
        return
    if who is not None and aid is not None and who != aid:
        trace.skipped[SKIP_OTHER_AGENTS] += 1
        return

    def issue(reason: str) -> None:
        trace.issues.append(LoadIssue(file=file, line=line, reason=reason))

    when = _when(rec.get("timestamp"))
    seq = _int(payload.get("seq"))
    if rtype == "llm_call":
        problems: list[str] = []
        raw_usage = payload.get("usage")
        usage = usage_of(raw_usage, problems)
        for p in problems:
            issue(p)
        if usage is not None and isinstance(raw_usage, dict) and raw_usage.get("estimated") is True:
            trace.skipped[SKIP_ESTIMATED] += 1
            usage = None
        model = _str(payload.get("model"))
        trace.model = model or trace.model
        trace.calls.append(_Call(seq, model, usage, _str(payload.get("finish_reason")), when, line))
    elif rtype == "context_shaping":
        rung = _str(payload.get("rung"))
        if rung is None:
            issue(f"context_shaping `rung` is {describe(payload.get('rung'))}, not a name; skipped")
            return
        if rung == "none":
            trace.skipped[SKIP_NONE] += 1
            return
        problems = []
        before = (
            token_count(payload, "tokens_before", "context_shaping", problems)
            if "tokens_before" in payload
            else None
        )
        after = (
            token_count(payload, "tokens_after", "context_shaping", problems)
            if "tokens_after" in payload
            else None
        )
        for p in problems:
            issue(p)
        trace.shaping.append(_Shaping(seq, rung, before, after, len(trace.calls), when, line))
    elif rtype == "session.history_compaction":
        window = payload.get("context_window_tokens")
        if window is None:
            trace.window = None
        elif _int(window) is not None and 0 < window <= MAX_TOKENS:
            trace.window = window
        else:
            issue(f"`context_window_tokens` is {describe(window)}, not a window size; ignored")
        target = _int(payload.get("history_target_tokens"))
        trace.target = target if target is not None and 0 < target <= MAX_TOKENS else None
        trace.model = _str(payload.get("model")) or trace.model
    else:
        trace.skipped[f"trajectory/{short(rtype)}"] += 1


# -- what tool output clear cleared ---------------------------------------------------------------

COMPACTABLE_TOOLS = frozenset({"bash", "file_read", "grep", "git_diff", "run_tests"})
"""OpenCollab's `COMPACTABLE_TOOL_NAMES`: the read-only tools whose results can be re-created."""
CLEARED_CONTENT = "[Old tool result content cleared]"
TOOL_RESULT_BUDGET = 16_000


def clear_keep(target: int | None) -> int:
    """How many recent compactable results tool output clear keeps: min(5, affordable groups), with
    affordable = max(2, target // (16,000 // 4)) (target 90,000 when the trajectory states none)."""
    return min(5, max(2, (target or 90_000) // (TOOL_RESULT_BUDGET // 4)))


def tool_output_clear_ids(ledger: list[Message], keep: int) -> tuple[str, ...]:
    """The call ids whose results OpenCollab's tool output clear replaces in this ledger.

    The trace records only that the rung fired; which results it cleared follows from its rule:
    every compactable result but the `keep` most recent (in call order), where the placeholder is
    shorter than the content (a result over the per-tool budget is first cut to 16,000 chars).
    """
    names = {c.id: c.name for m in ledger for c in m.tool_calls}
    results = [
        r for m in ledger for r in m.tool_results if names.get(r.call_id, r.tool_name) in COMPACTABLE_TOOLS
    ]
    older = results[:-keep] if keep > 0 else results
    return tuple(
        r.call_id
        for r in older
        if r.content != CLEARED_CONTENT and len(CLEARED_CONTENT) < min(len(r.content), TOOL_RESULT_BUDGET)
    )


# -- the run folder --------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentFile:
    """An agent snapshot of a run folder."""

    aid: int | None
    role: str | None
    path: Path


def _head(path: Path, size: int = SNIFF_HEAD) -> bytes:
    try:
        with open_regular(path) as fh:
            return fh.read(size)
    except OSError:
        return b""


def _is_snapshot_head(head: bytes) -> bool:
    body = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return body.startswith(b"{") and _SNAPSHOT_KEY.search(body[:SNIFF_HEAD]) is not None


_AID_IN_HEAD = re.compile(rb'"aid"\s*:\s*(\d+)')
_ROLE_IN_HEAD = re.compile(rb'"role"\s*:\s*"([^"\\]{1,200})"')


def agent_files(folder: Path) -> list[AgentFile]:
    """The agent snapshots of a run folder, lowest aid first (then by name)."""
    found: list[AgentFile] = []
    try:
        names = sorted(p for p in folder.glob("*.json") if p.is_file())[:MAX_AGENT_FILES]
    except OSError:
        return []
    for p in names:
        head = _head(p)
        if not _is_snapshot_head(head):
            continue
        m = AGENT_FILE.match(p.name)
        aid_m = _AID_IN_HEAD.search(head)
        role_m = _ROLE_IN_HEAD.search(head)
        aid = int(aid_m.group(1)) if aid_m else int(m.group(1)) if m else None
        role = role_m.group(1).decode("utf-8", "replace") if role_m else m.group(2) if m else None
        found.append(AgentFile(aid, role, p))
    return sorted(found, key=lambda a: (a.aid is None, a.aid or 0, a.path.name))


def _task_line(ledger: RawLedger) -> str | None:
    for raw in ledger.messages:
        ctx = raw.get("_ctx") if isinstance(raw, dict) else None
        if isinstance(ctx, dict) and str(ctx.get("layer", "")).lower() == "task":
            content = raw.get("content")
            if isinstance(content, str) and content.strip():
                text = content.strip()
                if "Task:\n" in text:
                    text = text.split("Task:\n", 1)[1].strip() or text
                return short(text.splitlines()[0], 120)
    return None


def load_opencollab(path: str | Path, agent: int | str | None = None) -> Transcript:
    """Load one agent of an OpenCollab run (a run folder, a snapshot or its journal)."""
    p = Path(path)
    if p.is_file() and p.name.endswith(".json" + JOURNAL_SUFFIX):
        p = p.with_name(p.name.removesuffix(JOURNAL_SUFFIX))
    folder = p if p.is_dir() else p.parent
    agents = agent_files(folder)
    wanted = int(agent) if isinstance(agent, str) and agent.isdigit() else agent
    if wanted is not None:
        chosen = next((a for a in agents if a.aid == wanted), None)
        if chosen is None:
            known = ", ".join(str(a.aid) for a in agents if a.aid is not None) or "none"
            raise LoaderError(f"{folder} holds no agent {agent!r} (agents: {known})")
    elif p.is_dir():
        if not agents:
            raise LoaderError(f"{p} holds no OpenCollab agent snapshot")
        chosen = agents[0]
    else:
        chosen = next((a for a in agents if a.path.resolve() == p.resolve()), None)
        if chosen is None:
            m = AGENT_FILE.match(p.name)
            chosen = AgentFile(int(m.group(1)) if m else None, m.group(2) if m else None, p)
    list_others = p.is_dir() and wanted is None
    return _load_agent(chosen, folder, agents, list_others)


def _load_agent(chosen: AgentFile, folder: Path, agents: list[AgentFile], list_others: bool) -> Transcript:
    ledger = read_ledger(chosen.path)
    file = str(chosen.path)
    meta = ledger.meta
    aid = _int(meta.get("aid"))
    if aid is None:
        aid = chosen.aid
    role = _str(meta.get("role")) or chosen.role
    messages, issues = messages_of(ledger)
    trace = read_trajectory(find_trajectory(folder), aid, single_agent=len(agents) <= 1)
    issues = LoadIssues.joined(ledger.issues, issues, trace.issues)
    skipped = ledger.skipped + trace.skipped

    # requests: the k-th llm_call answered by the k-th assistant message
    ids = [m.id for m in messages]
    assistants = [i for i, m in enumerate(messages) if m.role is Role.ASSISTANT]
    model = _str(meta.get("model")) or trace.model
    requests: list[Request] = []
    for k in range(1, max(len(trace.calls), len(assistants)) + 1):
        call = trace.calls[k - 1] if k <= len(trace.calls) else None
        reply = messages[assistants[k - 1]] if k <= len(assistants) else None
        requests.append(
            Request(
                index=k,
                response_id=reply.id if reply is not None else None,
                model=(call.model if call is not None else None) or model,
                usage=call.usage if call is not None else None,
                segment=0,
                ledger_len=assistants[k - 1] if k <= len(assistants) else len(ids),
                timestamp=(call.timestamp if call is not None else None)
                or (reply.timestamp if reply else None),
                stop_reason=call.finish if call is not None else None,
            )
        )
    if not requests and ids:
        requests.append(Request(index=1, model=model, segment=0, ledger_len=len(ids)))

    events: list[RecordedEvent] = []
    for s in trace.shaping:
        after = min(s.calls_before, len(requests))
        shaped = trace.calls[s.calls_before] if s.calls_before < len(trace.calls) else None
        if shaped is not None and shaped.seq is not None and s.seq is not None and shaped.seq != s.seq:
            issues.append(
                LoadIssue(
                    file=trace.file or file,
                    line=s.line,
                    reason=(
                        f"context_shaping seq {s.seq:,} is followed by the llm_call of seq {shaped.seq:,}; "
                        f"placed before request {after + 1}"
                    ),
                )
            )
        cleared: tuple[str, ...] = ()
        if s.rung == "tool_output_clear":
            held = requests[after].ledger_len if after < len(requests) else len(messages)
            cleared = tool_output_clear_ids(messages[:held], clear_keep(trace.target))
        events.append(
            RecordedEvent(
                kind=EventKind.LAYER_FIRED,
                layer=s.rung,
                pre_tokens=s.before,
                post_tokens=s.after,
                tokens_saved=s.before - s.after if s.before is not None and s.after is not None else None,
                after_request=after,
                cleared_tool_ids=cleared,
                timestamp=s.timestamp,
                file=trace.file,
                line=s.line,
            )
        )

    subagents: list[SubagentRef] = []
    if list_others:
        for other in agents:
            if other.path == chosen.path:
                continue
            try:
                sub = read_ledger(other.path)
            except (LoaderError, OSError) as exc:
                issues.append(
                    LoadIssue(file=str(other.path), line=0, reason=f"agent snapshot not read: {exc}")
                )
                continue
            subagents.append(
                SubagentRef(
                    agent_id=str(other.aid) if other.aid is not None else other.path.stem,
                    path=str(other.path),
                    layout="opencollab run folder",
                    agent_type=other.role,
                    description=_task_line(sub),
                    messages=len(sub.messages),
                    requests=trace.calls_by_aid.get(other.aid, 0) if other.aid is not None else 0,
                )
            )
    run = folder.name
    return Transcript(
        format=FORMAT,
        path=file,
        session_id=f"{run}/agent_{aid}" if aid is not None else run,
        model=model,
        window=trace.window,
        title=f"agent {aid} · {role} ({run})" if role else f"agent {aid} ({run})",
        messages=messages,
        segments=[Segment(index=0, message_ids=tuple(ids))],
        requests=requests,
        events=events,
        subagents=subagents,
        load_issues=issues,
        skipped=dict(skipped),
    )


class OpencollabFormat:
    """Detects an OpenCollab snapshot (`snapshot_version` + `messages`), its journal, or a run folder."""

    format = FORMAT

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.is_dir():
            return bool(agent_files(path))
        if _is_snapshot_head(head):
            if b'"messages"' in head:
                return True
            try:  # `messages` comes last, after a `session_state` that can be long
                return path.stat().st_size > len(head)
            except OSError:
                return False
        if path.name.endswith(".json" + JOURNAL_SUFFIX) and _JOURNAL_KEY.search(head[:SNIFF_HEAD]):
            return _is_snapshot_head(_head(path.with_name(path.name.removesuffix(JOURNAL_SUFFIX))))
        return False

    def load(
        self, path: Path, agent: int | str | None = None, *, progress: Progress | None = None
    ) -> Transcript:
        """(A run is read file by file, a snapshot whole: `progress` hears nothing.)"""
        return load_opencollab(path, agent=agent)


__all__ = [
    "FORMAT",
    "AgentFile",
    "OpencollabFormat",
    "RawLedger",
    "agent_files",
    "find_trajectory",
    "load_opencollab",
    "messages_of",
    "read_ledger",
    "read_trajectory",
    "usage_of",
]
