"""Where `report --json` spends its time, phase by phase, in a process of its own.

python -m benchmarks.phases PATH    # {"imports": s, "load": s, "replay_open": s, "report": s, "json": s}
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    t0 = time.perf_counter()
    from inspector.formats import load
    from inspector.model.sanitize import json_text
    from inspector.replay import Replay
    from inspector.report.summary import replay_report

    t1 = time.perf_counter()
    transcript = load(argv[0])
    t2 = time.perf_counter()
    replay = Replay.open(transcript)
    t3 = time.perf_counter()
    report = replay_report(replay)
    t4 = time.perf_counter()
    json_text(report)
    t5 = time.perf_counter()
    out = {
        "imports": t1 - t0,
        "load": t2 - t1,
        "replay_open": t3 - t2,
        "report": t4 - t3,
        "json": t5 - t4,
        "messages": len(transcript.messages),
        "requests": len(transcript.requests),
    }
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
