"""The command line: `context-inspector [PATH]` opens the app; subcommands print the same facts.

Errors a user can cause are one line on stderr and exit code 2; never a traceback. Running out
of memory (a transcript too big for the memory limit) is one line and exit code 2 as well.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace

from inspector import __version__
from inspector.errors import UserError
from inspector.formats import LoaderError, Progress, load
from inspector.model import Message, ToolCallBlock, Transcript
from inspector.model.bulk import hold_for_good, paused_gc
from inspector.model.sanitize import json_text, visible
from inspector.model.windows import model_window
from inspector.report.progress import progress_for
from inspector.settings import DEFAULT_ESTIMATOR

if TYPE_CHECKING:
    from inspector.replay import Replay
    from inspector.replay.settings import RunSettings
    from inspector.samples import SampleInfo
    from inspector.shaping import Policy

EXIT_USAGE = 2


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def _window_size(text: str) -> int:
    """ "200000", "200,000", "200k", "1m" -> tokens, as the app's window field reads them."""
    from inspector.shaping.budget import MAX_WINDOW, parse_window

    value = parse_window(text)
    if value is None:
        raise argparse.ArgumentTypeError(
            f"not a window size: {text!r} (give 1 to {MAX_WINDOW // 1_000_000}m tokens: 200000, 200k or 1m)"
        )
    return value


def _add_shaping_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--policy",
        default=None,
        help="preset (claude-code, opencode, codex, opencollab, no_history_compaction) or a TOML file; "
        "default: the preset of the harness that wrote the transcript",
    )
    p.add_argument(
        "--window",
        type=_window_size,
        default=None,
        metavar="TOKENS",
        help="context window in tokens: 200000, 200k or 1m (default: from the transcript or model)",
    )
    p.add_argument(
        "--model",
        default=None,
        help="the model the session ran with, for its window where the transcript states none "
        "(e.g. claude-sonnet-4-5, gpt-5); --window wins",
    )


def _estimator(args: argparse.Namespace) -> str:
    """The estimator the command line names, else (calibrate) the settings file's default."""
    estimator = getattr(args, "estimator", None)
    if estimator is None and hasattr(args, "estimator"):  # calibrate: the settings file's default
        from inspector.settings import current

        estimator = current().estimator
    return estimator or DEFAULT_ESTIMATOR


def _settings(args: argparse.Namespace) -> RunSettings:
    """The run's settings, as the command line gives them (each command takes some of them)."""
    from inspector.replay.settings import RunSettings

    return RunSettings(
        policy=getattr(args, "policy", None),
        window=getattr(args, "window", None),
        model=getattr(args, "model", None),
        step=getattr(args, "step", None),
        follow=getattr(args, "follow", None),
        session=getattr(args, "session", None),
        estimator=_estimator(args),
    )


def _replay(transcript: Transcript, settings: RunSettings) -> Replay:
    """The transcript's replay under the run's policy, with the window --window or --model gives."""
    from inspector.replay import Replay
    from inspector.replay.settings import CHECKED_WINDOW

    replay = Replay.from_settings(transcript, settings)
    if replay.window_source in CHECKED_WINDOW:
        _check_window(replay.policy, replay.window)
    return replay


def _check_window(policy: Policy, window: int | None) -> None:
    """A window given (--window, --model) too small for the policy's reserves: the user's one line."""
    from inspector.report.summary import window_problem

    problem = window_problem(policy, window)
    if problem is not None:
        raise UserError(problem)


def _check_options(settings: RunSettings) -> Policy | None:
    """What can be checked before a transcript is read: the policy named (a preset, a file), the
    window given against it, a model whose window must be known. The policy, when named."""
    from inspector.shaping import load_policy

    policy = load_policy(settings.policy) if isinstance(settings.policy, str) and settings.policy else None
    if policy is not None and settings.window is not None:
        _check_window(policy, settings.window)
    model = settings.model
    if model is not None and settings.window is None and model_window(model) is None:
        raise UserError(f"the window of model {model!r} is not known: give --window TOKENS")
    return policy


