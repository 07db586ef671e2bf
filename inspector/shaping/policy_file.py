"""The policy file at the door: pydantic models of what a user writes (TOML or JSON), validated
whole, every problem reported with its location in one line; then the msgspec `Policy` the
shaping uses is built from it (`inspector.shaping.policy._build`).

Two forms (docs/DESIGN.md §2.5): flat (`name`, `base` and parameters) and OpenCollab's team file (a
`context` table holding `policy` and parameters, or only a preset name). The what-if lab saves
the flat form (`inspector.tui.lab.policy_toml`), so its files come in here too.

Imported only when such a file (or a lab form) is read: pydantic costs ~0.15 s to import, which
`report --json` without `--policy FILE` never pays. The value checks are the `Policy`'s own
(`policy._CHECKS`), so a file and a struct made in code cannot disagree on what is valid.
`schemas/policy-file.schema.json` is `policy_file_schema()`, checked by a test.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from pydantic_core import PydanticCustomError

from inspector.door import Problem, one_line, problem_text
from inspector.harness_rules import HARNESS_NAMES

from . import policy as _policy
from .policy import PARAMETER_KEYS

__all__ = ["ContextTable", "PolicyFile", "TeamFile", "parse_policy", "policy_file_schema"]


def _number(kind: type[int] | type[float]) -> Any:
    """A number of `kind` as a file may write it (20000, 20000.0, "20000"), never true/false."""
    name = kind.__name__

    def no_bool(value: Any) -> Any:
        if isinstance(value, bool):
            raise PydanticCustomError(f"{name}_type", "expected {expected}", {"expected": name})
        return value

    return BeforeValidator(no_bool)


Count = Annotated[int, _number(int)]
Ratio = Annotated[float, _number(float)]


def _layer(name: str) -> str:
    problem = _policy._layer_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name


def _preset_name(name: str) -> str:
    try:
        _policy.preset(name)
    except _policy.PolicyError as exc:
        raise ValueError(str(exc)) from None
    return name


def _non_empty(name: str) -> str:
    if not name.strip():
        raise ValueError("must be a non-empty string")
    return name


class Parameters(BaseModel):
    """The parameters a policy file may set over its base; each left out keeps the base's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = Field("", description="What the policy is for (shown in the app).")
    layers: list[
        Annotated[
            str,
            AfterValidator(_layer),
            WithJsonSchema({"type": "string", "enum": [*_policy.LAYER_FACTORIES]}),
        ]
    ] = Field(
        default_factory=list,
        description="The pipeline's layers, in order: " + ", ".join(_policy.LAYER_FACTORIES) + ".",
    )
    tool_result_budget: Count = Field(
        0, description="Characters a tool result may keep (the per-tool budget; at least 256)."
    )
    compactable_tools: list[str] = Field(
        default_factory=list, description="The tools whose results the clearing layers may clear."
    )
    results_kept: Count | None = Field(
        None, description="Tool results kept uncleared (default: from the window)."
    )
    groups_kept: Count | None = Field(
        None, description="Recent groups kept whole (default: from the window)."
    )
    eager_keep: Count = Field(0, description="Tool results the eager clear keeps.")
    summarizer: str | None = Field(
        None,
        description="The compaction's summarizer: extractive, recorded, model, or none (compaction off).",
    )
    output_reserve: Count = Field(0, description="Tokens kept for the answer (below the window).")
    safety_buffer: Count = Field(0, description="Tokens between the trigger and the output reserve.")
    target_ratio: Ratio = Field(0, description="What compaction aims at, as a share of the trigger (0-1).")
    blocking_buffer: Count | None = Field(None, description="Tokens below the window where requests block.")
    trigger_estimator: str = Field(
        "", description="The estimator trigger decisions use: " + ", ".join(_policy.TRIGGER_ESTIMATORS) + "."
    )
    max_output: Count | None = Field(None, description="Caps the output reserve (the harness's max output).")
    trigger_ratio: Ratio | None = Field(None, description="The trigger as a share of the window (0-1].")
    idle_gap_minutes: Ratio | None = Field(None, description="Microcompact's time trigger, in minutes.")
    rules: str | None = Field(
        None,
        description="The harness whose rules by version set the lines ("
        + ", ".join(HARNESS_NAMES)
        + ", none).",
    )

    @field_validator("*", mode="after")
    @classmethod
    def _value(cls, value: Any, info: ValidationInfo) -> Any:
        """The `Policy`'s own check of this field (layers: each is checked as an item already)."""
        name = info.field_name or ""
        check = _policy._layers_repeat_problem if name == "layers" else _policy._CHECKS.get(name)
        if check is not None and name in _policy.PARAMETER_KEYS:
            problem = check(tuple(value) if isinstance(value, list) else value)
            if problem is not None:
                raise ValueError(problem)
        return value

    def given(self) -> dict[str, Any]:
        """The parameters the file set, lists as tuples (what `Policy` holds)."""
        return {
            k: tuple(v) if isinstance(v, list) else v
            for k, v in self.model_dump().items()
            if k in self.model_fields_set and k in _policy.PARAMETER_KEYS
        }


