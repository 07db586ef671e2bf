"""Remove secrets from text before it leaves the machine (`export --redact`).

`redact(text)` replaces each secret of a known shape with a marker that says what was there, e.g.
`[redacted: github token]`; the text around it stays (a key's name, a URL's user and host, a
header's name). `redact_value` does it to every string inside a JSON-like value, and redacts the
whole value of a mapping key that names a secret (`{"password": "..."}`). `redact_cut` is for text
that was already cut to a length before it reached us (a reader's 120-character preview): the word
the cut went through could be the head of a secret too short to be recognised, so it goes too.

The shapes are data: `RULES`, one entry per shape, each naming the rule of the secret scanners it
follows (gitleaks' default config, Yelp detect-secrets' plugins) or, where neither has one, the
provider's documented format. Why a table here rather than a package: detect-secrets (the one
maintained Python scanner on PyPI) pulls `requests` and `pyyaml`, reports a line's secret values
rather than where they are, lacks several shapes (Anthropic, Hugging Face, Google, bearer headers,
a key block cut before its END line) and matches prefixes without word bounds; gitleaks is a Go
binary whose rules live in its TOML config; ggshield asks GitGuardian's servers. The shapes here
follow those rules and are tested on a corpus of realistic lines (tests/corpus/test_redact_corpus.py).

What is covered, in order (earlier rules first, so a marker names the most specific kind):

- private key blocks (PEM, OpenSSH, PGP, PuTTY's private lines), whole, cut before their END line,
  or on one line with `\\n` escapes (a service-account JSON);
- tokens with a distinctive prefix: Anthropic, OpenAI, Stripe, GitHub, GitLab, npm, PyPI, Hugging
  Face, Slack (tokens and webhooks), AWS key ids, Google API keys and OAuth secrets, SendGrid,
  Twilio, Mailchimp, DigitalOcean, Shopify, Databricks, Vault, Terraform, Linear, Postman, Sentry,
  Grafana, Doppler, age, Groq, Replicate, xAI, Perplexity, Telegram bots; JWTs;
- AWS secret keys by their name (also `aws configure set aws_secret_access_key VALUE`) or beside
  an access key id (the credentials CSV); Azure storage account keys;
- HTTP credentials: `Authorization:` values of any scheme, `Bearer` tokens, cookie values,
  `curl -u user:password`, `--password VALUE`, `mysql -pVALUE`, `sshpass -p VALUE`, and passwords
  in URLs (`scheme://user:password@host`, the user may be empty, the password may hold `@`);
- values assigned to a name that says secret (`DB_PASSWORD=`, `SECRET_KEY = '...'`,
  `"access_token": "..."`, `X-API-Key: ...`, `client_secret:`): the name stays, the value goes,
  unless it is a placeholder (`$VAR`, `${VAR}`, `<token>`, `os.environ[...]`, `None`, a number);
- CSV rows under a header with a password, secret or token column.

Time is linear in the text whatever it holds: every scan is bounded or stops where the next one
would start, names are judged in code (`secret_name`) rather than by a pattern that could
backtrack, and each rule is tried only on text holding one of its trigger words.

Redaction is a safety net for exports, not a guarantee: a secret of another shape passes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


def marker(kind: str) -> str:
    """What a secret of `kind` is replaced with."""
    return f"[redacted: {kind}]"


@dataclass(frozen=True, slots=True)
class Rule:
    """One secret shape. The match's group `secret`, where the pattern has one, is what goes; the
    rest of the match stays (a name, a scheme, a user). Otherwise the whole match goes."""

    kind: str
    """The marker's word: `[redacted: <kind>]`."""
    source: str
    """The scanner rule this shape follows (gitleaks rule id, detect-secrets plugin) or the
    provider format it is taken from."""
    pattern: str
    triggers: tuple[str, ...]
    """Lowercase pieces of which the text must hold one for the pattern to be tried (cheap: most
    text holds none, and 60 patterns over every message would be most of an export's time)."""
    flags: int = 0
    gate: str | None = None
    """A cheaper pattern the lowercased text must match for `pattern` to be tried."""
    procedure: Callable[[str, str], str] | None = None
    """Replaces the secrets itself (text, marker -> text), for a shape one pattern cannot take
    in one linear pass; `pattern` then finds where to look."""


