"""The rule-based profile: the six rules, its configuration, and what is never dropped.

Each rule gets a concrete example, through :func:`apply_rules` (the middle only) and through
``compress(profile=rules)`` (the whole pipeline).
"""

from __future__ import annotations

import json
import re
from itertools import pairwise

import pytest
from builders import Conv, anthropic_roles, orphan_calls, orphan_results, terminal_output

from tinyjuice.model import Message, Role, TextPart, ThinkingPart, ToolCall
from tinyjuice.options import CompactionOptions, Profile
from tinyjuice.pipeline import compress
from tinyjuice.report import Status
from tinyjuice.rules import (
    RulesConfig,
    apply_rules,
    error_lines,
    rules_tail_start,
    tool_output_text,
)
from tinyjuice.tokens import RoughCounter

ROUGH = RoughCounter()

#: The profile's documented YAML configuration block, as the mapping a YAML loader returns.
SEED_CONFIG = {
    "compaction": {
        "enabled": True,
        "trigger_threshold": 0.60,
        "protect_last_n_turns": 5,
        "max_tool_output_chars": 500,
        "keep_tool_summary": True,
        "drop_system_after_turn": 1,
        "collapse_consecutive_assistant": True,
    }
}


def rules(messages, start: int, end: int, **config) -> tuple[Message, ...]:
    return apply_rules(messages, start, end, RulesConfig(**config)).messages


def run(transcript, **rules_config):
    opts = CompactionOptions(
        profile=Profile.RULES,
        force=True,
        rules={"compaction": rules_config} if rules_config else {},
    )
    return compress(transcript, opts, counter=ROUGH, now=0.0)


def config_output(chars: int = 347) -> str:
    body = "server:\n  port: 8080\n  host: 0.0.0.0\n"
    return (body * (chars // len(body) + 1))[:chars]


# =========================================================================== config


def test_config_keys_match_the_seed_yaml() -> None:
    cfg = RulesConfig.from_mapping(SEED_CONFIG)
    assert cfg == RulesConfig()  # the seed's values are the defaults
    assert cfg.enabled is True
    assert cfg.trigger_threshold == 0.60
    assert cfg.protect_last_n_turns == 5
    assert cfg.max_tool_output_chars == 500
    assert cfg.keep_tool_summary is True
    assert cfg.drop_system_after_turn == 1
    assert cfg.collapse_consecutive_assistant is True
    custom = RulesConfig.from_mapping(
        {
            "compaction": {
                "trigger_threshold": 0.8,
                "protect_last_n_turns": 2,
                "max_tool_output_chars": 1200,
                "keep_tool_summary": False,
                "drop_system_after_turn": 3,
                "collapse_consecutive_assistant": False,
            }
        }
    )
    assert (custom.trigger_threshold, custom.protect_last_n_turns) == (0.8, 2)
    assert (custom.max_tool_output_chars, custom.drop_system_after_turn) == (1200, 3)
    assert custom.keep_tool_summary is False and custom.collapse_consecutive_assistant is False
    # The bare section works too.
    assert RulesConfig.from_mapping({"protect_last_n_turns": 7}).protect_last_n_turns == 7
    assert RulesConfig.from_mapping({"compaction": None}) == RulesConfig()


def test_unknown_config_keys_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"unknown compaction setting\(s\): protect_last_turns"):
        RulesConfig.from_mapping({"compaction": {"protect_last_turns": 5}})
    with pytest.raises(ValueError, match=r"known: .*protect_last_n_turns"):
        RulesConfig.from_mapping({"compaction": {"max_output_chars": 500}})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("trigger_threshold", 1.5),
        ("trigger_threshold", 0),
        ("trigger_threshold", "60%"),
        ("protect_last_n_turns", -1),
        ("protect_last_n_turns", "5"),
        ("max_tool_output_chars", 2.5),
        ("keep_tool_summary", "yes"),
        ("collapse_consecutive_assistant", 1),
    ],
)
def test_bad_config_values_are_rejected_with_the_key(key: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"compaction.{key}"):
        RulesConfig.from_mapping({"compaction": {key: value}})