SESSION_HELP = (
    "where PATH holds several sessions (an opencode database, a folder of Codex or Claude Code "
    "sessions): the one with this id, or the only one whose id begins so (default: the newest)"
)


def _add_session_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--session", default=None, metavar="ID", help=SESSION_HELP)
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the cache of loaded transcripts (in ~/.cache/context-inspector)",
    )


DESCRIPTION = (
    "See what an AI coding agent's context window held, request by request, and why parts were cleared."
)


def _app_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="context-inspector",
        description=DESCRIPTION,
        epilog="commands: report, explain, calibrate, findings, export, sessions, tour, serve (context-inspector COMMAND --help)",
    )
    p.add_argument("--version", action="version", version=f"context-inspector {__version__}")
    p.add_argument(
        "path",
        nargs="?",
        help="a transcript file or session folder (none: pick one of the sessions found on this machine)",
    )
    p.add_argument(
        "--sample",
        nargs="?",
        const="long-session",
        default=None,
        metavar="NAME",
        help="open a bundled sample session or scenario (context-inspector tour lists the scenarios)",
    )
    p.add_argument(
        "--follow",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="follow the file as an agent writes it (default: on when it changed in the last minute)",
    )
    _add_session_option(p)
    _add_shaping_options(p)
    return p


PATH_HELP = "a transcript file or session folder"


def _command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, what: str
) -> argparse.ArgumentParser:
    """A command's parser: what it does, in the list of commands and atop its own --help."""
    return sub.add_parser(name, help=what, description=what[0].upper() + what[1:] + ".")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="context-inspector", description=DESCRIPTION)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    r = _command(
        sub, "report", "print a transcript's facts: requests, context, compactions, fidelity (or --json)"
    )
    r.add_argument("path", help=PATH_HELP)
    _add_session_option(r)
    r.add_argument("--json", action="store_true", help="print the JSON report (a stable schema)")
    r.add_argument(
        "--step", type=_positive_int, default=None, help="also run the pipeline at request K (1-based)"
    )
    r.add_argument(
        "--compare",
        default=None,
        metavar="POLICY",
        help="with --step: the same request under a second policy",
    )
    r.add_argument(
        "--cache",
        action="store_true",
        help="the prompt-cache cost of each policy's views: prefix rewrites and tokens re-billed (shapes every request)",
    )
    _add_shaping_options(r)

    c = _command(sub, "calibrate", "how well calibrated weights predict what the provider billed")
    c.add_argument("path", nargs="+", help=PATH_HELP + " (several: a row per file and a summary row)")
    _add_session_option(c)
    c.add_argument(
        "--estimator",
        choices=("heuristic", "tiktoken"),
        default=None,
        help="the local estimate calibration starts from (default: the settings' estimator, else heuristic)",
    )
    c.add_argument(
        "--mode", choices=("proportional", "delta"), default=None, help="show this mode's per-request errors"
    )
    c.add_argument("--json", action="store_true", help="print the errors as JSON")

    f = _command(
        sub,
        "findings",
        "symptoms the transcript shows: re-reads after clearing, storms, loops, ... "
        "(exit 1 when one is an error)",
    )
    f.add_argument("path", help=PATH_HELP)
    _add_session_option(f)
    f.add_argument("--json", action="store_true", help="print the findings as JSON")
    f.add_argument(
        "--check",
        action="append",
        default=None,
        metavar="NAME",
        help="run only this check (repeatable): reread, stop_reason, orphans, compaction_storm, "
        "overflow, api_errors, loops, pressure",
    )
    _add_shaping_options(f)

    x = _command(sub, "export", "the report at a request as JSON, Markdown, HTML or SVG")
    x.add_argument("path", help=PATH_HELP)
    _add_session_option(x)
    x.add_argument("--format", choices=("json", "md", "html", "svg"), default="md", help="default: md")
    x.add_argument("--step", type=_positive_int, default=None, help="the request (default: the last)")
    x.add_argument(
        "--redact", action="store_true", help="replace API keys, tokens, private keys, URL passwords"
    )
    x.add_argument("-o", "--output", default=None, help="file to write (default, or -: standard output)")
    _add_shaping_options(x)

    s = _command(sub, "sessions", "list the sessions found on this machine, newest first")
    s.add_argument("--json", action="store_true", help="print the list as JSON")

    v = _command(sub, "serve", "serve the app to a web browser on this machine (http://127.0.0.1:PORT)")
    v.add_argument(
        "path", nargs="?", help=PATH_HELP + " (none: the picker of the sessions found on this machine)"
    )
    v.add_argument("--port", type=_positive_int, default=8000, help="the port on 127.0.0.1 (default: 8000)")
    _add_session_option(v)
    _add_shaping_options(v)

    t = _command(sub, "tour", "a guided tour of a bundled scenario in the app (none: list them)")
    t.add_argument("scenario", nargs="?", metavar="SCENARIO", help="the scenario (none: list them)")

    e = _command(sub, "explain", "say why a message was changed at a request")
    e.add_argument("path", help=PATH_HELP)
    _add_session_option(e)
    e.add_argument(
        "message",
        help="the message: its id, a unique prefix of one, or its line in PATH's own file (1583 or :1583; "
        "a bare number is taken as a line first)",
    )
    e.add_argument(
        "--step", type=_positive_int, default=None, help="the request (default: the last that sent it)"
    )
    e.add_argument("--json", action="store_true", help="print the answer as JSON")
    _add_shaping_options(e)
    return p


