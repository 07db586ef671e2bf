"""The app on hostile sessions of every format: nothing from a transcript reaches the terminal as a
control sequence or as markup (docs/DESIGN.md §5, §8; issue 31).

Each test opens a hostile session (`tests/support/hostile_sessions.py`) with Textual's pilot, walks every
screen a user reaches with keys (every request, every row and its full-screen message view, help,
the policy, go-to and window prompts, search, compare, findings, the what-if lab, the command
palette, the SVG export; the picker and its "cannot open" toast), and after each step checks the
whole rendered screen:

- no segment holds a raw control character (C0, DEL, C1): what the terminal would act on;
- the bytes the screen would write to the terminal, once Textual's own CSI sequences are taken
  out, hold none either (no OSC 52 clipboard write, no OSC 2 title, no OSC 8 link, no BEL);
- no segment carries a link or a `@click` action, and no piece of marked markup shows as it would
  if read as markup (`«x»` where the transcript says `«[b]x[/b]»`);
- what the transcript says is there literally: the tool named `Bash[/]` reads `Bash[/]`.

The SVG screenshot of such a screen is well-formed XML and holds the literal text.
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from rich.style import Style
from textual._compositor import LayoutUpdate
from textual.widgets import Input, OptionList

from inspector.formats import load
from inspector.live import SessionInfo
from inspector.model.sanitize import visible
from inspector.tui import InspectorApp
from inspector.tui.app import MainScreen
from inspector.tui.compare import CompareScreen
from inspector.tui.findings import FindingsScreen
from inspector.tui.lab import LabScreen
from inspector.tui.screens import HelpScreen, MessageScreen, PolicyScreen, PromptScreen
from tests.conftest import settle as shared_settle
from tests.support.hostile_sessions import (
    FILE_STEM,
    FORMATS,
    INTERPRETED,
    MARKUP,
    OSC52,
    TOOL,
    TRIGGER,
    build,
)

SIZE = (160, 48)
WAIT = 10.0
RAW = re.compile("[\x00-\x1f\x7f-\x9f]")
"""C0 (newline and tab included: a rendered segment never holds one), DEL and C1."""
OWN_CSI = re.compile(r"\x1b\[[0-9;:<=>?]*[ -/]*[@-~]")
"""Textual's own output: SGR styles and cursor moves (CSI ... final byte)."""


class Screens:
    """What every check saw: the screens walked and the problems found (one line each)."""

    def __init__(self, app: InspectorApp) -> None:
        self.app = app
        self.seen: list[str] = []
        self.problems: list[str] = []
        self.texts: dict[str, str] = {}

    def check(self, where: str) -> str:
        """Check the screen as rendered now; its text."""
        app = self.app
        compositor = app.screen._compositor
        strips = compositor.render_strips()
        lines: list[str] = []
        for y, strip in enumerate(strips):
            for segment in strip:
                text, style, control = segment
                if control:
                    self.problems.append(f"{where}: a control segment at line {y}: {control!r}")
                if RAW.search(text):
                    self.problems.append(f"{where}: raw control in {text!r} at line {y}")
                if isinstance(style, Style):
                    if style.link:
                        self.problems.append(f"{where}: a link {style.link!r} on {text!r} at line {y}")
                    meta = style.meta
                    if "@click" in meta:  # (Textual's scrollbars carry `@mouse.*` of their own)
                        self.problems.append(f"{where}: an action {meta!r} on {text!r} at line {y}")
            lines.append(strip.text)
        # What the terminal would be sent for this screen, Textual's own CSI sequences taken out.
        update = LayoutUpdate([[strip] for strip in strips], compositor.size.region)
        sent = OWN_CSI.sub("", update.render_segments(app.console)).replace("\n", "")
        for bad in sorted(set(RAW.findall(sent))):
            self.problems.append(f"{where}: {bad!r} would be written to the terminal")
        screen = "\n".join(lines)
        for shown in INTERPRETED:
            if shown in screen:
                self.problems.append(f"{where}: markup was interpreted ({shown!r} on screen)")
        self.seen.append(where)
        self.texts[where] = screen
        return screen

    def svg(self, where: str, svg: str) -> str:
        """Check an SVG screenshot: well-formed XML, no raw control; its text (Rich writes spaces as
        no-break spaces: read back as spaces)."""
        for bad in sorted(set(RAW.findall(svg.replace("\n", "").replace("\t", "")))):
            self.problems.append(f"{where}: a raw {bad!r} in the SVG")
        try:
            root = ET.fromstring(svg)
        except ET.ParseError as exc:
            self.problems.append(f"{where}: the SVG is not well-formed XML ({exc})")
            return ""
        self.seen.append(where)
        self.texts[where] = text = "".join(root.itertext()).replace("\xa0", " ")
        return text


