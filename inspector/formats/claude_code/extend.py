"""A followed session's next transcript made by extending the one before: when the lines read since
only continue the active branch (what a file an agent is writing does almost always), the cost is
that of the new lines; anything else (a compaction, a rewind, a subagent line) is left to a full
build."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from msgspec.structs import replace

from inspector.model import Transcript

from ..base import LoadIssues, issue_total
from .agents import _find_subagent_files
from .builder import _Builder, _Built
from .ledger import _count_model, _Memo, _request, commonest
from .records import CONVERSATION_TYPES, FORMAT, _answers, _call_ids, _is_api_error, _Node, _State
from .tree import STRAY_COUNTS, _Tree

MAX_REJOIN = 64
"""How many lines may leave the end of the active branch (parallel tool traffic the new line does
not hang off) for a transcript to still be extended rather than built again."""


def extend(
    file: str, state: _State, memo: _Memo, built: _Built, agents: list[tuple[Path, str]] | None
) -> Transcript | None:
    """`built`'s transcript with the lines read since, when they only continue its active
    branch; None when a full build is needed. Checks everything before changing anything."""
    base = state.nodes
    new = [base[u] for u in state.order[built.count :]]
    recovered = built.recovered

    def node(uuid: str) -> _Node | None:
        n = base.get(uuid)
        return n if n is not None else recovered.get(uuid)

    old = built.transcript
    conv = [n for n in new if n.record is not None]
    for n in conv:
        if (
            n.type not in CONVERSATION_TYPES  # a compaction or microcompact boundary
            or n.sidechain
            or _is_api_error(n)
            or n.uuid in built.call_parents
            or n.uuid in built.preserved
        ):
            return None
    if built.missing and any(n.uuid in built.missing for n in new):
        return None  # a line that detached lines hang off has come: they join the tree
    if not conv and (
        issue_total(old.load_issues)
        == issue_total(built.chain_issues) + state.issues.total + built.pairing.issues().total
        and old.title == state.title
        and old.skipped == dict(Counter(state.skipped) + built.skipped_extra)
    ):
        built.count = len(state.order)
        return old
    # The newest line leads back to the old chain through new lines, or old lines that hold no
    # message (progress) or that the ledger already holds beside the chain (parallel tool
    # traffic). Where it meets the chain, the chain's tail after that point leaves it; that
    # tail must still be in the ledger as parallel traffic, or the ledger is not simply longer.
    path: list[_Node] = []
    dropped: list[_Node] = []
    if conv:
        cur: _Node | None = conv[-1]
        seen: set[str] = set()
        while cur is not None and cur.uuid not in built.on_chain:
            if cur.uuid in seen:
                return None
            if cur.order < built.count and cur.record is not None and cur.uuid not in built.members:
                return None  # an old line beside the ledger: a rewind's branch
            seen.add(cur.uuid)
            path.append(cur)
            cur = node(cur.parent) if cur.parent else None
        if cur is None:
            return None
        at = built.chain_pos[cur.uuid]
        if len(built.chain) - at - 1 > MAX_REJOIN:
            return None
        dropped = [d for u in built.chain[at + 1 :] if (d := node(u)) is not None]
        if len(dropped) != len(built.chain) - at - 1:
            return None
    # where an abandoned or detached line's ancestors meet the chain moves only if the chain
    # now runs through one of them (an old line the new path takes) or leaves the line they met
    # it at (the tail that drops off): then they are walked again, the rest kept as they are
    rewalk = bool(built.strays) and (
        any(n.uuid in built.meets for n in path if n.order < built.count)
        or any(d.uuid in built.forks for d in dropped)
    )
    rid_delta: Counter[str] = Counter()
    for n in dropped:
        if n.record is None:
            continue
        if n.type not in CONVERSATION_TYPES or _is_api_error(n):
            return None
        if n.type == "assistant":
            rid = n.rid
            if rid is None:
                return None
            rid_delta[rid] -= 1
    for n in path:
        if n.type == "assistant" and n.record is not None and (rid := n.rid):
            rid_delta[rid] += 1
    if any(built.rid_count[r] + d <= 0 for r, d in rid_delta.items() if d < 0):
        return None  # a response would leave the chain, and the tool calls that came with it
    path_ids = {n.uuid for n in path}
    add_rids = {r for r, d in rid_delta.items() if d > 0 and built.rid_count[r] <= 0}
    add_calls = {c for n in path if n.type == "assistant" and n.record is not None for c in _call_ids(n)}
    members = {n.uuid for n in path if n.record is not None}
    users: list[_Node] = []
    for n in conv:
        if n.uuid in path_ids:
            continue
        assert n.record is not None
        if n.type == "assistant":
            rid = n.rid
            if rid is None or not (rid in built.chain_rids or rid in add_rids):
                return None
            members.add(n.uuid)
            add_calls.update(_call_ids(n))
        else:
            users.append(n)
    for n in users + [n for n in dropped if n.type == "user" and n.record is not None]:
        assert n.record is not None
        if n.file is not None and n.parent in built.members:
            continue  # hook output recovered from a compaction call, after its tool result
        answers = _answers(n)
        if not answers or not all(a in built.chain_calls or a in add_calls for a in answers):
            return None
        members.add(n.uuid)
    for n in built.strays:
        assert n.record is not None
        if n.type == "assistant" and n.rid in add_rids:
            return None
        if n.type == "user":
            answers = _answers(n)
            if answers and all(a in built.chain_calls or a in add_calls for a in answers):
                return None
            if n.file is not None and n.parent in members:
                return None  # recovered hook output whose tool result joins the ledger
    # from here on, `built` is changed into the extended build
    built.count = len(state.order)
    if path:
        for n in dropped:
            built.on_chain.discard(n.uuid)
            del built.chain_pos[n.uuid]
        del built.chain[len(built.chain) - len(dropped) :]
        for n in reversed(path):
            built.on_chain.add(n.uuid)
            built.chain_pos[n.uuid] = len(built.chain)
            built.chain.append(n.uuid)
        built.leaf = path[0].uuid
    abandoned = list(old.abandoned)
    if rewalk:
        walked = state if not recovered else _State(nodes={**base, **recovered})
        walker = _Tree(file, walked)
        walker.skipped = Counter()
        abandoned = walker.abandoned(built.strays, built.on_chain)
        for key in STRAY_COUNTS:
            del built.skipped_extra[key]
        built.skipped_extra.update(walker.skipped)
        built.meets, built.forks, built.missing = walker.meets, walker.forks, walker.missing
    built.rid_count.update(rid_delta)
    built.chain_rids |= add_rids
    built.chain_calls |= add_calls
    built.members |= members
    acc = built.acc
    builder = _Builder(file, state, memo)
    touched: set[int] = set()
    for n in new:
        if n.uuid in members:  # new lines only: the old ones the chain now runs through are read
            gi = acc.take(n)
            if gi is not None:
                touched.add(gi)
    messages = list(old.messages)
    requests = list(old.requests)
    first_changed = min(touched) if touched else len(messages)
    built.pairing.truncate(first_changed)
    last = len(old.segments) - 1
    last_ids = built.last_ids
    for gi in sorted(touched):
        g = acc.groups[gi]
        m = builder.message(g, acc)
        if gi < len(messages):
            messages[gi] = m
        else:
            messages.append(m)
            last_ids.append(m.id)
        if g.rid is not None:
            ri = built.request_of.get(m.id)
            request = _request(
                acc.request_fields(len(requests) + 1, m, last, len(last_ids) - 1)
                if ri is None
                else acc.request_fields(ri + 1, m, requests[ri].segment, requests[ri].ledger_len)
            )
            if ri is None:
                built.request_of[m.id] = len(requests)
                requests.append(request)
                _count_model(built.models, request, 1)
            elif request != requests[ri]:
                _count_model(built.models, requests[ri], -1)
                _count_model(built.models, request, 1)
                requests[ri] = request
    for m in messages[first_changed:]:
        built.pairing.add(m)
    segments = list(old.segments)
    if len(last_ids) != len(segments[-1].message_ids):
        segments[-1] = replace(segments[-1], message_ids=tuple(last_ids))
    models = +built.models
    subagents = list(built.inline)
    if agents is not None:
        subagents += _find_subagent_files(agents)[0]
    skipped = Counter(state.skipped) + built.skipped_extra
    transcript = Transcript(
        format=FORMAT,
        path=file,
        session_id=state.session_id,
        model=models.most_common(1)[0][0] if models else None,
        harness_version=commonest(state.versions),
        title=state.title,
        messages=messages,
        segments=segments,
        requests=requests,
        events=list(old.events),
        subagents=subagents,
        abandoned=abandoned,
        load_issues=LoadIssues.joined(state.issues, built.chain_issues, built.pairing.issues()),
        skipped=dict(skipped),
    )
    transcript.adopt_index(old, [messages[gi] for gi in touched])
    built.transcript = transcript
    return transcript