_B = r"(?<![A-Za-z0-9_-])"
"""Not preceded by a key character: the secret starts a word."""
_E = r"(?![A-Za-z0-9_-])"
"""Not followed by a key character: the secret ends a word."""
_BR = r"(?:\r?\n|(?:\\+r)?\\+n)"
"""A line break, real or escaped as `\\n` in a JSON string (a key pasted into one line)."""
_BEGIN = r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
_END = r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
_PEM_HEADER = r"(?:Proc-Type|DEK-Info|Comment|Version):[^\n\\]*"
_AWS_ID = r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}"

# -- keyword assignments (gitleaks generic-api-key, detect-secrets KeywordDetector) ---------------
SECRET_WORDS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "credential", "credentials")
"""A name's last word that says secret, even glued to a prefix (`PGPASSWORD`, `csrftoken`)."""
SHORT_WORDS = frozenset({"pass", "pwd", "pw", "creds"})
"""Words that say secret only as a whole word of the name (`DB_PASS`, `mysqlPwd`; not `bypass`)."""
PAIRS = frozenset({"api", "access", "auth", "private", "signing", "encryption", "master", "secret", "client"})
"""First words of two-word secret names: `api key`, `secret key`, `client secret`, `auth key`."""
SUFFIXES = frozenset({"key", "base", "value", "hash", "string", "str", "b64", "enc"})
"""A last word that may follow the one that says secret (`SECRET_KEY_BASE`, `password_hash`)."""
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_NAME = r"(?<![A-Za-z0-9_.-])(?P<key>[A-Za-z0-9_.-]{1,80})"
"""A name: the whole run of name characters (bounded; a name is never tried inside a word)."""
_ASSIGN = r"\\*[\"']?[ \t]*(?:=>|:=|=|:)[ \t]*"
_NAME_ASSIGN = _NAME + _ASSIGN
_VALUE = re.compile(
    r"(?P<q>\\*[\"'`])(?P<qsecret>[^\"'`\n\\]{3,500}?)(?P=q)|(?P<secret>[^\s\"'`<>\\]{2,499}[^\s\"'`<>\\,;])"
)
"""What is assigned: a quoted string (quotes may be escaped, as in JSON inside JSON), or a run
up to a space or a quote (a trailing comma or semicolon is not part of it)."""


def _words(name: str) -> list[str]:
    """The words of a name, lowercased: split at `_ . -` and where the case changes."""
    return [w.lower() for w in _WORD.findall(name)]


def _says_secret(words: list[str]) -> bool:
    if not words:
        return False
    last = words[-1]
    if last in SHORT_WORDS or last.endswith(SECRET_WORDS):
        return True
    if len(words) >= 2 and words[-2] in PAIRS and last in ("key", "secret"):
        return True
    return last.endswith(("accesskey", "secretkey", "privatekey", "authkey", "signingkey", "masterkey"))


def secret_name(name: str) -> bool:
    """Whether a name says it holds a secret: `password`, `DB_PASSWORD`, `apiKey`, `X-API-Key`,
    `SECRET_KEY_BASE`, `aws_secret_access_key`, `_authToken`; not `max_tokens`, `token_type`,
    `bypass`, `primary_key`."""
    words = _words(name)
    if _says_secret(words):
        return True
    return len(words) >= 2 and words[-1] in SUFFIXES and _says_secret(words[:-1])


_PLACEHOLDER_WORDS = frozenset(
    [
        "true",
        "false",
        "null",
        "none",
        "nil",
        "undefined",
        "yes",
        "no",
        "on",
        "off",
        "required",
        "optional",
        "string",
        "str",
        "int",
        "bool",
        "number",
        "object",
        "any",
        "empty",
        "redacted",
        "hidden",
        "masked",
        "changeme",
        "example",
        "env",
    ]
)
_CODE_REFERENCE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+$|[()\[\]{}]|^(?:os\.|process\.env)")
_NUMBER = re.compile(r"^[+-]?\d[\d,_]*(?:\.\d+)?(?:[eE][+-]?\d+)?[A-Za-z%]{0,3}$")
_PATH = re.compile(r"^(?:~?/|\.\.?/|[A-Za-z]:\\)")
_MASK = re.compile(r"^(.)\1*$")


