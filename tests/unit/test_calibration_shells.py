"""Background shells: Claude Code sends a reminder per running shell with every request, the
transcript holds none of them (`BackgroundShells`, thomasjmcgovern-fb36f7a7 from request 99 on)."""

from __future__ import annotations

import statistics

from inspector.model import Message, Request, Role, ToolCallBlock, ToolResultBlock, Usage
from inspector.tokens import HeuristicEstimator, calibrate
from inspector.tokens.calibration.requests import SHELL_REMINDER, BackgroundShells
from tests.unit.test_calibration_model import Provider, errors, result_text


def _call(cid: str, name: str, **args: object) -> Message:
    return Message(
        id=f"r{cid}", role=Role.ASSISTANT, blocks=(ToolCallBlock(id=cid, name=name, arguments=args),)
    )


def _result(cid: str, name: str, content: str) -> Message:
    return Message(
        id=f"u{cid}",
        role=Role.USER,
        blocks=(ToolResultBlock(call_id=cid, tool_name=name, content=content),),
    )


def test_shells_start_with_their_id_and_end_when_killed_or_done() -> None:
    s = BackgroundShells()
    s.see(_call("a", "Bash", command="npm run dev", run_in_background=True))
    assert s.live == {}  # started only once its result names it
    s.see(_result("a", "Bash", "Command running in background with ID: 56ffa1"))
    s.see(_call("z", "Bash", command="sleep 9", run_in_background=True))
    s.see(_result("z", "Bash", "Command running in background with ID: "))  # no id: nothing
    s.see(_call("b", "Bash", command="ls"))  # a foreground call starts nothing
    s.see(_result("b", "Bash", "Command running in background with ID: nope"))
    s.see(_call("c", "Bash", command="./start.sh 2>&1 &", run_in_background=True))
    s.see(_result("c", "Bash", "Command running in background with ID: 5c0677"))
    assert s.live == {"56ffa1": "npm run dev", "5c0677": "./start.sh 2>&1 &"}
    assert s.reminders()[0] == SHELL_REMINDER.format(id="56ffa1", command="npm run dev")
    assert "Background Bash 5c0677 (command: ./start.sh 2>&1 &)" in s.reminders()[1]
    # still running: kept; completed: gone
    s.see(_call("d", "BashOutput", bash_id="5c0677"))
    s.see(_result("d", "BashOutput", "<status>running</status>\n\n<stdout>\nready\n</stdout>"))
    assert list(s.live) == ["56ffa1", "5c0677"]
    copy = s.copy()
    s.see(_call("e", "BashOutput", bash_id="5c0677"))
    s.see(_result("e", "BashOutput", "<status>completed</status>\n\n<exit_code>0</exit_code>"))
    assert list(s.live) == ["56ffa1"]
    assert list(copy.live) == ["56ffa1", "5c0677"]  # the copy shares nothing
    s.see(_call("f", "KillShell", shell_id="56ffa1"))
    s.see(_result("f", "KillShell", '{"message":"Successfully killed shell: 56ffa1"}'))
    assert s.live == {} and s.reminders() == []


class ShellProvider(Provider):
    """`Provider`, plus background shells: while one runs, every request adds its reminder (the
    `SHELL_REMINDER` text at 1.05x plus 20), which the transcript does not hold."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[str, str] = {}

    def reminders(self) -> int:
        return sum(
            round(1.05 * self.est.text(SHELL_REMINDER.format(id=sid, command=cmd))) + 20
            for sid, cmd in self.live.items()
        )

    def start(self, i: int, command: str) -> None:
        """A response that starts a background shell, then its result."""
        cid = f"s{i}"
        call = ToolCallBlock(id=cid, name="Bash", arguments={"command": command, "run_in_background": True})
        shown = self.est.text(f"Bash {call.arguments}")
        output = round(1.1 * shown) + 40
        resp = self._add(Role.ASSISTANT, call)
        self.requests.append(
            Request(
                index=len(self.requests) + 1,
                response_id=resp.id,
                usage=Usage(input=1, cache_read=self.context - 1, output=output),
                segment=0,
                ledger_len=len(self.ids) - 1,
            )
        )
        self.context += output + 4
        content = f"Command running in background with ID: sh{i:04d}"
        self._add(Role.USER, ToolResultBlock(call_id=cid, tool_name="Bash", content=content))
        self.context += round(1.05 * self.est.text(content)) + 30
        self.live[f"sh{i:04d}"] = command
        self.context += self.reminders()


def test_running_shells_reminders_are_priced() -> None:
    """Three shells start at turns 10, 20 and 30 and keep running: every request after adds their
    reminders (about 70 tokens a shell here). Unmodelled, each request would be ~70-210 tokens
    short; the reminders rebuilt from the shells' ids and commands keep the error to a few tokens."""
    p = ShellProvider()
    p.user("fix the build " * 20)
    for i in range(60):
        if i in (10, 20, 30):
            p.start(i, f"./scripts/start-{i}.sh --watch 2>&1 &")
        else:
            p.turn(i, result_text(i), hook=p.reminders())
    p.ask()
    tr = p.transcript()
    cal = calibrate(tr, HeuristicEstimator())
    assert p.reminders() > 180
    late = errors(tr, cal, since=40)
    assert statistics.median(late) <= 8, late
    assert max(late) <= 40, late
    # the weights still add up to every report
    for r in tr.requests:
        if r.usage is not None:
            assert sum(cal.weights(r.index).values()) == r.usage.context


def test_no_shell_no_reminder() -> None:
    """A session whose shells all ended sends none: the prediction does not change."""
    p = ShellProvider()
    p.user("fix the build " * 20)
    for i in range(30):
        p.turn(i, result_text(i))
    p.ask()
    tr = p.transcript()
    cal = calibrate(tr, HeuristicEstimator())
    assert statistics.median(errors(tr, cal, since=15)) <= 6
