"""The deterministic prepass inside ``compress``: tool-output digests, argument
shrinking, redaction, media.

Which acceptance line each test covers: docs/acceptance.md.
"""

from __future__ import annotations

import json

import orjson
from builders import (
    Conv,
    FakeProvider,
)
from pipeline_helpers import (
    LARGE,
    ROUGH,
    SMALL,
    assert_no_secrets,
    big_write,
    early,
    run,
    secret_session,
    session,
    summary_of,
    tail_of,
    texts,
)

from tinyjuice.model import Role
from tinyjuice.options import CompactionOptions
from tinyjuice.pipeline import plan_boundary
from tinyjuice.report import Status

# =========================================================================== prepass


def _capture(t, options=None, **kw):
    provider = FakeProvider()
    r = run(t, options, provider, **kw)
    assert r.report.status is Status.COMPACTED, r.report.reason
    assert len(provider.requests) == 1
    return r, provider.requests[0]


def test_repeated_read_file_outputs_keep_newest_full_copy() -> None:
    c = session(4)
    body = "\n".join(f"{k:>4}| config_line_{k} = {k * 7}" for k in range(80))
    c.user("read the config", label="r1")
    c.read_file("conf/settings.toml", output=body)
    c.assistant("Read it.")
    c.user("read it again")
    c.read_file("conf/settings.toml", output=body)
    for i in range(4, 8):
        c.user(f"Step {i}: update src/mod_{i}.py")
        c.terminal(f"pytest tests/test_{i}.py -q", lines=60)
        c.assistant(f"Step {i} done.")
    c.user("show me the config once more", label="last")
    c.read_file("conf/settings.toml", output=body)
    c.assistant("Here it is.")
    t = c.transcript(context_window=SMALL)
    r, request = _capture(t)
    # Exactly one full copy is left anywhere: the newest, verbatim, in the tail.
    assert sum(m.text == body for m in r.messages) == 1
    assert r.messages[-2].text == body and r.messages[-2] is t.messages[-2]
    assert not any(m.text == body for m in request.messages)
    kinds = [d["kind"] for d in r.report.digests]
    assert "duplicate" in kinds
    dup = [m.text for m in request.messages if "same output as message" in m.text]
    # Both older copies point at the newest one, by its index in the transcript.
    newest = len(t.messages) - 2
    assert len(dup) == 2
    assert all(s.startswith(f"[read_file] same output as message #{newest}") for s in dup)
    assert {d["index"] for d in r.report.digests if d["kind"] == "duplicate"} == {
        c.at["r1"] + 2,
        c.at["r1"] + 6,
    }


def test_old_terminal_output_becomes_command_exit_line_digest() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    r, request = _capture(t)
    first = t.messages[c.at["ask1"] + 2]  # the terminal result of step 1 (exit 1)
    assert first.role is Role.TOOL and len(first.text) > 1000
    digested = [m for m in request.messages if m.tool_call_id == first.tool_call_id]
    assert len(digested) == 1
    line = digested[0].text
    assert "\n" not in line and len(line) < 200
    assert line.startswith("[terminal]")
    assert "`pytest tests/test_1.py -q`" in line and "exit 1" in line and "61 lines" in line
    assert digested[0].meta.generated_by == "digest"
    rec = [d for d in r.report.digests if d["call_id"] == first.tool_call_id]
    assert rec and rec[0]["kind"] == "digest" and rec[0]["chars_after"] < rec[0]["chars_before"]


def test_recent_tail_tool_output_remains_exact() -> None:
    t = session().transcript(context_window=SMALL)
    r, _ = _capture(t)
    tail_results = [m for m in t.messages[r.report.boundary_end :] if m.role is Role.TOOL]
    assert tail_results and all(len(m.text) > 1000 for m in tail_results)
    for m in tail_results:
        assert any(m is x for x in r.messages)
    assert all(d["index"] < r.report.boundary_end for d in r.report.digests)
    tail_of(r, t)


def _one_call(name: str, args, output: str, **kw):
    def setup(c: Conv) -> None:
        c.user(f"please run {name}", label=name)
        c.call(name, args, output, **kw)
        c.assistant(f"{name} finished.")

    return setup


def _calls_named(messages, name: str) -> list:
    return [call for m in messages for call in m.tool_calls if call.name == name]


