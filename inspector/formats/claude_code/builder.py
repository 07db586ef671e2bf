"""The nodes read so far made into a Transcript: the active branch (crossing compactions, rewinds,
broken lines), the lines beside it, the segments, events and requests."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from pathlib import Path

from msgspec import Struct
from msgspec.structs import replace

from inspector.model import (
    CONVERSATION,
    SEGMENT_EVENTS,
    AbandonedBranch,
    EventKind,
    LoadIssue,
    Message,
    Origin,
    RecordedEvent,
    Request,
    Role,
    Segment,
    SubagentRef,
    TextBlock,
    ToolCallBlock,
    Transcript,
)

from ..base import Pairing
from .agents import _FileKey, _find_subagent_files, _link_compaction_calls
from .ledger import _Acc, _Group, _Memo, _request, _RequestFields, commonest
from .records import (
    BOUNDARY,
    CONVERSATION_TYPES,
    FORMAT,
    NEW_ROOT,
    _answers,
    _call_ids,
    _int,
    _is_api_error,
    _Node,
    _preserved_uuids,
    _State,
)
from .tree import _Tree


class _Built(Struct):
    """A build kept for the next one: when the file only grew along the active branch (the
    common case while an agent is writing), the next transcript extends this one by what is new
    instead of being built again from every line."""

    count: int
    """Lines (nodes) of the reader's state this was built from."""
    calls: tuple[_FileKey | None, ...]
    """The compaction-call files whose lines were recovered, by path, size and mtime."""
    call_parents: frozenset[str]
    """The uuids their recovered lines hang off."""
    leaf: str
    chain: list[str]
    """The active branch's uuids, root first."""
    chain_pos: dict[str, int]
    on_chain: set[str]
    rid_count: Counter[str]
    """Response id -> how many lines of it are on the chain."""
    members: set[str]
    """The ledger's lines (on the chain and beside it)."""
    recovered: dict[str, _Node]
    """Lines recovered from the compaction calls (the session's own lines may hang off them)."""
    chain_rids: set[str]
    chain_calls: set[str]
    strays: list[_Node]
    """Lines beside the chain that no rule absorbed (abandoned or detached)."""
    meets: dict[str, str]
    """Every line the strays' ancestors were walked through -> where they met the chain (a fork's
    uuid, `_DETACHED`, `_OTHER_ROOT`)."""
    forks: set[str]
    """The chain's lines the strays' ancestors met it at."""
    missing: set[str]
    """The parents the strays' ancestors lead to that are not in the file."""
    acc: _Acc
    last_ids: list[str]
    """The last segment's message ids."""
    request_of: dict[str, int]
    """Message id of a response -> position of its request."""
    preserved: frozenset[str]
    """Every uuid a compaction on the chain names as preserved (a preserved line written after its
    boundary belongs to the segment before it as well)."""
    chain_issues: list[LoadIssue]
    models: Counter[str]
    """Requests per model (the transcript's model is the most common)."""
    skipped_extra: Counter[str]
    inline: list[SubagentRef]
    pairing: Pairing
    transcript: Transcript


