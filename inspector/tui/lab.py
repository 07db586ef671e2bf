"""The what-if lab: change the window and the policy's parameters, replay, save as a policy file."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import msgspec
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Switch

from inspector.shaping import Policy, PolicyError
from inspector.shaping.policy import LAYER_FACTORIES, policy_from_dict
from inspector.tui.text import line, notify
from inspector.tui.viewmodel import parse_window

DEFAULT_SAVE_PATH = "./context-policy.toml"
"""Where "save" writes by default: the current directory, never next to the transcript."""
SUFFIX = "+what-if"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PolicyError(f"cannot save a non-finite number ({value})")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise PolicyError(f"cannot save a value of type {type(value).__name__}")


def policy_toml(policy: Policy) -> str:
    """The policy as a TOML policy file that `load_policy` reads back to an equal policy.

    Every parameter is written (over the `opencollab` base); parameters that are unset (None) are
    left out, as the base leaves them unset, except the summarizer, written "none"."""
    lines = [
        "# written by context-inspector's what-if lab (load it with --policy PATH)",
        f"name = {_toml_value(policy.name)}",
        'base = "opencollab"',
    ]
    for key, value in msgspec.structs.asdict(policy).items():
        if key == "name":
            continue
        if value is None:
            if key == "summarizer":
                lines.append('summarizer = "none"')
            continue
        lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def save_policy(policy: Policy, path: str) -> Path:
    """Write `policy_toml(policy)` to `path` (relative: to the current directory); the path written."""
    target = Path(os.path.expanduser(path or DEFAULT_SAVE_PATH))
    if target.is_dir():
        target = target / "context-policy.toml"
    target.write_text(policy_toml(policy), encoding="utf-8")
    return target


def layer_label(name: str, policy: Policy) -> str:
    """A layer's label, as the main screen's columns say it ("tool output clear"); its name where
    it has none."""
    factory = LAYER_FACTORIES.get(name)
    try:
        label = getattr(factory(policy, None), "label", None) if factory is not None else None
    except Exception:  # a layer that cannot be built without its summarizer: its name will do
        label = None
    return label if isinstance(label, str) else name


def _optional_int(text: str, what: str) -> int | None:
    raw = text.strip().replace(",", "").replace("_", "")
    if raw in ("", "auto"):
        return None
    if not raw.isdigit():
        raise PolicyError(f"{what}: give a whole number, or leave it empty for the default")
    return int(raw)


@dataclass(frozen=True)
class LabResult:
    policy: Policy
    window: int


class LabScreen(ModalScreen[LabResult | None]):
    """A form over the current policy and window; apply replays with them, save writes a TOML."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "save", "Save policy"),
    ]

    def __init__(self, policy: Policy, window: int | None) -> None:
        super().__init__(classes="prompt", id="lab")
        self.policy = policy
        self.window = window
        self.saved: Path | None = None

    def compose(self) -> ComposeResult:
        p = self.policy
        with Vertical(classes="dialog", id="lab-dialog"):
            yield Label(line(f"What if… (over {p.name})"), classes="dialog-title")
            with VerticalScroll(id="lab-form"):
                yield from self._field(
                    "window (tokens)", "lab-window", f"{self.window or ''}", "e.g. 200000, 200k"
                )
                yield from self._field("target ratio", "lab-target", f"{p.target_ratio}", "0 < ratio ≤ 1")
                yield from self._field(
                    "results kept",
                    "lab-results",
                    "" if p.results_kept is None else str(p.results_kept),
                    "auto",
                )
                yield from self._field(
                    "groups kept", "lab-groups", "" if p.groups_kept is None else str(p.groups_kept), "auto"
                )
                yield from self._field("tool-result budget", "lab-budget", str(p.tool_result_budget), "chars")
                yield Label("layers", classes="lab-heading")
                names = list(p.layers) + [n for n in LAYER_FACTORIES if n not in p.layers]
                for name in names:
                    with Horizontal(classes="lab-row"):
                        yield Switch(value=name in p.layers, id=f"layer-{name}", animate=False)
                        yield Label(line(layer_label(name, p)), classes="lab-layer")
                yield from self._field("save as", "lab-path", DEFAULT_SAVE_PATH, DEFAULT_SAVE_PATH)
            with Horizontal(id="lab-buttons"):
                yield Button("Apply", id="lab-apply", variant="primary")
                yield Button("Save policy", id="lab-save")
            yield Label(
                line("enter or Apply replays · ctrl+s saves the policy · esc cancels"),
                id="lab-hint",
                classes="dialog-hint",
            )

    def _field(self, label: str, id: str, value: str, placeholder: str) -> ComposeResult:
        with Horizontal(classes="lab-row"):
            yield Label(line(label), classes="lab-label")
            yield Input(value=value, placeholder=placeholder, id=id)

    def on_mount(self) -> None:
        for field in self.query(Input):
            field.cursor_blink = False
        self.query_one("#lab-window", Input).focus()

    def _value(self, id: str) -> str:
        return self.query_one(f"#{id}", Input).value

    def build(self) -> LabResult:
        """The policy and window the form says (PolicyError, one line, when a field is wrong)."""
        window = parse_window(self._value("lab-window"))
        if window is None:
            raise PolicyError("window: give a size in tokens, e.g. 200000, 200k or 1m")
        try:
            target = float(self._value("lab-target").strip())
        except ValueError:
            raise PolicyError("target ratio: give a number between 0 and 1") from None
        if not (math.isfinite(target) and 0 < target <= 1):
            raise PolicyError("target ratio: give a number between 0 and 1")
        budget = _optional_int(self._value("lab-budget"), "tool-result budget")
        layers = [
            name
            for name in list(self.policy.layers) + [n for n in LAYER_FACTORIES if n not in self.policy.layers]
            if self.query_one(f"#layer-{name}", Switch).value
        ]
        changes: dict[str, Any] = {
            "target_ratio": target,
            "results_kept": _optional_int(self._value("lab-results"), "results kept"),
            "groups_kept": _optional_int(self._value("lab-groups"), "groups kept"),
            "tool_result_budget": self.policy.tool_result_budget if budget is None else budget,
            "layers": layers,
        }
        current = msgspec.structs.asdict(self.policy)
        same = all(current[k] == (tuple(v) if isinstance(v, list) else v) for k, v in changes.items())
        name = self.policy.name if same else self.policy.name.removesuffix(SUFFIX) + SUFFIX
        data = {k: v for k, v in {**current, **changes}.items() if v is not None}
        data["name"] = name
        if current.get("summarizer") is None:
            data["summarizer"] = "none"
        # over the opencollab base, which leaves unset what is left out here
        return LabResult(policy_from_dict(data, where="what-if", default_name=name), window)

    def _problem(self, text: str) -> None:
        hint = self.query_one("#lab-hint", Label)
        hint.update(line(text))
        hint.add_class("-error")

    def action_apply(self) -> None:
        try:
            result = self.build()
        except PolicyError as exc:
            self._problem(str(exc))
            return
        self.dismiss(result)

    def action_save(self) -> None:
        try:
            result = self.build()
            target = save_policy(result.policy, self._value("lab-path").strip())
        except PolicyError as exc:
            self._problem(str(exc))
            return
        except OSError as exc:
            self._problem(f"cannot save: {exc.strerror or exc}")
            return
        self.saved = target
        hint = self.query_one("#lab-hint", Label)
        hint.remove_class("-error")
        hint.update(line(f"saved {target} (load it with --policy)"))
        notify(self, f"saved the policy to {target}", title="what-if")

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "lab-path":
            self.action_save()
        else:
            self.action_apply()

    @on(Button.Pressed, "#lab-apply")
    def apply_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_apply()

    @on(Button.Pressed, "#lab-save")
    def save_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_save()

    def action_cancel(self) -> None:
        self.dismiss(None)
