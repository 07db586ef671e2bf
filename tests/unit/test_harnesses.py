"""The harness registry (`inspector/harnesses.py`): every harness complete, every table derived."""

from __future__ import annotations

import ast
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from inspector.formats import LoaderError, detect
from inspector.harness_rules import FORMAT_HARNESS, HARNESS_NAMES, rules_of
from inspector.harnesses import BY_FORMAT, HARNESSES, harness_id, label_of, labels, of_format, resolve
from inspector.live.discovery import discover, finders
from inspector.live.follow import INCREMENTAL_FORMATS, ReloadingReader, factory_for_format
from inspector.shaping.policy import PRESET_FOR_FORMAT, TRIGGER_ESTIMATORS, load_policy, preset_for_format
from inspector.tokens.harness import ESTIMATORS, estimator_name

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "inspector"


def test_every_harness_has_a_reader_a_label_a_preset_and_discovery() -> None:
    assert list(HARNESSES) == ["claude-code", "codex", "opencode", "opencollab", "chat"]
    for h in HARNESSES.values():
        reader = resolve(h.reader)()
        assert reader.format == h.format and callable(reader.sniff) and callable(reader.load), h.id
        assert h.label and h.label.strip() == h.label
        assert load_policy(h.preset).name == h.preset, h.id
        assert preset_for_format(h.format).name == load_policy(h.preset).name
        assert h.estimator in ESTIMATORS, h.id
        assert bool(rules_of(h.id)) == h.rules, h.id
        assert h.locations, h.id
        if h.id == "chat":
            assert h.finder is None  # a chat JSON file is opened by its path, never looked for
        else:
            assert h.finder is not None and callable(resolve(h.finder)), h.id
        if h.follow_reader is not None:
            factory = resolve(h.follow_reader)
            assert factory_for_format(h.format) is factory and hasattr(factory, "feed"), h.id
        else:
            assert factory_for_format(h.format) is ReloadingReader, h.id
    assert len(finders()) == 4


def test_the_finders_run_from_the_registry(tmp_path: Path) -> None:
    """A Codex rollout under $CODEX_HOME and nothing else: one row, found by the registry's finder."""
    day = tmp_path / "codex" / "sessions" / "2026" / "01" / "02"
    day.mkdir(parents=True)
    (day / "rollout-2026-01-02T00-00-00-x.jsonl").write_text(
        '{"timestamp":"2026-01-02T00:00:00Z","type":"session_meta","payload":{"id":"x","cwd":"/w","cli_version":"0.77.0"}}\n'
    )
    rows = discover(
        {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "codex")},
        cwd=tmp_path,
        now=datetime(2026, 1, 3, tzinfo=UTC),
        folders=[],
    )
    assert [(r.harness, r.path.name) for r in rows] == [("codex", "rollout-2026-01-02T00-00-00-x.jsonl")]


def test_the_tables_derive_from_the_registry() -> None:
    """The values the tables held when each was written by hand (behaviour stays the same)."""
    assert PRESET_FOR_FORMAT == {
        "claude-code": "claude-code", "codex": "codex", "opencode": "opencode",
        "opencollab": "opencollab", "generic": "opencollab",
    }
    assert FORMAT_HARNESS == {"claude-code": "claude-code", "codex": "codex", "opencode": "opencode"}
    assert HARNESS_NAMES == {"claude-code": "Claude Code", "codex": "Codex", "opencode": "opencode"}
    assert sorted(INCREMENTAL_FORMATS) == ["claude-code", "codex"]
    assert TRIGGER_ESTIMATORS == ("heuristic", "claude_code", "claude_code_usage", "opencode", "codex")
    assert {name: (s.harness, s.format) for name, s in ESTIMATORS.items()} == {
        "heuristic": ("OpenCollab", "opencollab"),
        "claude_code": ("Claude Code", "claude-code"),
        "claude_code_usage": ("Claude Code", "claude-code"),
        "opencode": ("opencode", "opencode"),
        "codex": ("Codex", "codex"),
    }
    assert BY_FORMAT["generic"].id == "chat" and of_format("nothing") is None
    assert label_of("claude-code") == "Claude Code" and label_of(None) is None
    assert labels() == "Claude Code, Codex, opencode, OpenCollab, chat JSON"