def test_tool_arguments_stay_valid_json_after_shrinking() -> None:
    content = "".join(f'print("line {k}", {{"k": [{k}, "\\\\", "\\u00e9"]}})\n' for k in range(300))
    t = early(big_write("src/gen.py", content)).transcript(context_window=SMALL)
    r, request = _capture(t)
    shrunk = [d for d in r.report.digests if d["kind"] == "args_shrunk"]
    assert shrunk and shrunk[0]["chars_after"] < shrunk[0]["chars_before"]
    (call,) = _calls_named(request.messages, "write_file")
    args = json.loads(call.arguments)  # still parses
    assert args["path"] == "src/gen.py"
    assert len(call.arguments) < len(content)
    for m in r.messages:
        for kept in m.tool_calls:
            json.loads(kept.arguments)


def test_large_write_file_argument_stays_valid_json() -> None:
    content = "x = {'a': \"quoted\"}\n" * 2000  # ~40 KB of code with quotes and newlines
    t = early(big_write("src/big.py", content)).transcript(context_window=SMALL)
    _r, request = _capture(t)
    (call,) = _calls_named(request.messages, "write_file")
    parsed = orjson.loads(call.arguments)
    assert parsed["path"] == "src/big.py"
    assert parsed["content"].startswith("x = {'a': \"quoted\"}")
    assert len(parsed["content"]) <= 200 + 24


def test_json_argument_shrink_preserves_parseability() -> None:
    args = {
        "edits": [{"old": "a" * 900 + '"\\\n', "new": "b" * 900, "line": 3, "dry": False}],
        "meta": {"id": "req-42", "note": None, "tags": ["x", "y"]},
        "path": "src/very/deep/dir/file.py",
    }
    t = early(_one_call("apply_edits", args, "applied 1 edit")).transcript(context_window=SMALL)
    _, request = _capture(t)
    (call,) = _calls_named(request.messages, "apply_edits")
    parsed = json.loads(call.arguments)
    assert parsed["meta"] == args["meta"] and parsed["path"] == args["path"]
    assert parsed["edits"][0]["line"] == 3 and parsed["edits"][0]["dry"] is False
    assert len(parsed["edits"][0]["old"]) < 900


def test_non_json_argument_shrink_is_noop() -> None:
    raw = "cd src && make all " + "VERBOSE=1 " * 120  # not JSON, longer than 500 chars
    t = early(_one_call("shell", raw, "built")).transcript(context_window=SMALL)
    r, request = _capture(t)
    (call,) = _calls_named(request.messages, "shell")
    assert call.arguments == raw
    assert not [d for d in r.report.digests if d["kind"] == "args_shrunk"]


def test_non_json_tool_arguments_not_corrupted() -> None:
    # Non-JSON arguments anywhere (middle or tail) are never rewritten.
    raw = 'grep -rn "TODO(" src/ | head -n 50 ' + "--include=*.py " * 60
    setup = _one_call("shell", raw, "src/a.py:3: TODO(fix)")
    t = early(setup, then=setup).transcript(context_window=SMALL)
    r, request = _capture(t)
    (middle_call,) = _calls_named(request.messages, "shell")
    assert middle_call.arguments == raw
    (tail_call,) = _calls_named(r.messages, "shell")
    assert tail_call.arguments == raw


def test_unicode_arguments_preserved_unescaped() -> None:
    text = "Grüße, naïve café — 日本語のテキスト ✓ " * 40
    t = early(big_write("docs/greeting.md", text)).transcript(context_window=SMALL)
    _, request = _capture(t)
    (call,) = _calls_named(request.messages, "write_file")
    assert "日本語のテキスト" in call.arguments and "Grüße" in call.arguments
    assert "\\u" not in call.arguments
    assert len(call.arguments) < len(text)
    json.loads(call.arguments)


def _request_text(request) -> str:
    parts = [request.previous_summary or ""]
    for m in request.messages:
        parts.append(m.text)
        parts.append(m.reasoning or "")
        parts.extend(call.arguments for call in m.tool_calls)
    return "\n".join(parts)


def test_secrets_redacted_before_summary_provider_sees_them() -> None:
    c, s = secret_session()
    t = c.transcript(context_window=SMALL)
    r, request = _capture(t, CompactionOptions(protect_first_n=0, force=True))
    assert r.report.redactions > 0
    seen = _request_text(request)
    assert_no_secrets(seen, s)
    assert "[REDACTED:" in seen
    # The secrets really were in the middle that was sent.
    assert r.report.boundary_start <= c.at["first"] < r.report.boundary_end


