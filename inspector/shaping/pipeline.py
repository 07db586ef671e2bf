"""The pipeline: layers left to right over one ledger, and the sentences that explain the outcome."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from msgspec import Struct
from msgspec.structs import replace

from inspector.model import Message, Source

from .base import Action, Decision, Layer, LayerResult, Sizer, TokenMemo, memo
from .budget import Budget
from .groups import pin_label


class ShapeResult(Struct, frozen=True):
    """One request shaped: the input, every layer's result, and what is sent.

    `input` is the ledger as given (never changed); `final` the last layer's view; `sent_tokens`
    its estimate; `input_tokens` the estimate of the input.
    """

    input: tuple[Message, ...]
    budget: Budget
    layers: tuple[LayerResult, ...]
    final: tuple[Message, ...]
    input_tokens: int
    sent_tokens: int
    forced: bool = False

    @property
    def decisions(self) -> tuple[Decision, ...]:
        """Every layer's decisions, in pipeline order."""
        return tuple(d for layer in self.layers for d in layer.decisions)

    @property
    def fired(self) -> tuple[str, ...]:
        """The names of the layers that changed their input ("none" is the empty tuple)."""
        return tuple(layer.name for layer in self.layers if layer.fired)

    def layer(self, name: str) -> LayerResult:
        for result in self.layers:
            if result.name == name:
                return result
        raise KeyError(f"no layer named {name!r} in this pipeline")

    def decisions_for(self, message_id: str) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if d.message_id == message_id)


def recast(result: ShapeResult, sizer: Sizer) -> ShapeResult:
    """`result` with every figure sized by `sizer`: the same views, layers, decisions and reasons
    (decided with the estimator the pipeline ran with), the tokens as `sizer` weighs them. For a
    replay that decides as a harness does, with its own estimate, and shows calibrated weights."""
    weigh: TokenMemo = memo(sizer)
    layers: list[LayerResult] = []
    view_in = result.input
    for layer in result.layers:
        before = {m.id: m for m in view_in}
        after = {m.id: m for m in layer.view}
        folded = sum(
            weigh.message(before[d.message_id])
            for d in layer.decisions
            if d.action is Action.SUMMARIZED and d.message_id in before
        )
        decisions = tuple(
            replace(
                d,
                tokens_before=(
                    weigh.message(before[d.message_id])
                    if d.message_id in before
                    else (folded if d.action is Action.SUMMARIZED else 0)
                ),
                tokens_after=weigh.message(after[d.message_id])
                if d.tokens_after and d.message_id in after
                else 0,
            )
            for d in layer.decisions
        )
        layers.append(
            replace(
                layer,
                tokens_before=weigh.view(view_in),
                tokens_after=weigh.view(layer.view),
                decisions=decisions,
            )
        )
        view_in = layer.view
    input_tokens = weigh.view(result.input)
    return replace(
        result,
        layers=tuple(layers),
        input_tokens=input_tokens,
        sent_tokens=layers[-1].tokens_after if layers else input_tokens,
    )


class Pipeline:
    """Layers run left to right; each re-estimates its input with the estimator it was given, so once
    a cheap layer brings the estimate under the trigger, the reactive ones after it do nothing.

    Every message is sized once per run (a `TokenMemo` keyed by message identity); pass a
    `TokenMemo` as the estimator to keep those sizes across runs of one transcript.
    Forced mode (overflow recovery): every reactive layer acts as if the trigger were crossed and
    compacts to its target; pinned messages stay protected.
    """

    def __init__(self, layers: Iterable[Layer]) -> None:
        self.layers: tuple[Layer, ...] = tuple(layers)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(layer.name for layer in self.layers)

    def run(
        self,
        view: Sequence[Message],
        budget: Budget,
        estimator: Sizer,
        forced: bool = False,
        explain: bool = True,
    ) -> ShapeResult:
        """`view` through every layer in order (`explain` False: the decisions may be left out,
        see `Layer`)."""
        sizer: TokenMemo = memo(estimator)
        src = tuple(view)
        input_tokens = sizer.view(src)
        current = src
        results: list[LayerResult] = []
        for layer in self.layers:
            result = layer.apply(current, budget, sizer, forced=forced, explain=explain)
            results.append(result)
            current = result.view
        sent = results[-1].tokens_after if results else input_tokens
        return ShapeResult(
            input=src,
            budget=budget,
            layers=tuple(results),
            final=current,
            input_tokens=input_tokens,
            sent_tokens=sent,
            forced=forced,
        )

    def quiet(self, view: tuple[Message, ...], budget: Budget, estimator: Sizer) -> bool:
        """Whether `run(view, budget, estimator)` (not forced) is known to fire no layer, without
        running it: every layer has a `quiet(view, budget, estimator)` that says so (a cheap test
        that implies `apply` leaves that view as it is, so the next layer gets it too); a layer
        without one, or one that cannot tell, makes the answer False. Then every layer's view is
        `view`, and its estimate before and after is `estimator`'s of `view`."""
        sizer: TokenMemo = memo(estimator)
        for layer in self.layers:
            quiet: Callable[[tuple[Message, ...], Budget, Sizer], bool] | None = getattr(layer, "quiet", None)
            if quiet is None or not quiet(view, budget, sizer):
                return False
        return True

    def __repr__(self) -> str:
        return f"Pipeline({' -> '.join(self.names) or 'empty'})"


def _find(result: ShapeResult, message_id: str) -> Message | None:
    for view in (result.input, *(layer.view for layer in result.layers)):
        for m in view:
            if m.id == message_id:
                return m
    return None


def explain(result: ShapeResult, message_id: str, why: Callable[[Source], str] | None = None) -> str:
    """One sentence: which layer changed the message and why, with the numbers; or why it was kept.

    "cleared by tool output clear: estimate 171,204 > trigger 167,000; 9th most recent compactable
    result (Read), only 5 kept"; "kept: pinned (task, priority 80)"; "unchanged: no layer fired
    (estimate 40,112 under trigger 167,000)". Several changes are joined with "; then".
    Pinned is the policy's rule, as the layers applied it (`result.budget.pins`).
    `why`: says why a pinned source is pinned, in the harness's terms (`policy.pin_reason`).
    """
    message = _find(result, message_id)
    if message is None:
        return f"{message_id}: not in this request's ledger"
    labels = {layer.name: layer.label for layer in result.layers}
    decisions = result.decisions_for(message_id)
    changes = [d for d in decisions if d.action.changed]
    if changes:
        return "; then ".join(
            f"{d.action.value} by {labels.get(d.layer, d.layer)}: {d.reason}" for d in changes
        )
    if result.budget.pins(message):
        said = f"kept: pinned ({pin_label(message.source)})"
        return f"{said}: {why(message.source)}" if why is not None else said
    kept = [d for d in decisions if d.action is Action.KEPT_RECENT]
    if kept:
        return f"kept by {labels.get(kept[-1].layer, kept[-1].layer)}: {kept[-1].reason}"
    fired = [layer for layer in result.layers if layer.fired]
    if fired:
        names = " and ".join(layer.label for layer in fired)
        return f"unchanged: {names} fired but left this message as it was"
    # Nothing fired, so every layer saw the input's estimate.
    tokens, trigger = result.input_tokens, result.budget.trigger
    if tokens <= trigger and not result.forced:
        word = "at" if tokens == trigger else "under"
        return f"unchanged: no layer fired (estimate {tokens:,} {word} trigger {trigger:,})"
    reasons = "; ".join(f"{layer.label}: {layer.reason}" for layer in result.layers)
    return f"unchanged: no layer fired ({reasons})"