def placeholder(value: str, key: str = "") -> bool:
    """Whether a value assigned to a secret's name is not a secret: a variable, a template, a
    reference in code, a number, a path, a mask, a word such as `None`, or the name itself."""
    v = value.strip().rstrip(",;")
    if len(v) < 3 or v.startswith(("$", "%", "{", "<", "[", "(", "*")):
        return True
    low = v.lower()
    return bool(
        low in _PLACEHOLDER_WORDS
        or low == key.lower()
        or secret_name(v)
        or _CODE_REFERENCE.search(v)
        or _NUMBER.match(v)
        or _PATH.match(v)
        or _MASK.match(v)
        or low.startswith(("redacted", "your", "xxx", "<", "example"))
    )


_NAME_ASSIGN_RE = re.compile(_NAME_ASSIGN)


def _keyword_values(text: str, mark: str) -> str:
    """Each value assigned to a name that says secret (`secret_name`), unless a placeholder. A name
    that says nothing is passed over, and the search goes on right after it (its value may hold
    the next assignment: `timeout=30,password=...`)."""
    out: list[str] = []
    last = pos = 0
    while True:
        m = _NAME_ASSIGN_RE.search(text, pos)
        if m is None:
            break
        key = m.group("key")
        pos = m.end("key")
        if not secret_name(key):
            continue
        v = _VALUE.match(text, m.end())
        if v is None:
            continue
        group = "qsecret" if v.group("qsecret") is not None else "secret"
        value = v.group(group)
        if placeholder(value, key) or value.startswith("[redacted: "):
            continue
        out.append(text[last : v.start(group)])
        out.append(mark)
        last = pos = v.end(group)
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


_AUTH_SCHEMES = r"basic|bearer|token|digest|negotiate|ntlm|apikey|api-key|key|sso-key|dsn|otp|hmac"


def _r(
    kind: str,
    source: str,
    pattern: str,
    triggers: Iterable[str],
    flags: int = 0,
    gate: str | None = None,
    procedure: Callable[[str, str], str] | None = None,
) -> Rule:
    return Rule(kind, source, pattern, tuple(triggers), flags, gate, procedure)