async def wait_for(pilot: Any, check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if check():
            await pilot.pause()
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def settled(pilot: Any, request: int | None = None) -> MainScreen:
    main: MainScreen = await shared_settle(pilot, request, detail=True, row=True, timeout=WAIT)
    return main


def detail_shown(main: MainScreen, request: int, row: int) -> bool:
    detail = main.detail.detail
    return detail is not None and detail.row == row and detail.request == request


async def walk_requests(pilot: Any, screens: Screens) -> None:
    """Every request, every row of it, and every row's message full screen."""
    main = await settled(pilot)
    total = main.total
    screens.check("main, first paint")
    for k in range(total, 0, -1):
        if main.request != k:
            await pilot.press("left_square_bracket")
        main = await settled(pilot, k)
        assert main.view is not None
        rows = len(main.view.rows)
        await pilot.press("home")
        for row in range(rows):
            if row:
                await pilot.press("down")
            await wait_for(
                pilot, partial(detail_shown, main, k, row), f"the detail of row {row} at request {k}"
            )
            screens.check(f"main, request {k}, row {row}")
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(pilot.app.screen, MessageScreen), "the message view")
            await pilot.pause(0.05)
            screens.check(f"message view, request {k}, row {row}")
            await pilot.press("end", "pagedown")
            await pilot.pause()
            screens.check(f"message view (end), request {k}, row {row}")
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(pilot.app.screen, MainScreen), "back to the main screen")


async def walk_modals(pilot: Any, screens: Screens, tmp_path: Path) -> None:
    """Help, prompts, search, findings, lab, compare, the palette, the SVG export."""
    app = pilot.app
    main = await settled(pilot)

    async def modal(key: str, kind: type, where: str, close: str = "escape") -> None:
        await pilot.press(key)
        await wait_for(pilot, lambda: isinstance(app.screen, kind), where)
        await pilot.pause(0.05)
        screens.check(where)
        await pilot.press(close)
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen), f"closing {where}")

    await modal("question_mark", HelpScreen, "help")
    await modal("p", PolicyScreen, "policy")
    await modal("g", PromptScreen, "go to")
    await modal("w", PromptScreen, "window")
    await modal("l", LabScreen, "what-if lab")

    # search for the hostile text: the match is selected, and a miss says so in a toast
    await pilot.press("slash")
    await wait_for(pilot, lambda: main.search_input.has_focus, "the search box")
    await pilot.press(*"hostile", "enter")
    await pilot.pause(0.2)
    screens.check("search")
    await pilot.press("slash")
    await wait_for(pilot, lambda: main.search_input.has_focus, "the search box")
    main.search_input.value = "[b]nothing such[/b]"
    await pilot.press("enter")
    await pilot.pause(0.2)
    screens.check("search, no match")

    # findings (what it found on such a session, if anything)
    await pilot.press("F")
    await wait_for(pilot, lambda: isinstance(app.screen, FindingsScreen), "the findings")
    screens.check("findings")
    await pilot.press("escape")
    await wait_for(pilot, lambda: isinstance(app.screen, MainScreen), "closing the findings")

    # compare with the first other policy
    await pilot.press("c")
    await wait_for(pilot, lambda: isinstance(app.screen, PolicyScreen), "the compare policy list")
    await pilot.press("enter")
    await wait_for(
        pilot,
        lambda: (
            isinstance(app.screen, CompareScreen)
            and app.screen.columns.view is not None
            and app.screen.cache is not None
        ),
        "the comparison",
    )
    screen = app.screen
    assert isinstance(screen, CompareScreen)
    screens.check("compare")
    assert screen.columns.view is not None
    for _ in range(len(screen.columns.view.rows)):
        await pilot.press("down")
    await pilot.pause()
    screens.check("compare, last row")
    await pilot.press("escape")
    await wait_for(pilot, lambda: isinstance(app.screen, MainScreen), "closing the comparison")

    # the command palette
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: app.screen is not main, "the command palette")
    await pilot.press(*"open")
    await pilot.pause(0.2)
    screens.check("command palette")
    await pilot.press("escape")
    await wait_for(pilot, lambda: isinstance(app.screen, MainScreen), "closing the palette")

    # the SVG export (`e`), written in the current directory
    before = set(tmp_path.glob("*.svg"))
    await pilot.press("e")
    await wait_for(pilot, lambda: set(tmp_path.glob("*.svg")) != before, "the SVG export")
    screens.check("after the SVG export")
    (svg,) = set(tmp_path.glob("*.svg")) - before
    screens.svg("svg (e)", svg.read_text(encoding="utf-8"))