def test_unknown_key_is_rejected_by_compress() -> None:
    t = _session().transcript(context_window=8_000)
    with pytest.raises(ValueError, match="unknown compaction setting"):
        compress(
            t,
            CompactionOptions(profile=Profile.RULES, rules={"compaction": {"bogus": 1}}),
            counter=ROUGH,
            now=0.0,
        )


def test_disabled_profile_changes_nothing() -> None:
    t = _session().transcript(context_window=8_000)
    r = run(t, enabled=False)
    assert r.report.status is Status.NOOP and "disabled" in r.report.reason
    assert r.transcript is t


# =========================================================================== rule 1


def test_rule1_collapses_succeeded_tool_pair_to_one_line() -> None:
    c = Conv().user("show the config", label="ask")
    c.call("read_file", {"path": "config.yaml"}, config_output(347), label="call")
    c.user("thanks")
    msgs = c.build()
    out = rules(msgs, 1, len(msgs))
    assert len(out) == len(msgs) - 1  # the result left together with the call
    collapsed = out[c.at["call"]]
    assert collapsed.role is Role.ASSISTANT and not collapsed.tool_calls
    assert collapsed.text == '[tool: read_file("config.yaml") → ok, 347 chars]'
    assert collapsed.meta.generated_by == "rules"
    assert not any(m.role is Role.TOOL for m in out)
    assert not orphan_calls(out) and not orphan_results(out)


def test_rule1_keeps_failed_calls_and_respects_keep_tool_summary() -> None:
    c = Conv().user("run the tests")
    c.call("terminal", {"command": "pytest -q"}, terminal_output("pytest -q", 3, 1), label="failed")
    c.call("read_file", {"path": "a.py"}, "print('a')", label="ok")
    c.user("next")
    msgs = c.build()
    out = rules(msgs, 1, len(msgs))
    assert out[c.at["failed"]] is msgs[c.at["failed"]]  # failed call and result kept
    assert out[c.at["failed"] + 1] is msgs[c.at["failed"] + 1]
    assert any(m.text.startswith('[tool: read_file("a.py") → ok') for m in out)
    off = rules(msgs, 1, len(msgs), keep_tool_summary=False)
    assert off == msgs  # nothing collapsed, nothing long enough to truncate


def test_rule1_partial_collapse_of_parallel_calls() -> None:
    c = Conv().user("look around")
    c.parallel(
        ("read_file", {"path": "a.py"}, "x = 1"),
        ("terminal", {"command": "make"}, terminal_output("make", 2, 2)),
        ("search_files", {"pattern": "TODO"}, "src/b.py:3: TODO"),
        order=[2, 1, 0],
        label="par",
    )
    c.user("ok")
    msgs = c.build()
    out = rules(msgs, 1, len(msgs))
    par = out[c.at["par"]]
    assert [call.name for call in par.tool_calls] == ["terminal"]
    assert '[tool: read_file("a.py") → ok' in par.text
    assert '[tool: search_files("TODO") → ok' in par.text
    assert [m.tool_name for m in out if m.role is Role.TOOL] == ["terminal"]
    assert not orphan_calls(out) and not orphan_results(out)


def test_rule1_never_leaves_two_assistant_messages_side_by_side() -> None:
    c = Conv().user("check both files", label="ask")
    c.call("read_file", {"path": "a.py"}, "x = 1")
    c.call("read_file", {"path": "b.py"}, "y = 2")
    c.assistant("Both files are fine.", label="answer")
    c.user("now deploy")
    c.call("read_file", {"path": "deploy.sh"}, "#!/bin/sh", label="before_tail")
    c.assistant("Deploying.", label="tail")
    msgs = c.build()
    tail = c.at["tail"]
    for collapse in (True, False):
        out = rules(msgs, 1, tail, collapse_consecutive_assistant=collapse)
        roles = [m.role for m in out if m.role is not Role.TOOL]
        for a, b in pairwise(out):
            assert not (a.role is b.role is Role.ASSISTANT), (collapse, [m.text for m in out])
        assert Role.ASSISTANT in roles
        answer = next(m for m in out if "Both files are fine." in m.text)
        # The folded lines still name both tools and files.
        assert '[tool: read_file("a.py") → ok' in answer.text
        assert '[tool: read_file("b.py") → ok' in answer.text
        # The group right before the protected tail is kept whole (its next message is
        # the tail's assistant reply, which rule 6 forbids touching).
        assert any(m is msgs[c.at["before_tail"]] for m in out)
        assert out[-1] is msgs[tail]


