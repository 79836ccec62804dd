"""The secret catalogue: every SecretKind has a positive case (the secret in its usual
context) and a near-miss negative (the same shape almost, or prose about it) that must
survive — in plain text, as a JSON-escaped tool output, and nested one level deeper.

Fake secrets are assembled from pieces so the repository never holds a string that
looks like a live key.
"""

from __future__ import annotations

import base64
import json
from typing import NamedTuple

import pytest

from tinyjuice.redact import SecretKind, find_secrets, redact_text


class Case(NamedTuple):
    kind: SecretKind
    text: str  # the secret in context
    secret: str  # what must be gone
    negative: str  # a near miss that must survive untouched


_B64_86 = base64.b64encode(bytes(range(7, 71))).decode().rstrip("=")[:86]
_PEM_BODY = "MIIE" + "pAIBAAKCAQEA" + "q" * 48 + "\n" + "Zm9v" * 16 + "\n" + "YmFy" * 4 + "=="
_SSH_BODY = "b3BlbnNzaC1rZXktdjEAAAAA" + "Qk9P" * 10 + "\n" + "c3NoLWVk" * 8
_JWT = (
    "ey" + "JhbGciOiJIUzI1NiJ9" + ".ey" + "JzdWIiOiIxMjM0NTY3ODkwIn0"
    "." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)

CATALOGUE: list[Case] = [
    Case(SecretKind.OPENAI_KEY, "export OPENAI_API_KEY={}", "sk-" + "proj-" + "A1b2" * 10,
         "pip install sk-learn-is-a-great-library-name"),
    Case(SecretKind.ANTHROPIC_KEY, "key: {} (prod)", "sk-" + "ant-api03-" + "x9Y" * 30,
         "the sk-ant- prefix marks Anthropic keys"),
    Case(SecretKind.OPENROUTER_KEY, "using {}\n", "sk-" + "or-v1-" + "0a" * 32,
         "sk-or-v1-" + "ab" * 5),
    Case(SecretKind.GOOGLE_API_KEY, "https://maps.example.com/api?key={}&q=x",
         "AI" + "zaSy" + "B" * 33, "AIza" + "Sy" + "B" * 20 + " is cut short"),
    Case(SecretKind.AWS_ACCESS_KEY, "aws_access_key_id = {}", "AK" + "IAQ3EGRTYU7XN2KLP4",
         "AKIA" + "Q3EGRTYU7XN2KLP4" + "XYZ is not an access key id"),
    Case(SecretKind.AWS_SECRET_KEY, "[default]\naws_secret_access_key = {}\nregion = eu-west-1",
         "wJalr" + "XUtnFEMI/K7MDENG/bPxRfiCY" + "zEXAMPLEKE",
         "the aws_secret_access_key field holds 40 characters"),
    Case(SecretKind.GITHUB_TOKEN, "git clone https://{}@github.com/org/repo.git",
         "gh" + "p_" + "a1B2" * 9, "ghp_short123 is not a token"),
    Case(SecretKind.GITLAB_TOKEN, "CI uses {} for pushes", "gl" + "pat-" + "xY1z" * 5,
         "see glpat-docs for tokens"),
    Case(SecretKind.SLACK_TOKEN, "SLACK_BOT={}", "xo" + "xb-1234567890-0987654321-" + "AbCd" * 6,
         "xoxb-123 is a placeholder"),
    Case(SecretKind.SLACK_WEBHOOK, "curl -X POST {} -d @msg.json",
         "https://hooks.slack" + ".com/services/T00000000/B00000000/" + "X" * 24,
         "docs: https://hooks.slack.com/services/ (see the admin page)"),
    Case(SecretKind.SLACK_APP_TOKEN, "SLACK_APP={}",
         "xa" + "pp-1-A0123456789-1234567890123-" + "ab12" * 16,
         "xapp-1-docs explains app-level tokens"),
    Case(SecretKind.STRIPE_KEY, "stripe.api_key = {}", "sk" + "_live_" + "4eC3" * 6,
         "sk_live_short is a shape, not a key"),
    Case(SecretKind.STRIPE_WEBHOOK_SECRET, "endpoint secret {} set", "wh" + "sec_" + "a1B2c3D4" * 4,
         "whsec_short appears in the docs"),
    Case(SecretKind.HUGGINGFACE_TOKEN, "huggingface-cli login --token {}",
         "hf" + "_" + "AbCdEf" * 6, "from huggingface_hub import hf_hub_download"),
    Case(SecretKind.JWT, "session value: {};", _JWT, "header eyJhbGciOiJIUzI1NiJ9 only"),
    Case(SecretKind.PRIVATE_KEY,
         "cat id_rsa\n-----BEGIN " + "RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\n$ ls",
         _PEM_BODY,
         "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n"
         "-----END PUBLIC KEY-----"),
    Case(SecretKind.BEARER_TOKEN, 'curl -H "Authorization: Bearer {}" https://api.example.com',
         "tok" + "A9" * 12, "Bearer of bad news"),
    Case(SecretKind.AUTHORIZATION, "Authorization: Basic {}\nAccept: */*",
         base64.b64encode(b"deploy:" + b"hunter2-prod").decode(),
         "authorization: required for this endpoint"),
    Case(SecretKind.URL_PASSWORD, "DATABASE_URL=postgres://admin:{}@db.internal:5432/app",
         "s3cr" + "3t!x", "git@github.com:org/repo.git https://example.com/a?b=c"),
    Case(SecretKind.ENV_SECRET, "DB_USER=app\nDB_PASSWORD={}\n", "hun" + "ter2",
         "PWD=/home/me/project OLDPWD=/tmp"),
    Case(SecretKind.SENSITIVE_KEY, '{{"client_secret": "{}", "scope": "read"}}',
         "cs_" + "zz" + "9Q" * 8, '{"token_type": "Bearer", "expires_in": 3600}'),
    Case(SecretKind.AZURE_STORAGE_KEY,
         "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=core",
         _B64_86 + "==", "AccountName=acct;EndpointSuffix=core.windows.net"),
    Case(SecretKind.NPM_TOKEN, "//registry.npmjs.org/:_authToken={}", "np" + "m_" + "Ab1" * 12,
         "npm_config_cache=/tmp/npm"),
    Case(SecretKind.PYPI_TOKEN, "password = {}", "py" + "pi-AgEIcHlwaS5vcmc" + "Ab_-" * 15,
         "pip install --index-url https://pypi.org/simple pypi-simple"),
    Case(SecretKind.SENDGRID_KEY, "SENDGRID={}",
         "SG" + ".Ab3dEf6hIj9kLm2nOp5qRs." + "Tu8vWx1yZa4bCd7eFg0hIj3kLm6nOp9qRs2tUv5wXy8",
         "SG.short.parts in the changelog"),
    Case(SecretKind.DIGITALOCEAN_TOKEN, "doctl auth init -t {}", "do" + "p_v1_" + "0a1b" * 16,
         "dop_v1_ prefix, see the docs"),
    Case(SecretKind.SHOPIFY_TOKEN, "X-Shopify-Access-Token: {}", "sh" + "pat_" + "0a1b" * 8,
         "shpat_" + "0a1b" * 4 + " is too short"),
    Case(SecretKind.DISCORD_WEBHOOK, "post to {}",
         "https://discord" + ".com/api/webhooks/123456789012345678/" + "Ab1_-x" * 10,
         "https://discord.com/api/guilds/123456789012345678"),
    Case(SecretKind.TELEGRAM_BOT_TOKEN, "bot 123456789:{}", "AA" + "Ab1-" * 8 + "x",
         "at 12:AAbb the build ran"),
    Case(SecretKind.GOOGLE_OAUTH_SECRET, "client_secret_id {}", "GOC" + "SPX-" + "Ab1_" * 7,
         "GOCSPX-short in a comment"),
    Case(SecretKind.GOOGLE_OAUTH_TOKEN, "access {} ok", "ya" + "29." + "A0Ab1-" * 6,
         "ya29.short is the prefix"),
    Case(SecretKind.VAULT_TOKEN, "VAULT {}", "hv" + "s." + "CAESI" + "Ab1x" * 6,
         "hvs.short in the vault docs"),
    Case(SecretKind.AGE_SECRET_KEY, "# created\n{}\n", "AGE-SEC" + "RET-KEY-1" + "QZ7" * 19 + "Q",
         "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p is a public key"),
    Case(SecretKind.GROQ_KEY, "GROQ={}", "gs" + "k_" + "Ab1" * 17, "gsk_short in a test name"),
    Case(SecretKind.LIBPQ_PASSWORD, "psql host=db.internal port=5432 dbname=shop user=app password={}",
         "hun" + "ter", "set password=changeme in the login form"),
    Case(SecretKind.PASSWORD_FIELD, "database:\n  user: app\n  password: {}\n",
         "correct-" + "horse-battery", "The password: it must be long and unique."),
    Case(SecretKind.NETRC_PASSWORD, "machine api.example.com login deploy password {}\n",
         "sword" + "fish", "the machine asks for a password on boot"),
]  # fmt: skip