@contextmanager
def _reading(path: str) -> Iterator[Progress | None]:
    """While `path` is read: the progress line on standard error where it is a terminal (erased
    after), and a load error made the user's one line."""
    progress = progress_for(path, sys.stderr)
    try:
        yield progress
    except LoaderError as exc:
        raise UserError(str(exc)) from None
    finally:
        if progress is not None:
            progress.close()


def _load(
    path: str, session: str | None = None, *, later: list[Callable[[], None]] | None = None
) -> Transcript:
    """The transcript at `path`, through the persistent cache unless --no-cache. `later`: where a
    miss's cache write goes instead of being done now (the app writes it once it has closed)."""
    from inspector.formats.cache import cached_load

    with _reading(path) as progress:
        transcript = cached_load(
            path,
            lambda: load(path, progress=progress, session=session),
            session=session,
            enabled=_cache_on,
            later=later,
        )
    if _one_shot:
        hold_for_good()  # the process ends with this command, without freeing what it loaded
    return transcript


_one_shot = False
_cache_on = True
"""False with --no-cache (`inspector.formats.cache`)."""
"""Set when the process runs one command of QUICK_EXIT and leaves (`main`)."""


def _cmd_report(args: argparse.Namespace) -> int:
    settings = _settings(args)
    _check_options(settings)
    transcript = _load(args.path, settings.session)
    replay = _replay(transcript, settings)
    from inspector.report.summary import attach_cost, replay_report

    report = attach_cost(replay_report(replay, step=settings.step, compare_with=args.compare), transcript)
    if args.cache:
        from inspector.replay.cache import cache_cost, cache_money

        totals = {"policy", "window", "rewrites", "rebilled_tokens", "sent_tokens", "cached_tokens"}
        replays = [replay] + ([replay.with_settings(args.compare)] if args.compare else [])
        costs = [cache_cost(r) for r in replays]
        report.cache = []
        for c in costs:
            money, note = cache_money(transcript, c)
            entry: dict[str, Any] = {k: getattr(c, k) for k in c.__struct_fields__ if k in totals}
            report.cache.append({**entry, "rebilled_cost": money, "cost_note": note})
    if args.json:
        sys.stdout.write(json_text(report) + "\n")
    else:
        from inspector.report.render import print_report

        print_report(report)
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    settings = _settings(args)
    _check_options(settings)
    transcript = _load(args.path, settings.session)
    replay = _replay(transcript, settings)
    found = _find_message(replay, args.message)
    answer = replay.explain(found.message.id, step=settings.step)
    if args.json:
        import json

        holding = replay.requests_holding(found.message.id)
        step = settings.step if settings.step is not None else (holding[-1] if holding else None)
        origin = found.message.origin
        data = {
            "message_id": found.message.id,
            "role": found.message.role.value,
            "file": origin.file if origin is not None else None,
            "line": origin.line if origin is not None else None,
            "found_by": found.by,
            "note": found.note,
            "step": step,
            "requests_holding": [holding[0], holding[-1]] if holding else None,
            "answer": answer,
        }
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return 0
    if found.note:
        sys.stdout.write(visible(found.note, newlines=False) + "\n")
    sys.stdout.write(visible(answer, newlines=False) + "\n")
    return 0


