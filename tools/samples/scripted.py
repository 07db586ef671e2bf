"""Scenario sessions for teaching: short Claude Code transcripts scripted request by request.

Each scenario shows one context-engineering phenomenon cleanly under the window and policy it is
registered with in :data:`inspector.samples.SCENARIOS` (the per-tool budget alone, tool output clear,
snip, auto compaction, a provider overflow, a small window, a compaction storm, the eager clear's
cache cost). They reuse the generator's repository, tools and honest usage accounting
(:mod:`tools.samples.generate`), but the sequence of requests is written out here instead of
being drawn by the size controller, so every phenomenon lands at a known request.

Deterministic like the samples: a seed, a fixed base time, no wall clock. A test checks that the
committed files equal a fresh generation.

    python -m tools.samples.regenerate --out inspector/samples     # samples and scenarios
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from inspector.samples import SAMPLES_DIR, SCENARIOS
from tools.samples.generate import (
    _THINK,
    DEFAULT_MODEL,
    SLUG,
    GeneratedInfo,
    _Call,
    _claude_md_reminder,
    _Ids,
    _Repo,
    _stable_seed,
    _Tools,
    _Writer,
)

__all__ = ["PROMPT_TOO_LONG", "SCENARIO_RECIPES", "SCRIPTS", "ScenarioRecipe", "generate_scenario"]

PROMPT_TOO_LONG = "Prompt is too long"
"""What Claude Code 2.x writes as the synthetic assistant message when the API rejects a call as
too long (`isApiErrorMessage`, model `<synthetic>`; no request: an API error event)."""


class _Script:
    """One scripted session: human turns, responses with tool calls, API errors."""

    def __init__(self, out: TextIO, *, seed: int, session_id: str, model: str) -> None:
        rng = random.Random(seed)
        self.rng = rng
        self.ids = _Ids(rng)
        self.repo = _Repo(random.Random(_stable_seed("repo", seed)))
        self.writer = _Writer(out, rng, self.ids, session_id, model)
        self.tools = _Tools(rng, self.ids, self.repo, session_id)
        self.turns = 0
        self.writer.session_start()
        self.writer.meta(_claude_md_reminder())

    # -- conversation ------------------------------------------------------------------------

    def ask(self, prompt: str) -> None:
        """A human turn (the previous turn, if any, is closed first)."""
        if self.turns:
            self.writer.end_turn()
        if self.turns == 1:
            self.writer.slug = SLUG
        pause = self.rng.randint(2_000, 9_000) if self.turns == 0 else self.rng.randint(20_000, 90_000)
        self.writer.human(prompt, pause)
        self.turns += 1

    def act(self, *calls: _Call, say: str | None = None, think: str | None = None) -> None:
        """One request whose response makes `calls` (their results follow)."""
        self.writer.respond(
            thinking=think, text=say, calls=list(calls), interleave=self.rng.random() < 0.5, lead_blank=False
        )

    def reply(self, text: str, think: str | None = None) -> None:
        """One request whose response is text only (the end of a turn)."""
        self.writer.respond(thinking=think, text=text, calls=[], interleave=False, lead_blank=False)

    def api_error(self, text: str = PROMPT_TOO_LONG) -> None:
        """A call the API rejected: Claude Code's synthetic assistant message, all-zero usage (as
        real sessions write it). It is no request: the reader records it as an API error event
        after the request before it, so the writer's request count does not move."""
        w = self.writer
        uid = self.ids.uuid()
        record = w._envelope(w.parent)
        record["message"] = {
            "id": self.ids.uuid(),
            "container": None,
            "model": "<synthetic>",
            "role": "assistant",
            "stop_reason": "stop_sequence",
            "stop_sequence": "",
            "type": "message",
            "usage": {
                "input_tokens": 0,
                "output_tokens": 0,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "server_tool_use": {"web_search_requests": 0},
                "service_tier": None,
                "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
            },
            "content": [{"type": "text", "text": text}],
        }
        record.update(
            type="assistant",
            uuid=uid,
            timestamp=w.clock.advance(self.rng.randint(900, 2_500)),
            isApiErrorMessage=True,
        )
        w._emit(record)
        w.parent = uid

    def end(self) -> None:
        self.writer.end_turn()

    # -- tool calls --------------------------------------------------------------------------

    def read(self, rel: str, size: int = 2_400, symbol: str = "") -> _Call:
        return self.tools.read(rel, size, symbol=symbol)

    def read_full(self, rel: str) -> _Call:
        return self.tools.read(rel, 0, full=True)

    def grep(self, pattern: str, size: int = 1_500) -> _Call:
        return self.tools.grep(pattern, size)

    def pytest(self, targets: str = "", *, fail: bool = False, verbose: bool = False) -> _Call:
        return self.tools.pytest(targets.split(), fail=fail, verbose=verbose, hint=2_000)

    def edit(self, rel: str, comment: tuple[str, ...] = ()) -> _Call:
        """A drawn edit of `rel`; `comment` lines are added under the changed lines (no extra draw)."""
        old, new, _ = self.tools.generic_edit(rel)
        if comment:
            indent = old[: len(old) - len(old.lstrip())]
            new += "".join(f"\n{indent}# {line}".rstrip() for line in comment)
        return self.tools.edit(rel, old, new)

    def write_test(self, target: str, size: int | None = None) -> _Call:
        rel, content, ids = self.tools.new_test_module(target, size)
        return self.tools.write(rel, content, ids)

    def bash_log(self, size: int) -> _Call:
        return self.tools.debug_run(size)

    def thought(self, sentences: int = 3) -> str:
        """Reasoning text: a few of the generator's general sentences."""
        return " ".join(self.rng.sample(_THINK["general"], sentences))


