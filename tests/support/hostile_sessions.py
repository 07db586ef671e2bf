"""Hostile sessions in each of the five formats, written under a folder (never committed).

Every string a transcript can put on the app's screen holds escape sequences (OSC 52 clipboard
write, OSC 2 window title, OSC 8 link, CSI), C1 controls, BEL, DEL, backspace, and Textual/Rich
markup: message text, tool names (one is `Bash[/]`, which Textual's markup parser refuses),
tool arguments and results, ids, model names, the file name, pinned-source names, and the
compaction trigger (Claude Code records one).

Each marked piece of markup sits between « and »: shown literally it reads `«[b]x[/b]»`; read as
markup it would read `«x»`, which is what `INTERPRETED` looks for.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

OSC52 = "\x1b]52;c;SGVsbG8=\x07"
OSC2 = "\x1b]2;PWNED-TITLE\x07"
OSC8 = "\x1b]8;;http://evil.example/\x1b\\L\x1b]8;;\x1b\\"
CSI = "\x1b[31m\x1b[2J"
C1 = "\x9b2J\x9d0;C1-TITLE\x9c\x85"
CONTROLS = f"{OSC52}{OSC2}{OSC8}{CSI}{C1}\x07\x7f\x08\x0c\x0d"
"""Every kind of control the terminal would act on."""
SHORT_CONTROLS = f"{OSC2}\x9b\x07"
"""Controls without a slash (for file names and ids that become file names)."""
MARKUP = "«[b]x[/b]»«[@click=app.quit]q[/]»«[link='http://evil.example/']l[/link]»"
INTERPRETED = ("«x»", "«q»", "«l»", "«t»", "«f»", "«i»", "«p»")
"""What the screen would show if the markup were read as markup."""
TOOL = "Bash[/]"
"""A tool name that Textual's markup parser cannot read (a closing tag with nothing open)."""
EVIL_TOOL = f"Ev{SHORT_CONTROLS}«[b]t[/b]»"
TEXT = f"hostile {CONTROLS} {MARKUP}\tend"
MODEL = f"model{CONTROLS}{MARKUP}"
TRIGGER = f"auto{OSC52}{OSC2}[b]trig[/b]"
"""A `compact_boundary` trigger: the gauge's subtitle shows it at first paint."""
FILE_STEM = f"sess{SHORT_CONTROLS}«[b]f»"
"""The transcript's file name (a file name holds any byte but NUL and /)."""
ID = f"id{SHORT_CONTROLS}«[b]i[/b]»"
CTX_NAME = f"p«[b]p[/b]»{OSC2}{OSC52}\x9b\x07"

FORMATS = ("claude-code", "codex", "opencode", "opencollab", "generic")


def _jsonl(records: list[Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


# -- claude code ---------------------------------------------------------------------------------
def _cc(kind: str, uuid: str, parent: str | None, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "sess-hostile",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": message,
        **extra,
    }


def _cc_usage(n: int) -> dict[str, int]:
    return {
        "input_tokens": 10,
        "cache_creation_input_tokens": n,
        "cache_read_input_tokens": 1000,
        "output_tokens": 5,
    }


def claude_code(folder: Path) -> Path:
    u1, a1, u2, a2, u3, a3, b1, s1, a4 = (
        f"{ID}-{n}" for n in ("u1", "a1", "u2", "a2", "u3", "a3", "b1", "s1", "a4")
    )
    call1, call2 = f"call{SHORT_CONTROLS}-1", f"call{SHORT_CONTROLS}-2"

    def assistant(uuid: str, parent: str, mid: str, content: Any, n: int) -> dict[str, Any]:
        return _cc(
            "assistant",
            uuid,
            parent,
            {"id": mid, "model": MODEL, "role": "assistant", "content": content, "usage": _cc_usage(n)},
        )

    records = [
        {"type": "custom-title", "customTitle": TEXT, "sessionId": "sess-hostile"},
        _cc("user", u1, None, {"role": "user", "content": TEXT}),
        assistant(
            a1,
            u1,
            f"msg{SHORT_CONTROLS}1",
            [{"type": "tool_use", "id": call1, "name": TOOL, "input": {"command": TEXT}}],
            100,
        ),
        _cc(
            "user",
            u2,
            a1,
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call1, "content": TEXT}]},
        ),
        assistant(
            a2,
            u2,
            f"msg{SHORT_CONTROLS}2",
            [{"type": "tool_use", "id": call2, "name": EVIL_TOOL, "input": {"file_path": TEXT}}],
            200,
        ),
        _cc(
            "user",
            u3,
            a2,
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call2, "content": TEXT}]},
        ),
        assistant(a3, u3, f"msg{SHORT_CONTROLS}3", [{"type": "text", "text": TEXT}], 300),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": b1,
            "parentUuid": None,
            "logicalParentUuid": a3,
            "sessionId": "sess-hostile",
            "timestamp": "2026-01-01T00:00:02Z",
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": TRIGGER, "preTokens": 5000},
        },
        _cc("user", s1, b1, {"role": "user", "content": f"summary: {TEXT}"}, isCompactSummary=True),
        assistant(a4, s1, f"msg{SHORT_CONTROLS}4", [{"type": "text", "text": TEXT}], 50),
    ]
    path = folder / f"{FILE_STEM}.jsonl"
    path.write_bytes(_jsonl(records))
    return path


