"""Tool names across harnesses: one alias table, so layers compare canonical names only.

A policy names the tools whose old output may be cleared ("compactable": re-creatable, read-only).
Transcripts name the same tool differently (OpenCollab `file_read`, Claude Code `Read`, opencode
`read`, Codex `shell`), so every name goes through `canonical_tool` before it is compared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

OPENCOLLAB_TOOLS: tuple[str, ...] = ("bash", "file_read", "grep", "git_diff", "run_tests")
"""OpenCollab's own compactable set."""
HARNESS_READ_ONLY_TOOLS: tuple[str, ...] = ("glob", "list", "web_fetch", "web_search")
"""Re-creatable read-only tools other harnesses have and OpenCollab has not (Claude Code Glob, LS,
WebFetch, WebSearch; opencode glob, list, webfetch)."""
DEFAULT_COMPACTABLE_TOOLS: tuple[str, ...] = OPENCOLLAB_TOOLS + HARNESS_READ_ONLY_TOOLS
"""The opencollab preset's set: OpenCollab's five plus the read-only tools of the harnesses whose
transcripts are replayed with it. Edit and write tools are not in it, so their results are never
touched."""

_ALIASES: dict[str, tuple[str, ...]] = {
    "bash": (
        "bash",
        "shell",
        "localshell",
        "execcommand",
        "containerexec",
        "runcommand",
        "bashoutput",
        "terminal",
    ),
    "file_read": ("fileread", "read", "readfile", "view", "notebookread", "readmanyfiles"),
    "grep": ("grep", "rg", "ripgrep", "grepsearch", "searchfiles", "codesearch"),
    "glob": ("glob", "findfiles", "filesearch"),
    "list": ("list", "ls", "listdir", "listdirectory", "listfiles"),
    "git_diff": ("gitdiff",),
    "run_tests": ("runtests",),
    "web_fetch": ("webfetch", "fetch", "fetchurl"),
    "web_search": ("websearch",),
    "edit": (
        "edit",
        "fileedit",
        "multiedit",
        "notebookedit",
        "strreplace",
        "strreplacebasededittool",
        "applypatch",
    ),
    "write": ("write", "filewrite", "writefile", "createfile"),
}

TOOL_ALIASES: dict[str, str] = {alias: canon for canon, aliases in _ALIASES.items() for alias in aliases}
"""Squashed name (lower case, letters and digits only) -> canonical name."""

_NOT_ALNUM = re.compile(r"[^a-z0-9]")


def _squash(name: str) -> str:
    return _NOT_ALNUM.sub("", name.lower())


@lru_cache(maxsize=1024)
def canonical_tool(name: str) -> str:
    """The canonical name of a tool: `Read`, `read_file`, `file-read` -> `file_read`.

    A name not in the table is returned squashed (lower case, letters and digits only), so
    `My-Tool` and `my_tool` still compare equal.
    """
    squashed = _squash(name)
    return TOOL_ALIASES.get(squashed, squashed)


def canonical_set(names: Iterable[str]) -> frozenset[str]:
    """Canonical names of `names`, for membership tests."""
    return frozenset(canonical_tool(n) for n in names)


def is_compactable(name: str | None, compactable: frozenset[str]) -> bool:
    """Whether a tool (by any harness's name) is in a canonical compactable set."""
    return name is not None and canonical_tool(name) in compactable