# =========================================================================== rule 2


def test_rule2_truncates_large_outputs_to_first_10_and_last_5_lines() -> None:
    lines = [f"line {k}: building module_{k}" for k in range(100)]
    lines[50] = "ERROR: cannot import name 'Parser' from src/parser.py"
    out_text = "\n".join(lines)
    c = Conv().user("build")
    c.call("terminal", {"command": "make"}, out_text, is_error=True, label="call")
    c.user("and?")
    msgs = c.build()
    out = rules(msgs, 1, len(msgs))
    result = out[c.at["call"] + 1]
    got = result.text.splitlines()
    assert got[:10] == lines[:10]
    assert got[-5:] == lines[-5:]
    assert "[...truncated 85 lines...]" in result.text
    assert "ERROR: cannot import name 'Parser' from src/parser.py" in result.text
    assert "src/parser.py" in result.text
    assert len(result.text) < len(out_text)
    assert result.tool_call_id == msgs[c.at["call"] + 1].tool_call_id  # still answers its call
    assert result.meta.generated_by == "rules"


def test_rule2_threshold_is_max_tool_output_chars() -> None:
    text = "\n".join(f"row {k}" for k in range(150))  # ~1,000 chars
    c = Conv().user("dump")
    c.call("terminal", {"command": "cat rows"}, text, is_error=True, label="call")
    c.user("ok")
    msgs = c.build()
    assert len(text) > 500
    assert "[...truncated" in rules(msgs, 1, len(msgs))[c.at["call"] + 1].text
    assert rules(msgs, 1, len(msgs), max_tool_output_chars=2_000) == msgs


def test_rule2_json_terminal_output_keeps_errors_and_paths() -> None:
    out = terminal_output("pytest -q", 80, 1)  # {"output": "...", "exit_code": 1} on one line
    c = Conv().user("test")
    c.call("terminal", {"command": "pytest -q"}, out, label="call")
    c.user("so?")
    msgs = c.build()
    result = rules(msgs, 1, len(msgs))[c.at["call"] + 1]
    assert "[...truncated" in result.text and len(result.text) < len(out)
    assert "AssertionError: expected 3" in result.text  # the failure line from inside the JSON
    assert "tests/test_app.py" in result.text
    # Escaped newlines inside the JSON are not read as part of a path ("ntests/...").
    assert not re.search(r"\[kept refs: [^\]]*\bntests/", result.text)
    assert tool_output_text(out).count("tests/test_app.py") == 80


# =========================================================================== rule 3


def test_rule3_drops_system_messages_after_turn_1_with_a_marker() -> None:
    c = Conv()  # the leading system prompt is the head, never touched
    c.user("hi", label="first")
    c.assistant("hello")
    soul = "SOUL.md: you are Timmy.\n" + "Be kind. " * 300 + "\nSkills: skills/deploy.md"
    c.system(soul, label="late_system")
    c.user("deploy")
    c.assistant("ok")
    msgs = c.build()
    out = rules(msgs, 1, len(msgs))
    marker = out[c.at["late_system"]]
    assert marker.role is Role.SYSTEM
    assert marker.text.startswith("[system prompt: SOUL.md: you are Timmy.")
    assert "dropped after turn 1" in marker.text
    assert "skills/deploy.md" in marker.text  # a path in the dropped text survives
    assert len(marker.text) < 200
    assert out[0] is msgs[0]


def test_rule3_respects_drop_system_after_turn() -> None:
    c = Conv(system=None).user("one").system("Tools: MCP github server", label="sys").user("two")
    msgs = c.build()
    assert rules(msgs, 0, len(msgs), drop_system_after_turn=1)[c.at["sys"]].text.startswith(
        "[system prompt:"
    )
    assert rules(msgs, 0, len(msgs), drop_system_after_turn=2) == msgs


# =========================================================================== rule 4


