"""House rules that keep the core usable as a library."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "inspector"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_nothing_outside_tui_imports_textual() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "tui" in path.relative_to(PACKAGE).parts:
            continue
        if any(n == "textual" or n.startswith("textual.") for n in _imports(path)):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_the_check_itself_catches_a_textual_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from textual.app import App\nimport textual.widgets\n")
    assert {"textual.app", "textual.widgets"} <= _imports(bad)


def test_importing_the_core_does_not_load_textual() -> None:
    code = (
        "import sys, inspector.model, inspector.formats, inspector.tokens, inspector.report.summary, inspector.cli\n"
        "print('textual' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "False"


def test_loading_a_claude_code_session_imports_no_other_reader() -> None:
    from sample_sessions import sample_path

    code = (
        "import sys\nfrom inspector.formats import load\n"
        f"load({str(sample_path('short-session'))!r})\n"
        "print(sorted(m for m in sys.modules if m.startswith('inspector.formats.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "inspector.formats.claude_code" in out
    for other in ("codex", "opencode", "opencollab", "generic"):
        assert f"inspector.formats.{other}'" not in out, out
