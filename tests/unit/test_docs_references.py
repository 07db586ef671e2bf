"""Docstrings and comments point only to documents in the repository (issue 28, item 8).

The design document, the field notes and the seed documents they cite live under `docs/`; a
reference to one (`docs/DESIGN.md §7`, `docs/notes/opencollab.md §2`, `docs/seeds/001`) must name a
file that is there, and nothing may point at a document outside the repository (`../shared/notes/`).
The corpus (`../shared/corpus/`) is data the tests read, not a document: it is not a reference.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("inspector", "tests", "benchmarks", "tools")

DOC = re.compile(r"(?<![\w.])((?:\.\./)*(?:[\w-]+/)*(?:DESIGN\.md|notes/[\w-]+\.md|seeds/\d{3}))")
"""A reference to a design document: DESIGN.md, a field note or a seed, with the path before it."""


def _sources() -> list[Path]:
    files = [p for base in SCANNED for p in sorted((ROOT / base).rglob("*.py"))]
    return [*files, ROOT / "README.md"]


def references(text: str) -> list[str]:
    return [m.group(1) for m in DOC.finditer(text)]


def _resolves(ref: str) -> bool:
    if not ref.startswith("docs/"):
        return False
    if re.fullmatch(r"docs/seeds/\d{3}", ref):
        return any((ROOT / "docs" / "seeds").glob(f"{ref.rsplit('/', 1)[1]}_*"))
    return (ROOT / ref).is_file()


def test_every_document_reference_names_a_file_in_docs() -> None:
    broken = [
        f"{path.relative_to(ROOT)}:{n}: {ref}"
        for path in _sources()
        if path.name != "test_docs_references.py"
        for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for ref in references(text)
        if not _resolves(ref)
    ]
    assert broken == []


def test_the_scan_catches_a_reference_outside_the_repository() -> None:
    text = (
        "see DESIGN.md §7 and ../shared/notes/opencollab.md §2, notes/harness-versions.md and seeds/001; "
        "docs/DESIGN.md §2 and docs/seeds/002 are fine, docs/notes/missing.md is not"
    )
    found = references(text)
    assert found == [
        "DESIGN.md",
        "../shared/notes/opencollab.md",
        "notes/harness-versions.md",
        "seeds/001",
        "docs/DESIGN.md",
        "docs/seeds/002",
        "docs/notes/missing.md",
    ]
    assert [_resolves(r) for r in found] == [False, False, False, False, True, True, False]