class _Found:
    """A message the user named, how it was found (id, id prefix, line) and what to tell them."""

    def __init__(self, message: Message, by: str, note: str | None = None) -> None:
        self.message, self.by, self.note = message, by, note


def _find_message(replay: Replay, ref: str) -> _Found:
    """The message `ref` names: an id, a unique id prefix, or a line of the transcript's own file
    (`1583` or `:1583`; never a line of another file it read, such as a compaction call's). A bare
    number that is both a line and the start of ids is taken as the line, and the note says so."""
    from inspector.report.summary import plural

    ref = ref.strip()
    transcript = replay.transcript
    by_id = transcript.messages_by_id()
    if ref in by_id:
        return _Found(by_id[ref], "id")
    number = re.fullmatch(r"(:)?(\d+)", ref)
    if number is None:
        return _Found(replay.find_message(ref), "id prefix")
    n = int(number.group(2))
    name = os.path.basename(transcript.path)
    prefixed = [mid for mid in by_id if mid.startswith(ref)] if number.group(1) is None else []
    message, what = _message_at_line(transcript, n)
    if message is None:
        if len(prefixed) == 1:
            return _Found(
                by_id[prefixed[0]],
                "id prefix",
                f"no message at line {n:,} of {name}: {ref!r} is the start of message {prefixed[0]}",
            )
        also = (
            f"; {plural(len(prefixed), 'message id')} begin with {ref!r}: give more of one"
            if prefixed
            else ""
        )
        raise UserError(f"line {n:,} of {name} holds no message ({what}){also}")
    note = f"line {n:,} of {name}: {what}"
    if prefixed:
        note += (
            f" (taken as a line number; {plural(len(prefixed), 'message id')} also begin with {ref!r}: "
            "give more of an id for one of them)"
        )
    return _Found(message, "line", note)


def _same_file(a: str, b: str) -> bool:
    return os.path.abspath(a) == os.path.abspath(b)


def _message_at_line(transcript: Transcript, n: int) -> tuple[Message | None, str]:
    """The message line `n` of the transcript's own file is (its first line) or is part of (a later
    line of a response streamed over several lines), and what that line is; (None, what it is)
    where it is no message's."""
    path = transcript.path
    mine = [m for m in transcript.messages if m.origin is not None and _same_file(m.origin.file, path)]
    for m in mine:
        if m.origin is not None and m.origin.line == n:
            return m, f"message {m.id} ({m.role.value})"
    record = _record_at_line(path, n)
    if record is None:
        last = max((m.origin.line for m in mine if m.origin is not None), default=0)
        return (
            None,
            f"the file's messages are on lines 1 to {last:,}" if last else "the file holds no message",
        )
    ids = {record.get("uuid"), record.get("id")}
    inner = record.get("message")
    response = inner.get("id") if isinstance(inner, dict) else None
    for m in mine:
        if m.id in ids or (response is not None and m.response_id == response):
            first = m.origin.line if m.origin is not None else 0
            return m, f"part of message {m.id} ({m.role.value}), whose first line is {first:,}"
    kind = record.get("type")
    call = record.get("toolUseID") or record.get("parentToolUseID")
    if isinstance(call, str):
        for m in mine:
            for b in m.blocks:
                if isinstance(b, ToolCallBlock) and b.id == call:
                    return m, (
                        f"a {kind!s} record of tool call {call} ({b.name}), made by message {m.id} "
                        f"({m.role.value})"
                    )
    before = [m for m in mine if m.origin is not None and m.origin.line < n]
    after = [m for m in mine if m.origin is not None and m.origin.line > n]
    near = []
    if before and before[-1].origin is not None:
        near.append(f"line {before[-1].origin.line:,}")
    if after and after[0].origin is not None:
        near.append(f"line {after[0].origin.line:,}")
    what = f"a {kind!s} record" if isinstance(kind, str) else "a record that is not a message"
    return None, what + (f"; the nearest messages are at {' and '.join(near)}" if near else "")


