"""An opencode database with three sessions, made from the corpus dump (opencode 1.18.33).

The corpus session is kept as it is; two more are copies of its rows, re-keyed (new session,
message and part ids), an hour and two hours later, with their token counts multiplied so that
each session's report differs. The third keeps only the final answer (one request).

    session                              requests  contexts        updated
    ses_f0de500f8ffcThirdCopy00003       1         15,000          newest
    ses_f0de500f8ffdSecondCopy0002       2         1,200, 1,500
    ses_f0de500f8ffeXvsiYJDOg5JtrU       2         120, 150        oldest (the corpus session)
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS

DUMP = CORPUS / "opencode" / "lazyagents-opencode-1.18.33.sql"
ORIGINAL = "ses_f0de500f8ffeXvsiYJDOg5JtrU"
SECOND = "ses_f0de500f8ffdSecondCopy0002"
THIRD = "ses_f0de500f8ffcThirdCopy00003"
TOOL_CALL_MESSAGE = "msg_0f21b0104001XDVLEwtN0JiIZk"
"""The corpus session's first answer (the bash call); the third copy leaves it out."""
HOUR_MS = 3_600_000

SESSIONS: dict[str, dict[str, Any]] = {
    # id: title, token factor, time shift, requests, contexts
    THIRD: {"title": "Third copy: one answer", "factor": 100, "shift": 2 * HOUR_MS, "contexts": [15_000]},
    SECOND: {
        "title": "Second copy, ten times the tokens",
        "factor": 10,
        "shift": HOUR_MS,
        "contexts": [1_200, 1_500],
    },
    ORIGINAL: {"title": "The command printed fixture.", "factor": 1, "shift": 0, "contexts": [120, 150]},
}
NEWEST_FIRST = [THIRD, SECOND, ORIGINAL]


def _scaled(tokens: Any, factor: int) -> Any:
    if isinstance(tokens, dict):
        return {k: _scaled(v, factor) for k, v in tokens.items()}
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        return tokens * factor
    return tokens


def _shift_times(data: dict[str, Any], shift: int) -> None:
    for key in ("time",):
        times = data.get(key)
        if isinstance(times, dict):
            for k, v in list(times.items()):
                if isinstance(v, int):
                    times[k] = v + shift
    state = data.get("state")
    if isinstance(state, dict):
        _shift_times(state, shift)


def _copy_session(con: sqlite3.Connection, new: str, title: str, factor: int, shift: int, tag: str) -> None:
    cols = [r[1] for r in con.execute("PRAGMA table_info(session)")]
    row = dict(
        zip(cols, con.execute("SELECT * FROM session WHERE id = ?", (ORIGINAL,)).fetchone(), strict=True)
    )
    row.update(id=new, title=title, slug=f"copy-{tag}")
    row["time_created"] += shift
    row["time_updated"] += shift
    for c in ("tokens_input", "tokens_output", "tokens_cache_read", "tokens_cache_write"):
        row[c] *= factor
    con.execute(
        f"INSERT INTO session ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
        [row[c] for c in cols],
    )
    keep_all = new != THIRD
    ids = {mid for (mid,) in con.execute("SELECT id FROM message WHERE session_id = ?", (ORIGINAL,))}
    renamed = {mid: mid[:-4] + tag for mid in ids}
    for mid, created, updated, data in con.execute(
        "SELECT id, time_created, time_updated, data FROM message WHERE session_id = ? ORDER BY id",
        (ORIGINAL,),
    ).fetchall():
        if not keep_all and mid == TOOL_CALL_MESSAGE:
            continue
        rec = json.loads(data)
        if isinstance(rec.get("parentID"), str):
            rec["parentID"] = renamed.get(rec["parentID"], rec["parentID"])
        if "tokens" in rec:
            rec["tokens"] = _scaled(rec["tokens"], factor)
        _shift_times(rec, shift)
        con.execute(
            "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
            (renamed[mid], new, created + shift, updated + shift, json.dumps(rec)),
        )
        for pid, pcreated, pupdated, pdata in con.execute(
            "SELECT id, time_created, time_updated, data FROM part WHERE message_id = ? ORDER BY id", (mid,)
        ).fetchall():
            part = json.loads(pdata)
            if "tokens" in part:
                part["tokens"] = _scaled(part["tokens"], factor)
            _shift_times(part, shift)
            con.execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (pid[:-4] + tag, renamed[mid], new, pcreated + shift, pupdated + shift, json.dumps(part)),
            )


def three_session_db(folder: Path) -> Path:
    """`folder/opencode.db`: the corpus session and two re-keyed copies (see the module's table)."""
    if not DUMP.exists():
        pytest.skip(f"the shared corpus is not here ({CORPUS} absent): a fresh clone has no ../shared/corpus")
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "opencode.db"
    con = sqlite3.connect(db)
    con.executescript(DUMP.read_text(encoding="utf-8"))
    for sid, tag in ((SECOND, "CP02"), (THIRD, "CP03")):
        info = SESSIONS[sid]
        _copy_session(con, sid, info["title"], info["factor"], info["shift"], tag)
    con.commit()
    con.close()
    return db
