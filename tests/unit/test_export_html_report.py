"""The HTML export reads like a report (issue 27): the context chart as inline SVG, what fills the
window at the chosen request, the findings linked to their messages, the ledger with its weights;
every figure the core's, every transcript text escaped, `--redact` applied."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from inspector.cli import main
from inspector.findings import find_all
from inspector.formats import load
from inspector.replay import Replay
from inspector.report import html_page
from inspector.report.export import export
from inspector.report.summary import replay_report
from tests.conftest import corpus_file
from tests.unit.test_export import SECRETS
from tests.unit.test_hardening_inputs import cc_assistant, cc_user, jsonl


class Page(HTMLParser):
    """The parts of a page the tests read: every tag, ids, links, the chart's polylines and lines,
    the composition rows, the findings rows, and the text outside tags."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.ids: list[str] = []
        self.polylines: dict[str, int] = {}
        self.lines: dict[str, list[dict[str, str | None]]] = {}
        self.groups: list[dict[str, str | None]] = []
        self.parts: list[dict[str, str | None]] = []
        self.total: dict[str, str | None] = {}
        self.findings: list[list[str]] = []
        """The hrefs of each row of the findings table."""
        self.text: list[str] = []
        self._in_findings = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        if a.get("id"):
            self.ids.append(str(a["id"]))
        cls = a.get("class") or ""
        if tag == "polyline":
            points = (a.get("points") or "").split()
            assert int(a.get("data-points") or -1) == len(points)
            self.polylines[cls] = len(points)
        elif tag == "line" and cls in ("trigger", "window"):
            self.lines.setdefault(cls, []).append(a)
        elif tag == "g" and cls == "compaction":
            self.groups.append(a)
        elif tag == "tr" and "data-part" in a:
            self.parts.append(a)
        elif tag == "tr" and cls == "total":
            self.total = a
        elif tag == "table" and cls == "findings":
            self._in_findings = True
        elif tag == "tr" and self._in_findings:
            self.findings.append([])
        elif tag == "a" and self._in_findings and self.findings:
            self.findings[-1].append(str(a.get("href")))

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_findings = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    assert main(list(args)) in (0, 1)  # (findings exits 1 when it found an error)
    return json.loads(capsys.readouterr().out)


CASES = [
    ("claude-code/spotter-fa812bfe", 127),  # the loop at 127, a compaction after 124
    ("claude-code/kesslerio-c7428042.jsonl", None),  # the last request
]


