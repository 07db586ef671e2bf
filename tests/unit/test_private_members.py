"""A package's private members stay inside it: no module outside `inspector.model` or
`inspector.formats` reaches for a `_name` one of their modules defines (a source scan, like
`test_architecture`); other packages use the public accessors (`Transcript.messages_by_id`,
`Transcript.segment_messages`, `claude_code.clear_caches`)."""

from __future__ import annotations

import ast
from pathlib import Path

from inspector.formats import cache, load
from inspector.formats.claude_code import ClaudeCodeReader, clear_caches
from inspector.formats.claude_code import agents as cc_agents
from inspector.model import Transcript

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "inspector"
HELD = ("model", "formats", "tokens", "shaping", "replay", "report", "findings", "live", "door", "samples", "tui")
"""The packages whose private members no module outside them uses: every package of `inspector`."""
NOT_YET: dict[str, frozenset[str]] = {}
"""Modules (by path prefix under inspector/) allowed the private names listed, for now."""


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined(tree: ast.Module) -> set[str]:
    """The private names a module defines: at module level, in its classes, and as `self._x`."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.alias) and node.asname is not None:
            out.add(node.asname)
    return {n for n in out if _private(n)}


def _package_of(rel: Path) -> str:
    """The package of `inspector` a module (path under inspector/) is in."""
    return rel.parts[0] if len(rel.parts) > 1 else "<root>"


def _imported_package(node: ast.ImportFrom, rel: Path) -> str | None:
    """The package of `inspector` an import takes its names from (relative imports resolved)."""
    if node.level == 0:
        parts = (node.module or "").split(".")
        return parts[1] if parts[0] == "inspector" and len(parts) > 1 else None
    here = list(rel.parts[:-1])  # the module's own package, as path parts under inspector/
    up = here[: len(here) - (node.level - 1)] if node.level - 1 <= len(here) else []
    parts = up + ((node.module or "").split(".") if node.module else [])
    return parts[0] if parts else "<root>"


def _uses(tree: ast.Module, rel: Path, held: str, private: set[str], own: set[str]) -> list[tuple[int, str]]:
    """Where a module uses one of `private` (names package `held` defines): `x._name` on anything
    but `self`/`cls` (unless the module defines `_name` itself: its own class's member on another
    instance), and `from <held> import _name`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in private and node.attr not in own:
            base = node.value
            if not (isinstance(base, ast.Name) and base.id in ("self", "cls")):
                found.append((node.lineno, node.attr))
        elif isinstance(node, ast.ImportFrom) and _imported_package(node, rel) == held:
            found.extend((node.lineno, a.name) for a in node.names if _private(a.name))
    return found


def _offenders(package_root: Path, held: tuple[str, ...]) -> list[str]:
    trees = {
        p.relative_to(package_root): ast.parse(p.read_text(encoding="utf-8"), filename=str(p))
        for p in sorted(package_root.rglob("*.py"))
    }
    defined = {rel: _defined(tree) for rel, tree in trees.items()}
    defined_in: dict[str, set[str]] = {}
    for rel, names in defined.items():
        defined_in.setdefault(_package_of(rel), set()).update(names)
    private_of = {h: defined_in.get(h, set()) for h in held}
    out: list[str] = []
    for rel, tree in trees.items():
        path = rel.as_posix()
        allowed = next((names for prefix, names in NOT_YET.items() if path.startswith(prefix)), frozenset())
        # its own package's members on another instance are its own (`self.cal._parts` in tokens)
        own = defined_in[_package_of(rel)]  # the module's own names are among its package's
        for h, names in private_of.items():
            if h == _package_of(rel):
                continue
            for line, name in _uses(tree, rel, h, names, own):
                if name not in allowed:
                    out.append(f"{path}:{line}: {name} (private to inspector.{h})")
    return sorted(out)


def test_no_module_uses_another_packages_private_members() -> None:
    assert _offenders(PACKAGE, HELD) == []


def test_the_scan_catches_a_private_use(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "t.py").write_text(
        "class T:\n    def _index(self):\n        return {}\n    def ok(self):\n        return self._index()\n"
        "_CACHE = {}\n"
    )
    (tmp_path / "replay").mkdir()
    (tmp_path / "replay" / "r.py").write_text(
        "from inspector.model.t import _CACHE\n\ndef f(tr):\n    return tr._index(), tr.messages_by_id()\n"
    )
    (tmp_path / "tui").mkdir()
    (tmp_path / "tui" / "own.py").write_text(  # its own member on another instance: not model's
        "class W:\n    def __init__(self):\n        self._index = 0\n    def same(self, other):\n"
        "        return other._index\n"
    )
    assert _offenders(tmp_path, ("model",)) == [
        "replay/r.py:1: _CACHE (private to inspector.model)",
        "replay/r.py:4: _index (private to inspector.model)",
    ]


def test_a_transcript_s_lookups_are_public_and_agree_with_its_ledger() -> None:
    from inspector.samples import sample_path

    tr = load(sample_path("short-session"))
    assert isinstance(tr, Transcript) and tr.requests
    by_id = tr.messages_by_id()
    assert by_id is tr.messages_by_id()  # built once
    assert list(by_id) == [m.id for m in tr.messages]
    last = tr.requests[-1]
    whole = tr.segment_messages(last.segment)
    assert whole is not None
    assert [m.id for m in whole] == list(tr.segments[last.segment].message_ids)
    assert tr.ledger_tuple(last.index) == whole[: last.ledger_len]


def test_clear_caches_forgets_every_agent_file_read(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    sub = tmp_path / "s" / "subagents" / "agent-a1.jsonl"
    sub.parent.mkdir(parents=True)
    line = (
        '{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"S","timestamp":"2025-01-01T00:00:00Z",'
        '"message":{"role":"user","content":"hi"}}\n'
    )
    session.write_text(line)
    sub.write_text(line.replace('"u1"', '"x1"'))
    reader = ClaudeCodeReader(session)
    reader.feed(session.read_bytes())
    assert [s.agent_id for s in reader.transcript().subagents] == ["a1"]
    assert cc_agents._SUBAGENT_CACHE
    clear_caches()
    assert not cc_agents._SUBAGENT_CACHE and not cc_agents._CALL_CACHE and not cc_agents._SESSION_CACHE


def test_the_cache_key_covers_every_module_of_a_reader_package() -> None:
    key = cache._code_key()
    for module in (PACKAGE / "formats" / "claude_code").glob("*.py"):
        assert f"formats/claude_code/{module.name}:" in key
    assert "formats/base.py:" in key and "model/transcript.py:" in key