RULES: tuple[Rule, ...] = (
    # -- private keys first: their base64 body could hold anything --------------------------------
    _r(
        "private key",
        "gitleaks private-key; detect-secrets PrivateKeyDetector",
        rf"{_BEGIN}[^-]*(?:-(?!----)[^-]*)*{_END}",
        ["private key"],
    ),
    _r(  # cut off before its END line: the BEGIN line, headers and the base64 lines that follow
        "private key",
        "gitleaks private-key (a block cut before its END line)",
        rf"{_BEGIN}(?:[ \t]*{_BR}(?:{_PEM_HEADER}|[A-Za-z0-9+/=]+(?=[ \t]*(?:{_BR}|$|[\"',}}\]]))))*(?:(?:\\+r)?\\+n)?",
        ["private key"],
    ),
    _r(
        "private key",
        "detect-secrets PrivateKeyDetector (PuTTY-User-Key-File)",
        rf"(?P<pre>Private-Lines:[ \t]*\d+)(?P<secret>(?:[ \t]*{_BR}[A-Za-z0-9+/=]+)+)",
        ["private-lines"],
    ),
    _r(
        "private key",
        "gitleaks age-secret-key",
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        ["age-secret-key"],
    ),
    # -- tokens with a distinctive prefix (match even glued to the text before them) -------------
    _r(
        "anthropic key",
        "gitleaks anthropic-api-key, anthropic-admin-api-key",
        r"sk-ant-[A-Za-z0-9_-]{16,}" + _E,
        ["sk-ant-"],
    ),
    _r(
        "openai key",
        "gitleaks openai-api-key; detect-secrets OpenAIDetector",
        r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{16,}" + _E,
        ["sk-"],
    ),
    _r("openai key", "gitleaks openai-api-key (legacy sk-...)", _B + r"sk-[A-Za-z0-9]{20,}" + _E, ["sk-"]),
    _r(
        "stripe key",
        "gitleaks stripe-access-token; detect-secrets StripeDetector",
        _B + r"(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,99}" + _E,
        ["k_live_", "k_test_", "k_prod_"],
    ),
    _r(
        "stripe key",
        "Stripe webhook signing secret (whsec_)",
        _B + r"whsec_[A-Za-z0-9]{24,}" + _E,
        ["whsec_"],
    ),
    _r(
        "github token",
        "gitleaks github-fine-grained-pat",
        r"github_pat_[A-Za-z0-9_]{22,}" + _E,
        ["github_pat_"],
    ),
    _r(
        "github token",
        "gitleaks github-pat, github-oauth, github-app-token, github-refresh-token; detect-secrets GitHubTokenDetector",
        _B + r"gh[pousr]_[A-Za-z0-9]{30,}" + _E,
        ["gh"],
    ),
    _r(
        "gitlab token",
        "gitleaks gitlab-pat, gitlab-ptt, gitlab-rrt, ...; detect-secrets GitLabTokenDetector",
        _B + r"(?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|glagent|gloas)-[A-Za-z0-9_-]{20,}" + _E,
        ["gl"],
    ),
    _r(
        "gitlab token",
        "gitleaks gitlab-runner-registration-token",
        r"GR1348941[A-Za-z0-9_-]{20,}" + _E,
        ["gr1348941"],
    ),
    _r(
        "npm token",
        "gitleaks npm-access-token; detect-secrets NpmDetector",
        _B + r"npm_[A-Za-z0-9]{36}" + _E,
        ["npm_"],
    ),
    _r(
        "pypi token",
        "gitleaks pypi-upload-token; detect-secrets PypiTokenDetector",
        r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        ["pypi-"],
    ),
    _r(
        "hugging face token",
        "gitleaks huggingface-access-token, huggingface-organization-api-token",
        _B + r"(?:hf_|api_org_)[A-Za-z0-9]{30,}" + _E,
        ["hf_", "api_org_"],
    ),
    _r(
        "slack webhook",
        "gitleaks slack-webhook-url; detect-secrets SlackDetector",
        r"(?P<pre>hooks\.slack\.com/(?:services|workflows|triggers)/)(?P<secret>[A-Za-z0-9+/_-]{20,})",
        ["hooks.slack.com"],
    ),
    _r(
        "slack token",
        "gitleaks slack-bot-token, slack-user-token, slack-legacy-*, slack-config-*; detect-secrets SlackDetector",
        r"(?:xoxe\.)?xox[abeoprs]-[A-Za-z0-9-]{10,}" + _E,
        ["xox"],
    ),
    _r("slack token", "gitleaks slack-app-token", r"(?i:xapp)-\d-[A-Za-z0-9-]{10,}" + _E, ["xapp-"]),
    _r(
        "aws secret key",
        "detect-secrets AWSKeyDetector (a secret beside its access key id: the credentials CSV)",
        rf"(?P<pre>(?<![A-Za-z0-9]){_AWS_ID}[\"']?[ \t]*[,;\t|:][ \t]*[\"']?)(?P<secret>[A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+=])",
        ["akia", "asia", "abia", "acca", "a3t"],
    ),
    _r(
        "aws access key",
        "gitleaks aws-access-token; detect-secrets AWSKeyDetector",
        rf"(?<![A-Za-z0-9]){_AWS_ID}(?![A-Za-z0-9])",
        ["akia", "asia", "abia", "acca", "a3t"],
    ),
    _r(
        "aws secret key",
        "detect-secrets AWSKeyDetector (by name; also `aws configure set NAME VALUE`)",
        r"(?P<pre>(?:aws_?)?secret_?access_?key[\"']?(?:[ \t]*[:=][ \t]*|[ \t]+)[\"']?)"
        r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        ["secret"],
        re.IGNORECASE,
    ),
    _r(
        "azure storage key",
        "detect-secrets AzureStorageKeyDetector",
        r"(?P<pre>AccountKey=)(?P<secret>[A-Za-z0-9+/=]{40,100})",
        ["accountkey="],
    ),
    _r("google api key", "gitleaks gcp-api-key", r"AIza[0-9A-Za-z_-]{35}" + _E, ["aiza"]),
    _r(
        "google oauth secret",
        "Google OAuth client secret (GOCSPX-)",
        r"GOCSPX-[A-Za-z0-9_-]{20,}" + _E,
        ["gocspx-"],
    ),
    _r(
        "google oauth token", "Google OAuth access token (ya29.)", _B + r"ya29\.[0-9A-Za-z_-]{20,}", ["ya29."]
    ),
    _r(
        "sendgrid key",
        "gitleaks sendgrid-api-token; detect-secrets SendGridDetector",
        r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}" + _E,
        ["sg."],
    ),
    _r(
        "twilio key",
        "gitleaks twilio-api-key; detect-secrets TwilioKeyDetector",
        _B + r"SK[0-9a-fA-F]{32}" + _E,
        ["sk"],
    ),
    _r("mailchimp key", "detect-secrets MailchimpDetector", _B + r"[0-9a-f]{32}-us\d{1,2}" + _E, ["-us"]),
    _r(
        "digitalocean token",
        "gitleaks digitalocean-pat, digitalocean-access-token, digitalocean-refresh-token",
        _B + r"do[opr]_v1_[a-f0-9]{64}" + _E,
        ["_v1_"],
    ),
    _r(
        "shopify token",
        "gitleaks shopify-access-token, shopify-shared-secret, ...",
        _B + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _E,
        ["shp"],
    ),
    _r("databricks token", "gitleaks databricks-api-token", _B + r"dapi[a-f0-9]{32}(?:-\d)?" + _E, ["dapi"]),
    _r(
        "vault token",
        "gitleaks vault-service-token, vault-batch-token",
        _B + r"hv[sb]\.[A-Za-z0-9_-]{24,}" + _E,
        ["hvs.", "hvb."],
    ),
    _r(
        "terraform token",
        "gitleaks hashicorp-tf-api-token",
        r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}",
        [".atlasv1."],
    ),
    _r("linear key", "gitleaks linear-api-key", _B + r"lin_api_[A-Za-z0-9]{40}" + _E, ["lin_api_"]),
    _r("postman key", "gitleaks postman-api-token", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", ["pmak-"]),
    _r(
        "sentry token",
        "gitleaks sentry-org-token, sentry-user-token",
        _B + r"sntr[ysu]_[A-Za-z0-9+/=_-]{30,}",
        ["sntr"],
    ),
    _r(
        "grafana token",
        "gitleaks grafana-service-account-token, grafana-cloud-api-token",
        _B + r"gl(?:sa|c)_[A-Za-z0-9+/_=-]{32,}",
        ["glsa_", "glc_"],
    ),
    _r(
        "doppler token",
        "gitleaks doppler-api-token",
        r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}",
        ["dp."],
    ),
    _r(
        "docker token",
        "Docker Hub personal access token (dckr_pat_)",
        _B + r"dckr_pat_[A-Za-z0-9_-]{20,}" + _E,
        ["dckr_pat_"],
    ),
    _r("groq key", "Groq API key (gsk_)", _B + r"gsk_[A-Za-z0-9]{40,}" + _E, ["gsk_"]),
    _r("replicate token", "Replicate API token (r8_)", _B + r"r8_[A-Za-z0-9]{30,}" + _E, ["r8_"]),
    _r("xai key", "xAI API key (xai-)", _B + r"xai-[A-Za-z0-9]{40,}" + _E, ["xai-"]),
    _r("perplexity key", "Perplexity API key (pplx-)", _B + r"pplx-[A-Za-z0-9]{40,}" + _E, ["pplx-"]),
    _r(
        "telegram bot token",
        "gitleaks telegram-bot-api-token; detect-secrets TelegramBotTokenDetector",
        r"(?<![0-9])\d{5,16}:A[A-Za-z0-9_-]{34}" + _E,
        [":a"],
    ),
    # -- HTTP credentials ---------------------------------------------------------------------
    _r(
        "bearer token",
        "gitleaks generic bearer",
        r"(?P<pre>\bbearer[ \t]+)(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)",
        ["bearer"],
        re.IGNORECASE,
    ),
    _r(
        "authorization",
        "gitleaks curl-auth-header (any Authorization header's credentials)",
        r"(?P<pre>\b(?:proxy-)?authorization\\*[\"']?[ \t]*[:=][ \t]*\\*[\"']?"
        rf"(?:(?:{_AUTH_SCHEMES})[ \t]+)?)(?!(?:{_AUTH_SCHEMES})\b)(?P<secret>[A-Za-z0-9._~+/:,=-]{{6,}})",
        ["authorization"],
        re.IGNORECASE,
    ),
    _r(
        "jwt",
        "gitleaks jwt; detect-secrets JwtTokenDetector",
        _B + r"eyJ[A-Za-z0-9_-]{10,}={0,2}\.eyJ[A-Za-z0-9_-]{4,}={0,2}\.[A-Za-z0-9_-]*={0,2}",
        ["eyj"],
    ),
    _r(
        "password",
        "gitleaks curl-auth-user",
        r"(?P<pre>\bcurl\b(?:[^\nc]|c(?!url\b)){0,2000}?[ \t](?:-u|--user|--proxy-user)(?:=|[ \t]+)[\"']?[^\s:\"']*:)(?P<secret>[^\s\"']{3,})",
        ["curl"],
    ),
    _r(
        "password",
        "gitleaks generic-api-key (a --password option)",
        r"(?P<pre>(?<![\w-])--(?:http-|proxy-|ftp-|db-)?pass(?:word)?(?:=|[ \t]+)[\"']?)(?P<secret>[^\s\"'$<{]{3,})",
        ["--"],
    ),
    _r(
        "password",
        "detect-secrets KeywordDetector (a .netrc entry)",
        r"(?P<pre>\bmachine[ \t]+\S+(?:[ \t]+login[ \t]+\S+)?[ \t]+password[ \t]+)(?P<secret>\S{3,})",
        ["machine"],
    ),
    _r(
        "password",
        "mysql -pPASSWORD",
        r"(?P<pre>\bmysql(?:dump|admin)?\b(?:[^\nm]|m(?!ysql)){0,2000}?[ \t]-p)(?P<secret>[^\s\"'$]{3,})",
        ["mysql"],
    ),
    _r(
        "password",
        "sshpass -p PASSWORD",
        r"(?P<pre>\bsshpass[ \t]+-p[ \t]*[\"']?)(?P<secret>[^\s\"'$]{3,})",
        ["sshpass"],
    ),
    _r(
        "password",
        "detect-secrets BasicAuthDetector (scheme://user:password@host)",
        r"(?P<pre>\b[a-zA-Z][a-zA-Z0-9+.-]{0,30}://[^\s/:@\"'<>]{0,200}:)(?P<secret>[^\s/\"'<>]{1,300})(?=@[^\s@/\"'<>]{1,300})",
        ["://"],
    ),
    # -- a value assigned to a name that says secret --------------------------------------------
    _r(
        "secret",
        "gitleaks generic-api-key; detect-secrets KeywordDetector",
        _NAME_ASSIGN,
        ["pass", "pwd", "pw", "secret", "token", "key", "cred"],
        procedure=_keyword_values,
        gate=r"(?:pass|pw|secret|token|key|cred)[a-z0-9_.-]{0,60}\\*[\"']?[ \t]*[:=]",
    ),
)


