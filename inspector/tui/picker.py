"""The session picker: `context-inspector` with no PATH lists the sessions found on this machine.

Rows come from `discover()` (newest first), then the bundled samples (always offered; the only
entries when nothing is found). Enter reads the chosen transcript in a worker, with progress, and
the app switches to the main screen (`SessionOpened` bubbles up to the app). A session written in
the last minute is followed live.

Titles and projects come from transcripts: untrusted, shown as plain text with controls made
visible, never as markup.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Label, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from inspector.formats import LoaderError
from inspector.live import SessionInfo, discover
from inspector.model.sanitize import one_line, visible
from inspector.report.progress import human_size
from inspector.shaping import Policy
from inspector.tui.live import open_transcript, recently_modified
from inspector.tui.messages import OpenFailed, OpenProgress, SessionOpened, SessionsFound
from inspector.tui.text import line, notify
from inspector.tui.widgets.keybar import KeyBar

HEADING_FOUND = "Sessions on this machine, newest first"
HEADING_NONE = "No sessions found on this machine — open a sample:"
HEADING_LOOKING = "Looking for sessions on this machine…"
HINT = "↑↓ choose · enter opens · esc quits · ● written in the last minute: opened live (followed)"
PROGRESS_INTERVAL = 0.05
"""Seconds between two progress messages while a transcript is read."""

# (title, width, right-aligned); the last column (title) takes the rest of the line
COLUMNS: tuple[tuple[str, int, bool], ...] = (
    ("", 1, False),
    ("harness", 11, False),
    ("project", 28, False),
    ("requests", 8, True),
    ("size", 9, True),
    ("last activity", 13, False),
    ("title", 0, False),
)
GAP = "  "


@dataclass(frozen=True, slots=True)
class PickerRow:
    """One line of the picker, as text (built from a SessionInfo or a bundled sample)."""

    key: str
    """The option id: "session-<i>" or "sample-<name>"."""
    live: bool
    harness: str
    project: str
    requests: str
    size: str
    activity: str
    title: str


def ago(when: datetime, now: datetime) -> str:
    """12 s ago, 5 min ago, 3 h ago, 4 days ago, then the date."""
    seconds = (now - when).total_seconds()
    if seconds < 0:
        return "just now"
    if seconds < 60:
        return f"{int(seconds)} s ago"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86_400:
        return f"{int(seconds // 3600)} h ago"
    if seconds < 7 * 86_400:
        days = int(seconds // 86_400)
        return f"{days} day{'' if days == 1 else 's'} ago"
    return when.astimezone(UTC).strftime("%Y-%m-%d")


def short_project(project: str | None, home: Path | None, width: int = COLUMNS[2][1]) -> str:
    """The project folder, home as ~, cut from the left to fit (the end of a path tells most)."""
    if not project:
        return "—"
    if home is not None:
        root = str(home).rstrip("/\\")
        if root and (project == root or project.startswith(root + "/") or project.startswith(root + "\\")):
            project = "~" + project[len(root) :]
    text = visible(project, newlines=False)
    if cell_len(text) <= width:
        return text
    # drop leading folders while the rest does not fit; cut characters only when one name is too long
    # (split before the names are made visible: an escape such as `\\x1b` is no separator)
    parts = [visible(part, newlines=False) for part in re.split(r"[/\\]", project)]
    while len(parts) > 1 and cell_len("…/" + "/".join(parts[1:])) > width:
        parts.pop(0)
    if len(parts) > 1:
        return "…/" + "/".join(parts[1:])
    text = parts[0]
    while cell_len(text) > width - 1:
        text = text[1:]
    return "…" + text


def session_row(index: int, info: SessionInfo, now: datetime, home: Path | None) -> PickerRow:
    if info.requests is None:
        requests = "—"
    else:
        requests = f"~{info.requests:,}" if info.requests_estimated else f"{info.requests:,}"
    return PickerRow(
        key=f"session-{index}",
        live=info.live,
        harness=one_line(info.harness, 40),
        project=short_project(info.project, home),
        requests=requests,
        size=human_size(info.size_bytes),
        activity=ago(info.last_activity, now),
        title=one_line(info.title, 200) if info.title else _untitled(info),
    )


def _untitled(info: SessionInfo) -> str:
    """An untitled row: one session of an opencode database says its id (its rows share one file)."""
    if info.harness == "opencode" and info.session_id and info.path.suffix == ".db":
        return f"(untitled) {one_line(info.session_id, 80)}"
    return "(untitled)"


def sample_rows() -> list[PickerRow]:
    """The bundled samples, as picker rows (their files are committed; no time shown)."""
    from inspector.samples import SAMPLES

    rows: list[PickerRow] = []
    for name, info in SAMPLES.items():
        try:
            size = human_size(info.path.stat().st_size)
        except OSError:
            continue  # not generated in this checkout
        rows.append(
            PickerRow(
                key=f"sample-{name}",
                live=False,
                harness="claude-code",
                project=f"sample: {name}",
                requests="",
                size=size,
                activity="bundled",
                title=info.title,
            )
        )
    return rows


def _cells(values: list[str]) -> list[tuple[str, int, bool]]:
    return [(v, w, right) for v, (_, w, right) in zip(values, COLUMNS, strict=True)]


def _line(cells: list[tuple[str, int, bool]], styles: list[str]) -> Text:
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    for i, ((value, width, right), style) in enumerate(zip(cells, styles, strict=True)):
        if i:
            out.append(GAP)
        if width:
            value = value if cell_len(value) <= width else value[: width - 1] + "…"
            pad = " " * max(0, width - cell_len(value))
            value = pad + value if right else value + pad
        out.append(value, style)
    return out


ROW_STYLES = ["bold green", "", "", "", "", "", ""]


def row_text(row: PickerRow) -> Text:
    """One option line: fixed columns, then the title (cut by the list's width)."""
    values = [
        "●" if row.live else " ",
        row.harness,
        row.project,
        row.requests,
        row.size,
        row.activity,
        row.title,
    ]
    return _line(_cells(values), ROW_STYLES)


def header_text() -> Text:
    return _line(_cells([c[0] for c in COLUMNS]), ["bold"] * len(COLUMNS))


class PickerScreen(Screen[None]):
    """Sessions found on this machine, newest first, then the bundled samples; enter opens one."""

    AUTO_FOCUS = "#picker-list"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", show=True, tooltip="Open the highlighted session"),
        Binding("escape", "quit", "Quit"),
        Binding("q", "quit", "Quit", show=False),
    ]

    def __init__(
        self,
        *,
        sessions: list[SessionInfo] | None = None,
        now: datetime | None = None,
        home: Path | None = None,
        policy: str | Policy | None = None,
        window: int | None = None,
    ) -> None:
        super().__init__(id="picker")
        self.sessions = sessions
        """Rows to show instead of discovering them (tests and snapshots)."""
        self.now = now
        self.home = home
        self.policy = policy
        self.window = window
        self.found: list[SessionInfo] = []
        self.opening = False
        self.opening_label = ""

    def compose(self) -> ComposeResult:
        heading, options = (HEADING_LOOKING, []) if self.sessions is None else self._rows(self.sessions)
        with Vertical(id="picker-frame"):
            yield Label(line(heading), id="picker-heading")
            yield Static(header_text(), id="picker-columns", markup=False)
            yield OptionList(*options, id="picker-list")
            with Horizontal(id="picker-loading"):
                yield Label("", id="picker-loading-label", markup=False)
                yield ProgressBar(id="picker-progress", show_eta=False)
            yield Label(line(HINT), id="picker-hint")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#picker-frame", Vertical).border_title = line("context-inspector")
        if self.sessions is None:
            self.find_sessions()

    def on_screen_resume(self) -> None:
        """Back from a session: ready to open another (and the list is found again, newest first)."""
        if not self.opening:
            return
        self.opening = False
        self.remove_class("-opening")
        self.query_one("#picker-list", OptionList).disabled = False
        if self.sessions is None:
            self.find_sessions()
        else:
            self.query_one("#picker-list", OptionList).focus()

    @work(thread=True, exclusive=True, group="discover", exit_on_error=False, description="find sessions")
    def find_sessions(self) -> None:
        try:
            found = discover()
        except Exception:  # discovery skips what it cannot read; never let it keep the samples away
            found = []
        self.post_message(SessionsFound(found))

    @on(SessionsFound)
    def sessions_found(self, event: SessionsFound) -> None:
        self.show_sessions(event.sessions)

    def _rows(self, sessions: list[SessionInfo]) -> tuple[str, list[Option | None]]:
        """The heading and the options for these sessions (then the samples)."""
        self.found = list(sessions)
        now = self.now or datetime.now(UTC)
        home = self.home if self.home is not None else _home()
        options: list[Option | None] = []
        for i, info in enumerate(self.found):
            options.append(Option(row_text(session_row(i, info, now, home)), id=f"session-{i}"))
        if self.found:
            live = sum(1 for s in self.found if s.live)
            note = f" · ● {live} live (written in the last minute)" if live else ""
            heading = f"{HEADING_FOUND} ({len(self.found):,}){note}"
            options.append(None)
            options.append(Option(Text("bundled samples", style="dim italic"), disabled=True))
        else:
            heading = HEADING_NONE
        options.extend(Option(row_text(row), id=row.key) for row in sample_rows())
        return heading, options

    def show_sessions(self, sessions: list[SessionInfo]) -> None:
        heading, options = self._rows(sessions)
        self.query_one("#picker-heading", Label).update(line(heading))
        option_list = self.query_one("#picker-list", OptionList)
        option_list.clear_options()
        option_list.add_options(options)
        option_list.highlighted = 0 if options else None
        option_list.focus()

    # -- opening -------------------------------------------------------------------------------
    def action_open(self) -> None:
        option_list = self.query_one("#picker-list", OptionList)
        if option_list.highlighted is None:
            notify(self, "no session to open here (none found yet)", timeout=3)
            return
        option = option_list.get_option_at_index(option_list.highlighted)
        if option.id is not None and not option.disabled:
            self.open_key(option.id)

    @on(OptionList.OptionSelected, "#picker-list")
    def option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.open_key(event.option.id)

    def open_key(self, key: str) -> None:
        """Open the session or sample whose option id is `key`."""
        if self.opening:
            return
        kind, _, rest = key.partition("-")
        if kind == "session":
            info = self.found[int(rest)]
            # Live: written in the last minute. An opencode database is written by every session:
            # there discovery's per-session time decides; elsewhere the file's time, checked now.
            by_session = info.harness == "opencode" and info.session_id is not None
            follow = info.live if by_session else info.live or recently_modified(info.path)
            label = info.title or info.path.name
            args = (info.path, follow, info.session_id, info.harness, self.policy, self.window)
        elif kind == "sample":
            from inspector.samples import SAMPLES

            sample = SAMPLES[rest]
            label = sample.title
            policy = self.policy if self.policy is not None else sample.policy
            window = self.window if self.window is not None else sample.window
            args = (sample.path, False, None, "claude-code", policy, window)
        else:
            return
        self.opening = True
        self.opening_label = f"opening {one_line(label, 60)}"
        self.query_one("#picker-list", OptionList).disabled = True
        self.query_one("#picker-loading-label", Label).update(line(self.opening_label + "…"))
        self.query_one("#picker-progress", ProgressBar).update(total=None, progress=0)
        self.add_class("-opening")
        self.open_session(*args)

    @work(thread=True, exclusive=True, group="open", exit_on_error=False, description="open a session")
    def open_session(
        self,
        path: Path,
        follow: bool,
        session_id: str | None,
        harness: str | None,
        policy: str | Policy | None,
        window: int | None,
    ) -> None:
        last = 0.0

        def progress(done: int, total: int) -> None:
            nonlocal last
            now = time.monotonic()
            if now - last >= PROGRESS_INTERVAL or done >= total:
                last = now
                self.post_message(OpenProgress(done, total))

        try:
            opened = open_transcript(
                path, follow=follow, session_id=session_id, harness=harness, progress=progress
            )
        except LoaderError as exc:
            self.post_message(OpenFailed(str(exc)))
            return
        except Exception as exc:  # an untrusted file: say so, keep the picker
            self.post_message(OpenFailed(f"cannot open {path.name}: {exc}"))
            return
        self.post_message(SessionOpened(opened, policy, window))

    @on(OpenProgress)
    def open_progress(self, event: OpenProgress) -> None:
        bar = self.query_one("#picker-progress", ProgressBar)
        bar.update(total=max(1, event.total), progress=event.done)
        if event.done >= event.total:
            self.query_one("#picker-loading-label", Label).update(
                line(f"{self.opening_label}: read {human_size(event.total)}, building the transcript…")
            )

    @on(OpenFailed)
    def open_failed(self, event: OpenFailed) -> None:
        self.opening = False
        self.remove_class("-opening")
        option_list = self.query_one("#picker-list", OptionList)
        option_list.disabled = False
        option_list.focus()
        notify(self, event.reason, title="cannot open", severity="error")

    async def action_quit(self) -> None:
        self.app.exit()


def _home() -> Path | None:
    home = os.environ.get("HOME")
    return Path(home) if home else None