def _record_at_line(path: str, n: int) -> dict[str, Any] | None:
    """Line `n` (1-based) of a JSON-lines file as an object; None where there is no such line or
    it is not one (another kind of file: a database, a JSON array)."""
    import orjson

    try:
        with open(path, "rb") as fh:
            for i, line in enumerate(fh, 1):
                if i == n:
                    try:
                        value = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        return None
                    return value if isinstance(value, dict) else None
    except OSError:
        return None
    return None


def _sample(name: str) -> SampleInfo:
    """A bundled sample or scenario, by name."""
    from inspector.samples import SAMPLES, SCENARIOS, sample_info

    try:
        return sample_info(name)
    except KeyError:
        raise UserError(
            f"no bundled sample named {name!r}; samples: {', '.join(sorted(SAMPLES))}; "
            f"scenarios: {', '.join(SCENARIOS)}"
        ) from None


def _cmd_tour(args: argparse.Namespace) -> int:
    """Open the app on a scenario with its guided tour; no SCENARIO: list them."""
    from inspector.samples import SCENARIOS

    if args.scenario is None:
        width = max(len(name) for name in SCENARIOS)
        for name, info in SCENARIOS.items():
            print(f"{name:<{width}}  {info.title}")
        return 0
    if args.scenario not in SCENARIOS:
        raise UserError(f"no scenario named {args.scenario!r}; there are: {', '.join(SCENARIOS)}")
    info = SCENARIOS[args.scenario]
    _require_terminal(str(info.path))
    transcript = _load(str(info.path))
    from inspector.replay.settings import RunSettings, WindowSource
    from inspector.tui import run_app

    run_app(
        transcript,
        settings=RunSettings(policy=info.policy, window=info.window, window_source=WindowSource.SAMPLE),
        start="first",
        tour=info.name,
    )
    return 0


def _cmd_open(args: argparse.Namespace) -> int:
    """Open the app: on PATH, on a bundled sample, or (neither) on the session picker.

    A PATH that changed in the last minute is followed unless --no-follow; a sample only with
    --follow.
    """
    settings = _settings(args)
    named_policy = _check_options(settings)  # a wrong policy, window or model: one line, before any screen
    if args.path is not None and not os.path.exists(args.path):
        raise UserError(f"no such file or folder: {args.path}")
    if args.path is not None:
        from inspector.formats.detect import choose

        try:
            choose(args.path, settings.session)  # not a transcript, no such session: one line, first
        except LoaderError as exc:
            raise UserError(str(exc)) from None
    if args.sample is not None:
        from inspector.samples import SAMPLES_DIR

        _require_terminal(str(SAMPLES_DIR / _sample(args.sample).file))
    else:
        _require_terminal(args.path)
    if args.sample is not None:
        from inspector.samples import SAMPLES_DIR

        info = _sample(args.sample)
        path = str(SAMPLES_DIR / info.file)
        settings = replace(settings, policy=settings.policy or info.policy, follow=bool(settings.follow))
        if settings.window is None and settings.model is None and info.window is not None:
            from inspector.replay.settings import WindowSource

            # the sample's own window (--model, where it gives one, goes over it)
            settings = replace(settings, window=info.window, window_source=WindowSource.SAMPLE)
    elif args.path is not None:
        path = args.path
    else:
        if settings.follow:
            raise UserError("--follow needs a transcript PATH (the picker follows live sessions by itself)")
        if settings.model is not None:
            raise UserError("--model needs a transcript PATH (or --sample)")
        if settings.session is not None:
            raise UserError("--session needs a PATH that holds several sessions (the picker lists each one)")
        from inspector.tui import run_app

        run_app(None, settings=settings)
        return 0
    target, session_id, harness = path, settings.session, None
    if settings.session is not None or os.path.isdir(path):
        from inspector.formats.detect import choose

        with _reading(path):
            choice = choose(path, settings.session)  # an unknown --session: one line, before any reading
        target, session_id, harness = str(choice.path), choice.session_id, choice.format
    if settings.follow is None:
        from inspector.tui.live import recently_modified

        follow = recently_modified(target)
    else:
        follow = settings.follow  # (the follower and its reader, imported only to follow)
    later: list[Callable[[], None]] = []  # a first open's cache entry: written once the app has closed
    if not follow:
        transcript, follower = _load(path, settings.session, later=later), None
        _calibrate_ahead(transcript)
    else:
        from inspector.tui.live import open_transcript

        with _reading(path) as progress:
            opened = open_transcript(
                target, follow=True, session_id=session_id, harness=harness, progress=progress
            )
        transcript, follower = opened.transcript, opened.follower
        if os.path.samefile(target, path) and harness != "opencode":  # one session: its id must match
            from inspector.formats.detect import check_named

            with _reading(path):
                check_named(transcript, settings.session, path)
    settings = replace(settings.pinned(transcript), follow=follow)  # --model's window, kept as it grows
    if settings.checked_window:
        assert settings.window is not None
        _check_window(named_policy or settings.policy_for(transcript), settings.window)
    from inspector.tui import run_app

    try:
        run_app(transcript, settings=settings, follower=follower)
    finally:
        _stop_ahead()
        for step in later:
            step()
    return 0