def test_digests_never_carry_secrets() -> None:
    c, s = secret_session()
    t = c.transcript(context_window=SMALL)
    r, request = _capture(t, CompactionOptions(protect_first_n=0, force=True, include_preview=True))
    digests = [m.text for m in request.messages if m.meta.generated_by == "digest"]
    assert digests
    assert_no_secrets("\n".join(digests), s)
    assert_no_secrets(json.dumps(r.report.to_dict()), s)


def test_sensitive_json_keys_redacted_in_compacted_output() -> None:
    c, s = secret_session()
    t = c.transcript(context_window=SMALL)
    r = run(t, CompactionOptions(protect_first_n=0, force=True))
    assert r.report.status is Status.COMPACTED
    out = texts(r.messages) + "".join(call.arguments for m in r.messages for call in m.tool_calls)
    assert_no_secrets(out, s)
    assert "hunter2" not in out


# =========================================================================== media


def test_five_images_count_in_report_tokens() -> None:
    c = (
        Conv()
        .user("compare these five screenshots", images=5)
        .assistant("They differ in the header.")
    )
    r = run(c.transcript(context_window=LARGE))
    assert r.report.before_tokens >= 5 * 1_600
    assert r.report.head_tokens + r.report.middle_tokens + r.report.tail_tokens >= 5 * 1_600


def _image_session() -> Conv:
    c = Conv()
    c.user("Here is the broken layout", images=2, label="first")
    c.assistant("I see the overlap.")
    for i in range(5):
        c.user(f"Step {i}: fix the css in web/style_{i}.css")
        c.screenshot()
        c.terminal(f"npm run build:{i}", lines=40)
        c.assistant(f"Step {i} fixed.")
    c.user("Now it looks like this", images=1, label="newest")
    c.assistant("Almost there; the footer still overlaps.", label="last_answer")
    return c


def test_old_screenshots_do_not_survive_compaction() -> None:
    c = _image_session()
    t = c.transcript(context_window=SMALL)
    before = sum(len(m.media) for m in t.messages)
    assert before == 2 + 5 + 1
    r = run(t)
    assert r.report.status is Status.COMPACTED
    # Images survive only inside the verbatim tail; every older one became a placeholder.
    tail = t.messages[r.report.boundary_end :]
    with_media = [m for m in r.messages if m.media]
    assert with_media and all(any(m is x for x in tail) for m in with_media)
    assert sum(len(m.media) for m in r.messages) < before
    first = next(m for m in r.messages if m.role is Role.USER and "broken layout" in m.text)
    assert first.text.count("[image omitted: image/png") == 2
    assert r.report.media_replaced >= 1
    assert any(s.step == "media" for s in r.report.steps)
    # Compacting again does not bring any image back.
    again = run(r.transcript, CompactionOptions(keep_last=1), state=r.state)
    assert sum(len(m.media) for m in again.messages) == 1


def test_newest_image_turn_kept() -> None:
    c = _image_session()
    t = c.transcript(context_window=SMALL)
    r = run(t)
    newest = t.messages[c.at["newest"]]
    assert any(m is newest for m in r.messages)
    assert len(newest.media) == 1


# =========================================================================== ACP


def test_failed_tool_output_digest_keeps_status_and_error() -> None:
    output = json.dumps(
        {
            "output": "INFO running\n" * 50 + 'ERROR: relation "users" does not exist\n',
            "exit_code": 2,
        }
    )
    setup = _one_call("terminal", {"command": "alembic upgrade head"}, output, is_error=True)
    t = early(setup).transcript(context_window=SMALL)
    _r, request = _capture(t)
    digests = [m.text for m in request.messages if m.role is Role.TOOL and "alembic" in m.text]
    assert len(digests) == 1
    assert "`alembic upgrade head`" in digests[0] and "exit 2" in digests[0]
    fb = run(t)
    assert 'relation "users" does not exist' in summary_of(fb).text


def test_deep_large_json_tool_output_bounded() -> None:
    deep: object = {"leaf": "v" * 50}
    for k in range(60):
        deep = {f"level_{k}": deep, "items": [f"item-{j}" for j in range(100)]}
    blob = json.dumps(deep)
    assert len(blob) > 50_000
    t = early(_one_call("get_config", {"path": "/etc/app"}, blob)).transcript(context_window=SMALL)
    _r, request = _capture(t)
    (digest,) = [m for m in request.messages if m.role is Role.TOOL and m.tool_name == "get_config"]
    assert len(digest.text) < 300
    fb = run(t)
    assert fb.report.summary_tokens <= plan_boundary(t, counter=ROUGH).summary_budget
    assert fb.report.after_tokens < fb.report.before_tokens // 3
