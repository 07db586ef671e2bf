"""Context shaping: the budget, groups and pins, one module per layer, the pipeline, policies.

Pure functions and small classes over immutable Messages; the ledger is never changed, every
layer returns a new view plus its decisions (DESIGN.md §2).
"""

from .auto_compact import SUMMARY_HEADER, AutoCompact, SummaryCache, summary_header
from .base import Action, Decision, Layer, LayerResult, Sizer, TokenMemo, memo
from .budget import Budget, affordable_groups, trigger_target
from .eager_clear import EAGER_STUB, EagerToolOutputClear
from .groups import Group, Unpaired, group_spans, pin_label, pins, unpaired
from .history_snip import OldHistorySnip
from .pipeline import Pipeline, ShapeResult, explain
from .policy import (
    LAYER_FACTORIES,
    NO_HISTORY_COMPACTION,
    OPENCOLLAB,
    PRESETS,
    Policy,
    PolicyError,
    load_policy,
    policy_from_dict,
    preset,
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
    "CLEARED_CONTENT",
    "DEFAULT_COMPACTABLE_TOOLS",
    "EAGER_STUB",
    "LAYER_FACTORIES",
    "NO_HISTORY_COMPACTION",
    "OPENCOLLAB",
    "OPENCOLLAB_TOOLS",
    "PRESETS",
    "SUMMARY_HEADER",
    "SUMMARY_PROMPT",
    "TOOL_ALIASES",
    "TRUNCATION_MARKER",
    "Action",
    "AutoCompact",
    "Budget",
    "Decision",
    "EagerToolOutputClear",
    "ExtractiveSummarizer",
    "Group",
    "Layer",
    "LayerResult",
    "ModelCall",
    "ModelSummarizer",
    "OldHistorySnip",
    "PerToolResultBudget",
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
    "is_compactable",
    "load_policy",
    "memo",
    "pin_label",
    "pins",
    "policy_from_dict",
    "preset",
    "register_preset",
    "summary_header",
    "trigger_target",
    "truncate",
    "unpaired",
]