# --------------------------------------------------------------------------------------------
# The scenarios
# --------------------------------------------------------------------------------------------

PARSER = "src/ledgerline/parser.py"
CLI = "src/ledgerline/cli.py"
REPORT = "src/ledgerline/report.py"
CURRENCY = "src/ledgerline/currency.py"
RATES = "src/ledgerline/rates.py"
IO = "src/ledgerline/io.py"
VALIDATION = "src/ledgerline/validation.py"
CATEGORIES = "src/ledgerline/categories.py"
FORMATTING = "src/ledgerline/formatting.py"
MODELS = "src/ledgerline/models.py"
CONFIG = "src/ledgerline/config.py"


def _budget_alone(s: _Script) -> None:
    s.ask(
        "Our German bank exports write amounts like `1.234,50` and `parse_amount` rejects them. Make "
        "the parser accept the comma-decimal form when the export says `decimal=,` in its header, "
        "with tests. Keep the public API of `ledgerline.parser` unchanged."
    )
    s.act(s.tools.glob("src/**/*.py"), say="Let me get an overview of the package first.")
    s.act(s.read_full(PARSER), say="The parser module is where amounts are parsed; let me read all of it.")
    s.act(s.grep("parse_amount"), say="Who calls `parse_amount`?")
    s.act(s.read(IO, 1_800, "load_entries"), say="`load_entries` reads the header; let me look at it.")
    s.act(
        s.pytest(verbose=True),
        say="Before changing anything, the full suite verbosely, to see which parser tests exist.",
    )
    s.act(s.edit(PARSER), say="Now the change in the parser.")
    # a short test module (1,200 characters, the smallest drawn size): the view at the last
    # request stays well under the trigger (26,942 against 27,000 left 58 tokens, and the
    # pieces calibration rule alone put it 5 over)
    s.act(s.write_test(PARSER, 1_200), say="And a test module for the comma-decimal form.")
    s.act(s.pytest("tests/test_parser.py"), say="Running the parser tests.")
    s.reply(
        "Done: `parse_amount` accepts the comma-decimal form when the export declares `decimal=,`, "
        "and the new tests cover it. The parser's public API is unchanged."
    )
    s.end()


