"""Helpers shared by the ``test_pipeline_*`` files: one ``compress`` call with the
rough counter and a fixed clock, assertions on its result, and sessions several files
build on."""

from __future__ import annotations

import dataclasses
import json

from builders import Conv, coding_session, fake_secrets, openai_dump, secret_fragments

from tinyjuice.model import Message
from tinyjuice.options import CompactionOptions
from tinyjuice.pipeline import compress
from tinyjuice.report import PersistenceRecommendation
from tinyjuice.tokens import RoughCounter

ROUGH = RoughCounter()
#: A window the default coding session (about 8K rough tokens) is over the threshold of.
SMALL = 8_000
#: A window nothing in these tests reaches.
LARGE = 400_000
NOW = 10_000.0


def run(transcript, options=None, provider=None, state=None, **kw):
    kw.setdefault("now", NOW)
    return compress(
        transcript, options or CompactionOptions(), provider, state, counter=ROUGH, **kw
    )


def session(steps: int = 6, **kw) -> Conv:
    return coding_session(steps, **kw)


def texts(messages) -> str:
    return "\n".join(m.text for m in messages)


def summary_of(result) -> Message:
    found = [m for m in result.messages if m.meta.generated_by == "summary"]
    assert len(found) == 1, [m.meta for m in result.messages]
    return found[0]


def assert_unchanged(result, transcript) -> None:
    """Byte-identical: the same transcript object, equal messages, equal renderings."""
    assert result.transcript is transcript
    assert all(a is b for a, b in zip(result.messages, transcript.messages, strict=True))
    assert openai_dump(result.messages) == openai_dump(transcript.messages)
    assert not result.changed
    assert result.report.after_messages == result.report.before_messages
    assert result.report.persistence is PersistenceRecommendation.NO_PERSISTENCE_CHANGE
    assert result.report.dropped is False


def tail_of(result, transcript) -> None:
    """The tail [boundary_end:] is returned as the same objects."""
    end = result.report.boundary_end
    tail = transcript.messages[end:]
    assert tail, "expected a non-empty tail"
    got = result.messages[len(result.messages) - len(tail) :]
    assert all(a is b for a, b in zip(got, tail, strict=True))
    assert openai_dump(got) == openai_dump(tail)


def more_steps(transcript, start: int, count: int):
    c = Conv(system=None)
    c.messages = list(transcript.messages)
    c._ids = 500 + start
    for i in range(start, start + count):
        c.user(f"Step {i}: also fix src/extra_{i}.py")
        c.terminal(f"pytest tests/test_extra_{i}.py -q", lines=60)
        c.assistant(f"Extra step {i} done.")
    c.user("And the final check?", label="last")
    c.assistant("All green.")
    return dataclasses.replace(transcript, messages=c.build()), c


def parallel_session() -> Conv:
    c = Conv()
    c.user("inspect the repo", label="first")
    c.assistant("Starting.")
    for i in range(6):
        c.user(f"Step {i}: check three files")
        c.parallel(
            ("read_file", {"path": f"src/a_{i}.py"}, "A" * 400),
            ("read_file", {"path": f"src/b_{i}.py"}, "B" * 400),
            ("search_files", {"pattern": "TODO", "path": "src"}, "src/x.py:1: TODO" * 20),
            order=[2, 0, 1],
            label=f"par{i}",
        )
        c.assistant(f"Checked step {i}.")
    c.user("summarise", label="last")
    c.assistant("Done.")
    return c


def early(setup, *, steps: int = 6, then=None) -> Conv:
    """A session whose ``setup`` turns come right after the protected head, so they land in
    the compressed middle; ``then`` adds turns at the very end (the verbatim tail)."""
    c = Conv()
    c.user("Start the refactor of src/app.py", label="first")
    c.assistant("Starting.")
    setup(c)
    for i in range(steps):
        c.user(f"Step {i}: update src/mod_{i}.py and run tests/test_{i}.py", label=f"ask{i}")
        c.terminal(f"pytest tests/test_{i}.py -q", lines=60, exit_code=i % 2)
        c.read_file(f"src/mod_{i}.py", lines=60)
        c.assistant(f"Step {i} done.")
    if then is not None:
        then(c)
    c.user("Anything left?", label="last")
    c.assistant("Nothing; all tests pass.")
    return c


def big_write(path: str, content: str):
    def setup(c: Conv) -> None:
        c.user(f"write {path}", label="write")
        c.write_file(path, content)
        c.assistant(f"Wrote {path}.")

    return setup


def secret_session() -> tuple[Conv, dict[str, str]]:
    s = fake_secrets()
    c = Conv()
    c.user(f"Use my key {s['openai']} to call the API", label="first")
    c.assistant("Noted.")
    c.user("Deploy with the AWS credentials and DB")
    c.call(
        "terminal",
        {"command": f"DATABASE_URL={s['postgres']} ./deploy.sh", "api_key": s["github"]},
        json.dumps(
            {
                "output": f"export AWS_ACCESS_KEY_ID={s['aws']}\nAuthorization: Bearer {s['jwt']}\n"
                + "deploying...\n" * 60,
                "exit_code": 0,
            }
        ),
    )
    c.call(
        "http_request",
        {"url": "https://api.example.com", "headers": {"Authorization": f"Bearer {s['jwt']}"}},
        json.dumps({"password": "hunter2" + "Secr3tPw", "token": s["github"], "ok": True}),
    )
    c.assistant(f"Deployed using {s['aws']}.")
    for i in range(6):
        c.user(f"Step {i}: check src/mod_{i}.py")
        c.terminal(f"pytest tests/test_{i}.py -q", lines=40)
        c.assistant(f"Step {i} ok.")
    c.user("What's next?", label="last")
    c.assistant("Release notes.")
    return c, s


def assert_no_secrets(text: str, secrets: dict[str, str]) -> None:
    for kind, secret in secrets.items():
        for frag in secret_fragments(secret):
            assert frag not in text, f"{kind} secret leaked"
