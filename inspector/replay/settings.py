"""What a run is asked to show: one `RunSettings`, built once from the command line and passed
whole to the replay (`Replay.from_settings`) and the app (`run_app`).

The window is resolved here, once (`RunSettings.window_for`, `resolve_window`): a window given
(`--window`, the app's window field, a bundled sample's own) wins; else the window of `--model`,
unless the transcript states its own; else the transcript's, or its model's. Where it came from is
a `WindowSource`, which the report writes as its value (`"--window"`, `"transcript"`, ...).
"""

from __future__ import annotations

from enum import StrEnum

from msgspec import Struct
from msgspec.structs import replace

from inspector.model import Transcript
from inspector.model.windows import model_window
from inspector.settings import DEFAULT_ESTIMATOR
from inspector.shaping import Policy, PolicyError, load_policy
from inspector.shaping.policy import preset_for_format
from inspector.tokens.harness import harness_window


class WindowSource(StrEnum):
    """Where the window a replay shapes against came from (the report's `window_source`)."""

    GIVEN = "--window"
    """Given by the user: `--window`, or the app's window field."""
    MODEL_GIVEN = "--model"
    """The window of the model the user named (`--model`), the transcript stating none."""
    SAMPLE = "sample"
    """A bundled sample's (or scenario's) own window."""
    TRANSCRIPT = "transcript"
    """The window the transcript states (Codex: `harness_window`)."""
    MODEL = "model"
    """The window of the model the transcript names."""
    UNKNOWN = "unknown"
    """None known."""


INFERRED_WINDOW = frozenset({WindowSource.TRANSCRIPT, WindowSource.MODEL, WindowSource.UNKNOWN})
"""Window sources read from the transcript (looked at again as a followed file grows); any other
source is a window someone gave."""

CHECKED_WINDOW = frozenset({WindowSource.GIVEN, WindowSource.MODEL_GIVEN})
"""Window sources a user chose: such a window must leave room for the policy's reserves (a
sample's own window is known to)."""


def resolve_policy(policy: str | Policy | None, transcript: Transcript | None = None) -> Policy:
    """The named policy; by default the preset of the harness that wrote the transcript."""
    if isinstance(policy, Policy):
        return policy
    if policy is None:
        return preset_for_format(transcript.format if transcript is not None else None)
    try:
        return load_policy(policy)
    except PolicyError:
        raise
    except OSError as exc:
        raise PolicyError(f"cannot read policy {policy}: {exc.strerror or exc}") from None


def resolve_window(
    transcript: Transcript, window: int | None, *, observed: int | None = None, model: str | None = None
) -> tuple[int | None, WindowSource]:
    """The window to shape against, and where it came from.

    A transcript that states its window wins over the model's; Codex states 95% of it
    (`harness_window` gives the window itself: 258,400 stated -> 272,000). `observed`: the
    largest context the transcript reported, where the caller knows it already. `model`: the
    model to take the window of in place of the one the transcript names (`--model`).
    """
    if window is not None:
        return window, WindowSource.GIVEN
    stated = harness_window(transcript)
    if stated is not None:
        return stated, WindowSource.TRANSCRIPT
    if observed is None:
        observed = max([u.context for r in transcript.requests if (u := r.usage) is not None], default=0)
    found = model_window(model or transcript.model, observed)
    if found is None:
        return None, WindowSource.UNKNOWN
    return found, WindowSource.MODEL if model is None else WindowSource.MODEL_GIVEN


class RunSettings(Struct, frozen=True):
    """The settings of one run, as the user gave them (nothing resolved against a transcript)."""

    policy: str | Policy | None = None
    """A preset name, a policy file, a Policy; None: the preset of the harness that wrote the
    transcript."""
    window: int | None = None
    """The window given (`--window`, a sample's own); None: resolved from `model` or the transcript."""
    window_source: WindowSource = WindowSource.GIVEN
    """What a given `window` is: `GIVEN` or `SAMPLE`."""
    model: str | None = None
    """`--model`: the model whose window to use where the transcript states none."""
    step: int | None = None
    """The request to start at or show (`--step`); None: the command's default (the last)."""
    follow: bool | None = None
    """Follow the file as it grows; None: when it changed in the last minute (the app)."""
    session: str | None = None
    """`--session ID`: the session of a path that holds several; None: the newest."""
    estimator: str = DEFAULT_ESTIMATOR
    """The local estimate calibration starts from (`inspector.tokens.get_estimator`)."""

    def policy_for(self, transcript: Transcript | None) -> Policy:
        """The policy of this run for `transcript`."""
        return resolve_policy(self.policy, transcript)

    def window_for(self, transcript: Transcript) -> tuple[int | None, WindowSource]:
        """The window of this run for `transcript`, and where it came from (the one resolution)."""
        if self.window is not None:
            return self.window, self.window_source
        return resolve_window(transcript, None, model=self.model)

    def pinned(self, transcript: Transcript) -> RunSettings:
        """These settings with the window `--model` gives for `transcript` made a given one (the
        app then keeps it as the file grows); unchanged when the transcript states its window."""
        if self.window is not None or self.model is None:
            return self
        window, source = self.window_for(transcript)
        if source is not WindowSource.MODEL_GIVEN:
            return self
        return replace(self, window=window, window_source=source)

    @property
    def checked_window(self) -> bool:
        """Whether a window given here must be checked against the policy's reserves."""
        return self.window is not None and self.window_source in CHECKED_WINDOW


__all__ = [
    "CHECKED_WINDOW",
    "DEFAULT_ESTIMATOR",
    "INFERRED_WINDOW",
    "RunSettings",
    "WindowSource",
    "resolve_policy",
    "resolve_window",
]
