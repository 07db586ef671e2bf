"""What the open figure could be at best with this design: a loader cut down to its bare minimum.

python -m benchmarks.bound PATH    # {"read": s, "models": s, "structs": s, "lines": n, "messages": n}

Both loaders read the file whole, decode every line with the reader's typed decoder
(`claude_code_lines`), keep a (parent, line) pair per uuid for progress lines and make one message
per conversation line, its blocks by `claude_code_lines.blocks`: no tree, no active branch, no
grouping of a response's lines, no requests, no load issues. `models` makes the model's own
(pydantic) objects, as the reader does; `structs` makes msgspec structs of the same fields in
their place (what a core on msgspec would pay). Against `report --json`, which does all of that and
the report besides, they tell how much of the gap to the floor tuning can close and how much is the
design: a Python object per block and message, and pydantic's cost to make one.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import msgspec

from inspector.formats.claude_code_lines import (
    Line,
    TypedMessage,
    _Text,
    _Thinking,
    _ToolResult,
    _ToolUse,
    blocks,
    decode,
)
from inspector.model import CONVERSATION, Message, Origin, Role
from inspector.model.trusted import trusted


class _Block(msgspec.Struct, frozen=True):
    kind: str
    text: str


class _Message(msgspec.Struct, frozen=True):
    id: str
    role: str
    blocks: tuple[_Block, ...]
    timestamp: str | None
    file: str
    line: int


def _with_models(path: str) -> Callable[[int, Line], Any]:
    new_message, new_origin = trusted(Message), trusted(Origin)
    names: dict[str, str] = {}

    def make(line_no: int, line: Line) -> Any:
        assert line.message is not None and line.uuid is not None
        return new_message(
            id=line.uuid,
            role=Role.ASSISTANT if line.type == "assistant" else Role.USER,
            blocks=blocks(line.message, names),
            timestamp=line.timestamp,
            source=CONVERSATION,
            origin=new_origin(file=path, line=line_no),
        )

    return make


def _struct_blocks(message: TypedMessage, names: dict[str, str]) -> tuple[_Block, ...]:
    """`claude_code_lines.blocks`, branch for branch, making structs."""
    content = message.content
    if content is None:
        return ()
    if isinstance(content, str):
        return (_Block("text", content),)
    out: list[_Block] = []
    for b in content:
        if isinstance(b, _ToolResult):
            rc = b.content
            if rc is None or isinstance(rc, str):
                text = rc or ""
            else:
                text = "\n".join(item.text for item in rc if isinstance(item, _Text))
            out.append(_Block(names.get(b.tool_use_id, "tool_result"), text))
        elif isinstance(b, _Text):
            out.append(_Block("text", b.text))
        elif isinstance(b, _ToolUse):
            names[b.id] = b.name
            out.append(_Block(b.name, b.id))
        elif isinstance(b, _Thinking):
            out.append(_Block("reasoning", b.thinking))
        else:
            out.append(_Block("other", ""))
    return tuple(out)


def _with_structs(path: str) -> Callable[[int, Line], Any]:
    names: dict[str, str] = {}

    def make(line_no: int, line: Line) -> Any:
        assert line.message is not None and line.uuid is not None
        parts = _struct_blocks(line.message, names)
        return _Message(line.uuid, line.type, parts, line.timestamp, path, line_no)

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
    factories = {"models": _with_models, "structs": _with_structs}
    best: dict[str, float] = {}
    # a first pass faults in the memory every later one reuses: run it untimed, then alternate
    for i, name in enumerate(("structs", "models", "structs", "models", "structs")):
        gc.collect()
        gc.disable()  # as the reader does while it loads
        t = time.perf_counter()
        lines, messages = bare_load(path, data, factories[name](path))
        took = time.perf_counter() - t
        gc.enable()
        if i:
            best[name] = min(best.get(name, took), took)
        out["lines"], out["messages"] = lines, messages
    out.update(best)
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
