"""Secret redaction: a corpus of fake keys (assembled from pieces so the repository never
holds a string that looks like a live key), negatives that must survive, JSON validity
and idempotence."""

from __future__ import annotations

import base64

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyjuice.formats import dumps
from tinyjuice.model import (
    Message,
    MessageMeta,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    Transcript,
)
from tinyjuice.redact import (
    SecretKind,
    find_secrets,
    is_sensitive_key,
    redact_json,
    redact_message,
    redact_text,
)

# ------------------------------------------------------------------ fake secrets

OPENAI_PROJ = "sk-" + "proj-" + "A1b2" * 10
OPENAI_LEGACY = "sk-" + "T3st" * 12
ANTHROPIC = "sk-" + "ant-" + "api03-" + "x9Y" * 30
OPENROUTER = "sk-" + "or-" + "v1-" + "0a" * 32
GOOGLE = "AI" + "za" + "Sy" + "B" * 33
AWS = "AK" + "IA" + "Q3EGRTYU7XN2KLP4"
GITHUB = "gh" + "p_" + "a1B2" * 9
GITHUB_PAT = "github" + "_pat_" + "11ABC" + "d4" * 30
GITLAB = "gl" + "pat-" + "xY1z" * 5
SLACK = "xo" + "xb-" + "1234567890-0987654321-" + "AbCd" * 6
SLACK_HOOK = "https://hooks.slack" + ".com/services/" + "T00000000/B00000000/" + "X" * 24
STRIPE = "sk" + "_live_" + "4eC3" * 6
HUGGINGFACE = "hf" + "_" + "AbCdEf" * 6
JWT = (
    "ey" + "JhbGciOiJIUzI1NiJ9"
    "." + "ey" + "JzdWIiOiIxMjM0NTY3ODkwIn0"
    "." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
BEARER = "tok" + "A9" * 12
BASIC = base64.b64encode(b"deploy:" + b"hunter2-prod").decode()
URL_PW = "s3cr" + "3t!x"
PEM_BODY = "MIIE" + "pAIBAAKCAQEA" + "q" * 48 + "\n" + "Zm9v" * 16 + "\n" + "YmFy" * 4 + "=="
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\n" + PEM_BODY + "\n-----END " + "RSA PRIVATE KEY-----"
DB_PW = "hun" + "ter2"
SERVICE_TOKEN = "abc" + "123" + "def456"
CLIENT_SECRET = "cs_" + "zz" + "9Q" * 8

# (name, text with the secret in context, the secret itself, expected kind, kept context)
CORPUS: list[tuple[str, str, str, SecretKind, str]] = [
    ("openai_project", f"export OPENAI_API_KEY={OPENAI_PROJ}", OPENAI_PROJ,
     SecretKind.OPENAI_KEY, "export OPENAI_API_KEY="),
    ("openai_legacy", f"client = OpenAI(api_key='{OPENAI_LEGACY}')", OPENAI_LEGACY,
     SecretKind.OPENAI_KEY, "client = OpenAI(api_key='"),
    ("anthropic", f"ANTHROPIC key is {ANTHROPIC} ok", ANTHROPIC,
     SecretKind.ANTHROPIC_KEY, "ANTHROPIC key is "),
    ("openrouter", f"using {OPENROUTER}\n", OPENROUTER, SecretKind.OPENROUTER_KEY, "using "),
    ("google", f"https://maps.example.com/api?key={GOOGLE}&q=x", GOOGLE,
     SecretKind.GOOGLE_API_KEY, "&q=x"),
    ("aws", f"aws_access_key_id = {AWS}", AWS, SecretKind.AWS_ACCESS_KEY, "aws_access_key_id = "),
    ("github", f"git clone https://{GITHUB}@github.com/org/repo.git", GITHUB,
     SecretKind.GITHUB_TOKEN, "@github.com/org/repo.git"),
    ("github_pat", f"token {GITHUB_PAT}", GITHUB_PAT, SecretKind.GITHUB_TOKEN, "token "),
    ("gitlab", f"CI uses {GITLAB} for pushes", GITLAB, SecretKind.GITLAB_TOKEN, " for pushes"),
    ("slack", f"SLACK_BOT={SLACK}", SLACK, SecretKind.SLACK_TOKEN, "SLACK_BOT="),
    ("slack_webhook", f"curl -X POST {SLACK_HOOK} -d @msg.json", SLACK_HOOK,
     SecretKind.SLACK_WEBHOOK, "-d @msg.json"),
    ("stripe", f"stripe.api_key = {STRIPE}", STRIPE, SecretKind.STRIPE_KEY, "stripe.api_key = "),
    ("huggingface", f"huggingface-cli login --token {HUGGINGFACE}", HUGGINGFACE,
     SecretKind.HUGGINGFACE_TOKEN, "login --token "),
    ("jwt", f"session cookie value: {JWT};", JWT, SecretKind.JWT, "session cookie value: "),
    ("bearer", f'curl -H "Authorization: Bearer {BEARER}" https://api.example.com', BEARER,
     SecretKind.BEARER_TOKEN, "Authorization: Bearer "),
    ("basic_auth", f"Authorization: Basic {BASIC}\nAccept: */*", BASIC,
     SecretKind.AUTHORIZATION, "Authorization: Basic "),
    ("url_password", f"DATABASE_URL=postgres://admin:{URL_PW}@db.internal:5432/app", URL_PW,
     SecretKind.URL_PASSWORD, "postgres://admin:"),
    ("private_key", f"cat id_rsa\n{PEM}\n$ ls", PEM_BODY, SecretKind.PRIVATE_KEY, "\n$ ls"),
    ("env_password", f"DB_USER=app\nDB_PASSWORD={DB_PW}\n", DB_PW, SecretKind.ENV_SECRET,
     "DB_USER=app\nDB_PASSWORD="),
    ("env_token", f"export SERVICE_TOKEN={SERVICE_TOKEN} && ./run", SERVICE_TOKEN,
     SecretKind.ENV_SECRET, " && ./run"),
    ("json_key_in_text", f'{{"client_secret": "{CLIENT_SECRET}", "scope": "read"}}',
     CLIENT_SECRET, SecretKind.SENSITIVE_KEY, '"scope": "read"'),
    ("code_literal", f'password = "{DB_PW}"', DB_PW, SecretKind.SENSITIVE_KEY, "password = "),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "secret", "kind", "kept"), [c[1:] for c in CORPUS], ids=[c[0] for c in CORPUS]
)
def test_secret_corpus_is_redacted(text: str, secret: str, kind: SecretKind, kept: str) -> None:
    out = redact_text(text)
    assert secret not in out
    assert f"[REDACTED:{kind.value}]" in out
    assert kept in out  # the surrounding context survives
    hits = find_secrets(text)
    assert any(h.kind is kind for h in hits)
    for h in hits:
        assert 0 <= h.start < h.end <= len(text)


