"""Modal screens: go to request, set window, choose policy, open a message, help."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from inspector.model.sanitize import visible
from inspector.tui.text import line
from inspector.tui.viewmodel import Detail
from inspector.tui.widgets.keybar import KeyBar
from inspector.tui.widgets.side import MessageDetail, detail_text


class PromptScreen(ModalScreen[str | None]):
    """A one-line question; dismisses with the accepted answer, or None on escape."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        title: str,
        *,
        placeholder: str = "",
        value: str = "",
        hint: str = "",
        check: Callable[[str], str | None] | None = None,
        input_type: str = "text",
        id: str | None = None,
    ) -> None:
        super().__init__(id=id, classes="prompt")
        self.title_text = title
        self.placeholder = placeholder
        self.value = value
        self.hint = hint
        self.check = check
        self.input_type = input_type

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(line(self.title_text), classes="dialog-title")
            yield Input(
                value=self.value,
                placeholder=self.placeholder,
                type="integer" if self.input_type == "integer" else "text",
                id="prompt-input",
            )
            yield Label(line(self.hint), id="prompt-hint", classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one(Input).cursor_blink = False

    @on(Input.Submitted)
    def accept(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        problem = self.check(value) if self.check is not None else None
        if problem:
            hint = self.query_one("#prompt-hint", Label)
            hint.update(line(problem))
            hint.add_class("-error")
            return
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PolicyScreen(ModalScreen[str | None]):
    """Choose a policy preset."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self, presets: list[tuple[str, str]], current: str, *, title: str = "Choose a policy"
    ) -> None:
        super().__init__(classes="prompt")
        self.presets = presets
        self.current = current
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(line(self.title_text), classes="dialog-title")
            options = [
                Option(Text.assemble((visible(name), "bold"), "\n", (visible(description), "dim")), id=name)
                for name, description in self.presets
            ]
            yield OptionList(*options, id="policy-list")
            yield Label(line("enter chooses · esc cancels"), classes="dialog-hint")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        for i, (name, _) in enumerate(self.presets):
            if name == self.current:
                options.highlighted = i
        options.focus()

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class MessageHead(Static):
    """Who the message is, where it came from, its weight and its fate (the content is below)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = MessageDetail.COMPONENT_CLASSES

    def __init__(self, detail: Detail, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.detail = detail

    def on_mount(self) -> None:
        names = (
            "title",
            "dim",
            "heading",
            "explain",
            "same",
            "truncated",
            "cleared",
            "removed",
            "summarized",
        )
        styles = {n: self.get_component_rich_style(f"detail--{n}", partial=True) for n in names}
        self.update(detail_text(self.detail, styles, content=False))


class MessageScreen(ModalScreen[None]):
    """One message, full screen: its fate in each layer and its whole content (scrollable)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
        Binding("enter", "close", "Close", show=False),
    ]

    def __init__(self, detail: Detail) -> None:
        super().__init__(classes="message-screen")
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical(id="message-frame"):
            yield MessageHead(self.detail, id="message-head")
            area = TextArea(
                self.detail.content or "(empty)",
                read_only=True,
                soft_wrap=True,
                show_line_numbers=False,
                highlight_cursor_line=False,
                id="message-content",
            )
            area.cursor_blink = False
            yield area
        yield KeyBar()

    def on_mount(self) -> None:
        frame = self.query_one("#message-frame", Vertical)
        frame.border_title = line(f"request {self.detail.request} · {self.detail.title}")
        self.query_one(TextArea).focus()

    def action_close(self) -> None:
        self.dismiss(None)


HELP_INTRO = (
    "context-inspector shows what an agent's context window held at each request, and what the "
    "context-shaping pipeline would have sent."
)
HELP_KEYS: list[tuple[str, str]] = [
    ("[  ]", "previous / next request"),
    ("<  >", "first / last request"),
    (
        "n  N",
        "next / previous request where something happens: a layer starts firing (it fired there "
        "and not at the request before), or the harness recorded a compaction right before it",
    ),
    ("g", "go to a request (by number)"),
    (
        "f  end",
        "follow the newest request (f toggles); live, the header says ● live, or paused and how many "
        "requests arrived since: f or end follows again",
    ),
    ("/", "search the current ledger; enter finds the next message containing the text"),
    ("p", "choose the policy (the pipeline and its parameters)"),
    ("w", "set the context window (the trigger and target lines move, the columns change)"),
    ("↑ ↓ pgup pgdn home end", "move the cursor row (or click a row; double-click opens it)"),
    ("enter", "open the selected message full screen (also right after the cursor moved)"),
    ("x", "what fills the window at this request (system prompt, memory, tools, thinking…), raw and sent"),
    (
        "r",
        "at a request right after a compaction the harness recorded: the ledger before it beside what "
        "came after, every folded message with its weight, the pinned sources that did not survive",
    ),
    ("v", "small terminals: the pipeline, the side panes (pinned, message), the chart, in turn"),
    ("t", "light / dark theme"),
    ("c", "compare with a second policy: both sent views side by side at this request"),
    ("F", "findings: re-reads after clearing, storms, loops, pressure; enter jumps to one"),
    (
        "a",
        "the subagents this session ran (Task calls; the message pane says which message ran one): "
        "enter opens its transcript on a screen of its own",
    ),
    ("esc", "close the search; on a subagent's transcript, back to its session (same request, same row)"),
    ("A", "calibration accuracy: the requests the weights predicted worst; enter goes there"),
    ("l", "what-if lab: change window, target ratio, kept counts, budget, layers; save as TOML"),
    ("e", "export this screen as SVG (./context-inspector-request-K.svg)"),
    (".  ,", "next / previous stop of a tour (context-inspector tour NAME)"),
    ("s", "back to the sessions on this machine (when the app was opened on the session picker)"),
    ("?", "this help"),
    ("ctrl+p", "command palette (every action above)"),
    ("q", "quit"),
]
HELP_SECTIONS: list[tuple[str, list[str]]] = [
    (
        "The gauge (top)",
        [
            "The calibrated context of this request against the window. Solid: what is sent after "
            "shaping; shaded: what shaping removed; light: free.",
            "Under the figures, how far the context is from the trigger, the blocking line and the "
            "window, in tokens and as a share of the window (126 to trigger 167,000 (0.06% of window)), "
            "and how far the harness's own estimate is from the trigger. The subtitle starts with the "
            "request's time (UTC), the gap since the request before and the model.",
            "Lines, labelled with their values: target (where a compaction aims), trigger (above it the "
            "reactive layers act), buffer (the safety buffer's lower edge: window − reserve − buffer, "
            "usually the trigger), reserve (where the space kept for the answer begins), blocking "
            "(where the harness refuses to send, when the policy has one), window.",
            "Under it: what the harness itself estimated before this request, with its own "
            "estimator (Claude Code: the last report plus characters/4 of what came after it; "
            "OpenCollab: 64 + a third of each message's JSON), the number it compacts by; it may sit "
            "far from the calibrated context (no system prompt before the first report), and the "
            'gap explains a compaction that came early or late ("OpenCollab would estimate" on '
            "another harness's session: the layers then decide with calibrated weights).",
        ],
    ),
    (
        "Live following",
        [
            "A file being written (--follow, or changed in the last minute) is followed: as it grows "
            "the sparkline, gauge and columns update, and a "
            "notification says when the newest request's context crosses the warning line (20,000 "
            "below the trigger, as Claude Code warns; never below the target) and the trigger, with "
            "how far it then is from the trigger, the blocking line and the window (in tokens and % "
            "of the window, as the gauge says it). A file truncated or replaced is read again from "
            "the start.",
        ],
    ),
    (
        "The chart (top right)",
        [
            "Context per request: solid up to what the pipeline sends, shaded above it up to the raw "
            "context; the trigger and window lines labelled on the y axis (right). Marks on the row "
            "under the bars, the current request's ▲ on the row below them. ▲ this request · ◆ a compaction the harness recorded · ◇ a fresh "
            "context the harness began (nothing summarized) · × a failed model call (an API error: no "
            "request) · • a request where old history snip or auto compact fired in this replay. A "
            "recorded event is marked under the request it came after. Click to go there.",
        ],
    ),
    (
        "The columns (middle)",
        [
            "One row per message of the ledger, read across the pipeline: raw ledger | per-tool budget "
            "| tool output clear | old history snip | auto compact (what is sent: ⇒ sent). The policy "
            "decides the layers. Each header says whether its layer fired, with its numbers, or why "
            "it stayed idle. An OpenCollab trace under its own preset is shaped as OpenCollab did it "
            '(the title says "deciding with the harness\'s own estimate"): the reasons quote '
            "OpenCollab's figures, the tokens stay calibrated.",
            "A row: ⚑ pinned source (never removed) · weight bar (square-root scale) and calibrated "
            "tokens · role · tool · one line of content. Later columns show the message's weight in "
            "that layer's view (dim when unchanged) and mark what the layer changed: ✂ truncated · "
            "○ cleared (with the placeholder the model sees) · ✗ removed (a gap, so rows stay "
            "aligned) · Σ folded into a summary, or the summary that replaced them.",
        ],
    ),
    (
        "The side panes (right)",
        [
            "Pinned sources at this request with priority, tokens and share of the context; below, "
            "the selected message: origin file:line, weight, its fate in each layer and its content.",
            "A key that can do nothing here (] at the last request, . outside a tour, s when the app "
            "was not opened on the session picker…) says why in a notification.",
            "Transcript text is shown literally: markup is never interpreted and control characters "
            "are shown as escapes (\\x1b…).",
        ],
    ),
]


class HelpText(Static):
    """The help, styled from plain strings (never markup)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"help--heading", "help--key"}

    def on_mount(self) -> None:
        heading = self.get_component_rich_style("help--heading", partial=True)
        key = self.get_component_rich_style("help--key", partial=True)
        out = Text()
        out.append(HELP_INTRO + "\n\n")
        out.append("Keys\n", heading)
        for keys, what in HELP_KEYS:
            out.append(f"  {keys:<24}", key)
            out.append(what + "\n")
        for title, paragraphs in HELP_SECTIONS:
            out.append("\n")
            out.append(title + "\n", heading)
            for paragraph in paragraphs:
                out.append(paragraph + "\n")
        self.update(out)


class HelpScreen(ModalScreen[None]):
    """Keys, and what the gauge, the sparkline and the columns mean."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close", show=False),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(self) -> None:
        super().__init__(classes="help-screen")

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-frame"):
            yield HelpText("", id="help-text", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#help-frame", VerticalScroll).border_title = line("help")

    def action_close(self) -> None:
        self.dismiss(None)