def _calibrate_ahead(transcript: Transcript, estimator: str = DEFAULT_ESTIMATOR) -> None:
    """The delta calibration's pass over `transcript`, sized by `estimator` (by default the one the
    app's replay sizes with, `Replay.open`'s), started on another core while this process goes on
    (`inspector.tokens.stored.run_ahead`; `_keep_derived` ends it if nothing took it): the app's
    first open imports Textual and draws its first frame meanwhile, `calibrate` sizes the
    baselines and runs the proportional mode. Not for `report` nor `findings`: their work before
    the pass is short, and the two processes slow each other (on chained-30, best of six without /
    with: `report --json` 1.27 / 1.46 s, `--policy opencollab` 1.43 / 1.57 s, `findings` 1.38 /
    1.47 s)."""
    from inspector.tokens import get_estimator, stored

    stored.run_ahead(transcript, get_estimator(estimator))


def _stdout_is_terminal() -> bool:
    try:
        return os.isatty(sys.stdout.fileno())
    except (AttributeError, ValueError, OSError):
        return False


def _require_terminal(path: str | None) -> None:
    """The app draws on a terminal: with standard output a pipe or a file it does not start (it
    would write screens of escape codes and wait for keys), and the one line says what prints the
    same facts. The browser (`serve`) runs the app under its own driver, which needs no terminal."""
    if os.environ.get("TEXTUAL_DRIVER") or _stdout_is_terminal():
        return
    instead = f"context-inspector report {path}" if path else "context-inspector sessions"
    raise UserError(
        f"the app needs a terminal and standard output is not one; for the same facts as text run: {instead}"
    )


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from inspector.tokens.accuracy import AccuracyReport, accuracy, corpus_report, row_of

    # (not `_settings`: its `RunSettings` lives in the replay package, which calibrate never uses
    # and whose import costs a fifth of a second)
    estimator = _estimator(args)

    def measured(path: str) -> AccuracyReport:
        transcript = _load(path, args.session)
        if not any(r.usage for r in transcript.requests):
            raise UserError(f"{path} records no token usage: there is nothing to calibrate against")
        _calibrate_ahead(transcript, estimator)
        result = accuracy(transcript, estimator)
        if not result.requests:
            reported = sum(1 for r in transcript.requests if r.usage)
            raise UserError(
                f"{path} records token usage for {reported} request{'' if reported == 1 else 's'}: "
                "there is no request to predict (one report to learn from, a later one to predict)"
            )
        return result

    paths: list[str] = args.path
    if len(paths) == 1:
        result = measured(paths[0])
        if args.json:
            sys.stdout.write(json_text(result) + "\n")
        else:
            from inspector.report.render import print_accuracy

            print_accuracy(result, mode=args.mode)
        return 0
    rows = [row_of(measured(p), os.path.basename(os.path.normpath(p))) for p in paths]
    corpus = corpus_report(rows, rows[0].estimator)
    if args.json:
        sys.stdout.write(json_text(corpus) + "\n")
    else:
        from inspector.report.render import print_corpus_accuracy

        print_corpus_accuracy(corpus)
    return 0


