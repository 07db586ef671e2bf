"""Pins: which messages the shaping layers may not remove, clear or fold, under one policy.

Every layer asks one predicate, `Budget.pins` (built by `Policy.budget` from the policy), so the
rule lives here once and the pinned panel, `report --step` and `explain` read the same answer:

- a harness preset (claude-code, codex, opencode: a policy whose `rules` name a harness with
  protections) pins a message iff its source kind is one the harness protects
  (`inspector.harnesses.Harness.protects`), plus the fixed overhead pseudo-message, which no
  harness folds by construction (it is the system prompt and the tool definitions);
- OpenCollab's presets, and every policy without harness rules, pin priority >= `PIN_FLOOR`
  whatever the kind (OpenCollab's `is_pinned`).
"""

from __future__ import annotations

from collections.abc import Iterable

from msgspec import Struct

from inspector.model import PIN_FLOOR, Message, Source, SourceKind


class Pins(Struct, frozen=True):
    """The pin rule of one policy. `kinds` None: priority >= `PIN_FLOOR` (OpenCollab's rule);
    else the source kinds the harness protects (the overhead always among them)."""

    kinds: frozenset[SourceKind] | None = None

    @classmethod
    def protecting(cls, kinds: Iterable[SourceKind]) -> Pins:
        """The pins of a harness that protects `kinds` (and the overhead, always)."""
        return cls(kinds=frozenset(kinds) | {SourceKind.OVERHEAD})

    def source(self, source: Source) -> bool:
        """Whether a message of `source` is pinned under this rule."""
        if self.kinds is None:
            return source.priority >= PIN_FLOOR
        return source.kind in self.kinds

    def __call__(self, message: Message) -> bool:
        """Whether `message` is pinned under this rule (`source`, inlined: layers ask per message)."""
        source = message.source
        kinds = self.kinds
        return source.priority >= PIN_FLOOR if kinds is None else source.kind in kinds


FLOOR = Pins()
"""OpenCollab's rule, the default where no policy says otherwise: priority >= `PIN_FLOOR`."""