@dataclass(frozen=True, slots=True)
class _Compiled:
    rule: Rule
    regex: re.Pattern[str]
    groups: tuple[str, ...]
    """The pattern's secret groups, in the order they are looked at."""
    gate: re.Pattern[str] | None


def _compile(rule: Rule) -> _Compiled:
    regex = re.compile(rule.pattern, rule.flags)
    groups = tuple(g for g in ("qsecret", "secret") if g in regex.groupindex)
    return _Compiled(rule, regex, groups, re.compile(rule.gate) if rule.gate else None)


_COMPILED = tuple(_compile(r) for r in RULES)
_TRIGGERS = tuple(sorted({t for r in RULES for t in r.triggers}))


def _apply(c: _Compiled, text: str) -> str:
    mark = marker(c.rule.kind)
    if c.rule.procedure is not None:
        return c.rule.procedure(text, mark)
    out: list[str] = []
    last = 0
    for m in c.regex.finditer(text):
        span = next(((m.start(g), m.end(g)) for g in c.groups if m.start(g) >= 0), m.span())
        if text.startswith("[redacted: ", span[0]):
            continue  # an earlier rule's marker: already gone
        out.append(text[last : span[0]])
        out.append(mark)
        last = span[1]
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


# -- cookies and CSV rows: structures a single pattern does not take apart ----------------------
_COOKIE = re.compile(
    r"(?P<pre>(?:\b(?i:set-cookie|cookie)\\*[\"']?[ \t]*:|\bcurl\b(?:[^\nc]|c(?!url\b)){0,2000}?[ \t](?:-b|--cookie))[ \t]*\\*[\"']?)"
    r"(?P<body>[^\n\"'\\]+)"
)
_COOKIE_ATTRIBUTES = frozenset(
    [
        "path",
        "domain",
        "expires",
        "max-age",
        "samesite",
        "secure",
        "httponly",
        "priority",
        "partitioned",
        "version",
        "comment",
    ]
)