def _clear_suffices(s: _Script) -> None:
    s.ask(
        "`summarize --by month` puts entries booked on the 31st into the next month. Find out why "
        "before changing anything: read whatever you need and tell me the cause."
    )
    s.act(s.tools.glob("src/**/*.py"), say="An overview of the package first.")
    s.act(s.read(REPORT, 5_000, "summarize_entries"), say="`--by month` is handled in the report module.")
    s.act(s.grep("booked", 3_000), say="Where is the booking date used?")
    s.act(s.read(PARSER, 5_000, "parse_date"), say="How are dates parsed?")
    s.act(s.read(FORMATTING, 4_000), say="Month labels may come from the formatting helpers.")
    s.act(s.read(MODELS, 4_500), say="What does an `Entry` hold?")
    s.act(s.read(CLI, 4_500, "cmd_summarize"), say="And how the CLI passes `--by`.")
    s.act(s.read(VALIDATION, 4_000), say="Validation runs before summarizing; let me check it too.")
    s.act(s.read(CATEGORIES, 4_000), say="Categorisation also groups entries; same question there.")
    s.act(s.read("tests/test_report.py", 4_500), say="The report tests, to see what is covered.")
    s.act(s.pytest("tests/test_report.py", verbose=True), say="Running the report tests.")
    # a shorter read at 12 and a longer one at 13: request 13 (nothing fires; forced mode clears down
    # under the target) and request 14 (clear fires) each sit well away from their line
    s.act(s.read(IO, 3_000, "load_entries"), say="Let me check how the loader builds entries.")
    s.act(s.read(RATES, 5_500), say="The rates table is looked up by date too.")
    s.act(s.grep("month", 2_500), say="Every place that computes a month.")
    s.act(s.read(REPORT, 4_000), say="Back to the report module, around the month grouping.")
    s.reply(
        "Found it: the month key is built from the booking date shifted by the statement's day "
        "offset, so the 31st rolls over into the next month. I have not changed anything yet; the "
        "fix is to group by `booked.year, booked.month` directly."
    )
    s.end()


# Sizes (characters) of some of snip-needed's test modules, by 0-based index, the others drawn (1,200 to 3,200; the
# draw is made either way). Chosen so that no decision sits near the trigger: module 6 small
# (request 13, nothing fires, stays well under), 7 larger (14 well over), 8 small (after clearing,
# 15 well under: clear suffices once more), 9 large (after clearing, 16 and 17 well over: snip).
# tests/unit/test_scenario_margins.py checks the margins.
_SNIP_NEEDED_SIZES: dict[int, int] = {5: 1_200, 6: 2_500, 7: 1_200, 8: 6_000}


def _snip_needed(s: _Script) -> None:
    s.ask(
        "Our test coverage for the report and currency modules is thin. Read them, then add a test "
        "module for each public function group you find, and run them as you go."
    )
    s.act(s.read(REPORT, 6_000), say="Let me read the report module first.")
    s.act(s.read(CURRENCY, 5_000), say="And the currency module.")
    s.act(s.grep("def ", 4_000), say="A list of the functions to cover.")
    s.act(s.read(RATES, 5_000), say="The rates module is used by both.")
    targets = (REPORT, CURRENCY, RATES, REPORT, CURRENCY, FORMATTING, REPORT, RATES, CURRENCY, REPORT)
    for i, target in enumerate(targets):
        size = _SNIP_NEEDED_SIZES.get(i)
        s.act(s.write_test(target, size), say=f"Test module {i + 1} of {len(targets)}, for `{target}`.")
        if i % 3 == 2:
            s.act(s.pytest("tests/"), say="Running the new tests so far.")
    s.act(s.write_test(FORMATTING), say="One more for the formatting helpers the report uses.")
    s.act(s.pytest(), say="The full suite.")
    s.reply("Eleven new test modules cover the report, currency, rates and formatting functions; all pass.")
    s.end()


# compact-last-resort: request 16 (nothing fires) and 17 (snip starts) sit one edit apart, so that
# edit's reasoning is longer (a re-check of the signatures, no extra draw) and the test module before
# it smaller (request 16 well under the trigger, 17 well over it); tests/unit/test_scenario_margins.py
_COMPACT_SIZES: dict[int, int] = {4: 2_000, 5: 1_200}
_COMPACT_LONG_THOUGHT = 6
_RECHECK = (
    "Before the next edit, let me re-check the constraint from the task: no signature may change. The "
    "currency functions take `amount` positionally and some callers pass it by keyword, so the check has "
    "to read the parameter as it arrives, without renaming it or adding a keyword-only marker. The error "
    "message must name the argument, since the categories module feeds the CLI's report output. A float "
    "that happens to be integral, such as 12.0, is still a float and must be rejected, and a Decimal or an "
    "int must pass untouched; bool is an int subclass, which the existing tests already accept, so I will "
    "leave it alone rather than widen the change. The test module for this edit follows the same pattern "
    "as the others: one rejecting case per public function, one accepting case with a Decimal."
)