def test_corpus_covers_at_least_twelve_kinds() -> None:
    assert len({c[3] for c in CORPUS}) >= 12


def test_unterminated_private_key_block_is_redacted() -> None:
    text = "-----BEGIN " + "OPENSSH PRIVATE KEY-----\n" + ("b3Blbn" * 11 + "\n") * 3
    out = redact_text(text + "output truncated")
    assert "b3Blbn" not in out
    assert out.endswith("output truncated")


NEGATIVES = [
    "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 (HEAD -> main)",
    "fixed in 4b825dc, see also e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "request id 123e4567-e89b-12d3-a456-426614174000 failed",
    "/home/user/.ssh/id_rsa.pub and src/tinyjuice/redact.py and C:\\Users\\me\\token.txt",
    "The token budget is 2,000 tokens and the password field is required.",
    "max_tokens=4096 token_count=17 num_tokens = 12 input_tokens: 3000",
    "self.token = token\nreturn self.password_hash",
    "api_key = os.environ['API_KEY']",
    "PWD=/home/me/project OLDPWD=/tmp",
    "authorization: required for this endpoint",
    "Bearer of bad news",
    "pip install sk-learn-is-a-great-library-name",
    '{"token_type": "Bearer", "expires_in": 3600, "max_tokens": 512}',
    "git@github.com:org/repo.git https://example.com/path?page=2&sort=asc",
    "ssh key fingerprint SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8",
    "export GITHUB_TOKEN=$(cat ~/.config/gh/token)",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    # Settings classes: a "password:" line holding a type, not a value.
    "class Settings:\n    stripe_webhook_secret: SecretStr\n    db_password: Optional[str]\n",
    "password: str\nsecret: bool\n",
    # Code that builds a conninfo: arguments and placeholders, not a password.
    "conn = psycopg2.connect(host=host, dbname=db, user=user, password=password)",
    'dsn = f"host={host} user={user} password={password}"',
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_text_is_not_redacted(text: str) -> None:
    assert find_secrets(text) == []
    assert redact_text(text) is text


def test_redaction_is_idempotent_on_corpus() -> None:
    everything = "\n".join(c[1] for c in CORPUS)
    once = redact_text(everything)
    assert redact_text(once) == once
    assert find_secrets(once) == []


_FRAGMENTS = [c[1] for c in CORPUS] + NEGATIVES + [" ", "\n", '"', "=", ":", "@", "/"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=20), max_size=8))
def test_redaction_is_idempotent_on_mixed_text(pieces: list[str]) -> None:
    # Pieces are space-separated: a key glued to other letters is no longer a key.
    text = " ".join(pieces)
    once = redact_text(text)
    assert redact_text(once) == once
    for _name, _text, secret, _kind, _kept in CORPUS:
        if len(secret) >= 12:
            assert secret not in once