@pytest.mark.parametrize(("name", "step"), CASES)
def test_the_page_draws_the_reports_own_figures(
    name: str, step: int | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(corpus_file(name))
    steps = ["--step", str(step)] if step else []
    out = tmp_path / "page.html"
    assert main(["export", path, "--format", "html", *steps, "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    page = Page(text)
    if step is None:  # the page's request: the last
        step = len(_json(capsys, "report", path, "--json")["requests"])
    report = _json(capsys, "report", path, "--json", "--step", str(step))
    k = report["step"]
    n = len(report["requests"])
    # the chart: one point per request, raw and sent, the trigger and window lines, the compactions
    assert "script" not in page.tags and "img" not in page.tags and text.count("<svg") == 2
    assert page.polylines == {"raw": n, "sent": n}
    trigger = report["budget"]["trigger"]
    assert [line["data-value"] for line in page.lines["trigger"]] == [str(trigger)]
    assert [line["data-value"] for line in page.lines["window"]] == [str(report["budget"]["window"])]
    assert f"trigger {trigger:,}" in text
    compactions = [e for e in report["recorded_events"] if e["kind"] == "compaction"]
    assert [g["data-after"] for g in page.groups] == [str(e["after_request"]) for e in compactions]
    # what fills the window: the report's parts, adding up to the request's context
    comp = report["composition"]
    assert [(p["data-part"], int(p["data-raw"] or 0), int(p["data-sent"] or 0)) for p in page.parts] == [
        (p["key"], p["raw"], p["sent"]) for p in comp["parts"]
    ]
    used = [p for p in page.parts if p["data-space"] == "0"]
    context = report["requests"][k - 1]["context_tokens"]
    assert sum(int(p["data-raw"] or 0) for p in used) == int(page.total["data-total-raw"] or -1) == context
    assert (
        sum(int(p["data-sent"] or 0) for p in used)
        == int(page.total["data-total-sent"] or -1)
        == comp["sent"]
    )
    # the findings: each row links to its messages, every link lands on the page
    findings = _json(capsys, "findings", path, "--json")
    assert len(page.findings) == len(findings) + 1  # (the header row)
    rows = page.findings[1:]
    assert all(rows) and all(href.startswith("#msg-") for row in rows for href in row)
    ids = set(page.ids)
    assert len(ids) == len(page.ids)  # unique
    assert all(href[1:] in ids for row in rows for href in row)
    joined = " ".join(page.text)
    for f in findings:
        assert f["explanation"] in joined
    # the ledger of the chosen request: a row per message, each an anchor, with its weight
    assert f"Ledger at request {k} " in joined
    assert "Findings (" in joined and "What fills the window at request" in joined


def test_the_loop_finding_links_to_the_three_calls_in_the_ledger(tmp_path: Path) -> None:
    path = corpus_file("claude-code/spotter-fa812bfe")
    replay = Replay.open(load(str(path)))
    found = find_all(replay)
    loop = next(f for f in found if f.kind == "loop")
    assert loop.request == 127 and len(loop.message_ids) == 3
    # the first request whose ledger holds the three calls
    k = next(
        k
        for k in range(127, len(replay) + 1)
        if set(loop.message_ids) <= {m.id for m in replay.step(k).ledger}
    )
    page = Page(export(replay, "html", step=k, findings=found))
    ledger = replay.step(k).ledger
    assert {html_page.anchor_of(m.id) for m in ledger} <= set(page.ids)  # every ledger row an anchor
    weights = replay.step(k).weights
    text = " ".join(page.text)
    assert all(f"{weights[m.id]:,}" in text for m in ledger[:20])  # with its weight
    row = page.findings[1 + found.index(loop)]
    assert row == [f"#{html_page.anchor_of(mid)}" for mid in loop.message_ids]


HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _hostile_session(folder: Path, secret: str = "") -> Path:
    """A message id, a prompt, a tool name and a command that are markup; the same command three
    times (a loop finding, which quotes it), with `secret` in it."""
    command = f'{secret} echo "{HOSTILE}"'.strip()
    records = [cc_user('u1"><script>alert(2)</script>', None, f"please {HOSTILE}")]
    parent = records[0]["uuid"]
    for i in range(3):
        records.append(
            cc_assistant(
                f"a{i}",
                parent,
                f"m{i}",
                [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": command}}],
            )
        )
        records.append(
            cc_user(f"r{i}", f"a{i}", [{"type": "tool_result", "tool_use_id": f"t{i}", "content": HOSTILE}])
        )
        parent = f"r{i}"
    records.append(cc_assistant("end", parent, "mend", [{"type": "text", "text": f"done {HOSTILE}"}]))
    path = folder / "s.jsonl"
    path.write_bytes(jsonl(records))
    return path


def test_markup_in_a_transcript_is_shown_escaped_never_run(tmp_path: Path) -> None:
    path = _hostile_session(tmp_path)
    out = tmp_path / "page.html"
    assert main(["export", str(path), "--format", "html", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    page = Page(text)
    assert "script" not in page.tags and "img" not in page.tags
    assert "<script" not in text and "<img" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text  # shown, escaped
    assert f"please {HOSTILE}" in " ".join(page.text)  # and reads as the text it was
    # the loop finding links to its calls; the anchor of an id holding markup is inert and lands
    (loop,) = [row for row in page.findings[1:] if len(row) == 3]
    assert "loop" in " ".join(page.text) and all(href[1:] in page.ids for href in loop)
    odd = html_page.anchor_of('u1"><script>alert(2)</script>')
    assert odd in page.ids and all(c.isalnum() or c in "-_" for c in odd)


def test_redact_applies_to_the_page_findings_included(tmp_path: Path) -> None:
    secret = SECRETS["github token"]
    path = _hostile_session(tmp_path, secret=f"GH_TOKEN={secret}")
    replay = Replay.open(load(str(path)))
    found = find_all(replay)
    assert any(secret in f.explanation for f in found)  # the loop quotes the command
    plain = export(replay, "html", findings=found)
    assert secret in plain
    redacted = export(replay, "html", redact=True, findings=found)
    assert secret not in redacted and secret[:20] not in redacted
    assert "[redacted: github token]" in redacted
    page = Page(redacted)
    assert all(href[1:] in page.ids for row in page.findings[1:] for href in row)


def test_a_session_too_long_to_shape_whole_draws_the_sent_line_at_its_request_only() -> None:
    from inspector.samples import sample_path

    replay = Replay.open(load(str(sample_path("long-session"))))
    n = len(replay)
    work = html_page.shaping_work(replay)
    assert work == sum(r.ledger_len + 1 for r in replay.transcript.requests) and html_page.shaping_fits(
        replay
    )
    whole, partial = html_page.sent_series(replay, 7)
    assert not partial and sorted(whole) == list(range(1, n + 1))
    assert whole[7] == replay.step(7).result.sent_tokens
    part, partial = html_page.sent_series(replay, 7, budget=work - 1)
    assert partial and part == {7: whole[7]}
    page = Page(export(replay, "html", step=7))
    assert page.polylines == {"raw": n, "sent": n} and "drawn at request" not in " ".join(page.text)
    facts = html_page.PageFacts(harness="Claude Code", version=None, sent=part, partial=True)
    report = replay_report(replay, step=7)
    svg = html_page.chart_svg(report, facts)
    assert svg.count("<polyline") == 2 and 'class="sent" data-points="1"' in svg and "<circle" in svg
    assert "drawn at request 7 only: shaping all" in html_page._chart_caption(report, facts)
    assert not html_page.shaping_fits(replay, budget=work - 1)