def _compact_last_resort(s: _Script) -> None:
    s.ask(
        "TASK (keep this in mind the whole session): make every public function in the currency, "
        "rates and categories modules reject a float amount with a clear TypeError, add a test module "
        "for each, and never change a function's signature."
    )
    s.act(s.read(CURRENCY, 4_000), say="Let me read the currency module first.")
    s.act(s.read(RATES, 4_000), say="And the rates module.")
    s.act(s.tools.skill(), say="Loading the project's testing conventions.")
    files = (CURRENCY, RATES, CATEGORIES, CURRENCY, RATES, CATEGORIES, CURRENCY, RATES, CATEGORIES, CURRENCY)
    for i, rel in enumerate(files):
        edit = s.edit(rel)  # the edit is drawn before its reasoning, as always
        think = s.thought(3)
        if i == _COMPACT_LONG_THOUGHT:
            think += " " + _RECHECK
        s.act(edit, think=think)
        s.act(s.write_test(rel, _COMPACT_SIZES.get(i)), think=s.thought(2))
        if i == 4:
            s.ask(
                "Halfway check: keep going, but remember the categories module is used by the "
                "CLI's report output, so make sure the error message names the offending argument."
            )
    s.act(s.pytest(), think=s.thought(2))
    s.reply(
        "Every public function in the three modules now rejects floats with a TypeError naming the argument."
    )
    s.end()


def _overflow(s: _Script) -> None:
    s.ask(
        "The nightly job fails in `test_rates_cache`. Look at the rates module and its tests and "
        "tell me what could make that test flaky."
    )
    s.act(s.read(RATES, 4_000), say="The rates module first.")
    s.act(s.read("tests/test_rates.py", 3_000), say="And its tests.")
    s.act(s.grep("cache", 2_000), say="Where is the cache used?")
    s.act(s.pytest("tests/test_rates.py"), say="The rates tests pass locally.")
    s.reply(
        "Locally `tests/test_rates.py` passes. A flaky cache test usually depends on ordering or on "
        "time; I'd need the failing run's log to say which."
    )
    s.ask("Here is the whole nightly log, find the failure in it:\n\n" + _nightly_log(s.rng, 165_000))
    # the call after request 5 carries the log and is rejected; its one retry (the forced view)
    # is rejected too: two API errors, no request between, and the run stops
    s.api_error()
    s.api_error()
    s.ask("That log is too big for one request. I'll cut it down to the failing run and start a new session.")


def _small_window(s: _Script) -> None:
    s.ask(
        "Some exports use `;` as the delimiter. Make `iter_rows`-style readers detect it from the "
        "header line, with a test."
    )
    s.act(s.grep("delimiter", 1_500), say="Where is the delimiter set?")
    s.act(s.read(IO, 2_000, "load_entries"), say="The loader opens the CSV.")
    s.act(s.read(PARSER, 2_000, "parse_rows"), say="And the parser's row loop.")
    s.act(s.read(CONFIG, 1_800), say="Is the delimiter configurable?")
    s.act(s.edit(IO), say="Detecting the delimiter in the loader.")
    s.act(s.pytest("tests/test_io.py"), say="The loader's tests.")
    s.act(s.write_test(IO), say="A test for the semicolon form.")
    s.act(s.pytest("tests/test_io.py"), say="Running them again.")
    s.reply("The loader now sniffs `;` or `,` from the header line; the new test covers both.")
    s.end()