@pytest.mark.parametrize(
    ("key", "sensitive"),
    [
        ("password", True),
        ("api_key", True),
        ("apiKey", True),
        ("x-api-key", True),
        ("Authorization", True),
        ("access_token", True),
        ("refreshToken", True),
        ("client_secret", True),
        ("private_key", True),
        ("secretAccessKey", True),
        ("DB_PASSWORD", True),
        ("cookie", True),
        ("max_tokens", False),
        ("token_count", False),
        ("token_type", False),
        ("tokenizer", False),
        ("keyboard", False),
        ("path", False),
        ("primary_key", False),
    ],
)
def test_is_sensitive_key(key: str, sensitive: bool) -> None:
    assert is_sensitive_key(key) is sensitive


def test_redact_json_keeps_structure_and_types() -> None:
    value = {
        "url": "https://api.example.com/v1",
        "password": DB_PW,
        "passphrase": 1234,
        "enabled": True,
        "token": None,
        "max_tokens": 100,
        "credentials": {"user": "app", "key_id": 7, "nested": [SERVICE_TOKEN]},
        "notes": [f"see {OPENAI_PROJ}", "plain"],
        "commit": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    }
    out = redact_json(value)
    assert out is not value
    assert list(out) == list(value)
    assert out["url"] == value["url"] and out["commit"] == value["commit"]
    assert out["password"] == "[REDACTED:sensitive_key]"
    assert out["passphrase"] == "[REDACTED:sensitive_key]"
    assert out["enabled"] is True and out["token"] is None and out["max_tokens"] == 100
    assert out["credentials"] == {
        "user": "[REDACTED:sensitive_key]",
        "key_id": "[REDACTED:sensitive_key]",
        "nested": ["[REDACTED:sensitive_key]"],
    }
    assert out["notes"] == ["see [REDACTED:openai_key]", "plain"]
    assert value["password"] == DB_PW  # input untouched
    assert redact_json(out) == out
    clean = {"a": [1, "b", {"c": None}]}
    assert redact_json(clean) is clean