def toasts(app: InspectorApp) -> str:
    """The text of the toasts on screen, as rendered (their regions of the screen's lines)."""
    from textual.widgets._toast import Toast

    strips = app.screen._compositor.render_strips()
    out = []
    for toast in app.screen.query(Toast):
        r = toast.region
        for y in range(r.y, min(r.bottom, len(strips))):
            out.append(strips[y].crop(r.x, r.right).text.strip(" ▌▐"))  # (a toast's edge is ▌)
    return "\n".join(out)


def squeeze(text: str) -> str:
    """`text` without any whitespace (a toast wraps its message at spaces)."""
    return re.sub(r"\s+", "", text)


def flat(screen: str) -> str:
    """The screen's lines without their frames and padding, joined: a text wrapped over several
    lines (at a space) reads whole again."""
    return "".join(line.strip().strip("│").strip() for line in screen.splitlines())


@pytest.mark.parametrize("fmt", FORMATS)
async def test_hostile_session_reaches_the_screen_as_text(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in").mkdir()
    transcript = load(build(fmt, tmp_path / "in"))
    assert transcript.format == fmt
    app = InspectorApp(transcript, window=100_000)
    app.animation_level = "none"
    screens = Screens(app)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await walk_requests(pilot, screens)
        await walk_modals(pilot, screens, tmp_path)
        # the full-screen message of the `Bash[/]` call, then its SVG screenshot
        main = app.main
        k = min(2, main.total)  # request 2 holds the Bash[/] call (generic: its one request)
        await pilot.press("g", str(k), "enter")
        main = await settled(pilot, k)
        assert main.view is not None
        row = next(
            r
            for r, m in enumerate(main.view.rows)
            if m is not None and any(c.name == TOOL for c in m.tool_calls)
        )
        await pilot.press("home", *["down"] * row)
        await wait_for(
            pilot, lambda: main.detail.detail is not None and main.detail.detail.row == row, "the Bash[/] row"
        )
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MessageScreen), "the Bash[/] message")
        await pilot.pause(0.05)
        message = screens.check("message view of Bash[/]")
        screens.svg("svg (message view)", app.export_screenshot())

    assert not screens.problems, "\n".join(screens.problems[:40])
    assert len(screens.seen) >= 2 * len(transcript.messages) + 12  # every row and its message, every modal
    # shown literally: the tool names, the markup, the controls as escapes
    main_text = screens.texts["main, first paint"]
    head = f"request {transcript.requests[-1].index}/"
    assert head in main_text
    assert "ssistant · Bash[/]" in message  # the panel's title: "request K · assistant · Bash[/]"
    assert f"── tool call {TOOL} (" in message
    assert MARKUP in flat(message) and "\\u001b]52;c;SGVsbG8=\\u0007" in flat(message)  # JSON arguments
    assert any(MARKUP in flat(t) and visible(OSC52) in flat(t) for t in screens.texts.values())
    assert any(TOOL in text for where, text in screens.texts.items() if where.startswith("main, request"))
    assert "request K · assistant · Bash[/]".replace("K", str(k)) in screens.texts["svg (message view)"]
    name = visible(Path(transcript.path).name, newlines=False)
    assert name[:20] in screens.texts["svg (e)"]
    # the file name, in the header at first paint (a file name cannot hold "/": its markup is «[b]f»)
    assert name[:20] in main_text
    if fmt != "opencollab":  # (a run folder: the snapshot's own name)
        assert visible(FILE_STEM, newlines=False) in name
    if fmt == "claude-code":
        # the compaction recorded right before the last request, its trigger as text
        # (the gauge's subtitle says it where it has room; the side pane's compaction note always)
        assert visible(TRIGGER, newlines=False)[:30] in main_text


def hostile_info(path: Path, **extra: Any) -> SessionInfo:
    return SessionInfo(
        harness="claude-code",
        path=path,
        project=f"/home/dev/{FILE_STEM}",
        size_bytes=path.stat().st_size,
        requests=3,
        last_activity=datetime(2026, 3, 1, 11, 0, tzinfo=UTC),
        title=f"title {MARKUP} \x1b]2;PWNED\x07 {TOOL}",
        **extra,
    )


