"""Regenerate the bundled samples and scenarios, or write one custom transcript.

The command line of the generators (`tools.samples.generate` for the general samples and custom
transcripts, `tools.samples.scripted` for the teaching scenarios). It lives in its own module so
that neither generator imports the other's caller: `scripted` builds on `generate`, and this
module on both.

    python -m tools.samples.regenerate --out inspector/samples      # every registered sample and scenario
    python -m tools.samples.regenerate --requests 2000 --seed 3 --out big.jsonl
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

from inspector.samples import SAMPLES, SCENARIOS
from tools.samples.generate import GeneratedInfo, generate_claude_code, generate_sample
from tools.samples.scripted import generate_scenario


def _describe(info: GeneratedInfo) -> str:
    return (
        f"{info.path}: {info.requests} requests, {info.tool_calls} tool calls, {info.lines} lines, "
        f"{info.bytes:,} bytes, context {info.first_context:,} -> {info.peak_context:,} tokens"
    )


def main(argv: Iterable[str] | None = None) -> int:
    """Command line: regenerate every registered sample and scenario, or write one custom transcript."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.samples.regenerate",
        description="Write deterministic synthetic Claude Code transcripts.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for the registered samples (default: the package folder), or the "
        "output file when --requests is given",
    )
    parser.add_argument(
        "--requests", type=int, default=None, help="write one custom transcript with N requests"
    )
    parser.add_argument("--seed", type=int, default=7, help="random seed of a custom transcript (default 7)")
    parser.add_argument("--session-id", default=None, help="sessionId of a custom transcript")
    parser.add_argument(
        "--target-peak-tokens",
        type=int,
        default=None,
        help="steer a custom transcript's last context size to about this many tokens",
    )
    parser.add_argument("--scenario", choices=("feature", "bugfix"), default=None)
    args = parser.parse_args(None if argv is None else list(argv))
    if args.requests is not None:
        if args.out is None:
            parser.error("--out FILE is required with --requests")
        info = generate_claude_code(
            args.out,
            requests=args.requests,
            seed=args.seed,
            session_id=args.session_id,
            target_peak_tokens=args.target_peak_tokens,
            scenario=args.scenario,
        )
        print(_describe(info))
        return 0
    for name in SAMPLES:
        print(_describe(generate_sample(name, args.out)))
    for name in SCENARIOS:
        print(_describe(generate_scenario(name, args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
