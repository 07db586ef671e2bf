"""What the open figure could be at best with this design: a loader cut down to its bare minimum.

python -m benchmarks.bound PATH    # {"read": s, "models": s, "lines": n, "messages": n}

It reads the file whole, decodes every line with the reader's typed decoder (`claude_code.lines`),
keeps a (parent, line) pair per uuid for progress lines and makes one message per conversation
line, its blocks by `claude_code.lines.blocks`: no tree, no active branch, no grouping of a
response's lines, no requests, no load issues. Against `report --json`, which does all of that and
the report besides, it tells how much of the gap to the floor is the reader's and the report's
work, and how much is a Python object per block and message.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from inspector.formats.claude_code.lines import Line, blocks, decode
from inspector.model import CONVERSATION, Message, Origin, Role


def _with_models(path: str) -> Callable[[int, Line], Any]:
    names: dict[str, str] = {}

    def make(line_no: int, line: Line) -> Any:
        assert line.message is not None and line.uuid is not None
        return Message(
            id=line.uuid,
            role=Role.ASSISTANT if line.type == "assistant" else Role.USER,
            blocks=blocks(line.message, names),
            timestamp=line.timestamp,
            source=CONVERSATION,
            origin=Origin(file=path, line=line_no),
        )

    return make


def bare_load(path: str, data: bytes, make: Callable[[int, Line], Any]) -> tuple[int, int]:
    """(lines, messages) of `data` read the bare way, each message made by `make`."""
    nodes: dict[str, tuple[str | None, int]] = {}
    messages: list[Any] = []
    lines = 0
    for line_no, raw in enumerate(data.split(b"\n"), 1):
        if not raw:
            continue
        lines += 1
        line = decode(raw)
        if line.uuid is None:
            continue
        nodes[line.uuid] = (line.parent_uuid, line_no)
        if line.type in ("user", "assistant") and line.message is not None:
            messages.append(make(line_no, line))
    return lines, len(messages)


def main(argv: list[str]) -> int:
    path = argv[0]
    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        data = fh.read()
    out: dict[str, float | int] = {"read": time.perf_counter() - t0}
    best = float("inf")
    # a first pass faults in the memory every later one reuses: run it untimed
    for i in range(3):
        gc.collect()
        gc.disable()  # as the reader does while it loads
        t = time.perf_counter()
        lines, messages = bare_load(path, data, _with_models(path))
        took = time.perf_counter() - t
        gc.enable()
        if i:
            best = min(best, took)
        out["lines"], out["messages"] = lines, messages
    out["models"] = best
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