def _cookies(text: str) -> str:
    """Every cookie value (Cookie:, Set-Cookie:, `curl -b`) of 6+ characters: session ids are
    credentials (gitleaks generic-api-key covers them only by name)."""
    if "cookie" not in text.lower() and "curl" not in text:
        return text

    def body(m: re.Match[str]) -> str:
        pairs = m.group("body").split(";")
        for i, pair in enumerate(pairs):
            name, eq, value = pair.partition("=")
            v = value.strip()
            if (
                eq
                and name.strip().lower() not in _COOKIE_ATTRIBUTES
                and len(v) >= 6
                and not v.startswith(("[redacted", "$"))
            ):
                pairs[i] = f"{name}={marker('cookie')}"
        return m.group("pre") + ";".join(pairs)

    return _COOKIE.sub(body, text)


_CSV_SECRET_COLUMN = re.compile(
    r"(?i)(?<![a-z])(?:pass(?:word|wd)?|secret|token|api[ _-]?key|private[ _-]?key|credentials?)(?![a-z])"
)
_CSV_CELL = re.compile(r"^[\w \t().-]{1,40}$")


def _csv(text: str) -> str:
    """CSV rows under a header naming a password, secret or token column: that column's cells
    (an exported credentials file; detect-secrets KeywordDetector reads such columns by name)."""
    if "," not in text or not _CSV_SECRET_COLUMN.search(text):
        return text
    lines = text.split("\n")
    i = 0
    changed = False
    while i < len(lines):
        cells = lines[i].rstrip("\r").split(",")
        columns = [
            j for j, c in enumerate(cells) if _CSV_SECRET_COLUMN.search(c) and not re.search(r"(?i)\bid\b", c)
        ]
        if (
            len(cells) < 2
            or not columns
            or not all(_CSV_CELL.match(c.strip().strip('"')) for c in cells if c.strip())
        ):
            i += 1
            continue
        j = i + 1
        while j < len(lines):
            row = lines[j].rstrip("\r").split(",")
            if len(row) != len(cells):
                break
            for col in columns:
                value = row[col].strip().strip('"')
                if value and not value.startswith("[redacted") and not placeholder(value):
                    row[col] = marker("password" if "pass" in cells[col].lower() else "secret")
                    changed = True
            lines[j] = ",".join(row) + ("\r" if lines[j].endswith("\r") else "")
            j += 1
        i = j
    return "\n".join(lines) if changed else text