def _cmd_findings(args: argparse.Namespace) -> int:
    """Exit 0 when nothing of severity "error" was found, 1 otherwise (for scripts and CI)."""
    settings = _settings(args)
    _check_options(settings)
    from inspector.findings import UnknownCheckError, exit_code, find_all, findings_json, findings_text

    transcript = _load(args.path, settings.session)
    # the replay, its calibration and the checks' indexes are built and kept to the end:
    # collections would only walk them again and again as they grow
    with paused_gc():
        replay = _replay(transcript, settings)
        try:
            found = find_all(replay, args.check)
        except UnknownCheckError as exc:
            raise UserError(str(exc)) from None
    if args.json:
        import json

        sys.stdout.write(json.dumps(findings_json(found), indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(findings_text(found)) + "\n")
    return exit_code(found)


def _cmd_export(args: argparse.Namespace) -> int:
    settings = _settings(args)
    _check_options(settings)
    from pathlib import Path

    from inspector.report.export import ExportError, export, output_clash

    if args.output == "-":  # (the usual spelling of standard output, not a file named "-")
        args.output = None
    transcript = _load(args.path, settings.session)
    clash = output_clash(args.output, args.path, transcript) if args.output is not None else None
    if clash is not None:
        raise UserError(f"refusing to write the export: {clash}")
    # the replay, its step, the findings and the document are built and little of it is freed
    # before the command ends: collections would only walk it again and again as it grows
    # (0.5 s of a 100,000-line chain's html export)
    with paused_gc():
        replay = _replay(transcript, settings)
        found, left_out = None, []
        if args.format == "html":  # the page links each finding to its messages
            from inspector.findings import CHECKS, find_all
            from inspector.report.html_page import shaping_fits

            # checks that shape every request only where that is seconds, not minutes, of work
            left_out = [] if shaping_fits(replay) else [n for n, c in CHECKS.items() if c.shapes]
            found = find_all(replay, [n for n in CHECKS if n not in left_out])
        try:
            text = export(
                replay,
                args.format,
                step=settings.step,
                redact=args.redact,
                findings=found,
                checks_left_out=left_out,
            )
        except ExportError as exc:
            raise UserError(str(exc)) from None
    if args.output is None:
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write {out}: {exc.strerror or exc}") from None
    return 0


def _cmd_sessions(args: argparse.Namespace) -> int:
    from inspector.live.discovery import discover, sessions_table

    rows = discover()
    if args.json:
        import json

        sys.stdout.write(json.dumps(sessions_table(rows), indent=2) + "\n")
    else:
        from inspector.report.render import print_sessions

        print_sessions(rows)
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    """The app in a browser (`inspector.tui.serve`), with the options checked here first."""
    _check_options(_settings(args))
    if args.path is not None and not os.path.exists(args.path):
        raise UserError(f"no such file or folder: {args.path}")
    if args.port > 65535:
        raise UserError(f"not a port: {args.port} (give 1 to 65535)")
    from inspector.tui.serve import ServeError, serve_app

    command = [sys.executable, "-m", "inspector"]
    if args.path is not None:
        command.append(os.path.abspath(args.path))
    for option in ("session", "policy", "window", "model"):
        value = getattr(args, option)
        if value is not None:
            given = os.path.abspath(value) if option == "policy" and os.path.isfile(value) else str(value)
            command += [f"--{option}", given]
    try:
        serve_app(command, args.port)
    except ServeError as exc:
        raise UserError(str(exc)) from None
    return 0


COMMANDS = {
    "report": _cmd_report,
    "explain": _cmd_explain,
    "calibrate": _cmd_calibrate,
    "findings": _cmd_findings,
    "export": _cmd_export,
    "sessions": _cmd_sessions,
    "tour": _cmd_tour,
    "serve": _cmd_serve,
}


USES_SETTINGS = frozenset({"calibrate", "sessions", "tour", "serve"})
"""The commands that read the user's settings file (and the app, which opens without a command):
the others neither read it nor pay for it, and a bad one does not stop them."""

QUICK_EXIT = frozenset(COMMANDS) - {"tour", "serve"}
"""The commands that print and are done: a process started as one of them leaves at once."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line (`argv`: the arguments, or None for the process's own).

    Started as a process (`argv` None), a command that prints and is done leaves without freeing
    what it loaded: a long transcript leaves hundreds of thousands of objects in reference cycles,
    which the collector would walk and free at exit, longer than the report itself takes (0.3 s
    of a 100 MB session). Called as a function, it returns as any function does."""
    global _one_shot
    args_list = list(sys.argv[1:] if argv is None else argv)
    _one_shot = argv is None and bool(args_list) and args_list[0] in QUICK_EXIT
    code = _run(args_list)
    if _one_shot:
        _exit_at_once(code)
    return code


def _exit_at_once(code: int) -> None:
    """Flush what was written and end the process with `code` (nothing is left to clean up: the
    commands of QUICK_EXIT write their files before they return). Returns where the flush fails
    (a closed pipe), so that the usual exit reports it as it always did."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def _out_of_memory_line(command: str | None, args: argparse.Namespace) -> str:
    """The one line a MemoryError prints: what ran out of memory, and on which file."""
    what = f"`{command}`" if command is not None else "the app"
    path = getattr(args, "path", None)
    on = f" on {visible(path, newlines=False)}" if isinstance(path, str) else ""
    return f"context-inspector: {what} ran out of memory{on} (it needs more memory than the limit allows)\n"


def _read_settings() -> None:
    """The user's settings file, read once, made the settings in force (`inspector.settings`)."""
    from inspector.settings import load_settings, use

    use(load_settings())


def _stop_ahead() -> None:
    """End a pass `_calibrate_ahead` started that nothing took (or that is still running)."""
    stored = sys.modules.get("inspector.tokens.stored")
    if stored is not None:
        stored.stop_ahead()


def _keep_derived() -> None:
    """Once a command has printed (or the app closed): what its passes computed from a transcript
    read through the cache, written for the next open (`inspector.tokens.stored`), the output
    flushed first so that nobody waits on it."""
    stored = sys.modules.get("inspector.tokens.stored")
    if stored is None:
        return  # nothing was asked of it
    stored.stop_ahead()
    with suppress(OSError, ValueError):
        sys.stdout.flush()
    stored.write_pending()


def _run(args_list: list[str]) -> int:
    out_of_memory = "context-inspector: ran out of memory\n"
    global _cache_on
    try:
        if args_list and args_list[0] in COMMANDS:
            args = _parser().parse_args(args_list)
            out_of_memory = _out_of_memory_line(args.command, args)
            _cache_on = not getattr(args, "no_cache", False)
            if args.command in USES_SETTINGS:
                _read_settings()
            try:
                return COMMANDS[args.command](args)
            finally:
                _keep_derived()
        args = _app_parser().parse_args(args_list)
        out_of_memory = _out_of_memory_line(None, args)
        _cache_on = not args.no_cache
        _read_settings()
        try:
            return _cmd_open(args)
        finally:
            _keep_derived()
    except UserError as exc:
        sys.stderr.write(f"context-inspector: {visible(str(exc), newlines=False)}\n")
        return EXIT_USAGE
    except MemoryError:
        # the line is made before the command runs: with no memory left, nothing new is made
        sys.stderr.write(out_of_memory)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
