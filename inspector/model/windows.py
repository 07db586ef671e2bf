"""Context windows of known models: the models table (window and maximum output per model
family and generation, each with its source), for transcripts that do not state their own.

The harness rules by version (`inspector.harness_rules`) read the max output from it (the output
reserve of a rule); `--model` and the replay's window read `model_window`. Sources: `notes` =
`docs/notes/harness-versions.md`, `opencode-codex` = `docs/notes/opencode-codex.md`.
"""

from __future__ import annotations

from msgspec import Struct

CLAUDE_WINDOW = 200_000
CLAUDE_LONG_WINDOW = 1_000_000


class ModelSpec(Struct, frozen=True):
    """One model family and generation: its window and its maximum output.

    `prefix`: the start of a lower-cased model id (after any `provider/`); the first entry whose
    prefix matches wins, so longer prefixes come first. `max_output`: the most the API lets it
    write. `claude_code_output`: the max output tokens Claude Code asks for by default (2.1.88
    `getModelMaxOutputTokens`, notes §1.4): the output reserve of its rules is taken from that,
    not from the API's limit. `input_limit`: where the provider limits the input below the window
    (GPT-5: 272,000 of 400,000; Codex uses it as its window)."""

    prefix: str
    family: str
    window: int
    max_output: int
    source: str
    claude_code_output: int | None = None
    input_limit: int | None = None
    long_window: int | None = None
    """The 1M beta window, where the model has one (an id with `[1m]`, or a session past 200k)."""


MODELS: tuple[ModelSpec, ...] = (
    # Claude (notes §1.4: 2.1.88 src/utils/context.ts:149-210; CL:L3422 for Opus 4.6's 64k)
    ModelSpec("claude-opus-4-6", "Claude Opus 4.6", CLAUDE_WINDOW, 128_000,
              "notes §1.4 (context.ts:167-201; CL:L3422: default 64k from 2.1.77, upper 128k)",
              claude_code_output=64_000, long_window=CLAUDE_LONG_WINDOW),
    ModelSpec("claude-sonnet-4-6", "Claude Sonnet 4.6", CLAUDE_WINDOW, 128_000,
              "notes §1.4 (context.ts:167-201: 32,000 / 128,000)",
              claude_code_output=32_000, long_window=CLAUDE_LONG_WINDOW),
    ModelSpec("claude-opus-4-5", "Claude Opus 4.5", CLAUDE_WINDOW, 64_000,
              "notes §1.4 (context.ts: 32,000 / 64,000; #17660, #18843)", claude_code_output=32_000),
    ModelSpec("claude-sonnet-4-5", "Claude Sonnet 4.5", CLAUDE_WINDOW, 64_000,
              "notes §1.4 (matched by `sonnet-4`: 32,000 / 64,000; #9286's 45.0k buffer)",
              claude_code_output=32_000, long_window=CLAUDE_LONG_WINDOW),
    ModelSpec("claude-haiku-4-5", "Claude Haiku 4.5", CLAUDE_WINDOW, 64_000,
              "notes §1.4 (`haiku-4`: 32,000 / 64,000; before 2.1.21 assumed the same, notes §5 q4)",
              claude_code_output=32_000),
    ModelSpec("claude-opus-4-1", "Claude Opus 4.1", CLAUDE_WINDOW, 32_000,
              "notes §1.4 (32,000 / 32,000)", claude_code_output=32_000),
    ModelSpec("claude-opus-4", "Claude Opus 4", CLAUDE_WINDOW, 32_000,
              "notes §1.4 (32,000 / 32,000)", claude_code_output=32_000),
    ModelSpec("claude-sonnet-4", "Claude Sonnet 4", CLAUDE_WINDOW, 64_000,
              "notes §1.4 (32,000 / 64,000)", claude_code_output=32_000, long_window=CLAUDE_LONG_WINDOW),
    ModelSpec("claude-3-7-sonnet", "Claude Sonnet 3.7", CLAUDE_WINDOW, 64_000,
              "assumed: Anthropic's model table (64k output); Claude Code's own default not in the notes",
              claude_code_output=32_000),
    ModelSpec("claude-3-5", "Claude 3.5 (Sonnet, Haiku)", CLAUDE_WINDOW, 8_192,
              "notes §1.4 (1.0.34 bundle and context.ts: 8,192)", claude_code_output=8_192),
    ModelSpec("claude-3", "Claude 3 (Opus, Haiku)", CLAUDE_WINDOW, 4_096,
              "notes §1.4 (context.ts: 4,096)", claude_code_output=4_096),
    ModelSpec("claude-", "Claude (other)", CLAUDE_WINDOW, 32_000,
              "assumed: Claude Code's default for a model it has no entry for (32,000)",
              claude_code_output=32_000, long_window=CLAUDE_LONG_WINDOW),
    # OpenAI (opencode-codex §B3; notes §2.1: Codex models.json `context_window: 272000`)
    ModelSpec("gpt-4.1", "GPT-4.1", 1_047_576, 32_768, "notes §2.1 (049a61bcf: 1,047,576)"),
    ModelSpec("gpt-4o", "GPT-4o", 128_000, 16_384, "OpenAI model table"),
    ModelSpec("gpt-5", "GPT-5 family", 400_000, 128_000,
              "notes §2.1 (W = 272,000 input, maxOut 128,000: 2451b19d1; models.json context_window 272000)",
              input_limit=272_000),
    ModelSpec("codex", "codex-mini", 400_000, 128_000, "as GPT-5 (assumed)", input_limit=272_000),
    ModelSpec("o3", "o3", 200_000, 100_000, "notes §2.1 (o3/o4-mini 200k -> 180,000)"),
    ModelSpec("o4", "o4-mini", 200_000, 100_000, "notes §2.1 (o3/o4-mini 200k -> 180,000)"),
    ModelSpec("gpt-oss", "gpt-oss", 128_000, 32_768, "notes §2.1 (models.json: gpt-oss 128000)"),
    # Google
    ModelSpec("gemini-", "Gemini", 1_048_576, 65_536, "Google model table"),
)
"""Model families by id prefix, most specific first."""


def model_spec(model: str | None) -> ModelSpec | None:
    """The table's entry for a model id (any case, any `provider/` prefix), or None."""
    if not model:
        return None
    name = model.lower().split("/")[-1]
    for spec in MODELS:
        if name.startswith(spec.prefix):
            return spec
    return None


def model_window(model: str | None, observed_max: int = 0) -> int | None:
    """The window of `model` (from `MODELS`), or None when unknown.

    A model with a 1M beta window has it when the id carries `[1m]` or the session itself held
    more than the standard window (its id omits the beta); any other model whose session held more
    than its window had at least that much.
    """
    spec = model_spec(model)
    if spec is None:
        return None
    assert model is not None
    if spec.long_window is not None and ("[1m]" in model.lower() or observed_max > spec.window):
        return spec.long_window
    return max(spec.window, observed_max)


__all__ = ["CLAUDE_LONG_WINDOW", "CLAUDE_WINDOW", "MODELS", "ModelSpec", "model_spec", "model_window"]