def test_rule4_keeps_only_the_last_of_consecutive_assistant_messages() -> None:
    c = Conv().user("think it through", label="ask")
    c.assistant("First I will look at src/loader.py.")
    c.assistant("Then check https://docs.example.com/loader for the API.")
    c.assistant("Conclusion: the loader needs a retry.", label="last")
    c.user("do it")
    msgs = c.build()
    out = rules(msgs, 1, len(msgs))
    assistants = [m for m in out if m.role is Role.ASSISTANT]
    assert len(assistants) == 1
    kept = assistants[0]
    assert kept.text.endswith("Conclusion: the loader needs a retry.")
    assert "src/loader.py" in kept.text and "https://docs.example.com/loader" in kept.text
    off = rules(msgs, 1, len(msgs), collapse_consecutive_assistant=False)
    assert off == msgs


def test_rule4_carries_collapsed_tool_lines() -> None:
    c = Conv().user("inspect")
    c.assistant("Let me check.")
    c.assistant("Still checking.")
    c.call("read_file", {"path": "setup.cfg"}, "[metadata]\nname = app")
    c.assistant("Done: setup.cfg is fine.")
    c.user("next")
    msgs = c.build()
    out = rules(msgs, 1, len(msgs))
    assistants = [m for m in out if m.role is Role.ASSISTANT]
    assert len(assistants) == 1
    assert '[tool: read_file("setup.cfg") → ok' in assistants[0].text


# =========================================================================== rule 5


def test_rule5_never_touches_user_messages() -> None:
    long_user = "Here is the log:\n" + "\n".join(f"ERROR {k}" for k in range(300))
    c = Conv().user(long_user, images=2, label="big")
    c.injected()
    c.call("read_file", {"path": "a.py"}, "x" * 2_000)
    c.user("[tool: fake summary line]", label="looks_generated")
    c.assistant("a")
    c.assistant("b")
    c.user("end")
    msgs = c.build()
    out = rules(msgs, 1, len(msgs))
    users_in = [m for m in msgs if m.role is Role.USER]
    users_out = [m for m in out if m.role is Role.USER]
    assert len(users_in) == len(users_out)
    assert all(a is b for a, b in zip(users_in, users_out, strict=True))


def test_rule5_through_the_pipeline_even_for_old_images() -> None:
    c = Conv().user("screenshot of the bug", images=2, label="old_images")
    c.assistant("I see it.")
    for i in range(8):
        c.user(f"step {i}", images=1 if i == 7 else 0)
        c.call("terminal", {"command": f"make {i}"}, terminal_output(f"make {i}", 40, 0))
        c.assistant(f"done {i}")
    t = c.transcript(context_window=8_000)
    r = run(t)
    assert r.report.status is Status.COMPACTED
    users = [m for m in t.messages if m.role is Role.USER]
    assert [m for m in r.messages if m.role is Role.USER] == users
    assert all(any(m is u for m in r.messages) for u in users)


# =========================================================================== rule 6


def _session(steps: int = 9) -> Conv:
    c = Conv()
    for i in range(steps):
        c.user(f"Step {i}: fix src/mod_{i}.py", label=f"u{i}")
        c.call(
            "terminal", {"command": f"pytest tests/test_{i}.py"}, terminal_output("pytest", 60, 0)
        )
        c.call("read_file", {"path": f"src/mod_{i}.py"}, "\n".join(f"line {k}" for k in range(80)))
        c.assistant(f"Step {i} done.", label=f"a{i}")
    return c


def test_rule6_protects_the_last_5_turn_pairs() -> None:
    c = _session(9)
    t = c.transcript(context_window=8_000)
    r = run(t)
    assert r.report.status is Status.COMPACTED
    start = c.at["u4"]  # the 5th user turn from the end
    assert rules_tail_start(t.messages, 5) == start
    assert r.report.boundary_end == start
    tail = t.messages[start:]
    assert all(a is b for a, b in zip(r.messages[-len(tail) :], tail, strict=True))
    # The middle before it was compacted.
    assert r.report.rules_applied.get("collapse_pair", 0) > 0
    assert len(r.messages) < len(t.messages)