async def test_the_picker_shows_hostile_sessions_and_failures_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    good = build("claude-code", tmp_path)
    bad = tmp_path / f"{FILE_STEM}-broken.jsonl"
    bad.write_bytes(b"\x1b]2;PWNED\x07 [b]not json[/b]\n" * 3)
    sessions = [hostile_info(bad), hostile_info(good)]
    app = InspectorApp(sessions=sessions, now=datetime(2026, 3, 1, 12, 0, tzinfo=UTC), home=tmp_path)
    app.animation_level = "none"
    screens = Screens(app)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause(0.1)
        picker = screens.check("picker")
        assert f"title {MARKUP}"[:40] in picker
        # the broken one: a "cannot open" toast naming it, as text
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app._notifications), "the cannot-open toast")
        await pilot.pause(0.1)
        screens.check("picker, cannot open")
        toast = toasts(app)
        assert "cannot open" in toast
        # the good one opens on the main screen, whose header shows its file name as text
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        main = await settled(pilot)
        assert main.view is not None
        screens.check("main, opened from the picker")
    assert not screens.problems, "\n".join(screens.problems[:40])
    assert squeeze(visible(bad.name, newlines=False) + " is not a transcript") in squeeze(toast)


async def test_a_narrow_terminal_shows_the_hostile_session_as_text(tmp_path: Path) -> None:
    """80x24: the columns and titles are cut, and a cut never leaves half an escape raw."""
    app = InspectorApp(load(build("claude-code", tmp_path)), window=100_000)
    app.animation_level = "none"
    screens = Screens(app)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await walk_requests(pilot, screens)
    assert not screens.problems, "\n".join(screens.problems[:40])
    assert any("Bash[/]" in t for t in screens.texts.values())


async def test_a_followed_hostile_session_stays_text_as_it_grows_and_goes(tmp_path: Path) -> None:
    """Live: lines appended (a compaction with a hostile trigger among them), the file truncated
    (a toast naming it), then removed (another): every screen on the way is text."""
    from inspector.tui.live import open_transcript

    path = build("claude-code", tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:4]))  # the title, the task, the Bash[/] call and its result
    opened = open_transcript(path, follow=True)
    assert opened.follower is not None
    app = InspectorApp(opened.transcript, window=100_000, follower=opened.follower)
    app.animation_level = "none"
    screens = Screens(app)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        main = await settled(pilot)
        screens.check("live, first paint")
        with path.open("ab") as fh:
            fh.write(b"".join(lines[4:]))
        await wait_for(
            pilot, lambda: main.total == 4 and main.view is not None and main.view.index == 4, "growth"
        )
        await settled(pilot, 4)
        grown = screens.check("live, grown")
        path.write_bytes(b"".join(lines[:3]))
        await wait_for(
            pilot, lambda: "read again from the start" in screens.check("live, truncated"), "the reset"
        )
        path.unlink()
        gone = "is gone; what was read stays on screen"
        await wait_for(
            pilot,
            lambda: bool(screens.check("live, file gone")) and squeeze(gone) in squeeze(toasts(app)),
            "the file-gone toast",
        )
        shown = toasts(app)
    assert not screens.problems, "\n".join(screens.problems[:40])
    assert visible(TRIGGER, newlines=False)[:30] in grown
    assert squeeze(visible(path.name, newlines=False) + gone) in squeeze(shown)  # the file's name, as text


def test_the_checks_catch_what_they_look_for() -> None:
    """The pattern and the markers catch a raw control and interpreted markup (tests can fail)."""
    assert RAW.search("a\x1bb") and RAW.search("\x9b") and RAW.search("\x07") and RAW.search("\x7f")
    assert not RAW.search(visible("a\x1b]52;c;x\x07b\x9b"))
    assert OWN_CSI.sub("", "\x1b[1;31mA\x1b[0m\x1b[3;4H") == "A"
    assert OWN_CSI.sub("", "\x1b]2;t\x07") == "\x1b]2;t\x07"  # an OSC stays, and is caught
    from rich.text import Text

    assert Text.from_markup(MARKUP).plain.startswith(INTERPRETED[0])
    assert Text(MARKUP).plain == MARKUP