def redact(text: str) -> str:
    """`text` with every secret of a known shape replaced by `[redacted: <kind>]`."""
    if not text:
        return text
    low = text.lower()
    found = {t for t in _TRIGGERS if t in low}
    if found:
        for c in _COMPILED:
            if not found.isdisjoint(c.rule.triggers) and (c.gate is None or c.gate.search(low)):
                text = _apply(c, text)
    text = _cookies(text)
    return _csv(text)


def redact_cut(text: str, limit: int) -> str:
    """`text`, which may have been cut to `limit` characters before it reached us, redacted; when
    it is that long, its last word goes too (the cut may have gone through a secret, whose head
    no pattern recognises: `sk-ant-api03-Xy7`), and an ellipsis says so."""
    out = redact(text)
    if len(text) < limit or _ENDS_WITH_MARKER.search(out):
        return out
    head, sep, _ = out.rstrip().rpartition(" ")
    return head + " …" if sep else "…"


_ENDS_WITH_MARKER = re.compile(r"\[redacted: [a-z ]+\]\s*$")


def redact_value(value: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, strings, numbers) with every string redacted,
    mapping keys included; a string under a key that names a secret goes whole."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if isinstance(k, str) and isinstance(v, str) and secret_name(k) and not placeholder(v, k):
                out[redact(k)] = marker("secret")
            else:
                out[redact(k) if isinstance(k, str) else k] = redact_value(v)
        return out
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value
