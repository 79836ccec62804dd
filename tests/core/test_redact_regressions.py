"""Issue #12, items 1–4: secrets that reached a provider or a written file.

1. A PEM private key inside JSON-escaped tool output (RSA, OpenSSH, the ``private_key``
   of a GCP service account) kept its body after redaction.
2. ``aws_secret_access_key = …`` inside JSON-escaped output was not redacted.
3. The rules profile wrote key material into the text it generates ("refs:" lists,
   clipped arguments, the label of a dropped system message, kept error lines).
4. Shapes not redacted at all: ``whsec_…``, ``xapp-…``, libpq ``password=…``,
   ``password: words-without-digits``, a URL password holding ``@``.
"""

from __future__ import annotations

import json

import orjson
import pytest
from builders import Conv

from tinyjuice.digest import digest_line
from tinyjuice.formats import dumps
from tinyjuice.model import Message, Role, TextPart, ToolCall, Transcript
from tinyjuice.pipeline import compress
from tinyjuice.redact import find_secrets, redact_clip, redact_messages, redact_text
from tinyjuice.report import CompactionOptions, Profile
from tinyjuice.summary import fallback_summary
from tinyjuice.tokens import RoughCounter

# Fake key material, assembled from pieces.
RSA_BODY = ("MIIEow" + "IBAAKCAQEAx7Qm" * 4 + "\n") * 3 + "R2VuZXJhdGVk" + "Zm9v" * 4 + "=="
RSA = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + RSA_BODY + "\n-----END RSA PRIVATE KEY-----\n"
SSH_BODY = ("b3BlbnNzaC1rZXktdjEAAAAA" + "QmFzZTY0" * 5 + "\n") * 3 + "c3NoLWVkMjU1MTk="
SSH = (
    "-----BEGIN OPENSSH "
    + "PRIVATE KEY-----\n"
    + SSH_BODY
    + "\n-----END OPENSSH PRIVATE KEY-----\n"
)
PKCS8_BODY = ("MIIEvgIBADANBgkqhkiG9w0BAQEFAASC" + "U2VydmljZQ" * 3 + "\n") * 3 + "QWNjb3VudA=="
GCP = json.dumps(
    {
        "type": "service_account",
        "project_id": "demo-project",
        "private_key_id": "0f" * 20,
        "private_key": "-----BEGIN "
        + "PRIVATE KEY-----\n"
        + PKCS8_BODY
        + "\n-----END PRIVATE KEY-----\n",
        "client_email": "bot@demo-project.iam.gserviceaccount.com",
    },
    indent=2,
)
AWS_ID = "AK" + "IAQ3EGRTYU7XN2KLP4"
AWS_SECRET = "wJalr" + "XUtnFEMI/K7MDENG/bPxRfiCY" + "zEXAMPLEKE"
AWS_FILE = (
    f"[default]\naws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET}\n"
    "region = eu-west-1\n"
)
OPENAI = "sk-" + "proj-" + "Zz9Y" * 10
AZURE_KEY = "dGhpcyBpcyBub3Qg" + "YSByZWFsIGtleQ/+" * 5 + "AB=="
AZURE = (
    "DefaultEndpointsProtocol=https;AccountName=demoacct;"
    f"AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net"
)

#: Fragments of key material that must never be written or sent (any of them is a leak).
FRAGMENTS = [
    *(line[:16] for line in RSA_BODY.splitlines()),
    *(line[:16] for line in SSH_BODY.splitlines()),
    *(line[:16] for line in PKCS8_BODY.splitlines()),
    AWS_ID[:12],
    AWS_SECRET[:10],
    AWS_SECRET[-12:],
    "K7MDENG/bPxRfiCY",
    AZURE_KEY[:12],
    AZURE_KEY[20:36],
]


def leaks(text: str) -> list[str]:
    return [f for f in FRAGMENTS if f in text]


# ------------------------------------------------------------------ item 1