def test_a_file_no_reader_takes_names_every_harness(tmp_path: Path) -> None:
    junk = tmp_path / "junk.txt"
    junk.write_text("not a transcript\n")
    with pytest.raises(LoaderError) as err:
        detect(junk)
    assert str(err.value) == (
        f"{junk} is not a transcript this inspector can read (Claude Code, Codex, opencode, OpenCollab, chat JSON)"
    )


def test_every_spelling_of_a_harness_is_accepted_as_input() -> None:
    for spelling in ("claude-code", "claude_code", "Claude Code", "CLAUDE-CODE", "claude"):
        assert harness_id(spelling) == "claude-code"
    assert harness_id("generic") == "chat" and harness_id("Chat JSON") == "chat"
    assert harness_id("OpenCollab") == "opencollab"
    with pytest.raises(ValueError, match=r"unknown harness 'cursor' \(known: claude-code, codex, opencode, opencollab, chat\)"):
        harness_id("cursor")
    # the estimator of a harness, by the harness's own spellings (the estimator ids keep theirs)
    assert estimator_name("claude-code") == estimator_name("claude") == "claude_code"
    assert estimator_name("Codex") == "codex" and estimator_name("claude_code_usage") == "claude_code_usage"
    assert load_policy("claude").name == load_policy("Claude Code").name == "claude-code"
    with pytest.raises(ValueError, match="unknown harness estimator 'cursor'"):
        estimator_name("cursor")


def test_the_registry_imports_nothing_of_the_package() -> None:
    code = "import sys, inspector.harnesses\nprint(sorted(m for m in sys.modules if m.startswith('inspector')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['inspector', 'inspector.harnesses']"


# -- no other module lists harnesses or spells a label -------------------------------------------

NAMES = frozenset({h.id for h in HARNESSES.values()} | {h.format for h in HARNESSES.values()})
LABELS = frozenset(h.label for h in HARNESSES.values())


def harness_spellings(path: Path) -> list[str]:
    """Where `path` lists two or more harnesses in one literal (a tuple, list, set, dict, or a
    `Literal[...]`) or spells a harness label as a string of its own (not inside prose: a docstring
    or a longer text is fine; "opencode", whose label is its id, only in lists)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        items: list[ast.expr] = []
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None] + list(node.values)
        named = {i.value for i in items if isinstance(i, ast.Constant) and i.value in NAMES | LABELS}
        if len(named) >= 2:
            line = getattr(node, "lineno", 0)
            found.append((line, f"{path.name}:{line}: a table of harnesses {sorted(named)}"))
        if (
            isinstance(node, ast.Constant)
            and id(node) not in docstrings
            and node.value in LABELS - NAMES
        ):
            found.append((node.lineno, f"{path.name}:{node.lineno}: the label {node.value!r}"))
    return [text for _, text in sorted(found)]


def test_no_module_outside_the_registry_lists_harnesses_or_spells_a_label() -> None:
    offenders = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PACKAGE / "harnesses.py"
        for hit in harness_spellings(path)
    ]
    assert offenders == []


def test_the_scan_catches_a_table_and_a_label(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        '"""Claude Code is fine in a docstring."""\n'
        'Kind = Literal["claude-code", "codex"]\n'
        'NAMES = {"opencode": "x", "generic": "y"}\n'
        'def f(x):\n    """Codex here too."""\n    return x == "OpenCollab" or x == "opencode"\n'
        'TEXT = "what Claude Code would estimate"\n'
    )
    assert harness_spellings(bad) == [
        "bad.py:2: a table of harnesses ['claude-code', 'codex']",
        "bad.py:3: a table of harnesses ['generic', 'opencode']",
        "bad.py:6: the label 'OpenCollab'",
    ]