def test_rule6_protect_last_n_turns_is_configurable() -> None:
    c = _session(9)
    t = c.transcript(context_window=8_000)
    two = run(t, protect_last_n_turns=2)
    assert two.report.boundary_end == c.at["u7"]
    assert two.report.after_tokens < run(t).report.after_tokens
    everything = run(t, protect_last_n_turns=20)  # more turns than the session has
    assert everything.report.status is Status.NOOP
    assert everything.transcript is t


# =========================================================================== preservation


_PATHS = [
    "src/app/config.yaml",
    "/var/log/app/error.log",
    "tests/unit/test_parser.py",
    "~/.config/tool/settings.toml",
    "docs/guide.md",
    "scripts/deploy.sh",
]
_URLS = ["https://api.example.com/v1/items?id=42", "http://localhost:8080/health"]
_TOOLS = ["read_file", "terminal", "web_fetch", "search_files", "write_file"]
_ERRORS = [
    "ERROR: connection refused to db:5432",
    "Traceback (most recent call last):",
    "FileNotFoundError: [Errno 2] No such file or directory: 'data.csv'",
    "fatal: not a git repository",
]


def _planted() -> Conv:
    filler = "\n".join(f"    {k:>4} | ok" for k in range(60))
    c = Conv().user("Let's debug the service.", label="first")
    c.assistant("Starting with the config.")
    c.system("MCP servers loaded; config in src/app/config.yaml", label="late_system")
    c.user("Read the config and the logs")
    # Rule 1: a succeeded read whose output mentions a path and a URL in its middle.
    c.call(
        "read_file",
        {"path": "src/app/config.yaml"},
        filler
        + "\n  docs: docs/guide.md\n  api: https://api.example.com/v1/items?id=42\n"
        + filler,
    )
    # Rule 2: a failed, long terminal output with errors and a path in the cut part.
    c.call(
        "terminal",
        {"command": "tail -n 200 /var/log/app/error.log"},
        json.dumps(
            {
                "output": filler
                + "\nERROR: connection refused to db:5432\nTraceback (most recent call last):\n"
                + '  File "tests/unit/test_parser.py", line 3\n'
                + "FileNotFoundError: [Errno 2] No such file or directory: 'data.csv'\n"
                + filler,
                "exit_code": 1,
            }
        ),
    )
    c.parallel(
        ("web_fetch", {"url": "http://localhost:8080/health"}, "status: ok\n" * 80),
        (
            "search_files",
            {"pattern": "retry", "path": "scripts/deploy.sh"},
            "scripts/deploy.sh:4: retry",
        ),
    )
    # Rule 4: thinking steps that mention a path, an error and a tool.
    c.assistant("The settings live in ~/.config/tool/settings.toml.")
    c.assistant("git said: fatal: not a git repository")
    c.call("write_file", {"path": "scripts/deploy.sh", "content": "retry=3"}, "ok")
    c.assistant("Patched the deploy script.")
    for i in range(5):  # the protected last five turns
        c.exchange(f"question {i}", f"answer {i}")
    return c


def _everything(messages) -> str:
    parts = []
    for m in messages:
        parts.append(m.text)
        parts.extend(f"{call.name} {call.arguments}" for call in m.tool_calls)
        if m.tool_name:
            parts.append(m.tool_name)
    return "\n".join(parts)


def test_paths_urls_tool_names_and_errors_are_never_dropped() -> None:
    c = _planted()
    t = c.transcript(context_window=8_000)
    middle_end = rules_tail_start(t.messages, 5)
    before = _everything(t.messages[1:middle_end])
    # Everything planted really is in the middle before compaction.
    planted = [*_PATHS, *_URLS, *_TOOLS, *_ERRORS]
    for item in planted:
        assert item in before, item
    found_paths = set(re.findall(r"[\w~./-]+/[\w.-]+\.(?:py|yaml|toml|md|sh|log)", before))
    assert {p for p in _PATHS if not p.startswith("~")} <= found_paths
    for collapse in (True, False):
        r = run(t, collapse_consecutive_assistant=collapse)
        assert r.report.status is Status.COMPACTED
        assert r.report.after_tokens < r.report.before_tokens
        applied = r.report.rules_applied
        assert (
            applied.get("collapse_pair") and applied.get("truncate") and applied.get("drop_system")
        )
        after = _everything(r.messages)
        for item in planted:
            assert item in after, (collapse, item)
        for path in found_paths:
            assert path in after, path
        assert not orphan_calls(r.messages) and not orphan_results(r.messages)
        roles = anthropic_roles(r.transcript)
        assert roles[0] == "user"


