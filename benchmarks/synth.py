"""Synthetic Claude Code transcripts for the benchmarks, by size, with real compactions.

`tools.samples.generate` writes a realistic Claude Code 2.1 session of any length: progress,
hook and file-history lines between the conversation, responses streamed over several lines
sharing `message.id`, large tool results that `toolUseResult` repeats. It writes a hook or two per
tool call where real sessions run several, so `splice_hooks` adds them: then, as in a real
session, most lines are not conversation (about 70%, as in spotter-fa812bfe). It never
compacts, so a long session's context grows without bound (about 500 tokens a request: a million
tokens by request 2,000). Real sessions of that length compact whenever the context nears the
auto-compact line (167,000 for a 200k window), so `splice_compactions` rewrites the generated
stream the way Claude Code would have written it: before the first request whose context would
reach the threshold it inserts a `system/compact_boundary` line and an `isCompactSummary` user
line, re-parents the next response on the summary, and lowers every later request's usage by what
the compaction took away. Contexts then stay in the 150k-190k band that real sessions show.

Files are cached under `benchmarks/out/` (git-ignored), keyed by their parameters and a hash of
the generator and this module, so a second run reuses them.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tools.samples import generate as gen

OUT = Path(__file__).resolve().parent / "out"
MB = 1_000_000

HOOK_NAMESPACE = uuid.UUID("6f1b1f0e-5c1a-4c57-9d36-2b8f0c1e7a11")
"""Of the uuids this module makes (version 5: the generator's are version 4, so none can clash)."""

COMPACT_AT = 165_000
"""Contexts compact when the next request would reach COMPACT_AT + (0..COMPACT_JITTER)."""
COMPACT_JITTER = 6_000
BYTES_PER_REQUEST = 13_468
BYTES_GROWTH = 0.6546
"""A file of n requests takes about BYTES_PER_REQUEST * n + BYTES_GROWTH * n**2 bytes, hooks and
compactions spliced in: a request costs more as the session goes on (its file-history snapshot
lists every file touched so far). Fitted on this generator: 714 requests make 9.95 MB, 5,795 make
100.8 MB, 7,143 make 129.6 MB, 28,571 make 876 MB (a per-request constant made the "100 MB" file
130 MB and the "400 MB" one 876 MB)."""


@dataclass(frozen=True)
class Synth:
    """One synthetic transcript on disk."""

    path: Path
    bytes: int
    lines: int
    requests: int
    compactions: int
    peak_context: int
    seconds: float


def _fingerprint() -> str:
    h = hashlib.sha256()
    for mod in (gen.__file__, __file__):
        h.update(Path(mod).read_bytes())
    return h.hexdigest()[:12]


def _user_tokens(content: Any) -> int:
    if isinstance(content, str):
        return gen.count_tokens(content)
    total = 0
    for block in content or ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            inner = block.get("content", "")
            if isinstance(inner, str):
                total += gen.count_tokens(inner)
            else:
                total += sum(gen.count_tokens(b.get("text", "")) for b in inner if isinstance(b, dict))
        else:
            total += gen.count_tokens(block.get("text", ""))
    return total


def _summary_text(rng: random.Random, prompts: list[str], files: list[str], index: int) -> str:
    """A compact summary shaped like Claude Code's (analysis, intent, files, errors, pending work)."""
    lines = [
        gen_summary_prefix(),
        "Analysis:",
        "Let me trace through the conversation chronologically:",
        "",
    ]
    for n, prompt in enumerate(prompts[-6:], 1):
        lines.append(f"{n}. The user asked: {prompt[:400]}")
    lines += ["", "Summary:", "1. Primary Request and Intent:"]
    lines += [f"   - {p[:300]}" for p in prompts[-3:]]
    lines += ["", "2. Key Technical Concepts:"]
    concepts = ("CSV parsing", "Decimal rounding", "currency conversion", "argparse", "pytest fixtures")
    lines += [f"   - {c}" for c in concepts]
    lines += ["", "3. Files and Code Sections:"]
    for f in files[-24:]:
        lines.append(f"   - {f}")
        lines.append(
            f"     - touched while working on part {index}; "
            + " ".join(rng.choice(concepts) for _ in range(8))
        )
        lines.append(
            "       ```python\n"
            + "\n".join(f"       line_{i} = parse(row[{i}])" for i in range(rng.randint(4, 14)))
            + "\n       ```"
        )
    lines += ["", "4. Errors and fixes:", "   - a blank trailing row raised ValueError; now skipped", ""]
    lines += ["5. Pending Tasks:", "   - finish the feature and run the whole suite", "", "6. Current Work:"]
    lines.append("   " + " ".join(rng.choice(concepts) for _ in range(60)))
    return "\n".join(lines)


def gen_summary_prefix() -> str:
    return (
        "This session is being continued from a previous conversation that ran out of context. "
        "The summary below covers the earlier portion of the conversation.\n"
    )


def _envelope(rec: dict[str, Any]) -> dict[str, Any]:
    """The fields Claude Code writes on every line of a session, as the line `rec` has them."""
    return {
        "isSidechain": False,
        "userType": "external",
        "cwd": rec.get("cwd"),
        "sessionId": rec.get("sessionId"),
        "version": rec.get("version"),
        "gitBranch": rec.get("gitBranch"),
    }


HOOKS_PER_CALL = (
    ("PreToolUse", "~/.claude/hooks/tmux-waiting.sh clear"),
    ("PreToolUse", "~/.claude/hooks/log-tool-use.sh"),
    ("PreToolUse", "bd hook pre-tool --quiet"),
    ("PostToolUse", "~/.claude/hooks/tmux-waiting.sh clear"),
    ("PostToolUse", "~/.claude/hooks/log-tool-use.sh --after"),
    ("PostToolUse", "bd hook post-tool --quiet"),
)
"""The hook_progress lines written for every tool call. The generator writes a hook or two per
call; real Claude Code 2.1 sessions run several hooks per event (spotter-fa812bfe: 1,144
hook_progress lines for its ~200 tool calls, 71% of its lines progress), so that most lines of a
benchmark file, as of a real one, are not conversation."""


def splice_hooks(src: Path, dst: Path) -> int:
    """Copy `src` to `dst` with HOOKS_PER_CALL hook_progress lines after every assistant line
    that makes tool calls (hanging off it, as Claude Code writes them: leaves of the tree, never
    on the conversation's chain). Returns the lines written."""
    written = 0
    with src.open("rb") as fin, dst.open("wb") as fout:
        for raw in fin:
            fout.write(raw)
            written += 1
            if b'"tool_use"' not in raw:
                continue
            rec = json.loads(raw)
            if rec.get("type") != "assistant":
                continue
            calls = [b for b in rec["message"].get("content", []) if b.get("type") == "tool_use"]
            for call in calls:
                name = call.get("name", "")
                for n, (event, command) in enumerate(HOOKS_PER_CALL):
                    line = {
                        "parentUuid": rec["uuid"],
                        **_envelope(rec),
                        "type": "progress",
                        "data": {
                            "type": "hook_progress",
                            "hookEvent": event,
                            "hookName": f"{event}:{name}",
                            "command": command,
                        },
                        "parentToolUseID": call.get("id"),
                        "toolUseID": call.get("id"),
                        "timestamp": rec.get("timestamp"),
                        # from the line it hangs off: never one of the generator's own uuids
                        "uuid": str(uuid.uuid5(HOOK_NAMESPACE, f"{rec['uuid']}/{call.get('id')}/{n}")),
                    }
                    fout.write(json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
                    written += 1
    return written


def splice_compactions(src: Path, dst: Path, seed: int, threshold: int = COMPACT_AT) -> tuple[int, int, int]:
    """Copy `src` to `dst`, inserting auto compactions (see the module docstring).

    Returns (lines written, compactions, peak context after splicing).
    """
    rng = random.Random(seed)
    overhead = gen.SYSTEM_OVERHEAD_TOKENS
    sent = 0  # tokens of chain messages since the last boundary (the generator's own count)
    offset = 0  # tokens taken away by compactions so far
    last_mid: str | None = None
    limit = threshold + rng.randint(0, COMPACT_JITTER)
    prompts: list[str] = []
    files: list[str] = []
    compactions = 0
    peak = 0
    written = 0
    fresh = False  # the next request is the first after a compaction
    last_context = 0
    with src.open("rb") as fin, dst.open("wb") as fout:
        for raw in fin:
            rec = json.loads(raw)
            kind = rec.get("type")
            if kind == "assistant":
                msg = rec["message"]
                mid = msg.get("id")
                if mid != last_mid:
                    # a new request: compact first when it would reach the line
                    if overhead + sent >= limit:
                        parent = rec.get("parentUuid")
                        ts = rec.get("timestamp")
                        # version-5 uuids: never one of the generator's (version 4, drawn from
                        # a generator seeded like `rng`)
                        buuid = str(uuid.uuid5(HOOK_NAMESPACE, f"compaction/{compactions}/boundary"))
                        suuid = str(uuid.uuid5(HOOK_NAMESPACE, f"compaction/{compactions}/summary"))
                        boundary = {
                            "parentUuid": None,
                            "logicalParentUuid": parent,
                            **_envelope(rec),
                            "type": "system",
                            "subtype": "compact_boundary",
                            "content": "Conversation compacted",
                            "isMeta": False,
                            "timestamp": ts,
                            "uuid": buuid,
                            "level": "info",
                            "compactMetadata": {"trigger": "auto", "preTokens": last_context},
                        }
                        text = _summary_text(rng, prompts, files, compactions + 1)
                        summary = {
                            "parentUuid": buuid,
                            **_envelope(rec),
                            "type": "user",
                            "message": {"role": "user", "content": text},
                            "isVisibleInTranscriptOnly": True,
                            "isCompactSummary": True,
                            "uuid": suuid,
                            "timestamp": ts,
                        }
                        for extra in (boundary, summary):
                            fout.write(json.dumps(extra, ensure_ascii=False, separators=(",", ":")).encode())
                            fout.write(b"\n")
                            written += 1
                        rec["parentUuid"] = suuid
                        size = gen.count_tokens(text) + gen.TOKENS_PER_MESSAGE
                        offset += sent - size
                        sent = size
                        compactions += 1
                        fresh = True
                        limit = threshold + rng.randint(0, COMPACT_JITTER)
                    else:
                        fresh = False
                    last_mid = mid
                usage = msg.get("usage")
                if usage and offset:
                    context = (
                        usage["input_tokens"]
                        + usage["cache_creation_input_tokens"]
                        + usage["cache_read_input_tokens"]
                        - offset
                    )
                    cache_read = (
                        min(overhead, context) if fresh else max(0, usage["cache_read_input_tokens"] - offset)
                    )
                    cache_read = min(cache_read, context - usage["input_tokens"])
                    usage["cache_read_input_tokens"] = cache_read
                    usage["cache_creation_input_tokens"] = context - usage["input_tokens"] - cache_read
                    usage["cache_creation"] = {
                        "ephemeral_5m_input_tokens": 0,
                        "ephemeral_1h_input_tokens": usage["cache_creation_input_tokens"],
                    }
                if usage:
                    last_context = (
                        usage["input_tokens"]
                        + usage["cache_creation_input_tokens"]
                        + usage["cache_read_input_tokens"]
                    )
                    peak = max(peak, last_context)
                for block in msg.get("content") or ():
                    sent += gen._context_tokens(block)
                    if block.get("type") == "tool_use":
                        path = (block.get("input") or {}).get("file_path")
                        if isinstance(path, str):
                            files.append(path)
                sent += gen.TOKENS_PER_MESSAGE
                raw = json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
            elif kind == "user":
                content = rec.get("message", {}).get("content")
                sent += _user_tokens(content) + gen.TOKENS_PER_MESSAGE
                if isinstance(content, str) and not rec.get("isMeta"):
                    prompts.append(content)
            fout.write(raw)
            written += 1
    return written, compactions, peak


def synth(
    name: str,
    *,
    requests: int,
    seed: int = 11,
    target_peak_tokens: int = 180_000,
    compact: bool = True,
    out: Path = OUT,
) -> Synth:
    """A cached synthetic transcript `out/<name>-<params>.jsonl` (generated on first use)."""
    out.mkdir(parents=True, exist_ok=True)
    key = f"{name}-r{requests}-s{seed}-p{target_peak_tokens}-{'c' if compact else 'n'}-{_fingerprint()}"
    path = out / f"{key}.jsonl"
    meta = out / f"{key}.json"
    if path.exists() and meta.exists():
        data = json.loads(meta.read_text())
        return Synth(path=path, **{k: v for k, v in data.items() if k != "path"})
    for stale in out.glob(f"{name}-*.json*"):
        stale.unlink()
    t0 = time.perf_counter()
    raw = out / f"{key}.raw.jsonl"
    info = gen.generate_claude_code(raw, requests=requests, seed=seed, target_peak_tokens=target_peak_tokens)
    if compact:
        compacted = out / f"{key}.compacted.jsonl"
        _, compactions, peak = splice_compactions(raw, compacted, seed)
        raw.unlink()
        lines = splice_hooks(compacted, path)
        compacted.unlink()
    else:
        lines = splice_hooks(raw, path)
        raw.unlink()
        compactions, peak = 0, info.peak_context
    result = Synth(
        path=path,
        bytes=path.stat().st_size,
        lines=lines,
        requests=info.requests,
        compactions=compactions,
        peak_context=peak,
        seconds=round(time.perf_counter() - t0, 2),
    )
    data = asdict(result)
    data.pop("path")
    meta.write_text(json.dumps(data))
    return result


def requests_for(size_mb: float) -> int:
    """How many requests make a transcript of about `size_mb` megabytes (see BYTES_GROWTH)."""
    a, b = BYTES_PER_REQUEST, BYTES_GROWTH
    return max(30, round((math.sqrt(a * a + 4 * b * size_mb * MB) - a) / (2 * b)))


def by_size(size_mb: float, seed: int = 11) -> Synth:
    """A compacting transcript of about `size_mb` MB."""
    label = f"{size_mb:g}mb"
    return synth(label, requests=requests_for(size_mb), seed=seed)
