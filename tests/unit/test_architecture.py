"""House rules that keep the core usable as a library."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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
    from inspector.samples import sample_path

    code = (
        "import sys\nfrom inspector.formats import load\n"
        f"load({str(sample_path('short-session'))!r})\n"
        "print(sorted(m for m in sys.modules if m.startswith('inspector.formats.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "inspector.formats.claude_code" in out
    for other in ("codex", "opencode", "opencollab", "generic"):
        assert f"inspector.formats.{other}'" not in out, out


def test_the_rules_by_version_and_the_models_table_load_no_shaping() -> None:
    """The estimator of a recorded version and a model's window come from below `shaping`
    (`inspector/harness_rules.py`, `inspector/model/windows.py`): asking them loads no module of it."""
    from inspector.samples import sample_path

    code = (
        "import sys\nfrom types import SimpleNamespace\nfrom inspector.formats import load\n"
        "from inspector.model.windows import model_window\nfrom inspector.tokens.harness import estimator_for\n"
        f"t = load({str(sample_path('short-session'))!r})\n"
        "policy = SimpleNamespace(rules='claude-code', trigger_estimator='claude_code')\n"
        "print(t.harness_version, estimator_for(t, policy))\n"
        "t.harness_version = '2.0.22'\n"
        "print(t.harness_version, estimator_for(t, policy))\n"
        "print(model_window(t.model), model_window('gpt-5'))\n"
        "print(sorted(m for m in sys.modules if m.startswith('inspector.shaping')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["2.1.39 claude_code", "2.0.22 claude_code_usage", "200000 400000", "[]"]


def test_calibrate_json_loads_no_replay_no_shaping_and_no_rendering() -> None:
    """`calibrate --json` needs the reader and the token passes only: the replay, the shaping
    policies and the text rendering (a fifth of a second of imports) are never loaded, and a
    policy error of a command that does load them is still the user's one line."""
    from inspector.samples import sample_path

    path = str(sample_path("short-session"))
    code = (
        "import sys\nfrom inspector.cli import _run\n"
        f"code = _run(['calibrate', '--json', '--no-cache', {path!r}])\n"
        "print(code, sorted(m for m in sys.modules if m.startswith(('inspector.replay', "
        "'inspector.shaping', 'inspector.report.render', 'inspector.report.summary'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "0 []"
    bad = subprocess.run(
        [sys.executable, "-m", "inspector", "report", "--no-cache", "--policy", "nosuch", path],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("context-inspector: unknown policy 'nosuch'")
    assert len(bad.stderr.splitlines()) == 1


# -- one-way packages ------------------------------------------------------------------------------

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"<root>", "door", "errors", "harnesses", "samples"}),
    frozenset({"model", "settings"}),
    frozenset({"harness_rules"}),
    frozenset({"formats"}),
    frozenset({"tokens", "live"}),
    frozenset({"shaping"}),
    frozenset({"replay"}),
    frozenset({"report"}),
    frozenset({"findings"}),
    frozenset({"scenarios"}),
    frozenset({"session"}),
    frozenset({"tui"}),
    frozenset({"cli"}),
    frozenset({"__main__"}),
)
"""The packages of `inspector` (and its top-level modules), lowest first: each may import only
from its own layer's packages or from layers below (docs/DESIGN.md §1: bytes -> records -> ledger ->
views -> widgets). `harnesses` (the registry, importing nothing of the package), `errors` (the base of the
errors a user can fix) and `samples` (the bundled sessions: data only) are under all; `door` (the pydantic error line) and `settings` sit
under everything that reads a user's file; `harness_rules` (the harness rules by version, beside
the registry) reads the models table of `model` (`model/windows.py`) and is read by `tokens` and
`shaping`; the app reads tours from `scenarios`; `session` (one opened session without a screen:
replay, lock, scan, live rebuilds) sits right under the app; the command line opens the app. No
import goes up: none is excused."""


def _module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _unit(module: str) -> str:
    """`inspector.shaping.policy` -> "shaping"; `inspector.cli` -> "cli"; `inspector` -> "<root>"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<root>"


def _all_imports(path: Path, root: Path = PACKAGE) -> list[tuple[str, int]]:
    """Every module `path` imports, at the top or inside a function (relative ones resolved), with
    its line."""
    module = _module_name(path, root)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((target, node.lineno))
            # `from inspector import shaping` imports the package shaping (`__version__` is no module)
            if target == root.name:
                found += [
                    (f"{target}.{alias.name}", node.lineno)
                    for alias in node.names
                    if (root / alias.name).is_dir() or (root / f"{alias.name}.py").is_file()
                ]
    return found


def package_graph(root: Path = PACKAGE) -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> where ("inspector/x.py:12"), between packages."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        here = _unit(_module_name(path, root))
        for target, line in _all_imports(path, root):
            if target != root.name and not target.startswith(root.name + "."):
                continue
            there = _unit(target)
            if there != here and not (there == "<root>" and target != root.name):
                edges.setdefault((here, there), []).append(f"{path.relative_to(root.parent)}:{line}")
    return edges


def cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected groups of more than one package (each a cycle or several), sorted."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(groups)


def _layer(unit: str) -> int:
    for k, layer in enumerate(LAYERS):
        if unit in layer:
            return k
    raise AssertionError(f"package {unit!r} is in no layer of LAYERS: put it where it belongs")


def test_no_import_cycle_between_packages() -> None:
    assert cycles(package_graph()) == []


def test_the_core_imports_only_downward() -> None:
    graph = package_graph()
    upward = {edge: where for edge, where in graph.items() if _layer(edge[1]) > _layer(edge[0])}
    assert upward == {}


def test_every_package_has_a_layer() -> None:
    units = {_unit(_module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert units <= set().union(*LAYERS), units - set().union(*LAYERS)
    assert {"model", "formats", "tokens", "shaping", "replay", "report", "findings", "tui", "cli"} <= units


def test_the_checks_catch_a_cycle_and_an_upward_import(tmp_path: Path) -> None:
    """A cycle made by an import inside a function, and a relative one, are found."""
    root = tmp_path / "inspector"
    for folder in ("model", "shaping", "replay"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "model" / "m.py").write_text("def f():\n    from inspector.replay import r\n")
    (root / "replay" / "r.py").write_text("from ..shaping import s\n")
    (root / "shaping" / "s.py").write_text("from inspector.model.m import f\nfrom . import s\n")
    graph = package_graph(root)
    assert graph == {
        ("model", "replay"): ["inspector/model/m.py:2"],
        ("replay", "shaping"): ["inspector/replay/r.py:1"],
        ("shaping", "model"): ["inspector/shaping/s.py:1"],
    }
    assert cycles(graph) == [["model", "replay", "shaping"]]
    assert cycles([("model", "replay"), ("replay", "shaping")]) == []
    assert _layer("replay") > _layer("model")  # model -> replay goes up


def test_report_and_replay_are_untangled() -> None:
    """The replay knows nothing of the report (it resolves the window; the report builds itself):
    the sanitizer and the prices it uses live below it (`inspector/model/sanitize.py`,
    `inspector/model/cost.py`)."""
    import ast

    graph = package_graph()
    assert ("report", "replay") in graph
    used: set[str] = set()
    for path in (PACKAGE / "replay").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("inspector.report"):
                used.add(node.module or "")
    assert used <= {"inspector.model.sanitize", "inspector.model.cost"}, used