# compaction-storm: the target-at-trigger run sits at the trigger by design (its view after each
# compaction is left a few hundred tokens under it, so which later requests cross is the storm itself,
# the lesson, not a margin). The decisions both runs share, and those of the default-target run, keep a
# margin (tests/unit/test_scenario_margins.py): the first crossing (request 15) comes with a longer test
# module (9), the hot run's second compaction (17) with another (11); modules 13-21 are shorter so the
# default run stays well under the trigger at 27 and crosses it at 28 only with a longer edit at 27 (a
# worked example in a comment, no extra draw).
_STORM_SIZES: dict[int, int] = {9: 2_400, 11: 2_500, 13: 1_700, 15: 1_200, 17: 1_200, 21: 2_000}
_STORM_NOTE = (
    "Worked example for the doctest below, kept next to the code so the next reader sees the intent:",
    ">>> rule = CategoryRule(pattern='GROCER*', category='food')",
    ">>> rule.matches('GROCER KING 042')",
    "True",
    ">>> rule.matches('grocer king 042')  # case-insensitive, like the bank's own export",
    "True",
    ">>> rule.matches('THE GROCER')  # the pattern is anchored at the start of the payee",
    "False",
    ">>> categorize([Entry(payee='GROCER KING', amount=Decimal('-23.40'))], [rule])[0].category",
    "'food'",
    ">>> categorize([Entry(payee='UNKNOWN LTD', amount=Decimal('-5.00'))], [rule])[0].category",
    "'uncategorized'",
    "Rules are tried in the order of the config file; the first match wins, so a broad pattern such",
    "as '*' belongs last, and a rule without a category is a config error, raised when it is loaded.",
)


def _storm(s: _Script) -> None:
    s.ask(
        "Add a short doctest example to every helper in formatting, categories and config, one small "
        "edit at a time, and add a test module per helper group as you go."
    )
    s.act(s.read(FORMATTING, 5_500), say="The formatting helpers first.")
    s.act(s.read(CATEGORIES, 5_500), say="The categories helpers.")
    s.act(s.read(CONFIG, 5_500), say="And the config helpers.")
    s.act(s.read(MODELS, 5_500), say="The models they all use.")
    files = (FORMATTING, CATEGORIES, CONFIG)
    for i in range(26):
        rel = files[i % 3]
        if i % 2:
            s.act(s.write_test(rel, _STORM_SIZES.get(i)), say=f"A test module for the `{rel}` helpers.")
        else:
            s.act(s.edit(rel, _STORM_NOTE if i == 22 else ()), say=f"Next doctest example in `{rel}`.")
    s.act(s.pytest(), say="The full suite.")
    s.reply("Every helper has a doctest example now, and each group has test modules; the suite passes.")
    s.end()


def _eager_cache(s: _Script) -> None:
    s.ask(
        "I want to understand how a CSV row becomes a line in the summary. Walk through the code "
        "path and explain it; no changes."
    )
    path = (
        (CLI, "cmd_summarize"),
        (IO, "load_entries"),
        (PARSER, "parse_rows"),
        (PARSER, "parse_amount"),
        (PARSER, "parse_date"),
        (MODELS, ""),
        (VALIDATION, ""),
        (CATEGORIES, ""),
        (REPORT, ""),
        (FORMATTING, ""),
        (CURRENCY, "convert"),
        (RATES, "load_rates"),
    )
    for rel, symbol in path:
        s.act(s.read(rel, 3_000, symbol), say=f"Next on the path: `{rel}`.")
        if rel in (PARSER, REPORT) and symbol in ("parse_rows", ""):
            s.act(s.grep(symbol or "summarize_entries", 1_200), say="Who else calls it?")
    s.act(s.pytest("tests/test_parser.py tests/test_report.py"), say="The tests on this path pass.")
    s.reply(
        "Here is the path: the CLI loads entries, the parser turns rows into entries, the report groups them."
    )
    s.ask("Now go back over the parser and the report: which of their functions would break on a blank row?")
    for rel, symbol in ((PARSER, "parse_rows"), (REPORT, ""), (PARSER, "parse_amount"), (IO, "load_entries")):
        s.act(s.read(rel, 3_000, symbol), say=f"Reading `{rel}` again around `{symbol or 'the summary'}`.")
    s.act(s.grep("row\\[", 1_500), say="Every direct index into a row.")
    s.act(s.pytest("tests/test_parser.py"), say="The parser tests, to be sure of the current behaviour.")
    s.reply("Only `parse_rows` indexes a row before checking it; the report never sees raw rows.")
    s.end()