async def test_the_screen_check_fails_on_raw_content(tmp_path: Path) -> None:
    """A widget showing a raw escape and interpreted markup is caught by `Screens.check`."""
    from textual.widgets import Static

    app = InspectorApp(load(build("generic", tmp_path)), window=100_000)
    screens = Screens(app)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settled(pilot)
        main = app.main
        await main.mount(Static("raw \x1b]2;T\x07 «[b]x[/b]» [link='http://x']l[/link]", id="bad"))
        await pilot.pause(0.1)
        screens.check("bad")
    joined = "\n".join(screens.problems)
    assert "raw control" in joined and "written to the terminal" in joined
    assert "markup was interpreted" in joined and "a link" in joined


_ = (Input, OptionList)


def test_the_text_helpers_make_controls_visible_and_never_read_markup() -> None:
    from inspector.tui.text import join, line, lines

    shown = line(f"{TOOL} {MARKUP} {OSC52}\nnext\tline")
    assert shown.plain == f"{TOOL} {MARKUP} {visible(OSC52)}⏎ next line" and not shown.spans
    assert lines("a\x1b[31m\nb").plain == "a\\x1b[31m\nb"
    styled = join(("● live", "bold"), " · ", f"{FILE_STEM}.jsonl")
    assert styled.plain == f"● live · {visible(FILE_STEM)}.jsonl"
    assert [(s.start, s.end) for s in styled.spans] == [(0, 6)]  # the badge's style only


TUI = Path(__file__).resolve().parents[2] / "inspector" / "tui"
SAFE_CALLS = {
    "line",
    "lines",
    "join",
    "assemble",
    "header_text",
    "row_text",
    "detail_text",
    "Text",
    # (inspector.tui.window and .calibrate: Text built from strings, transcript text through `visible`)
    "composition_text",
    "before_text",
    "after_text",
    "compaction_note",
    "summary_text",
}
"""Calls that build plain text (through `visible`, or from strings that went through it)."""


def _unsafe_display(tree: Any, name: str) -> list[str]:
    """Display strings Textual would read as markup: a border title or subtitle that is not plain
    (a literal without `[`, or a helper's result), a formatted string given to Label, Static or
    update, `.notify(` other than `inspector.tui.text.notify`, markup read on purpose."""
    import ast

    def called(node: ast.expr) -> str:
        if not isinstance(node, ast.Call):
            return ""
        func = node.func
        return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""

    def plain_literal(node: ast.expr) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and "[" not in node.value

    found: list[str] = []
    for node in ast.walk(tree):
        where = f"{name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Assign):
            titles = [t.attr for t in node.targets if isinstance(t, ast.Attribute)]
            if {"border_title", "border_subtitle"} & set(titles) and not (
                plain_literal(node.value) or called(node.value) in SAFE_CALLS
            ):
                found.append(f"{where}: a border title from a string Textual reads as markup")
        elif isinstance(node, ast.Call):
            attr = called(node)
            if attr == "notify" and isinstance(node.func, ast.Attribute) and name != "text.py":
                found.append(f"{where}: .notify( (inspector.tui.text.notify shows text)")
            if attr in ("from_markup", "render_str"):
                found.append(f"{where}: {attr} reads markup")
            if attr in ("Label", "Static", "update") and node.args:
                arg = node.args[0]
                formatted = isinstance(arg, ast.JoinedStr | ast.BinOp)
                if (
                    formatted
                    or (isinstance(arg, ast.Constant) and not plain_literal(arg))
                    or (isinstance(arg, ast.Call) and called(arg) not in SAFE_CALLS)
                ):
                    found.append(f"{where}: {attr}( of a string Textual may read as markup")
            markup_on = [
                k
                for k in node.keywords
                if k.arg == "markup" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
            ]
            if markup_on and name != "text.py":
                found.append(f"{where}: markup= other than False")
    return found


def test_no_display_string_in_the_app_can_be_read_as_markup() -> None:
    """Every border title, toast, label and update in inspector/tui takes plain text (the helpers
    of inspector.tui.text, or Text/Content built from strings), never a str Textual would parse."""
    import ast

    found: list[str] = []
    for path in sorted(TUI.rglob("*.py")):
        found += _unsafe_display(ast.parse(path.read_text(encoding="utf-8")), path.name)
    assert found == []
    # and the check finds what it looks for
    bad = ast.parse(
        'w.border_title = f"request {d.title}"\n'
        "self.notify(reason)\n"
        'Label(f"over {p.name}")\n'
        'x.update(f"{a}")\n'
        "Content.from_markup(s)\n"
        'w.border_subtitle = "[b]x"\n'
        "w.border_title = name\n"
        "self.app.notify(m, markup=True)\n"
    )
    assert len(_unsafe_display(bad, "bad.py")) == 9