class PolicyFile(Parameters):
    """A flat policy file: a name, the preset it starts from, and parameters over that preset."""

    name: Annotated[str, AfterValidator(_non_empty)] | None = Field(
        None, description="The policy's name (default: the file's name without its suffix)."
    )
    base: Annotated[str, AfterValidator(_preset_name)] = Field(
        "opencollab",
        description="The preset the parameters apply to: " + ", ".join(sorted(_policy.PRESETS)) + ".",
    )


class ContextTable(Parameters):
    """A team file's `context` table: the preset and parameters over it."""

    policy: Annotated[str, AfterValidator(_preset_name)] = Field(
        "opencollab", description="The preset the parameters apply to."
    )


def _name_as_table(value: Any) -> Any:
    if isinstance(value, str):
        return {"policy": value}
    if not isinstance(value, Mapping):
        raise ValueError("must be a policy name or a table")
    return value


class TeamFile(BaseModel):
    """OpenCollab's team-file form: `context = "preset"` or a `[context]` table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context: Annotated[
        ContextTable, BeforeValidator(_name_as_table, json_schema_input_type=str | ContextTable)
    ]


def _allowed(team: bool) -> dict[tuple[str | int, ...], tuple[str, ...]]:
    if team:
        return {(): ("context",), ("context",): _policy.CONTEXT_KEYS}
    return {(): _policy.FILE_KEYS}


def _problems(exc: ValidationError, team: bool) -> list[Problem]:
    allowed = _allowed(team)
    return [problem_text(error, allowed) for error in exc.errors(include_url=False)]


def parse_policy(data: Mapping[str, Any], where: str, default_name: str) -> _policy.Policy:
    """The policy `data` (a file's parsed content) describes, or PolicyError naming every problem
    with its location, in one line."""
    team = "context" in data
    try:
        if team:
            table = TeamFile.model_validate(data).context
            if isinstance(data["context"], str):
                return _policy.preset(data["context"])  # the preset itself
            base = _policy.preset(table.policy)
            return _policy._build(base, base.name, table.given(), where)
        flat = PolicyFile.model_validate(data)
    except ValidationError as exc:
        raise _policy.PolicyError(one_line(where, _problems(exc, team))) from None
    base = _policy.preset(flat.base)
    return _policy._build(base, flat.name if flat.name is not None else default_name, flat.given(), where)


def policy_file_schema() -> dict[str, Any]:
    """The JSON Schema of a policy file, either form (`schemas/policy-file.schema.json`).

    A parameter left out keeps its base's value, so the parameters show no default of their own."""
    schema = TypeAdapter(PolicyFile | TeamFile).json_schema()
    for model in schema["$defs"].values():
        for key, prop in model.get("properties", {}).items():
            if key in PARAMETER_KEYS:
                prop.pop("default", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "context-inspector policy file",
        "description": "A policy file (TOML, or JSON for .json), read by --policy FILE: "
        "the flat form (name, base, parameters) or the team-file form (a context table).",
        **schema,
    }