def test_rules_output_is_provider_valid() -> None:
    t = _planted().transcript(context_window=8_000)
    for collapse in (True, False):
        r = run(t, collapse_consecutive_assistant=collapse, protect_last_n_turns=1)
        roles = anthropic_roles(r.transcript)
        before = anthropic_roles(t)
        # Compaction adds no new same-role neighbours.
        new_pairs = sum(a == b for a, b in pairwise(roles))
        assert new_pairs <= sum(a == b for a, b in pairwise(before))
        if collapse:  # the input's own run of thinking steps is collapsed too
            assert not any(a == b == "assistant" for a, b in pairwise(roles))
        for m in r.messages:
            for call in m.tool_calls:
                json.loads(call.arguments)


def test_tool_output_text_and_error_lines() -> None:
    raw = json.dumps({"output": "ok\nERROR: disk full on /dev/sda1\ndone", "exit_code": 1})
    assert tool_output_text(raw) == "ok\nERROR: disk full on /dev/sda1\ndone"
    assert tool_output_text("plain text") == "plain text"
    assert tool_output_text("{not json") == "{not json"
    assert error_lines(tool_output_text(raw)) == ["ERROR: disk full on /dev/sda1"]
    assert error_lines("all good\nno problems here") == []


def test_generated_rule_lines_are_redacted() -> None:
    key = "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0f"
    c = Conv().user("call the API")
    c.call("http_get", {"url": f"https://api.example.com/?key={key}"}, "200 OK")
    c.assistant("Fetched.")
    for i in range(6):
        c.exchange(f"q{i}", f"a{i}")
    r = run(c.transcript(context_window=8_000))
    generated = [m for m in r.messages if m.meta.generated_by]
    assert generated and all(key not in m.text for m in generated)
    # User messages stay verbatim, as rule 5 says (the user's own text is not rewritten).
    assert r.messages[1] is c.build()[1]


def test_collapsed_message_keeps_thinking_first() -> None:
    step = Message(
        Role.ASSISTANT,
        (ThinkingPart("I should read a.py", signature="sig"), TextPart("Reading.")),
        tool_calls=(ToolCall("c1", "read_file", '{"path": "a.py"}'),),
    )
    result = Message(Role.TOOL, (TextPart("x = 1"),), tool_call_id="c1", tool_name="read_file")
    msgs = Conv().user("go").raw(step).raw(result).user("end").build()
    out = rules(msgs, 1, len(msgs))
    collapsed = out[2]
    assert isinstance(collapsed.parts[0], ThinkingPart)
    assert collapsed.text == 'Reading.\n[tool: read_file("a.py") → ok, 5 chars]'
    assert [m.role for m in out] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.USER]


def _one_ask_run(steps: int) -> Conv:
    """An agent's long run on one ask: the usual shape of a coding session."""
    c = Conv().user("Find why the nightly build fails and fix it.")
    for i in range(steps):
        c.terminal(f"make test-{i}", lines=120)
    return c.user("Thanks. Now write up what you changed.")


def test_rule_6_protecting_everything_says_so_and_keep_last_overrides_it() -> None:
    t = _one_ask_run(12).transcript()
    result = run(t)
    assert result.report.status is Status.NOOP
    reason = result.report.reason
    assert "rule 6" in reason and "last 5 user turns" in reason
    assert "this session has 2" in reason and "keep-last" in reason
    opts = CompactionOptions(profile=Profile.RULES, force=True, keep_last=1)
    kept_last = compress(t, opts, counter=ROUGH, now=0.0)
    assert kept_last.report.status is Status.COMPACTED


def test_rule_6_reaching_back_to_the_head_names_where() -> None:
    c = _one_ask_run(3)
    for i in range(3):
        c.user(f"And check step {i} too.").assistant(f"Checked step {i}.")
    reason = run(c.transcript()).report.reason
    assert "rule 6" in reason and "they reach back to message 1" in reason