# -- codex ---------------------------------------------------------------------------------------
def _cx(kind: str, payload: Any) -> dict[str, Any]:
    return {"timestamp": "2026-01-01T00:00:00Z", "type": kind, "payload": payload}


def _cx_usage(inp: int) -> dict[str, Any]:
    return _cx(
        "event_msg",
        {
            "type": "token_count",
            "info": {
                "last_token_usage": {
                    "input_tokens": inp,
                    "cached_input_tokens": inp // 2,
                    "output_tokens": 5,
                },
                "total_token_usage": {"input_tokens": inp},
                "model_context_window": 258_400,
            },
        },
    )


def codex(folder: Path) -> Path:
    call1, call2 = f"c{SHORT_CONTROLS}1", f"c{SHORT_CONTROLS}2"
    records = [
        _cx("session_meta", {"id": ID, "base_instructions": {"text": TEXT}}),
        _cx("turn_context", {"model": MODEL}),
        _cx(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": TEXT}]},
        ),
        _cx(
            "response_item",
            {
                "type": "function_call",
                "name": TOOL,
                "arguments": json.dumps({"command": [TEXT]}),
                "call_id": call1,
            },
        ),
        _cx_usage(1000),
        _cx("response_item", {"type": "function_call_output", "call_id": call1, "output": TEXT}),
        _cx(
            "response_item",
            {
                "type": "function_call",
                "name": EVIL_TOOL,
                "arguments": json.dumps({"path": TEXT}),
                "call_id": call2,
            },
        ),
        _cx_usage(1200),
        _cx("response_item", {"type": "function_call_output", "call_id": call2, "output": TEXT}),
        _cx(
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": TEXT}]},
        ),
        _cx_usage(1400),
    ]
    path = folder / f"rollout-{FILE_STEM}.jsonl"
    path.write_bytes(_jsonl(records))
    return path


# -- opencode (a database) -------------------------------------------------------------------------
T0 = 1_790_768_250_000
OC_SCHEMA = """
CREATE TABLE session (id text PRIMARY KEY, project_id text, parent_id text, slug text, directory text,
  title text, version text, time_created integer, time_updated integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text, time_created integer, time_updated integer, data text);
CREATE TABLE part (id text PRIMARY KEY, message_id text, session_id text, time_created integer,
  time_updated integer, data text);
"""


def _oc_tokens(n: int) -> dict[str, Any]:
    return {
        "type": "step-finish",
        "tokens": {"input": n, "output": 5, "reasoning": 0, "cache": {"read": 900, "write": 0}},
    }


def opencode(folder: Path) -> Path:
    session = f"ses{SHORT_CONTROLS}"
    records: list[tuple[str, dict[str, Any], list[tuple[str, dict[str, Any]]]]] = [
        (
            f"msg_01{SHORT_CONTROLS}",
            {"role": "user", "time": {"created": T0}},
            [(f"prt_01{ID}", {"type": "text", "text": TEXT})],
        ),
        (
            f"msg_02{SHORT_CONTROLS}",
            {"role": "assistant", "modelID": MODEL, "time": {"created": T0 + 100, "completed": T0 + 500}},
            [
                ("prt_02a", {"type": "step-start"}),
                (
                    "prt_02b",
                    {
                        "type": "tool",
                        "tool": TOOL,
                        "callID": f"call{SHORT_CONTROLS}1",
                        "state": {"status": "completed", "input": {"command": TEXT}, "output": TEXT},
                    },
                ),
                ("prt_02c", _oc_tokens(100)),
                ("prt_02d", {"type": "step-start"}),
                (
                    "prt_02e",
                    {
                        "type": "tool",
                        "tool": EVIL_TOOL,
                        "callID": f"call{SHORT_CONTROLS}2",
                        "state": {"status": "error", "input": {"filePath": TEXT}, "error": TEXT},
                    },
                ),
                ("prt_02f", _oc_tokens(200)),
                ("prt_02g", {"type": "step-start"}),
                ("prt_02h", {"type": "text", "text": TEXT}),
                ("prt_02i", _oc_tokens(300)),
            ],
        ),
    ]
    path = folder / f"{FILE_STEM}.db"
    con = sqlite3.connect(path)
    con.executescript(OC_SCHEMA)
    con.execute(
        "INSERT INTO session VALUES (?, 'global', NULL, 's', ?, ?, '1.2', ?, ?)",
        (session, f"/w/{SHORT_CONTROLS}", TEXT, T0, T0 + 5000),
    )
    for mid, data, parts in records:
        t = data["time"]["created"]
        con.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
            (mid, session, t, t, json.dumps({"id": mid, **data})),
        )
        for n, (pid, pdata) in enumerate(parts):
            con.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                (pid, mid, session, t + n, t + n, json.dumps({"id": pid, "messageID": mid, **pdata})),
            )
    con.commit()
    con.close()
    return path