def test_sensitive_keys_redacted_before_persistence() -> None:
    args = {
        "url": "https://api.example.com/deploy",
        "headers": {"Authorization": f"Bearer {BEARER}", "Accept": "application/json"},
        "body": {"password": DB_PW, "apiKey": GOOGLE, "max_tokens": 100, "name": "café ☕"},
        "env": f"AWS_KEY={AWS} GITHUB={GITHUB}",
        "commit": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    }
    call = ToolCall(id="call_1", name="http_request", arguments=orjson.dumps(args).decode())
    msg = Message(
        Role.ASSISTANT,
        parts=(
            TextPart(f"Deploying with {OPENAI_PROJ}"),
            ThinkingPart(f"the user pasted {ANTHROPIC}", signature="sig-abc"),
        ),
        tool_calls=(call,),
        reasoning=f"token is {HUGGINGFACE}",
        meta=MessageMeta(source_id="m1"),
        extra={"toolUseResult": {"stdout": f"DB_PASSWORD={DB_PW}", "exit": 0}},
    )
    red = redact_message(msg)
    # Arguments stay valid JSON with the same keys; secrets are gone.
    new_args = orjson.loads(red.tool_calls[0].arguments)
    assert list(new_args) == list(args)
    assert new_args["headers"]["Authorization"] == "[REDACTED:sensitive_key]"
    assert new_args["headers"]["Accept"] == "application/json"
    assert new_args["body"]["password"] == "[REDACTED:sensitive_key]"
    assert new_args["body"]["apiKey"] == "[REDACTED:sensitive_key]"
    assert new_args["body"]["max_tokens"] == 100
    assert new_args["body"]["name"] == "café ☕"
    assert new_args["env"] == "AWS_KEY=[REDACTED:aws_access_key] GITHUB=[REDACTED:github_token]"
    assert new_args["commit"] == args["commit"]
    assert "café ☕" in red.tool_calls[0].arguments  # unicode not escaped
    assert red.tool_calls[0].id == "call_1" and red.tool_calls[0].name == "http_request"
    # Text, thinking, reasoning and source extras are redacted; the rest is kept.
    assert red.parts[0].text == "Deploying with [REDACTED:openai_key]"  # type: ignore[union-attr]
    thinking = red.parts[1]
    assert isinstance(thinking, ThinkingPart)
    assert ANTHROPIC not in thinking.text and thinking.signature == "sig-abc"
    assert red.reasoning == "token is [REDACTED:huggingface_token]"
    assert red.extra["toolUseResult"] == {"stdout": "DB_PASSWORD=[REDACTED:env_secret]", "exit": 0}
    assert red.meta == msg.meta and red.role is Role.ASSISTANT
    # Persisting the redacted transcript writes no secret.
    written = dumps(Transcript(messages=(red,), format="openai"), "openai").decode()
    for secret in (OPENAI_PROJ, ANTHROPIC, HUGGINGFACE, BEARER, DB_PW, GOOGLE, AWS, GITHUB):
        assert secret not in written
    assert args["commit"] in written
    # Idempotent and identity-preserving.
    assert redact_message(red) is red
    clean = Message(Role.USER, parts=(TextPart("run the tests for commit 4b825dc"),))
    assert redact_message(clean) is clean


def test_non_json_arguments_are_redacted_as_text() -> None:
    raw = f"cd /repo && OPENAI_API_KEY={OPENAI_PROJ} python run.py"
    msg = Message(Role.ASSISTANT, tool_calls=(ToolCall("c1", "bash", raw),))
    red = redact_message(msg)
    assert (
        red.tool_calls[0].arguments
        == "cd /repo && OPENAI_API_KEY=[REDACTED:openai_key] python run.py"
    )


def test_redacted_arguments_remain_parseable_with_escapes() -> None:
    # A secret inside a JSON string with escaped quotes and newlines.
    args = {"script": f'echo "go"\nexport API_TOKEN={SERVICE_TOKEN}\n', "n": 1.5}
    call = ToolCall("c2", "terminal", orjson.dumps(args).decode())
    red = redact_message(Message(Role.ASSISTANT, tool_calls=(call,)))
    parsed = orjson.loads(red.tool_calls[0].arguments)
    assert parsed == {"script": 'echo "go"\nexport API_TOKEN=[REDACTED:env_secret]\n', "n": 1.5}
