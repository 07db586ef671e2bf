"""Context shaping: the budget, groups and pins, one module per layer, the pipeline, policies.

Pure functions and small classes over immutable Messages; the ledger is never changed, every
layer returns a new view plus its decisions (docs/DESIGN.md §2).
"""

from .auto_compact import SUMMARY_HEADER, AutoCompact, SummaryCache, summary_header
from .base import Action, Decision, Layer, LayerResult, Sizer, TokenMemo, memo
from .budget import Budget, affordable_groups, trigger_target
from .claude_code import CLAUDE_CODE_TOOLS, FullCompact, LargeResultPreview, Microcompact, idle_minutes
from .codex import CodexCompact, MiddleTruncate, truncate_middle
from .eager_clear import EAGER_STUB, EagerToolOutputClear
from .groups import Group, Unpaired, group_spans, pin_label, pins, unpaired
from .history_snip import OldHistorySnip
from .opencode import OpencodeCompact, OpencodePrune
from .pinning import Pins
from .pipeline import Pipeline, ShapeResult, explain
from .policy import (
    CLAUDE_CODE,
    CODEX,
    LAYER_FACTORIES,
    NO_HISTORY_COMPACTION,
    OPENCODE,
    OPENCOLLAB,
    PRESET_FOR_FORMAT,
    PRESETS,
    TRIGGER_ESTIMATORS,
    Policy,
    PolicyError,
    load_policy,
    policy_from_dict,
    preset,
    preset_for_format,
    register_preset,
)
from .summarize import (
    SUMMARY_PROMPT,
    ExtractiveSummarizer,
    ModelCall,
    ModelSummarizer,
    RecordedSummarizer,
    Summarizer,
)
from .tool_budget import TRUNCATION_MARKER, PerToolResultBudget, truncate
from .tool_output_clear import CLEARED_CONTENT, ToolOutputClear
from .tools import DEFAULT_COMPACTABLE_TOOLS, OPENCOLLAB_TOOLS, TOOL_ALIASES, canonical_tool, is_compactable

__all__ = [
    "CLAUDE_CODE",
    "CLAUDE_CODE_TOOLS",
    "CLEARED_CONTENT",
    "CODEX",
    "DEFAULT_COMPACTABLE_TOOLS",
    "EAGER_STUB",
    "LAYER_FACTORIES",
    "NO_HISTORY_COMPACTION",
    "OPENCODE",
    "OPENCOLLAB",
    "OPENCOLLAB_TOOLS",
    "PRESETS",
    "PRESET_FOR_FORMAT",
    "SUMMARY_HEADER",
    "SUMMARY_PROMPT",
    "TOOL_ALIASES",
    "TRIGGER_ESTIMATORS",
    "TRUNCATION_MARKER",
    "Action",
    "AutoCompact",
    "Budget",
    "CodexCompact",
    "Decision",
    "EagerToolOutputClear",
    "ExtractiveSummarizer",
    "FullCompact",
    "Group",
    "LargeResultPreview",
    "Layer",
    "LayerResult",
    "Microcompact",
    "MiddleTruncate",
    "ModelCall",
    "ModelSummarizer",
    "OldHistorySnip",
    "OpencodeCompact",
    "OpencodePrune",
    "PerToolResultBudget",
    "Pins",
    "Pipeline",
    "Policy",
    "PolicyError",
    "RecordedSummarizer",
    "ShapeResult",
    "Sizer",
    "Summarizer",
    "SummaryCache",
    "TokenMemo",
    "ToolOutputClear",
    "Unpaired",
    "affordable_groups",
    "canonical_tool",
    "explain",
    "group_spans",
    "idle_minutes",
    "is_compactable",
    "load_policy",
    "memo",
    "pin_label",
    "pins",
    "policy_from_dict",
    "preset",
    "preset_for_format",
    "register_preset",
    "summary_header",
    "trigger_target",
    "truncate",
    "truncate_middle",
    "unpaired",
]
