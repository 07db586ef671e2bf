"""Write the published JSON Schemas from the models they describe (run from the project root):

    python schemas/generate.py

- `report.schema.json`: `context-inspector report --json` (msgspec's schema of `Report`,
  `inspector/report/summary.py`);
- `policy-file.schema.json`: a policy file for `--policy FILE`, either form (pydantic's schema of
  the door's models, `inspector/shaping/policy_file.py`).

`tests/test_schemas.py` fails when a committed file differs from what this writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec

HERE = Path(__file__).resolve().parent


def report_schema() -> dict[str, Any]:
    from inspector.report.summary import Report

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "context-inspector report --json",
        **msgspec.json.schema(Report),
    }


def policy_schema() -> dict[str, Any]:
    from inspector.shaping.policy_file import policy_file_schema

    return policy_file_schema()


SCHEMAS = {"report.schema.json": report_schema, "policy-file.schema.json": policy_schema}
"""File name -> what makes its schema."""


def text(schema: dict[str, Any]) -> str:
    """A schema as its file holds it: indented by two spaces, keys in their order, one final newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(folder: Path = HERE) -> int:
    for name, make in SCHEMAS.items():
        (folder / name).write_text(text(make()), encoding="utf-8")
        print(f"wrote {folder / name}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main())