def _nightly_log(rng: random.Random, size: int) -> str:
    """A long CI log: pytest's verbose lines for many runs, one failure near the end."""
    lines: list[str] = []
    written = 0
    run = 0
    while written < size:
        run += 1
        for module in ("test_parser", "test_rates", "test_report", "test_currency", "test_io"):
            for case in range(rng.randint(8, 14)):
                line = (
                    f"2026-03-0{1 + run % 2}T02:{run % 60:02d}:{case:02d}Z [worker gw{rng.randint(0, 7)}] "
                    f"tests/{module}.py::test_{module[5:]}_{case:02d} PASSED "
                    f"[{rng.randint(1, 99):>3}%] ({rng.randint(3, 400)}ms)"
                )
                lines.append(line)
                written += len(line) + 1
    lines += [
        "FAILED tests/test_rates.py::test_rates_cache - AssertionError: cache returned the rate of "
        "2026-02-28 for 2026-03-01 (stale entry after midnight UTC)",
        "1 failed, 6,213 passed in 1803.22s",
    ]
    return "\n".join(lines)


SCRIPTS: dict[str, Callable[[_Script], None]] = {
    "budget-alone": _budget_alone,
    "clear-suffices": _clear_suffices,
    "snip-needed": _snip_needed,
    "compact-last-resort": _compact_last_resort,
    "overflow-stop": _overflow,
    "small-window": _small_window,
    "compaction-storm": _storm,
    "eager-clear-cache": _eager_cache,
}


@dataclass(frozen=True)
class ScenarioRecipe:
    """What produces one scenario file: its script, seed and session id."""

    seed: int
    session_id: str
    model: str = DEFAULT_MODEL


SCENARIO_RECIPES: dict[str, ScenarioRecipe] = {
    "budget-alone": ScenarioRecipe(seed=101, session_id="0b6f2d4e-8a31-4c27-9e15-3d7a5c1b9f02"),
    "clear-suffices": ScenarioRecipe(seed=102, session_id="5c2a9e71-0d4b-4f38-a6e2-7b1c9d3f5a08"),
    "snip-needed": ScenarioRecipe(seed=103, session_id="a4e81c3d-6f29-4b05-8d7a-2e9f0b6c1d74"),
    "compact-last-resort": ScenarioRecipe(seed=104, session_id="d9173b5a-2c8e-4a61-b4f0-5e3d7a9c2b16"),
    "overflow-stop": ScenarioRecipe(seed=105, session_id="6e0c4f2b-9a17-4d83-8b5e-1f6a3c7d9e20"),
    "small-window": ScenarioRecipe(seed=106, session_id="38b5d1e9-7c04-4a2f-9e6b-0d4c8a2f7b13"),
    "compaction-storm": ScenarioRecipe(seed=107, session_id="f27a6c09-3e5d-4b18-a0c4-9d2e6b8f1a35"),
    "eager-clear-cache": ScenarioRecipe(seed=108, session_id="1d8e3a6f-4b92-4c07-b5d1-8a3f0e7c2d49"),
}


def generate_scenario(name: str, out_dir: Path | None = None) -> GeneratedInfo:
    """Generate the registered scenario `name` into `out_dir` (default: the package folder).

    The file lands at `out_dir / SCENARIOS[name].file` (a `scenarios/` subfolder).
    """
    info = SCENARIOS[name]
    recipe = SCENARIO_RECIPES[name]
    path = (Path(out_dir) if out_dir is not None else SAMPLES_DIR) / info.file
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        script = _Script(out, seed=recipe.seed, session_id=recipe.session_id, model=recipe.model)
        SCRIPTS[name](script)
        w = script.writer
    return GeneratedInfo(
        path=path,
        lines=w.lines,
        requests=w.requests,
        tool_calls=w.tool_calls,
        first_context=w.first_context,
        peak_context=w.peak_context,
        bytes=path.stat().st_size,
    )
