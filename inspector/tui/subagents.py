"""The subagents a session ran: listed (`a`), opened on a main screen of their own, and back.

- `subagent_links(transcript)`: which messages of the session spawned or answered which subagent
  (the `Task` / `Agent` call and its result: the result's `agentId: ...` line, or the subagent's
  meta file's `toolUseId`), so the message pane says `a` opens it and the list starts on it.
- `SubagentsScreen`: the list, as `report` lists them (agent, type, requests, messages, layout,
  task); enter chooses one; the main screen opens it (an inline Claude Code 1.0 sidechain, which
  has no file of its own, is said, not opened).
- `subagent_line(...)`: the banner of a subagent's screen: whose it is, and how to go back.
"""

from __future__ import annotations

import re
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from inspector.model import SubagentRef, ToolCallBlock, ToolResultBlock, Transcript
from inspector.model.sanitize import one_line, visible
from inspector.tui.text import line

AGENT_ID = re.compile(r"\bagentId: ([A-Za-z0-9_-]+)")
"""How a Claude Code `Task` result names the subagent that ran (`agentId: a93ccab (for resuming…)`)."""


def openable(ref: SubagentRef) -> bool:
    """Whether the subagent has a transcript file of its own (an inline sidechain has none)."""
    return bool(ref.path)


def subagent_links(transcript: Transcript) -> dict[str, SubagentRef]:
    """Message id -> the subagent that message spawned (the tool call) or answered (its result)."""
    if not transcript.subagents:
        return {}
    by_id = {s.agent_id: s for s in transcript.subagents}
    by_call = {s.tool_use_id: s for s in transcript.subagents if s.tool_use_id}
    call_message: dict[str, str] = {}
    links: dict[str, SubagentRef] = {}
    for message in transcript.messages:
        for block in message.blocks:
            if isinstance(block, ToolCallBlock):
                call_message[block.id] = message.id
                if block.id in by_call:
                    links[message.id] = by_call[block.id]
            elif isinstance(block, ToolResultBlock):
                ref = by_call.get(block.call_id)
                if ref is None and "agentId: " in block.content:
                    found = AGENT_ID.search(block.content)
                    ref = by_id.get(found.group(1)) if found else None
                if ref is not None:
                    links[message.id] = ref
                    call = call_message.get(block.call_id)
                    if call is not None:
                        links.setdefault(call, ref)
    return links


def subagent_label(ref: SubagentRef) -> str:
    """One line: the agent, its type, its size, where it lives."""
    kind = f" · {ref.agent_type}" if ref.agent_type else ""
    where = ref.layout or ("inline" if not ref.path else "file")
    return (
        f"{ref.agent_id}{kind} · {ref.requests:,} request{'' if ref.requests == 1 else 's'} · "
        f"{ref.messages:,} message{'' if ref.messages == 1 else 's'} · {where}"
    )


def subagent_line(ref: SubagentRef, parent: str, request: int) -> str:
    """The banner of a subagent's screen."""
    task = f" · {one_line(ref.description, 100)}" if ref.description else ""
    return f"subagent {ref.agent_id} of {parent} (esc: back to it, at request {request:,}){task}"


class SubagentsScreen(ModalScreen[SubagentRef | None]):
    """The session's subagents; enter chooses one (the main screen opens it), esc closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Close"),
        Binding("a", "cancel", "Close", show=False),
    ]

    def __init__(self, subagents: list[SubagentRef], session: str, selected: str | None = None) -> None:
        super().__init__(classes="prompt", id="subagents")
        self.subagents = subagents
        self.session = session
        self.selected = selected
        """The agent to start on (the one the selected message spawned)."""

    def compose(self) -> ComposeResult:
        n = len(self.subagents)
        with Vertical(classes="dialog", id="subagents-dialog"):
            yield Label(
                line(f"Subagents of {self.session}: {n:,}"),
                classes="dialog-title",
            )
            options = []
            for i, ref in enumerate(self.subagents):
                label = Text(visible(subagent_label(ref), newlines=False), style="bold")
                task = one_line(ref.description or "", 100)
                if not openable(ref):
                    task = f"{task} (inline: in the session's own file, not opened apart)".strip()
                if task:
                    label.append("\n")
                    label.append(task, style="dim")
                options.append(Option(label, id=str(i)))
            yield OptionList(*options, id="subagents-list")
            yield Label(
                line("enter opens its transcript (esc there comes back) · esc closes"), classes="dialog-hint"
            )

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        for i, ref in enumerate(self.subagents):
            if ref.agent_id == self.selected:
                options.highlighted = i
        options.focus()

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.subagents[int(event.option.id or 0)])

    def action_cancel(self) -> None:
        self.dismiss(None)


__all__ = ["SubagentsScreen", "openable", "subagent_label", "subagent_line", "subagent_links"]
