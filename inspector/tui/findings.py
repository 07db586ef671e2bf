"""The findings panel: what `inspector.findings.find_all` found, worst first; enter jumps there."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from inspector.findings import SEVERITY_RANK, Finding
from inspector.model.sanitize import one_line
from inspector.tui.text import line

SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}


def finding_label(finding: Finding) -> Text:
    """Severity (coloured), kind and request, then the explanation (sanitized: never markup)."""
    head = Text.assemble(
        (f"{finding.severity.upper():<7}", SEVERITY_STYLE.get(finding.severity, "bold")),
        " ",
        (one_line(finding.kind, 80), "bold"),
        (f" · request {finding.request:,}", "dim"),
    )
    if finding.message_ids:
        count = len(finding.message_ids)
        head.append(f" · {count:,} message{'' if count == 1 else 's'}", "dim")
    head.append("\n")
    head.append(one_line(finding.explanation, 400))
    return head


def ordered(findings: list[Finding]) -> list[Finding]:
    """Worst first, then by request."""
    return sorted(findings, key=lambda f: (-SEVERITY_RANK.get(f.severity, 0), f.request))


class FindingsScreen(ModalScreen[Finding | None]):
    """The findings of this replay; enter goes to the finding's request and first message."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Close"),
        Binding("F", "cancel", "Close", show=False),
    ]

    def __init__(self, findings: list[Finding], policy: str) -> None:
        super().__init__(classes="prompt", id="findings")
        self.findings = ordered(findings)
        self.policy = policy

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="findings-dialog"):
            n = len(self.findings)
            yield Label(
                line(f"Findings under {self.policy}: {n:,}" if n else f"No findings under {self.policy}"),
                classes="dialog-title",
            )
            options = [Option(finding_label(f), id=str(i)) for i, f in enumerate(self.findings)]
            yield OptionList(*options, id="findings-list")
            yield Label(line("enter goes to its request and message · esc closes"), classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.findings[int(event.option.id or 0)])

    def action_cancel(self) -> None:
        self.dismiss(None)
