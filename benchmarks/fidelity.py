"""`python -m benchmarks.fidelity [PATH ...]`: how many recorded auto compactions the default
policy predicts at the recorded request, per harness and version.

Each transcript (default: every session of `../shared/corpus/`) is opened as `report` opens it: the
preset of the harness that wrote it, the rule of the version it records, the window it states or
its model's, no `--window` or `--policy`. For every recorded compaction the harness decided on
itself (`auto`; manual ones are listed, not counted) it prints the request it came after, the
harness's estimate at the check before and at the compaction, and the line; then one figure per
version: "N of M predicted at the recorded request". Where `FACTS.json` sits beside the corpus,
the compactions it lists that the reader did not find are counted as missed (a file the reader
cannot read yet predicts nothing), and a corpus file it does not list (a synthetic fixture, such
as a compaction with a made-up `preTokens`) is shown but not counted. `--json` prints the same as
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from inspector.formats import LoaderError, load
from inspector.harness_rules import FORMAT_HARNESS, HARNESS_NAMES, recorded_version
from inspector.replay import Replay
from inspector.replay.fidelity import fidelity
from inspector.shaping import PolicyError

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
SKIP_PARTS = ("subagents",)
"""Files that are not sessions of their own (a Claude Code session's subagents, its compaction call)."""


@dataclass
class Row:
    """One recorded compaction beside the prediction."""

    file: str
    harness: str
    version: str | None
    trigger: str | None
    after_request: int | None
    predicted_after: int | None
    estimate_before: int | None
    estimate: int | None
    pre_tokens: int | None
    line: int | None
    predicted: bool
    counted: bool
    note: str = ""


@dataclass
class Summary:
    rows: list[Row] = field(default_factory=list)
    rules: dict[str, str] = field(default_factory=dict)
    """File -> the rule that set its line."""
    errors: dict[str, str] = field(default_factory=dict)

    def by_version(self) -> dict[str, tuple[int, int]]:
        """"Claude Code 2.0.22" -> (predicted, counted)."""
        out: dict[str, tuple[int, int]] = {}
        for r in self.rows:
            if not r.counted:
                continue
            key = f"{r.harness} {r.version or '(version not recorded)'}"
            n, m = out.get(key, (0, 0))
            out[key] = (n + int(r.predicted), m + 1)
        return dict(sorted(out.items()))


def corpus_sessions(root: Path = CORPUS) -> list[Path]:
    if not root.is_dir():
        return []
    found = [
        p
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix in (".jsonl", ".json") and p.name != "FACTS.json"
        and not any(part in SKIP_PARTS for part in p.relative_to(root).parts)
    ]
    return found


def _facts(root: Path) -> dict[str, dict[str, object]]:
    path = root / "FACTS.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _name(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def measure(paths: Sequence[Path], root: Path = CORPUS) -> Summary:
    summary = Summary()
    known = _facts(root)
    for path in paths:
        name = _name(path, root)
        try:
            tr = load(path)
            replay = Replay.open(tr)
            f = fidelity(replay)
        except (LoaderError, PolicyError, OSError, ValueError) as exc:
            summary.errors[name] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            continue
        harness_key = FORMAT_HARNESS.get(tr.format)
        harness = HARNESS_NAMES[harness_key] if harness_key else tr.format
        version = recorded_version(tr)
        if f.rule:
            summary.rules[name] = f.rule
        unlisted = bool(known) and name not in known and path.resolve().is_relative_to(root.resolve())
        for e in f.events:
            if e.kind != "compaction" or e.recorded_after_request is None:
                continue
            summary.rows.append(
                Row(
                    file=name,
                    harness=harness,
                    version=version,
                    trigger=e.trigger,
                    after_request=e.recorded_after_request,
                    predicted_after=e.simulated_after_request,
                    estimate_before=e.previous_harness_estimate,
                    estimate=e.harness_estimate,
                    pre_tokens=e.pre_tokens,
                    line=e.threshold,
                    predicted=e.match,
                    counted=e.counted and not unlisted,
                    note="not in FACTS.json (synthetic or unchecked), not counted" if unlisted else e.note,
                )
            )
        got = known.get(name)
        fact: dict[str, object] = got if isinstance(got, dict) else {}
        recorded = fact.get("compactions")
        if isinstance(recorded, list):
            missing = [c for c in recorded if isinstance(c, dict) and c.get("trigger") == "auto"][
                sum(1 for r in summary.rows if r.file == name and r.trigger == "auto") :
            ]
            fact_version = fact.get("version")
            for c in missing:
                summary.rows.append(
                    Row(
                        file=name,
                        harness=HARNESS_NAMES.get(str(fact.get("format")), str(fact.get("format"))),
                        version=str(fact_version) if fact_version else version,
                        trigger="auto",
                        after_request=int(c["after_request"]) if c.get("after_request") is not None else None,
                        predicted_after=None,
                        estimate_before=None,
                        estimate=None,
                        pre_tokens=int(c["pre_tokens"]) if c.get("pre_tokens") is not None else None,
                        line=None,
                        predicted=False,
                        counted=True,
                        note=f"in FACTS.json, not found by the reader (read as {tr.format})",
                    )
                )
    return summary


def _n(v: int | None) -> str:
    return "—" if v is None else f"{v:,}"


def render(summary: Summary) -> str:
    lines = []
    for r in summary.rows:
        mark = "✓" if r.predicted else ("✗" if r.counted else "·")
        lines.append(
            f"{mark} {r.file} ({r.harness} {r.version or '?'}) {r.trigger or 'unknown'} compaction after "
            f"request {_n(r.after_request)}: predicted after {_n(r.predicted_after)}; estimate "
            f"{_n(r.estimate_before)} before, {_n(r.estimate)} at it (preTokens {_n(r.pre_tokens)}), "
            f"line {_n(r.line)}" + ("" if r.counted else " — not counted")
        )
        if r.file in summary.rules and (r.predicted or r.counted):
            lines.append(f"    {summary.rules[r.file]}")
    for name, err in summary.errors.items():
        lines.append(f"! {name}: {err}")
    lines.append("")
    total_n = total_m = 0
    for key, (n, m) in summary.by_version().items():
        lines.append(f"fidelity {key}: {n} of {m} recorded auto compactions predicted at the recorded request")
        total_n += n
        total_m += m
    lines.append(f"fidelity: {total_n} of {total_m} recorded auto compactions predicted at the recorded request")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fidelity", description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="*", type=Path, help="transcripts (default: the shared corpus)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    paths = list(args.paths) or corpus_sessions()
    if not paths:
        print(f"python -m benchmarks.fidelity: no transcripts given and no corpus at {CORPUS}", file=sys.stderr)
        return 2
    summary = measure(paths)
    if args.json:
        by = {k: {"predicted": n, "recorded": m} for k, (n, m) in summary.by_version().items()}
        print(json.dumps({"rows": [asdict(r) for r in summary.rows], "by_version": by, "errors": summary.errors}, ensure_ascii=False))
    else:
        print(render(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
