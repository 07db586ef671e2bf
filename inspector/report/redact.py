"""Remove secrets from text before it leaves the machine (`export --redact`).

`redact(text)` replaces each API key, token, private key and URL password of a common shape with
a marker that says what was there, e.g. `[redacted: github token]`; the text around it stays.
Shapes (a key must end a word; the generic shapes, plain `sk-...`, `ghp_...` and `AKIA...`, must
also start one, so identifiers that merely contain such letters are not touched):

- Anthropic `sk-ant-...`; OpenAI `sk-proj-...`, `sk-svcacct-...`, `sk-admin-...` and plain `sk-...`
- GitHub `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` tokens and fine-grained `github_pat_...`
- AWS access key ids `AKIA...` / `ASIA...` and secret keys assigned to `aws_secret_access_key`
  (or `secret_access_key`, `SecretAccessKey`): the name stays, the value goes
- Slack `xoxb-`, `xoxp-`, `xoxa-`, `xoxs-` (and `xoxe-`, `xoxr-`) tokens; Google `AIza...` keys
- bearer tokens: `Authorization: Bearer <token>` and any `Bearer <token>` of 16+ characters
- private key blocks `-----BEGIN ... PRIVATE KEY----- ... -----END ... PRIVATE KEY-----`, and a
  block cut off before its END line (its key material to the end of the base64 lines)
- passwords in URLs `scheme://user:password@host`: the user and host stay

Redaction is a safety net for exports, not a guarantee: a secret of another shape passes.
`redact_value` applies it to every string (and mapping key) inside a JSON-like value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_B = r"(?<![A-Za-z0-9_-])"
"""Not preceded by a key character: the secret starts a word."""
_E = r"(?![A-Za-z0-9_-])"
"""Not followed by a key character: the secret ends a word."""


def _marker(kind: str) -> str:
    return f"[redacted: {kind}]"


_RULES: list[tuple[re.Pattern[str], str]] = []


def _rule(pattern: str, kind: str, flags: int = 0) -> None:
    """A secret shape; its groups `pre` and `post`, where present, are kept around the marker."""
    _RULES.append((re.compile(pattern, flags), _marker(kind)))


# private keys first: their base64 body could hold anything
_rule(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    "private key",
    re.DOTALL,
)
_rule(  # cut off before its END line: the BEGIN line, headers and base64 lines that follow
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[ \t]*\r?\n(?:[A-Za-z-]+:[^\n]*|[A-Za-z0-9+/=]+(?=[ \t]*(?:\r?\n|$))))*",
    "private key",
)
# distinctive prefixes match even glued to the text before them ("key:sk-ant-...", "pysk-ant-...")
_rule(r"sk-ant-[A-Za-z0-9_-]{16,}" + _E, "anthropic key")
_rule(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{16,}" + _E, "openai key")
_rule(_B + r"sk-[A-Za-z0-9]{20,}" + _E, "openai key")
_rule(r"github_pat_[A-Za-z0-9_]{22,}" + _E, "github token")
_rule(_B + r"gh[pousr]_[A-Za-z0-9]{30,}" + _E, "github token")
_rule(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])", "aws access key")
_rule(
    r"(?P<pre>(?:aws_?)?secret_?access_?key[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])",
    "aws secret key",
    re.IGNORECASE,
)
_rule(r"xox[abeprs]-[A-Za-z0-9-]{10,}" + _E, "slack token")
_rule(r"AIza[0-9A-Za-z_-]{35}" + _E, "google api key")
_rule(
    r"(?P<pre>authorization[\"']?\s*[:=]\s*[\"']?bearer\s+)[A-Za-z0-9._~+/-]+=*",
    "bearer token",
    re.IGNORECASE,
)
_rule(r"(?P<pre>\bbearer\s+)[A-Za-z0-9._~+/-]{16,}=*", "bearer token", re.IGNORECASE)
_rule(r"(?P<pre>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@\"'<>]+:)[^\s/@\"'<>]+(?P<post>@)", "password")


def _replacer(marker: str) -> Callable[[re.Match[str]], str]:
    def replace(m: re.Match[str]) -> str:
        groups = m.groupdict()
        return (groups.get("pre") or "") + marker + (groups.get("post") or "")

    return replace


_COMPILED = [(regex, _replacer(marker)) for regex, marker in _RULES]


def redact(text: str) -> str:
    """`text` with every secret of a known shape replaced by `[redacted: <kind>]`."""
    for regex, replace in _COMPILED:
        text = regex.sub(replace, text)
    return text


def redact_value(value: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, strings, numbers) with every string redacted,
    mapping keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value