class _Builder(_Tree):
    """Turns the nodes read so far into a Transcript."""

    def __init__(self, file: str, state: _State, memo: _Memo | None = None) -> None:
        super().__init__(file, state)
        self.memo = memo if memo is not None else _Memo()
        self.built: _Built | None = None
        """Set by `build` when the result can be extended (not a sidechain-only file)."""

    # -- building ---------------------------------------------------------------------------
    def build(self, agents: list[tuple[Path, str]] | None) -> Transcript:
        """The transcript of the state; `agents`: the session's agent files (`_agent_files`),
        None to look for none (a subagent's own file)."""
        s = self.s
        nodes = s.nodes
        kept = self.kept_nodes = [nodes[u] for u in s.kept]  # (the passes walk nodes: no lookups)
        conv = [n for n in kept if n.type in CONVERSATION_TYPES]
        sidechain_file = bool(conv) and all(n.sidechain for n in conv)
        leaf = self._leaf(sidechain_file)
        chain = self._chain(leaf, sidechain_file) if leaf is not None else []
        on_chain = self.chain_uuids  # ({n.uuid for n in chain})
        # one walk of the chain's lines that hold a record: the responses and calls on it, its
        # boundaries (and the roots that begin a segment without one), its microcompacts and
        # API errors, each in chain order
        starts = self.starts
        chain_rids: set[str] = set()
        chain_calls: set[str] = set()
        rid_count: Counter[str] = Counter()
        boundaries: list[_Node] = []
        microcompacts: list[_Node] = []
        api_errors: list[_Node] = []
        for n in chain:
            rec = n.record
            if rec is None:
                continue
            if n.type == "assistant":
                if rid := n.rid:
                    chain_rids.add(rid)
                    rid_count[rid] += 1
                for b in n.blocks:
                    if type(b) is ToolCallBlock:
                        chain_calls.add(b.id)
            subtype = rec.get("subtype")
            if subtype == BOUNDARY or n.uuid in starts:
                boundaries.append(n)
            if subtype == "microcompact_boundary":
                microcompacts.append(n)
            if n.model == "<synthetic>" or rec.get("isApiErrorMessage"):  # (`_is_api_error`, inline)
                api_errors.append(n)
        # the only API errors among the members below: those on the chain (no other is absorbed)
        errors_on_chain = {n.uuid for n in api_errors}
        # absorb parallel tool traffic beside the chain; the rest is an abandoned branch. API
        # errors hanging off the chain where nothing followed them join those on it (a session
        # that ends on "5-hour limit reached": the leaf is the line before it)
        members: set[str] = set(on_chain)
        stray: list[_Node] = []
        hanging: list[_Node] = []
        for n in conv:
            if n.uuid in on_chain or not self._is_main(n, sidechain_file):
                continue
            if _is_api_error(n):
                if self._hangs_off(n, on_chain):
                    hanging.append(n)
                continue
            assert n.record is not None
            if n.type == "assistant" and n.rid in chain_rids:
                members.add(n.uuid)
                chain_calls.update(_call_ids(n))
            else:
                stray.append(n)
        api_errors += hanging
        for n in stray:
            assert n.record is not None
            answers = _answers(n) if n.type == "user" else []
            if answers and all(a in chain_calls for a in answers):
                members.add(n.uuid)
        for n in stray:
            if n.file is not None and n.parent in members:
                members.add(n.uuid)  # hook output recovered from a compaction call
        # (the other members hold no message; an API error is an event, not a message)
        ordered = (
            [n for n in kept if n.uuid in members and n.uuid not in errors_on_chain]
            if errors_on_chain
            else [n for n in kept if n.uuid in members]
        )
        strays = [n for n in stray if n.uuid not in members]
        abandoned = self.abandoned(strays, on_chain)
        transcript = self._assemble(
            agents, chain, ordered, boundaries, microcompacts, api_errors, abandoned, sidechain_file
        )
        if self.built is not None:
            assert leaf is not None
            self.built.leaf = leaf.uuid
            self.built.chain = [n.uuid for n in chain]
            self.built.chain_pos = {u: i for i, u in enumerate(self.built.chain)}
            self.built.on_chain = on_chain
            self.built.rid_count = rid_count
            self.built.members = members
            self.built.chain_rids = chain_rids
            self.built.chain_calls = chain_calls
            self.built.strays = strays
            self.built.meets, self.built.forks, self.built.missing = self.meets, self.forks, self.missing
        return transcript

    def _assemble(
        self,
        agents: list[tuple[Path, str]] | None,
        chain: list[_Node],
        ordered: list[_Node],
        boundaries: list[_Node],
        microcompacts: list[_Node],
        api_errors: list[_Node],
        abandoned: list[AbandonedBranch],
        sidechain_file: bool,
    ) -> Transcript:
        memo = self.memo
        acc = _Acc()
        starts = self.starts
        # segment of each member, by the position of the boundary in file order (a root that
        # begins a segment is its first message: it starts just before itself)
        seg_starts = sorted(
            (b.order - 0.5 if b.uuid in starts else b.order, i + 1) for i, b in enumerate(boundaries)
        )
        # the segment of a node: the last boundary (in file order) before it, found by bisection
        start_orders = [order for order, _ in seg_starts]
        start_segments = [idx for _, idx in seg_starts]
        take = acc.take
        if starts:
            for n in ordered:
                if starts.get(n.uuid) == NEW_ROOT:
                    acc.sources.new_context()  # a fresh context: its first human prompt is a task
                take(n)
        else:
            for n in ordered:
                take(n)
        messages: list[Message] = []
        line_of_msg: dict[str, int] = {}
        in_segment: defaultdict[int, list[str]] = defaultdict(list)
        """Segment -> its messages' ids, in ledger order."""
        message = self.message
        for g in acc.groups:
            m = message(g, acc)
            n = g.lines[0]
            j = bisect_left(start_orders, n.order) if start_orders else 0  # boundaries before n
            in_segment[start_segments[j - 1] if j else 0].append(m.id)
            line_of_msg[m.id] = n.line
            messages.append(m)

        # segments: the ledger of each stretch between compactions
        by_id = {m.id: m for m in messages}
        events: list[RecordedEvent] = []
        segments: list[list[str]] = [list(in_segment[0])]
        for i, b in enumerate(boundaries):
            rec = b.record
            assert rec is not None
            meta = rec.get("compactMetadata") if isinstance(rec.get("compactMetadata"), dict) else {}
            assert isinstance(meta, dict)
            after_ids = in_segment[i + 1]
            summary = next((x for x in after_ids if by_id[x].is_summary), None)
            preserved: list[str] = []
            kept = meta.get("preservedMessages")
            if isinstance(kept, dict) and isinstance(kept.get("uuids"), list):
                preserved = [u for u in kept["uuids"] if isinstance(u, str) and u in by_id]
            seg_ids: list[str] = []
            if summary is not None:
                seg_ids.append(summary)
            seg_ids.extend(p for p in preserved if p not in seg_ids)
            placed_ids = set(seg_ids)
            for x in after_ids:
                if x not in placed_ids:
                    seg_ids.append(x)
                    placed_ids.add(x)
            # a preserved message written after the boundary was in the ledger before it, too
            after_set = set(after_ids)
            segments[-1].extend(p for p in preserved if p in after_set and p not in segments[-1])
            segments.append(seg_ids)
            style = starts.get(b.uuid, BOUNDARY)
            events.append(
                RecordedEvent(
                    kind=EventKind.CONTEXT_CLEARED if style == NEW_ROOT else EventKind.COMPACTION,
                    style=style,
                    trigger=str(meta.get("trigger")) if meta.get("trigger") is not None else None,
                    pre_tokens=_int(meta.get("preTokens")),
                    post_tokens=_int(meta.get("postTokens")),
                    segment=i + 1,
                    summary_id=summary,
                    preserved_ids=tuple(preserved),
                    timestamp=rec.get("timestamp") if isinstance(rec.get("timestamp"), str) else None,
                    file=self.file,
                    line=b.line,
                )
            )
        # requests: one per response on the active branch, at its place in its segment's ledger
        requests: list[Request] = []
        kept_requests: dict[_RequestFields, Request] = {}
        response_of_request: list[str] = []
        preserved_after: set[str] = set()
        for e in events:
            preserved_after.update(e.preserved_ids)
        for seg_index, ids in enumerate(segments):
            for pos, mid in enumerate(ids):
                m = by_id[mid]
                if m.role is not Role.ASSISTANT or m.response_id is None:
                    continue
                if seg_index > 0 and mid in preserved_after:
                    continue  # a preserved response was made before the compaction, in the segment before
                fields = acc.request_fields(len(requests) + 1, m, seg_index, pos)
                if memo.keep:
                    req = memo.requests.get(fields) or _request(fields)
                    kept_requests[fields] = req
                else:
                    req = _request(fields)  # (a one-shot read: nothing to look up)
                requests.append(req)
                response_of_request.append(mid)
        memo.requests = kept_requests
        # place events on the request axis
        seg_first_request: dict[int, int] = {}
        for r in requests:
            seg_first_request.setdefault(r.segment, r.index)
        placed: list[RecordedEvent] = []
        requested = set(response_of_request)
        for e in events:
            first = seg_first_request.get(e.segment or 0)
            after = (first - 1) if first is not None else len(requests)
            placed.append(replace(e, after_request=after))
        # requests before a microcompact: those whose response line comes before it in the file
        request_lines = sorted(
            line_of_msg.get(m.id, 0) for m in messages if m.response_id and m.id in requested
        )
        for mc in microcompacts:
            rec = mc.record
            assert rec is not None
            meta = (
                rec.get("microcompactMetadata") if isinstance(rec.get("microcompactMetadata"), dict) else {}
            )
            assert isinstance(meta, dict)
            cleared = meta.get("compactedToolIds")
            after = bisect_left(request_lines, mc.line)
            placed.append(
                RecordedEvent(
                    kind=EventKind.MICROCOMPACT,
                    trigger=str(meta.get("trigger")) if meta.get("trigger") is not None else None,
                    pre_tokens=_int(meta.get("preTokens")),
                    tokens_saved=_int(meta.get("tokensSaved")),
                    cleared_tool_ids=tuple(str(x) for x in cleared) if isinstance(cleared, list) else (),
                    after_request=after,
                    timestamp=rec.get("timestamp") if isinstance(rec.get("timestamp"), str) else None,
                    file=self.file,
                    line=mc.line,
                )
            )
        for n in api_errors:
            assert n.record is not None
            text = " ".join(b.text for b in n.blocks if isinstance(b, TextBlock)).strip()
            placed.append(
                RecordedEvent(
                    kind=EventKind.API_ERROR,
                    detail=text or None,
                    after_request=bisect_left(request_lines, n.line),
                    timestamp=n.record.get("timestamp")
                    if isinstance(n.record.get("timestamp"), str)
                    else None,
                    file=self.file,
                    line=n.line,
                )
            )
        placed.sort(key=lambda e: (e.after_request, e.line or 0))
        segment_models = [
            Segment(
                index=i,
                message_ids=tuple(ids),
                started_by=next(
                    (j for j, e in enumerate(placed) if e.kind in SEGMENT_EVENTS and e.segment == i),
                    None,
                ),
            )
            for i, ids in enumerate(segments)
        ]
        models = Counter(r.model for r in requests if r.model and r.model != "<synthetic>")
        chain_issues = self.issues.after(self.s.issues)
        pairing = Pairing(self.file)
        for m in messages:
            pairing.add(m)
        self.issues.extend(pairing.issues())
        transcript = Transcript(
            format=FORMAT,
            path=self.file,
            session_id=self.s.session_id,
            model=models.most_common(1)[0][0] if models else None,
            harness_version=commonest(self.s.versions),
            title=self.s.title,
            messages=messages,
            segments=segment_models,
            requests=requests,
            events=placed,
            abandoned=abandoned,
            load_issues=self.issues,
            skipped=dict(self.skipped),
        )
        inline: list[SubagentRef] = []
        if not sidechain_file:
            inline = self._inline_subagents()
            transcript.subagents = list(inline)
        if agents is not None and not sidechain_file:
            subs, calls = _find_subagent_files(agents)
            transcript.subagents = transcript.subagents + subs
            _link_compaction_calls(transcript, calls)
        empty_before_last = set(range(len(segments) - 1)) - {r.segment for r in requests}
        if memo.keep and not sidechain_file and chain and not empty_before_last:
            self.built = _Built(
                count=0,
                calls=(),
                call_parents=frozenset(),
                leaf="",
                chain=[],
                chain_pos={},
                on_chain=set(),
                rid_count=Counter(),
                members=set(),
                recovered={},
                chain_rids=set(),
                chain_calls=set(),
                strays=[],
                meets={},
                forks=set(),
                missing=set(),
                acc=acc,
                last_ids=list(segments[-1]),
                request_of={r.response_id: i for i, r in enumerate(requests) if r.response_id},
                preserved=frozenset(
                    u for b in boundaries if b.record is not None for u in _preserved_uuids(b.record)
                ),
                chain_issues=chain_issues,
                models=models,
                skipped_extra=self.skipped - self.s.skipped,
                inline=inline,
                pairing=pairing,
                transcript=transcript,
            )
        return transcript

    def message(self, g: _Group, acc: _Acc) -> Message:
        """The message of one group of lines; the one made before when its lines are the same."""
        memo = self.memo
        n = g.lines[0]
        rec = n.record
        assert rec is not None
        if g.rid is not None:
            stop = acc.stop_by_rid.get(g.rid)
            hit_a = memo.responses.get(n.uuid)
            key = tuple(g.blocks)
            if (
                hit_a is not None
                and hit_a[1] == stop
                and len(hit_a[0]) == len(key)
                and all(a is b for a, b in zip(hit_a[0], key, strict=True))
            ):
                return hit_a[2]
            ts = rec.get("timestamp")
            agent = rec.get("agentId")
            m = Message(
                id=n.uuid,
                role=Role.ASSISTANT,
                blocks=key[0] if len(key) == 1 else tuple(b for bs in key for b in bs),
                timestamp=ts if isinstance(ts, str) else None,
                source=CONVERSATION,
                sidechain=n.sidechain,
                agent_id=agent if isinstance(agent, str) else None,
                origin=Origin(file=self.file, line=n.line),
                response_id=g.rid,
                model=n.model,
                stop_reason=stop,
            )
            if memo.keep:
                memo.responses[n.uuid] = (key, stop, m)
            return m
        blocks = g.blocks[0]
        hit_u = memo.users.get(n.uuid)
        if hit_u is not None and hit_u[0] is g.source and hit_u[1] is blocks:
            return hit_u[2]
        ts = rec.get("timestamp")
        agent = rec.get("agentId")
        m = Message(
            id=n.uuid,
            role=Role.USER,
            blocks=blocks,
            timestamp=ts if isinstance(ts, str) else None,
            source=g.source,
            sidechain=n.sidechain,
            agent_id=agent if isinstance(agent, str) else None,
            origin=Origin(file=n.file or self.file, line=n.line),
            is_meta=bool(rec.get("isMeta")),
            is_summary=bool(rec.get("isCompactSummary")),
        )
        if memo.keep:
            memo.users[n.uuid] = (g.source, blocks, m)
        return m