@pytest.mark.parametrize("key", [RSA, SSH, GCP], ids=["rsa", "openssh", "gcp_service_account"])
def test_item1_private_key_in_escaped_output_loses_its_body(key: str) -> None:
    for stored in (json.dumps({"output": key}), json.dumps({"output": key[: len(key) // 2]})):
        out = redact_text(stored)
        assert leaks(out) == [], out
        assert "[REDACTED:" in out
        json.loads(out)  # still valid JSON


def test_item1_private_key_nested_json_in_a_string() -> None:
    stored = json.dumps({"role": "tool", "content": json.dumps({"output": GCP})})
    out = redact_text(stored)
    assert leaks(out) == []
    assert "demo-project" in out  # the rest of the document survives
    json.loads(json.loads(out)["content"])


# ------------------------------------------------------------------ item 2


def test_item2_aws_credentials_in_escaped_output() -> None:
    stored = orjson.dumps({"output": f"$ cat ~/.aws/credentials\n{AWS_FILE}", "exit_code": 0})
    out = redact_text(stored.decode())
    assert AWS_SECRET not in out and AWS_ID not in out
    assert "[REDACTED:aws_secret_key]" in out
    assert json.loads(out)["output"].endswith("region = eu-west-1\n")  # the next line is kept


def test_item2_batch_redaction_reads_escaped_output() -> None:
    stored = orjson.dumps({"output": AWS_FILE}).decode()
    msgs = [Message(Role.TOOL, (TextPart(stored),), tool_call_id="c1")]
    out, changed = redact_messages(msgs)
    assert changed == 1 and AWS_SECRET not in out[0].text


# ------------------------------------------------------------------ item 3


def _rules_transcript() -> Transcript:
    c = Conv()
    c.user("deploy the service")
    c.assistant("Looking at the credentials.")
    long_cmd = "cat ~/.aws/credentials ~/.ssh/id_ed25519 sa.json && echo " + "x" * 40
    out = "\n".join(
        [AWS_FILE, SSH, "log line"] + [f"step {k}: ok" for k in range(30)] + [RSA, GCP, AZURE]
    )
    c.call("terminal", {"command": long_cmd}, orjson.dumps({"output": out}).decode())
    c.call("terminal", {"command": "cat id_rsa"}, RSA + "\n" + "\n".join(["ok"] * 40))
    clipped_arg = f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET} AZURE={AZURE} && ./deploy.sh"
    c.call("terminal", {"command": "x" * 90 + " " + clipped_arg}, "done")
    c.system(f"Deployment key: AccountKey={AZURE_KEY} " + "rules " * 40)
    c.assistant("Deployed.")
    for k in range(6):
        c.exchange(f"question {k}", f"answer {k}")
    return Transcript(messages=tuple(c.build()), format="openai")


def test_item3_rules_profile_writes_no_key_material() -> None:
    t = _rules_transcript()
    opts = CompactionOptions(profile=Profile.RULES, force=True)
    result = compress(t, opts, counter=RoughCounter(), now=0.0)
    assert result.report.rules_applied  # the rules did fire
    written = dumps(result.transcript, "openai").decode()
    assert leaks(written) == []
    report = orjson.dumps(result.report.to_dict()).decode()
    assert leaks(report) == []


# ------------------------------------------------------------------ item 4


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        ("secret " + "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "MfKQ9r8GKYqrTwjUPD8I",
         "stripe_webhook_secret"),
        ("SLACK_APP_TOKEN=" + "xapp-" + "1-A04B1C2D3E4-5123456789012-" + "9f" * 32,
         "5123456789012-9f9f", "slack_app_token"),
        ("conn = psycopg.connect('host=db.internal dbname=shop user=app password=tulips')",
         "tulips", "libpq_password"),
        ("smtp:\n  password: correct-horse-battery-staple\n  port: 587",
         "correct-horse", "password_field"),
        ("REDIS=redis://default:p@ss@w0rd@cache.internal:6379/0", "ss@w0rd",
         "url_password"),
    ],
    ids=["whsec", "xapp", "libpq", "password_words", "url_password_with_at"],
)  # fmt: skip
def test_item4_shapes_are_redacted(text: str, secret: str, kind: str) -> None:
    # Kinds by value: the test must run (and fail) on code that lacks the new kinds.
    out = redact_text(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert [h.kind for h in find_secrets(text)] == [kind]


def test_item4_url_password_with_at_keeps_the_host() -> None:
    out = redact_text("postgres://app:p@ss@db.internal:5432/x")
    assert out == "postgres://app:[REDACTED:url_password]@db.internal:5432/x"


# --------------------------------------------------- clips never leave a prefix

# How many characters of the key a clip of the raw text would leave: enough to see,
# too few for the key's own rule to recognise once cut.
_CUT_AT = [10, 14, 18, 24]
GITHUB = "gh" + "p_" + "a1B2" * 9


@pytest.mark.parametrize("inside", _CUT_AT)
def test_digest_clip_redacts_before_cutting(inside: int) -> None:
    # The command is clipped at 80 characters, `inside` characters into the token.
    command = "x" * (80 - inside) + f" {GITHUB} ./deploy.sh"
    line = digest_line("terminal", {"command": command}, "ok\n" * 400)
    assert "x" * 20 in line  # the clip did happen where it should
    assert not any(GITHUB[:k] in line for k in range(6, len(GITHUB)))


@pytest.mark.parametrize("inside", _CUT_AT)
def test_fallback_summary_clip_redacts_before_cutting(inside: int) -> None:
    # Commands are clipped at 300 characters, `inside` characters into the key.
    command = "y" * (300 - inside) + f" {OPENAI} --dry-run"
    msgs = [
        Message(Role.USER, (TextPart("deploy"),)),
        Message(
            Role.ASSISTANT,
            (),
            tool_calls=(ToolCall("c1", "terminal", orjson.dumps({"command": command}).decode()),),
        ),
        Message(Role.TOOL, (TextPart("done"),), tool_call_id="c1", tool_name="terminal"),
    ]
    text = fallback_summary(msgs, budget_tokens=4000, redact=True).text
    assert "y" * 100 in text  # the command is there, clipped
    assert not any(OPENAI[:k] in text for k in range(6, len(OPENAI)))


def test_redact_clip_never_shows_a_cut_key() -> None:
    text = f"prefix {OPENAI} suffix"
    for cut in range(len("prefix ") + 1, len(text)):
        out = redact_clip(text, lambda t, cut=cut: t[:cut])
        assert not any(OPENAI[:k] in out for k in range(4, len(OPENAI)))