# -- opencollab (a run folder) ---------------------------------------------------------------------
def opencollab(folder: Path) -> Path:
    run = folder / f"run{SHORT_CONTROLS}"
    run.mkdir()
    call1, call2 = f"call{SHORT_CONTROLS}1", f"call{SHORT_CONTROLS}2"
    calls1 = [
        {
            "id": call1,
            "type": "function",
            "function": {"name": TOOL, "arguments": json.dumps({"command": TEXT})},
        }
    ]
    calls2 = [
        {
            "id": call2,
            "type": "function",
            "function": {"name": EVIL_TOOL, "arguments": json.dumps({"path": TEXT})},
        }
    ]
    messages = [
        {"role": "system", "content": TEXT, "_ctx": {"name": CTX_NAME, "layer": "identity", "priority": 100}},
        {
            "role": "system",
            "content": TEXT,
            "_ctx": {"name": CTX_NAME + "2", "layer": "skill", "priority": 85},
        },
        {"role": "user", "content": TEXT, "_ctx": {"name": "task", "layer": "task", "priority": 80}},
        {"role": "assistant", "content": TEXT, "tool_calls": calls1},
        {"role": "tool", "tool_call_id": call1, "name": TOOL, "content": TEXT},
        {"role": "assistant", "content": None, "tool_calls": calls2},
        {"role": "tool", "tool_call_id": call2, "name": EVIL_TOOL, "content": TEXT},
        {"role": "assistant", "content": TEXT},
    ]
    snapshot = {"snapshot_version": 1, "aid": 0, "role": "coder", "model": MODEL, "messages": messages}
    (run / "agent_0_coder.json").write_text(json.dumps(snapshot, indent=2), encoding="utf-8")

    def line(step: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {
            "timestamp": 1787289092.0 + step,
            "step": step,
            "run_id": ID,
            "type": kind,
            "payload": payload,
            "metrics": {},
        }

    usage = {"input_tokens": 1000, "output_tokens": 10, "cache_read_tokens": 0, "estimated": False}
    trace = [
        line(1, "session.history_compaction", {"aid": 0, "model": MODEL, "context_window_tokens": 65536}),
        line(
            2,
            "llm_call",
            {"aid": 0, "seq": 1, "model": MODEL, "content": TEXT, "tool_calls": calls1, "usage": usage},
        ),
        line(
            3,
            "context_shaping",
            {"seq": 2, "aid": 0, "rung": "per_tool_budget", "tokens_before": 1200, "tokens_after": 1100},
        ),
        line(
            4,
            "llm_call",
            {"aid": 0, "seq": 2, "model": MODEL, "content": None, "tool_calls": calls2, "usage": usage},
        ),
        line(5, "llm_call", {"aid": 0, "seq": 3, "model": MODEL, "content": TEXT, "usage": usage}),
    ]
    (run / "trajectory.jsonl").write_bytes(_jsonl(trace))
    return run


# -- generic chat ----------------------------------------------------------------------------------
def generic(folder: Path) -> Path:
    call1, call2 = f"c{SHORT_CONTROLS}1", f"c{SHORT_CONTROLS}2"
    body = {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": TEXT},
            {"role": "user", "content": TEXT},
            {
                "role": "assistant",
                "content": TEXT,
                "tool_calls": [
                    {
                        "id": call1,
                        "type": "function",
                        "function": {"name": TOOL, "arguments": json.dumps({"command": TEXT})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call1, "content": TEXT},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call2,
                        "type": "function",
                        "function": {"name": EVIL_TOOL, "arguments": json.dumps({"path": TEXT})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call2, "content": TEXT},
            {"role": "assistant", "content": TEXT},
        ],
    }
    path = folder / f"{FILE_STEM}.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


BUILDERS = {
    "claude-code": claude_code,
    "codex": codex,
    "opencode": opencode,
    "opencollab": opencollab,
    "generic": generic,
}


def build(fmt: str, folder: Path) -> Path:
    """Write the hostile session of `fmt` under `folder`; the path to open."""
    return BUILDERS[fmt](folder)
