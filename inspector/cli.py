"""The command line: `context-inspector [PATH]` opens the app; subcommands print the same facts.

Errors a user can cause are one line on stderr and exit code 2; never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from inspector import __version__
from inspector.formats import LoaderError, Progress, load
from inspector.model import Transcript
from inspector.model.bulk import hold_for_good
from inspector.model.windows import model_window
from inspector.replay import Replay, ReplayError, resolve_window
from inspector.report.progress import progress_for
from inspector.report.sanitize import json_text, visible
from inspector.settings import SettingsError
from inspector.shaping import PolicyError

if TYPE_CHECKING:
    from sample_sessions import SampleInfo

EXIT_USAGE = 2


class UserError(Exception):
    """Something the user can fix; printed as one line."""


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
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
        type=_positive_int,
        default=None,
        help="context window in tokens (default: from the transcript or model)",
    )
    p.add_argument(
        "--model",
        default=None,
        help="the model the session ran with, for its window where the transcript states none "
        "(e.g. claude-sonnet-4-5, gpt-5); --window wins",
    )


def _replay(transcript: Transcript, args: argparse.Namespace) -> Replay:
    """The transcript's replay under --policy, with the window --window or --model gives."""
    window, source = _window(transcript, args)
    return Replay.open(transcript, policy=args.policy, window=window, window_source=source)


def _window(transcript: Transcript, args: argparse.Namespace) -> tuple[int | None, str]:
    """The window to shape against and where it came from: --window; else the window of --model
    (`resolve_window`: unless the transcript states one); else None, and the replay reads it from
    the transcript or the model it names."""
    if args.window is not None or args.model is None:
        return args.window, "--window"
    if model_window(args.model) is None:
        raise UserError(f"the window of model {args.model!r} is not known: give --window TOKENS")
    window, source = resolve_window(transcript, None, model=args.model)
    return (window, source) if source == "--model" else (None, "--window")


SESSION_HELP = (
    "where PATH holds several sessions (an opencode database, a folder of Codex or Claude Code "
    "sessions): the one with this id, or the only one whose id begins so (default: the newest)"
)


def _add_session_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--session", default=None, metavar="ID", help=SESSION_HELP)


DESCRIPTION = (
    "See what an AI coding agent's context window held, request by request, and why parts were cleared."
)


def _app_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="context-inspector",
        description=DESCRIPTION,
        epilog="commands: report, explain, calibrate, findings, export, sessions, tour (context-inspector COMMAND --help)",
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
    c.add_argument("path", help=PATH_HELP)
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
    x.add_argument("-o", "--output", default=None, help="file to write (default: standard output)")
    _add_shaping_options(x)

    s = _command(sub, "sessions", "list the sessions found on this machine, newest first")
    s.add_argument("--json", action="store_true", help="print the list as JSON")

    t = _command(sub, "tour", "a guided tour of a bundled scenario in the app (none: list them)")
    t.add_argument("scenario", nargs="?", metavar="SCENARIO", help="the scenario (none: list them)")

    e = _command(sub, "explain", "say why a message was changed at a request")
    e.add_argument("path", help=PATH_HELP)
    _add_session_option(e)
    e.add_argument(
        "message", help="the message: its id, a unique prefix of one, or its line in the file (1583 or :1583)"
    )
    e.add_argument("--step", type=_positive_int, default=None, help="the request (default: the last)")
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


def _load(path: str, session: str | None = None) -> Transcript:
    with _reading(path) as progress:
        transcript = load(path, progress=progress, session=session)
    if _one_shot:
        hold_for_good()  # the process ends with this command, without freeing what it loaded
    return transcript


_one_shot = False
"""Set when the process runs one command of QUICK_EXIT and leaves (`main`)."""


def _cmd_report(args: argparse.Namespace) -> int:
    transcript = _load(args.path, args.session)
    replay = _replay(transcript, args)
    from inspector.report.summary import replay_report

    report = replay_report(replay, step=args.step, compare_with=args.compare)
    if args.cache:
        from inspector.replay.cache import cache_cost

        totals = {"policy", "window", "rewrites", "rebilled_tokens", "sent_tokens", "cached_tokens"}
        replays = [replay] + ([replay.with_settings(args.compare)] if args.compare else [])
        costs = [cache_cost(r) for r in replays]
        report.cache = [{k: getattr(c, k) for k in c.__struct_fields__ if k in totals} for c in costs]
    if args.json:
        sys.stdout.write(json_text(report) + "\n")
    else:
        from inspector.report.render import print_report

        print_report(report)
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    transcript = _load(args.path, args.session)
    replay = _replay(transcript, args)
    sys.stdout.write(visible(replay.explain(args.message, step=args.step), newlines=False) + "\n")
    return 0


def _sample(name: str) -> SampleInfo:
    """A bundled sample or scenario, by name."""
    from sample_sessions import SAMPLES, SCENARIOS, sample_info

    try:
        return sample_info(name)
    except KeyError:
        raise UserError(
            f"no bundled sample named {name!r}; samples: {', '.join(sorted(SAMPLES))}; "
            f"scenarios: {', '.join(SCENARIOS)}"
        ) from None


