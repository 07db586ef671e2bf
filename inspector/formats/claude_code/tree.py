"""The tree of a session's lines: the active branch (from the newest line back to a root, across
compactions, old-style summary roots, fresh contexts and broken lines), the lines beside it that a
rewind abandoned or that hang off nothing in the file, and inline (1.0) sidechain runs."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from typing import Any

from inspector.model import AbandonedBranch, LoadIssue, SubagentRef, TextBlock

from ..base import short
from ..claude_code_sources import harness_written
from .records import CONVERSATION_TYPES, NEW_ROOT, SUMMARY_ROOT, _is_api_error, _Node, _State

MAX_HOPS_OFF_CHAIN = 64
"""How many non-conversation lines (progress, system) a line may hang below the chain by and still
be taken as hanging off it (`_Tree._hangs_off`)."""
MAX_BROKEN_GAP = 64
"""How many lines after a broken line a line whose parent is missing is taken to hang off it."""
STRAY_COUNTS = (
    "detached (parent not in file)",
    "off the active branch (another root)",
    "responses in detached lines",
)
"""What `_Tree.abandoned` counts of the lines beside the chain (in `skipped`)."""
_DETACHED = "\x00detached"
_OTHER_ROOT = "\x00other root"
"""(Where a stray line's ancestors end, when not on the chain: never a uuid.)"""


class _Tree:
    """Walks the nodes read so far: the active branch and what lies beside it."""

    def __init__(self, file: str, state: _State) -> None:
        self.file = file
        self.s = state
        self.issues = state.issues.copy()
        self.skipped: Counter[str] = Counter(state.skipped)
        self.starts: dict[str, str] = {}
        """Roots on the chain that begin a segment without a boundary line, by uuid: their style
        (`SUMMARY_ROOT`, `NEW_ROOT`)."""
        self._boundary_cycle = False
        self.meets: dict[str, str] = {}
        """Set by `abandoned`: where each line walked meets the chain (`_Built.meets`)."""
        self.forks: set[str] = set()
        self.missing: set[str] = set()
        self.chain_uuids: set[str] = set()
        """Set by `_chain`: the uuids of the chain it walked."""
        self.kept_nodes: list[_Node] | None = None
        """The nodes of `state.kept`, in its order, once a build has looked them up."""

    # -- the active branch -------------------------------------------------------------------
    def _is_main(self, node: _Node, sidechain_file: bool) -> bool:
        return node.record is not None and (sidechain_file or not node.sidechain)

    def _leaf(self, sidechain_file: bool) -> _Node | None:
        nodes = self.s.nodes
        for uuid in reversed(self.s.kept):
            n = nodes[uuid]
            if n.type in CONVERSATION_TYPES and self._is_main(n, sidechain_file) and not _is_api_error(n):
                return n
        return None

    def _chain(self, leaf: _Node, sidechain_file: bool) -> list[_Node]:
        """Leaf to root, crossing compaction boundaries into the history before them."""
        nodes = self.s.nodes
        chain: list[_Node] = []
        seen: set[str] = set()
        cur: _Node | None = leaf
        self.chain_uuids = seen
        while cur is not None:
            uuid = cur.uuid
            if uuid in seen:
                self.issues.append(
                    LoadIssue(
                        file=self.file,
                        line=cur.line,
                        reason=f"cycle in parent links at uuid {short(uuid)}",
                    )
                )
                break
            seen.add(uuid)
            chain.append(cur)
            parent = cur.parent
            nxt = nodes.get(parent) if parent else None
            if nxt is not None:  # (the usual step: the rest is about where the links end)
                cur = nxt
                continue
            rec = cur.record
            if nxt is None and cur.parent is None and rec is not None:
                if rec.get("subtype") == "compact_boundary":
                    nxt = self._before_boundary(rec, seen, cur.line)
                    if nxt is None and not self._boundary_cycle:
                        # its logical parent is not in the file (real 2.1 sessions): the history
                        # before it is the newest main-thread conversation line before it
                        nxt = self._newest_before(cur, seen, sidechain_file)
                        if nxt is not None:
                            self.issues.append(
                                LoadIssue(
                                    file=self.file,
                                    line=cur.line,
                                    reason=f"compact_boundary's logicalParentUuid "
                                    f"{short(str(rec.get('logicalParentUuid')))} is not in the file; "
                                    f"the history before it was taken to end at line {nxt.line} "
                                    "(the newest main-thread line before the boundary)",
                                )
                            )
                elif cur.type == "user":
                    # a root in the middle of the file: an old-style compaction (early 1.0: the
                    # summary line starts the next segment, no boundary) or a fresh context (plan
                    # mode's "clear context"); the history before it is the newest main-thread
                    # conversation line before it in file order
                    summary = bool(rec.get("isCompactSummary"))
                    nxt = self._newest_before(cur, seen, sidechain_file)
                    if summary:
                        self.starts[cur.uuid] = SUMMARY_ROOT
                    elif nxt is not None and not harness_written(rec, cur.blocks):
                        self.starts[cur.uuid] = NEW_ROOT
                    # (a local command written as a root goes on with the history before it)
            elif nxt is None and cur.parent is not None and (broken := self._broken_before(cur)):
                # its parent is a line this reader could not read (torn, with its uuid cut off):
                # the history before it goes on at the newest main-thread line before it
                nxt = self._newest_before(cur, seen, sidechain_file)
                if nxt is not None:
                    self.issues.append(
                        LoadIssue(
                            file=self.file,
                            line=broken,
                            reason=f"line {cur.line} hangs off this line, which could not be read; it was "
                            f"linked to line {nxt.line}, the newest main-thread line before it",
                        )
                    )
            # (a parent that is not in the file, compacted away or cut off: a root)
            cur = nxt
        chain.reverse()
        return chain

    def _hangs_off(self, node: _Node, on_chain: set[str]) -> bool:
        """Whether `node` hangs off the chain through lines that hold no conversation (progress,
        system lines): a line after the leaf, as a session's last API error is."""
        nodes = self.s.nodes
        cur = nodes.get(node.parent) if node.parent else None
        for _ in range(MAX_HOPS_OFF_CHAIN):
            if cur is None:
                return False
            if cur.uuid in on_chain:
                return True
            if cur.type in CONVERSATION_TYPES:
                return False
            cur = nodes.get(cur.parent) if cur.parent else None
        return False

    def _broken_before(self, node: _Node) -> int | None:
        """The line that could not be read just before `node` (at most `MAX_BROKEN_GAP` lines
        before it), which its missing parent is taken to be; None where there is none."""
        broken = self.s.broken
        i = bisect_left(broken, node.line)
        return broken[i - 1] if i > 0 and node.line - broken[i - 1] <= MAX_BROKEN_GAP else None

    def _newest_before(self, node: _Node, seen: set[str], sidechain_file: bool) -> _Node | None:
        """The newest main-thread conversation line before `node` in file order, not on the chain
        yet."""
        nodes = self.s.nodes
        kept = self.s.kept
        i = bisect_left(kept, node.order, key=lambda u: nodes[u].order)
        while i > 0:
            i -= 1
            n = nodes[kept[i]]
            if n.type in CONVERSATION_TYPES and self._is_main(n, sidechain_file) and n.uuid not in seen:
                return n
        return None

    def _before_boundary(self, rec: dict[str, Any], seen: set[str], line: int) -> _Node | None:
        self._boundary_cycle = False
        nodes = self.s.nodes
        meta = rec.get("compactMetadata") if isinstance(rec.get("compactMetadata"), dict) else {}
        assert isinstance(meta, dict)
        candidates: list[Any] = [rec.get("logicalParentUuid")]
        seg = meta.get("preservedSegment")
        if isinstance(seg, dict):
            candidates.append(seg.get("tailUuid"))
        kept = meta.get("preservedMessages")
        if isinstance(kept, dict) and isinstance(kept.get("uuids"), list):
            candidates.extend(reversed(kept["uuids"]))
        if isinstance(seg, dict):
            candidates.append(seg.get("headUuid"))
        for c in candidates:
            if isinstance(c, str) and c in nodes and c not in seen:
                return nodes[c]
        if any(isinstance(c, str) and c in seen for c in candidates):
            self._boundary_cycle = True
            self.issues.append(
                LoadIssue(
                    file=self.file,
                    line=line,
                    reason="cycle in parent links: the compact_boundary's `logicalParentUuid` leads back "
                    "into the chain after it; the history before it is not followed",
                )
            )
        return None

    def abandoned(self, strays: list[_Node], on_chain: set[str]) -> list[AbandonedBranch]:
        nodes = self.s.nodes
        by_fork: dict[str, list[_Node]] = defaultdict(list)
        # where each line's ancestors meet the chain: a fork's uuid, DETACHED (an ancestor's parent
        # is not in the file) or OTHER_ROOT (a root off the chain); remembered for every line
        # walked, so each line is walked once however many strays share its ancestors
        meets = self.meets = {}
        self.forks, self.missing = set(), set()
        detached_rids: set[str] = set()
        for n in strays:
            path: list[str] = []
            cur: _Node | None = n
            found: str | None = None
            while cur is not None:
                if cur.uuid in on_chain:
                    found = cur.uuid
                    break
                known = meets.get(cur.uuid)
                if known is not None:
                    found = known
                    break
                if len(path) > len(nodes):  # a cycle off the chain
                    found = _DETACHED
                    break
                path.append(cur.uuid)
                parent = cur.parent
                nxt = nodes.get(parent) if parent else None
                if nxt is None:
                    found = _DETACHED if parent else _OTHER_ROOT
                    if parent:
                        self.missing.add(parent)
                cur = nxt
            assert found is not None
            for u in path:
                meets[u] = found
            if found not in (_DETACHED, _OTHER_ROOT):
                self.forks.add(found)
            if found in (_DETACHED, _OTHER_ROOT):
                # hangs off a line that is not in this file (a compaction call's injected reminders,
                # a file cut at the front), or off a root the active branch does not reach: not a
                # fork of this ledger
                self.skipped[
                    "detached (parent not in file)"
                    if found == _DETACHED
                    else "off the active branch (another root)"
                ] += 1
                if n.type == "assistant" and n.rid:
                    detached_rids.add(n.rid)
                continue
            by_fork[found].append(n)
        if detached_rids:
            self.skipped["responses in detached lines"] += len(detached_rids)
        out: list[AbandonedBranch] = []
        for fork, ns in by_fork.items():
            ns.sort(key=lambda n: n.order)
            preview = ""
            for n in ns:
                text = " ".join(b.text for b in n.blocks if isinstance(b, TextBlock))
                if text.strip():
                    preview = text.strip().splitlines()[0][:120]
                    break
            out.append(
                AbandonedBranch(
                    fork_id=fork,
                    message_ids=tuple(n.uuid for n in ns),
                    first_line=ns[0].line,
                    preview=preview,
                )
            )
        out.sort(key=lambda a: a.first_line)
        return out

    def _inline_subagents(self) -> list[SubagentRef]:
        """Claude Code 1.0: sidechain lines written inline; each root begins one subagent run."""
        nodes = self.s.nodes
        roots: dict[str, list[_Node]] = defaultdict(list)
        root_of: dict[str, str] = {}
        kept = self.kept_nodes if self.kept_nodes is not None else [nodes[u] for u in self.s.kept]
        for n in kept:
            if not n.sidechain or n.type not in CONVERSATION_TYPES:
                continue
            parent = nodes.get(n.parent) if n.parent else None
            root = root_of.get(parent.uuid) if parent is not None and parent.sidechain else None
            root = root or n.uuid
            root_of[n.uuid] = root
            roots[root].append(n)
        out: list[SubagentRef] = []
        for root, ns in roots.items():
            rids = {n.rid for n in ns if n.type == "assistant" and n.record is not None}
            agent = next(
                (n.record.get("agentId") for n in ns if n.record is not None and n.record.get("agentId")),
                None,
            )
            first = ns[0].blocks
            desc = first[0].text if len(first) == 1 and isinstance(first[0], TextBlock) else None
            out.append(
                SubagentRef(
                    agent_id=str(agent) if agent else f"inline-{root[:8]}",
                    path=None,
                    layout="inline (1.0)",
                    description=desc.strip().splitlines()[0][:120]
                    if isinstance(desc, str) and desc.strip()
                    else None,
                    messages=len({n.uuid for n in ns if n.type == "user"}) + len(rids),
                    requests=len(rids - {None}),
                )
            )
        return out
