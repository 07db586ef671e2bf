"""What a transcript's requests and events tell calibration beyond their ledgers: which requests
not to learn from, the responses' reported outputs, the recorded clearings of tool output."""

from __future__ import annotations

from datetime import datetime

from inspector.model import (
    EventKind,
    Message,
    RecordedEvent,
    Request,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
)

CACHE_LIFE_S = 300.0
"""Anthropic's prompt cache keeps a prefix 5 minutes after its last use (the provider's default)."""


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _within_cache_life(before: Request, req: Request) -> bool:
    """`req` was made within the cache's life (`CACHE_LIFE_S`) of the request before."""
    t, t0 = _seconds(req.timestamp), _seconds(before.timestamp)
    return t is not None and t0 is not None and 0 <= t - t0 < CACHE_LIFE_S


def model_switched(before: Request, req: Request) -> bool:
    """`req` ran on another model than the request before (a Skill or a Task on another model)."""
    return req.model is not None and before.model is not None and req.model != before.model


def prefix_changed(before: Request, req: Request) -> bool:
    """`req` read nothing from the cache although the request before did, within the cache's life
    (`CACHE_LIFE_S`): the prompt's prefix changed (the system prompt or the tool schemas: an MCP
    server came or went, as after `/mcp` at patternstack-263940d8 request 25, 267 s after the one
    before). What the prefix now holds is not in the transcript."""
    u, b = req.usage, before.usage
    if u is None or b is None or u.cache_read or not b.cache_read:
        return False
    return _within_cache_life(before, req)


def prefix_rewritten(before: Request, req: Request) -> bool:
    """`req` read less from the cache than the request before did, though something, within the
    cache's life: a part of the prompt the request before had sent was sent changed. Between two
    requests of one tool loop nothing the transcript holds changes, so what did is reasoning the
    provider dropped as if a new turn had begun (lroystack-24133cc4 request 33: the read falls from
    114,744 to 30,968 tokens with no user turn, the report is 2,881 below the prediction, and at
    the next user turn, request 36, the read is again exactly what request 33 wrote: nothing before
    it came off then). Read after the request's report: it never sizes the request itself. Not on
    a request on another model than the one before (its cache is another)."""
    u, b = req.usage, before.usage
    if u is None or b is None or not u.cache_read or u.cache_read >= b.cache_read:
        return False
    if model_switched(before, req):
        return False
    return _within_cache_life(before, req)


def _outputs(transcript: Transcript) -> dict[str, int]:
    return {
        rid: usage.output
        for r in transcript.requests
        if (rid := r.response_id) is not None and (usage := r.usage) is not None
    }


CLEARING_LAYERS = frozenset({"tool_output_clear"})
"""Layers whose recorded firing (an OpenCollab trace's context_shaping) names the tool results it
cleared: from the next request on, the harness sent placeholders for them, as after a Claude Code
microcompact."""


def _micro_events(transcript: Transcript) -> list[RecordedEvent]:
    """The recorded clearings of tool output, in request order: Claude Code's microcompacts and
    the clearing layers an OpenCollab trace records (it reports the usage of what it sent)."""
    return sorted(
        (
            e
            for e in transcript.events
            if e.cleared_tool_ids
            and (
                e.kind is EventKind.MICROCOMPACT
                or (e.kind is EventKind.LAYER_FIRED and e.layer in CLEARING_LAYERS)
            )
        ),
        key=lambda e: e.after_request,
    )


SHELL_REMINDER = (
    "<system-reminder>\nBackground Bash {id} (command: {command}) (status: running) Has new output"
    " available. You can check its output using the BashOutput tool.\n</system-reminder>"
)
"""What Claude Code (2.0) sends with each request about a background shell still running (the
transcript does not hold it): the text is rebuilt for its size, the cost model's `bg_shell`
coefficient learns what it misses."""
_BACKGROUND_ID = "Command running in background with ID: "
_SHELL_TOOLS = frozenset({"Bash", "BashOutput", "KillShell", "KillBash"})
SHELL_FEATURES = frozenset({"out_calls", *(f"results:{tool}" for tool in _SHELL_TOOLS)})
"""A message with one of these features (`features.Parts.x`) may start or end a background shell:
the only ones `BackgroundShells.see` need be shown."""


class BackgroundShells:
    """The background shells (a Bash call with `run_in_background`) still running at a point of the
    ledger, read from the messages in order: a shell starts with the result `Command running in
    background with ID: <id>` and ends with a KillShell/KillBash call naming it or a BashOutput
    result whose status is no longer `running`. Evidence: thomasjmcgovern-fb36f7a7 (Claude Code
    2.0.22) leaves one to five shells running from request 99 on, and every request after is
    under-predicted by about 100 tokens a live shell (see the package docstring)."""

    __slots__ = ("calls", "live")

    def __init__(self) -> None:
        self.calls: dict[str, tuple[str, str]] = {}
        """Tool call id -> (tool name, the shell id or command it names), for the shell tools."""
        self.live: dict[str, str] = {}
        """Shell id -> its command, in the order they started."""

    def copy(self) -> BackgroundShells:
        out = BackgroundShells()
        out.calls = dict(self.calls)
        out.live = dict(self.live)
        return out

    def see(self, message: Message) -> None:
        """Follow `message` (a response's shell calls, the shell tools' results)."""
        for b in message.blocks:
            if isinstance(b, ToolCallBlock):
                if b.name not in _SHELL_TOOLS or type(b.arguments) is not dict:
                    continue
                args = b.arguments
                if b.name == "Bash":
                    if args.get("run_in_background") is True:
                        self.calls[b.id] = ("Bash", str(args.get("command", "")))
                else:
                    self.calls[b.id] = (b.name, str(args.get("shell_id") or args.get("bash_id") or ""))
            elif isinstance(b, ToolResultBlock):
                call = self.calls.pop(b.call_id, None)
                if call is None:
                    continue
                name, arg = call
                content = b.content
                if name == "Bash":
                    sid = (
                        content[len(_BACKGROUND_ID) :].split()[:1]
                        if content.startswith(_BACKGROUND_ID)
                        else []
                    )
                    if sid:
                        self.live[sid[0]] = arg
                elif name != "BashOutput" or not content.startswith("<status>running</status>"):
                    self.live.pop(arg, None)  # killed, or done

    def reminders(self) -> list[str]:
        """The reminders a request sends about the shells still running."""
        return [SHELL_REMINDER.format(id=sid, command=cmd) for sid, cmd in self.live.items()]