def _cmd_tour(args: argparse.Namespace) -> int:
    """Open the app on a scenario with its guided tour; no SCENARIO: list them."""
    from sample_sessions import SCENARIOS

    if args.scenario is None:
        width = max(len(name) for name in SCENARIOS)
        for name, info in SCENARIOS.items():
            print(f"{name:<{width}}  {info.title}")
        return 0
    if args.scenario not in SCENARIOS:
        raise UserError(f"no scenario named {args.scenario!r}; there are: {', '.join(SCENARIOS)}")
    info = SCENARIOS[args.scenario]
    transcript = _load(str(info.path))
    from inspector.tui import run_app

    run_app(
        transcript,
        policy=info.policy,
        window=info.window,
        start="first",
        tour=info.name,
        window_source="sample",
    )
    return 0


def _cmd_open(args: argparse.Namespace) -> int:
    """Open the app: on PATH, on a bundled sample, or (neither) on the session picker.

    A PATH that changed in the last minute is followed unless --no-follow; a sample only with
    --follow.
    """
    policy, window = args.policy, args.window
    window_source = "--window"
    follow: bool | None = args.follow
    if args.sample is not None:
        from sample_sessions import SAMPLES_DIR

        info = _sample(args.sample)
        path = str(SAMPLES_DIR / info.file)
        policy = policy or info.policy
        if window is None and info.window is not None:
            window, window_source = info.window, "sample"
        follow = bool(follow)
    elif args.path is not None:
        path = args.path
    else:
        if follow:
            raise UserError("--follow needs a transcript PATH (the picker follows live sessions by itself)")
        if args.model is not None:
            raise UserError("--model needs a transcript PATH (or --sample)")
        if args.session is not None:
            raise UserError("--session needs a PATH that holds several sessions (the picker lists each one)")
        from inspector.tui import run_app

        run_app(None, policy=policy, window=window)
        return 0
    from inspector.tui.live import open_transcript, recently_modified

    target, session_id, harness = path, args.session, None
    if args.session is not None or os.path.isdir(path):
        from inspector.formats.detect import choose

        with _reading(path):
            choice = choose(path, args.session)  # an unknown --session: one line, before any reading
        target, session_id, harness = str(choice.path), choice.session_id, choice.format
    if follow is None:
        follow = recently_modified(target)
    if not follow:
        transcript, follower = _load(path, args.session), None
    else:
        with _reading(path) as progress:
            opened = open_transcript(
                target, follow=True, session_id=session_id, harness=harness, progress=progress
            )
        transcript, follower = opened.transcript, opened.follower
        if os.path.samefile(target, path) and harness != "opencode":  # one session: its id must match
            from inspector.formats.detect import check_named

            with _reading(path):
                check_named(transcript, args.session, path)
    if args.window is None and args.model is not None:
        window, window_source = _window(transcript, args)  # (over a sample's own window)
    from inspector.tui import run_app

    run_app(transcript, policy=policy, window=window, follower=follower, window_source=window_source)
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from inspector.report.render import print_accuracy
    from inspector.tokens.accuracy import accuracy

    transcript = _load(args.path, args.session)
    if not any(r.usage for r in transcript.requests):
        raise UserError(f"{args.path} records no token usage: there is nothing to calibrate against")
    from inspector.settings import current

    result = accuracy(transcript, args.estimator or current().estimator)
    if not result.requests:
        reported = sum(1 for r in transcript.requests if r.usage)
        raise UserError(
            f"{args.path} records token usage for {reported} request{'' if reported == 1 else 's'}: "
            "there is no request to predict (one report to learn from, a later one to predict)"
        )
    if args.json:
        sys.stdout.write(json_text(result) + "\n")
    else:
        print_accuracy(result, mode=args.mode)
    return 0


def _cmd_findings(args: argparse.Namespace) -> int:
    """Exit 0 when nothing of severity "error" was found, 1 otherwise (for scripts and CI)."""
    from inspector.findings import UnknownCheckError, exit_code, find_all, findings_json, findings_text

    replay = _replay(_load(args.path, args.session), args)
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
    from pathlib import Path

    from inspector.report.export import ExportError, export

    replay = _replay(_load(args.path, args.session), args)
    try:
        text = export(replay, args.format, step=args.step, redact=args.redact)
    except ExportError as exc:
        raise UserError(str(exc)) from None
    if args.output is None:
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    if out.resolve() in (Path(args.path).resolve(), Path(replay.transcript.path).resolve()):
        raise UserError("refusing to write the export over the transcript")
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


COMMANDS = {
    "report": _cmd_report,
    "explain": _cmd_explain,
    "calibrate": _cmd_calibrate,
    "findings": _cmd_findings,
    "export": _cmd_export,
    "sessions": _cmd_sessions,
    "tour": _cmd_tour,
}


USES_SETTINGS = frozenset({"calibrate", "sessions", "tour"})
"""The commands that read the user's settings file (and the app, which opens without a command):
the others neither read it nor pay for it, and a bad one does not stop them."""

QUICK_EXIT = frozenset(COMMANDS) - {"tour"}
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


def _read_settings() -> None:
    """The user's settings file, read once, made the settings in force (`inspector.settings`)."""
    from inspector.settings import load_settings, use

    use(load_settings())


def _run(args_list: list[str]) -> int:
    try:
        if args_list and args_list[0] in COMMANDS:
            args = _parser().parse_args(args_list)
            if args.command in USES_SETTINGS:
                _read_settings()
            return COMMANDS[args.command](args)
        args = _app_parser().parse_args(args_list)
        _read_settings()
        return _cmd_open(args)
    except (UserError, PolicyError, ReplayError, SettingsError) as exc:
        sys.stderr.write(f"context-inspector: {visible(str(exc), newlines=False)}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