def _ids(c: Case) -> str:
    return c.kind.value


def _text(c: Case) -> str:
    return c.text.format(c.secret)


def test_catalogue_covers_every_kind() -> None:
    kinds = [c.kind for c in CATALOGUE]
    assert len(set(kinds)) == len(kinds) == len(SecretKind)
    assert len(SecretKind) >= 30


@pytest.mark.parametrize("case", CATALOGUE, ids=_ids)
def test_positive(case: Case) -> None:
    text = _text(case)
    out = redact_text(text)
    assert case.secret not in out
    assert f"[REDACTED:{case.kind.value}]" in out
    assert redact_text(out) == out  # idempotent


@pytest.mark.parametrize("case", CATALOGUE, ids=_ids)
def test_near_miss_survives(case: Case) -> None:
    assert find_secrets(case.negative) == []
    assert redact_text(case.negative) is case.negative


@pytest.mark.parametrize("case", CATALOGUE, ids=_ids)
def test_positive_in_escaped_json(case: Case) -> None:
    once = json.dumps({"output": _text(case), "exit_code": 0})
    twice = json.dumps({"role": "tool", "content": once})
    slashes = once.replace("/", "\\/")  # some writers escape "/" (PHP, some loggers)
    for stored in (once, twice, slashes):
        out = redact_text(stored)
        assert case.secret not in out
        assert json.loads(out)  # still valid JSON
    # Decoded, the redacted text reads like the plain text redacted.
    assert json.loads(redact_text(once))["output"] == redact_text(_text(case))


@pytest.mark.parametrize("case", CATALOGUE, ids=_ids)
def test_near_miss_survives_escaped(case: Case) -> None:
    for stored in (json.dumps({"output": case.negative}), json.dumps([json.dumps(case.negative)])):
        assert find_secrets(stored) == []
