"""Realistic lines a tool's output holds, each with the secrets in it (fakes of the real shapes),
and ordinary lines redaction must leave as they are. Used by tests/corpus/test_redact_corpus.py."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    name: str
    line: str
    secrets: tuple[str, ...]


def _shape(name: str, template: str, *secrets: str) -> Shape:
    return Shape(name, template.format(*secrets), secrets)


_RSA_BODY = (
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo\n"
    "9z+40RQzuVaE8AkAFmxZzow3x+VJYKdjykkJ0iT9wCS0DRTXu269V264Vf/3jvre"
)
_P8_BODY = (
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
    "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu"
)
_SSH_BODY = "b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABBx"

SHAPES: tuple[Shape, ...] = (
    _shape(
        "anthropic key",
        "export ANTHROPIC_API_KEY={}",
        "sk-ant-api03-Xy7Q2hVbK9wLmZ4pR8tN3cF6jD1sG5aE0uY2iO7qW4xB9vM3kT6nH8rJ1fC5gL0dS2zP7yA4eU9wQ3mX6bV1tK8hN5jR2cF7AA",
    ),
    _shape(
        "openai key",
        'OPENAI_API_KEY="{}"',
        "sk-proj-4fE5aB6cD7eF8gH9iJ0kL1mN2oP3qR4sT5uV6wX7yZ8aB9cD0eF1gH2iJ3k",
    ),
    _shape(
        "stripe live key", "STRIPE_SECRET_KEY={}", "sk_live_51HqLyjWDarjtT1zdp7dcXYZabc123DEF456ghi789JKLmn"
    ),
    _shape(
        "stripe restricted key",
        "$ curl https://api.stripe.com/v1/charges -u {}: -d amount=2000",
        "rk_live_51HqLyjWDarjtT1zdQrStUvWxYz7Kp2Mw9Lx4Nb6AbCdEf",
    ),
    _shape(
        "github token in a remote",
        "git remote set-url origin https://oauth2:{}@github.com/acme/api.git",
        "ghp_R7tYu2Io9pAs4dFg6hJk1lZx3cVb8nMq5wEr",
    ),
    _shape(
        "github fine-grained token",
        "GH_TOKEN={} gh release create v1.4.2",
        "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ8f3k2m9x7q1aBcDeFgHiJkLmNoPqRsTuVwXyZ4h7j1k5l9",
    ),
    _shape(
        "gitlab token",
        'curl --header "PRIVATE-TOKEN: {}" https://gitlab.com/api/v4/projects',
        "glpat-Zx8Cv7Bn6Mq5Wr4Et3Ya",
    ),
    _shape("npm token", "//registry.npmjs.org/:_authToken={}", "npm_Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5"),
    _shape(
        "hugging face token",
        "$ huggingface-cli login --token {} --add-to-git-credential",
        "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",
    ),
    _shape("slack bot token", "SLACK_BOT_TOKEN={}", "xoxb-2486729183-4062817593046-Hk3mWq9ZpL2xVn7RtY5sB8dC"),
    _shape(
        "slack app token",
        "SLACK_APP_TOKEN={}",
        "xapp-1-A05QRSTUVWX-5739184620394-3f9a7c1e5b2d8f4a6c0e9b7d5f3a1c8e6b4d2f0a9c7e5b3d1f8a6c4e2b0d9f7a",
    ),
    _shape(
        "slack webhook",
        "posting to https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/{} with the build status",
        "aBcDeFgHiJkLmNoPqRsTuVwX",
    ),
    _shape("aws access key id", "aws_access_key_id = {}", "AKIAQ3EGRXMPLE7ABCDE"),
    _shape(
        "aws configure set",
        "$ aws configure set aws_secret_access_key {} --profile deploy",
        "9drTJvcXLB89EXAMPLELB8923FB892xMFI/kbUPQ",
    ),
    _shape(
        "aws credentials csv",
        "Access key ID,Secret access key\n{},{}",
        "AKIAZ7VRSQ5EXAMPLE12",
        "Jk3mN8pQ2rS5tV7wX9yZ1aB3cD5eF7gH9iJ1kL3m",
    ),
    _shape(
        "iam user csv",
        "User name,Password,Access key ID,Secret access key,Console login link\n"
        "deploy-bot,{},{},{},https://123456789012.signin.aws.amazon.com/console",
        "Wq7#vLp2!xRt9zKm",
        "AKIAW2XY3Z4EXAMPLE56",
        "Pq8rS9tU0vW1xY2zA3bC4dE5fG6hI7jK8lM9nO0p",
    ),
    _shape("db password env line", "DB_PASSWORD={}", "Tr0ub4dor&3xplicitHorse"),
    _shape(
        "django secret key", "SECRET_KEY = '{}'", "django-insecure-7f#k2$9x!q@w3e8r5t1y6u0i4o-p_a=s+d^f&g"
    ),
    _shape(
        "rails secret key base",
        "SECRET_KEY_BASE={}",
        "4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a",
    ),
    _shape("redis url, empty user", "REDIS_URL=redis://:{}@cache.internal:6379/0", "q8Zt3vWn5xKpR2mL"),
    _shape("password holding @", "DATABASE_URL=postgres://app:{}@db.internal:5432/prod", "p@ssw0rd!2024x@Zq"),
    _shape(
        "mongodb srv url",
        'client = MongoClient("mongodb+srv://admin:{}@cluster0.ab1cd.mongodb.net/app")',
        "Zx9%40Qw7Lm3Kp",
    ),
    _shape(
        "jwt in access_token",
        '{{"access_token":"{}","token_type":"Bearer","expires_in":3600}}',
        "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwiZXhwIjoxNzM1Njg5NjAwfQ"
        ".Qm9ndXNTaWduYXR1cmVGb3JUZXN0aW5nT25seQ",
    ),
    _shape(
        "jwt in a cookie",
        "Cookie: session={}; theme=dark",
        "eyJhbGciOiJIUzI1NiJ9.eyJ1aWQiOjQyLCJyb2xlIjoiYWRtaW4ifQ.n4Hk2pQ8vX1zR7mT3wY9bC5dF0gJ6sL",
    ),
    _shape(
        "session cookie",
        "< Set-Cookie: sessionid={}; Path=/; HttpOnly; Secure; SameSite=Lax",
        "8f3k2m9x7q1w5e4r6t0y",
    ),
    _shape(
        "authorization basic",
        'curl -H "Authorization: Basic {}" https://ci.internal/api/jobs',
        "YWRtaW46czNjcjN0LXBhc3N3MHJk",
    ),
    _shape("curl -u", "$ curl -u deploy:{} https://artifacts.internal/upload", "Hx7!mQ2vR9zLpW"),
    _shape(
        "x-api-key header",
        'curl -H "X-API-Key: {}" https://api.vendor.io/v2/items',
        "4e8c1f0a9b2d7e6f3a5c8b1d0e9f2a7c",
    ),
    _shape("bearer opaque token", "> Authorization: Bearer {}", "0c7f5e2a9d1b4f8e6a3c0d7b2e9f5a1c"),
    _shape(
        "pem private key",
        "$ cat ~/.ssh/deploy_rsa\n-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
        *_RSA_BODY.split("\n"),
    ),
    _shape(
        "one-line pem in json",
        '"private_key": "-----BEGIN PRIVATE KEY-----\\n{}\\n{}\\n-----END PRIVATE KEY-----\\n",',
        _P8_BODY[:64],
        _P8_BODY[64:],
    ),
    _shape(
        "openssh key cut short",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n",
        _SSH_BODY,
    ),
    _shape("google api key", "GOOGLE_MAPS_KEY={}", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
    _shape(
        "sendgrid key",
        "SENDGRID_API_KEY={}",
        "SG.aBcDeFgHiJkLmNoPqRsTuV.wXyZ7k3m9p2q8r4s6t1aBcDeFgHiJkLmNoPqRsTuVwXyZ5h9",
    ),
    _shape("twilio key", "TWILIO_API_KEY={}", "SK8f3e1a9c7b5d2e4f6a0c8e1b3d5f7a9c"),
    _shape("yaml password", '  password: "{}"', "n0t-s0-s3cret!Qx"),
    _shape(
        "netrc",
        "machine api.heroku.com login dev@acme.io password {}",
        "5f1e9c2a-7b3d-4e8f-a6c1-9d2b4e7f0a3c",
    ),
    _shape("pgpassword", "$ PGPASSWORD={} psql -h db.internal -U app", "Vx8kL2mQ9zTw"),
    _shape("mysql -p", "$ mysql -u root -p{} -h 127.0.0.1 app", "R00tPa55w0rdZ"),
    _shape(
        "docker login",
        "$ docker login -u ci --password {} registry.acme.io",
        "dckr_pat_Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9",
    ),
    _shape(
        "azure storage connection string",
        "AZURE_STORAGE=DefaultEndpointsProtocol=https;AccountName=acmestore;AccountKey={};EndpointSuffix=core.windows.net",
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
    ),
    _shape("telegram bot token", "TELEGRAM_BOT_TOKEN={}", "583920174:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ"),
    _shape(
        "digitalocean token",
        "DIGITALOCEAN_TOKEN={}",
        "dop_v1_9e3b7d1f5a8c2e6b0d4f8a2c6e0b4d8f1a5c9e3b7d1f5a9c3e7b1d5f9a3c7e1b",
    ),
    _shape("vault token", "export VAULT_TOKEN={}", "hvs.CAESIJ3kL9mN2pQ5rS8tU1vW4xY7zA0bC3dE6fG9hI"),
    _shape(
        "pypirc password",
        "password = {}",
        "pypi-AgEIcHlwaS5vcmcCJDk4ZmQ1ZjM0LWE3YjItNGM5ZS04ZDFmLTJlM2E0YjVjNmQ3ZQACKlszLCJlNGY",
    ),
    _shape("groq key", "GROQ_API_KEY={}", "gsk_Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7Qw9Er1Ty3Ui5Op"),
    _shape("google oauth client secret", '  "client_secret": "{}",', "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"),
    _shape("camelCase api key", '  apiKey: "{}",', "AbCdEf7k3m9p2q8rGhIjKl"),
    _shape("x-auth-token header", "X-Auth-Token: {}", "7c1e9a3f5b2d8e4a6c0f9b7d"),
)
"""Each realistic line and the secrets it holds."""

ORDINARY: tuple[str, ...] = (
    "/home/dev/src/tallyho/tallyho/spans.py:42: def duration_hours(start, end):",
    "Merged 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 into main (a1b2c3d on the branch)",
    "request 9b2f6c1e-4d3a-4f8b-9e7c-2a1d5b6c8e0f finished",
    "usage: max_tokens: 4096, input_tokens=1200, token_count 17",
    'curl -H "Authorization: Bearer $API_TOKEN" https://example.com:8443/api/v1/items?page=2',
    "password = os.environ['DB_PASSWORD']",
    "mail alice@example.com, clone git@github.com:acme/api.git",
    "image sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 pulled",
    "the task is to bypass the compass; tests passed: 12",
)
"""Lines no pattern should touch."""
