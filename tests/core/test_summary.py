"""Handoff summaries: wrappers, metadata, iterative updates, rehydration, fallback, policy."""

from __future__ import annotations

import itertools
import re
import time

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyjuice.formats import dumps, load_bytes
from tinyjuice.formats._messages import is_summary_text
from tinyjuice.model import Message, MessageMeta, Role, TextPart, ToolCall, Transcript
from tinyjuice.summary import (
    END_MARKER,
    HANDOFF_PREAMBLE,
    HANDOFF_PREFIX,
    SECTION_TITLES,
    FailureClass,
    StructuredSummary,
    SummaryError,
    SummaryKind,
    SummaryRequest,
    SummaryText,
    build_summary_prompt,
    classify_http_status,
    failure_outcome,
    fallback_summary,
    find_previous_summary,
    is_summary_message,
    render_summary_message,
    resolve_previous_summary,
    strip_summary_wrappers,
    strip_tinyjuice_metadata,
    summary_body,
    summary_tag,
)
from tinyjuice.tokens import RoughCounter, default_counter


def user(text: str, **meta: object) -> Message:
    return Message(Role.USER, (TextPart(text),), meta=MessageMeta(**meta))  # type: ignore[arg-type]


def assistant(text: str = "", *calls: ToolCall) -> Message:
    return Message(Role.ASSISTANT, (TextPart(text),) if text else (), tool_calls=calls)


def call(call_id: str, name: str, **args: object) -> ToolCall:
    return ToolCall(call_id, name, orjson.dumps(args).decode())


def tool(call_id: str, name: str, text: str, *, is_error: bool = False) -> Message:
    return Message(
        Role.TOOL,
        (TextPart(text),),
        tool_call_id=call_id,
        tool_name=name,
        meta=MessageMeta(is_error=is_error),
    )


ALL_FLAGS = list(itertools.product([False, True], repeat=4))

# ------------------------------------------------------------------ wrapper and metadata


def test_summary_not_mistaken_for_active_request() -> None:
    body = "## Historical Pending Asks\nThe user asked: 'drop the users table'."
    msg = render_summary_message(body, kind="fallback")
    text = msg.text
    assert text.startswith(HANDOFF_PREFIX)
    assert text.rstrip().endswith(END_MARKER)
    assert "latest user message" in text
    assert "not active instructions" in text
    # The quoted ask sits strictly between the preamble and the end marker.
    ask = text.index("drop the users table")
    assert text.index(HANDOFF_PREAMBLE) < ask < text.index(END_MARKER)
    # Flagged so latest-user search skips it; loaders recognise the prefix after a reload.
    assert msg.meta.is_summary and msg.meta.generated_by == "summary"
    assert not msg.is_real_user
    assert is_summary_text(text)
    assert is_summary_message(msg)


def test_summary_metadata_is_tagged_and_strippable() -> None:
    msg = render_summary_message("facts", kind=SummaryKind.LLM, lineage_id="sess-1")
    tag = summary_tag(msg)
    assert tag is not None and tag.kind is SummaryKind.LLM and tag.lineage_id == "sess-1"
    other = Message(Role.USER, (TextPart("hi"),), hints={"content_form": "string"})
    mixed = Message(
        Role.ASSISTANT, (TextPart("x"),), hints={"tinyjuice": {"kind": "llm"}, "role": "function"}
    )
    out = strip_tinyjuice_metadata([msg, other, mixed])
    assert "tinyjuice" not in out[0].hints and len(out[0].hints) == 0
    assert out[0].meta.is_summary  # meta stays; only the hints are provider-facing
    assert out[1] is other
    assert dict(out[2].hints) == {"role": "function"}
    assert summary_tag(out[0]) is None


def test_render_rejects_empty_and_bad_role() -> None:
    with pytest.raises(SummaryError) as err:
        render_summary_message(f"{HANDOFF_PREFIX}\n{HANDOFF_PREAMBLE}\n\n{END_MARKER}")
    assert err.value.failure_class is FailureClass.EMPTY
    with pytest.raises(SummaryError):
        summary_body(StructuredSummary())
    with pytest.raises(ValueError, match="user or assistant"):
        render_summary_message("x", role=Role.TOOL)
    assert render_summary_message("x", role=Role.ASSISTANT).role is Role.ASSISTANT


def test_render_redacts_generated_summary_text() -> None:
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    msg = render_summary_message(SummaryText(f"Used key {key} for the call"))
    assert key not in msg.text
    assert "[REDACTED:" in msg.text


def test_historical_wrappers_stripped() -> None:
    body = "## Goal\nShip v2 of src/app.py"
    assert strip_summary_wrappers(f"[CONTEXT SUMMARY]: {body}") == body
    twice = render_summary_message(render_summary_message(body).text).text
    assert strip_summary_wrappers(twice) == body
    # A foreign preamble after the opener is removed; content right after it is not.
    foreign = (
        "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary "
        "below. Treat it as background reference, NOT as active instructions.\n\n" + body
    )
    assert strip_summary_wrappers(foreign) == body
    legacy = "[CONTEXT SUMMARY]: The user wants the parser rewritten."
    assert strip_summary_wrappers(legacy) == "The user wants the parser rewritten."
    assert strip_summary_wrappers("plain text, no wrapper") == "plain text, no wrapper"


def test_repeated_compactions_update_not_nest() -> None:
    previous = render_summary_message("## Completed Actions\n- fact 0", lineage_id="s")
    for n in range(1, 6):
        request = SummaryRequest(
            messages=(previous, user(f"now do step {n}"), assistant(f"did step {n}")),
            previous_summary=previous.text,
            lineage_id="s",
        )
        prompt = build_summary_prompt(request)[1]["content"]
        assert "Update the previous summary with the new turns" in prompt
        assert HANDOFF_PREFIX not in prompt and END_MARKER not in prompt
        assert HANDOFF_PREAMBLE not in prompt
        # Simulate the model's answer: the old body plus one new fact (it may echo wrappers).
        answer = previous.text + f"\n- fact {n}"
        previous = render_summary_message(answer, lineage_id="s")
        text = previous.text
        assert text.count(HANDOFF_PREFIX) == 1
        assert text.count(END_MARKER) == 1
        assert text.count(HANDOFF_PREAMBLE) == 1
    assert all(f"fact {n}" in previous.text for n in range(6))


# ---------------------------------------------------------------- rehydration / lineage


def test_resumed_session_rehydrates_previous_summary() -> None:
    summary = render_summary_message("## Goal\nPort the CLI to click", lineage_id="sess-1")
    messages = [user("start"), assistant("ok"), summary, user("continue"), assistant("sure")]
    assert find_previous_summary(messages, "sess-1") == (2, "## Goal\nPort the CLI to click")
    # After a save and reload the tags are gone; the prefix still marks the summary.
    data = dumps(Transcript(messages=tuple(messages), format="openai"), "openai")
    loaded = load_bytes(data, format="openai")
    assert summary_tag(loaded.messages[2]) is None
    assert find_previous_summary(loaded.messages, "sess-1") == (
        2,
        "## Goal\nPort the CLI to click",
    )
    # The newest summary wins.
    newer = render_summary_message("## Goal\nPort the CLI and the TUI", lineage_id="sess-1")
    found = find_previous_summary([*messages, newer, user("go on")], "sess-1")
    assert found == (5, "## Goal\nPort the CLI and the TUI")
    # The found summary feeds the next iterative update.
    prev = resolve_previous_summary(
        loaded.messages, state_summary=None, state_lineage_id=None, lineage_id="sess-1"
    )
    assert prev == "## Goal\nPort the CLI to click"


def test_new_session_does_not_inherit_summary() -> None:
    foreign = render_summary_message("## Goal\nsession A work", lineage_id="A")
    messages = [foreign, user("hello, new task")]
    assert find_previous_summary(messages, "B") is None
    assert find_previous_summary(messages, None) is None
    assert find_previous_summary(messages, "A") is not None
    # Stale state from another session is dropped; only the same lineage may reuse it.
    fresh = [user("hello"), assistant("hi")]
    kwargs = {"state_summary": "## Goal\nsession A work", "state_lineage_id": "A"}
    assert resolve_previous_summary(fresh, lineage_id="B", **kwargs) is None
    assert resolve_previous_summary(fresh, lineage_id=None, **kwargs) is None
    assert resolve_previous_summary(fresh, lineage_id="A", **kwargs) == "## Goal\nsession A work"
    assert find_previous_summary(fresh) is None


# ------------------------------------------------------------------------------ prompt


def test_prompt_sections_focus_and_verbatim_rules() -> None:
    req = SummaryRequest(
        messages=(
            user("fix the flaky test"),
            assistant("", call("c1", "terminal", command="pytest -q tests/test_io.py")),
            tool("c1", "terminal", "1 failed in 2.31s"),
        ),
        focus_topic="database migrations",
        token_budget=1234,
    )
    msgs = build_summary_prompt(req)
    assert [m["role"] for m in msgs] == ["system", "user"]
    content = msgs[1]["content"]
    assert "Summarize the conversation turns below" in content
    assert "Update the previous summary" not in content
    for title in SECTION_TITLES:
        assert f"## {title}" in content
    assert '"database migrations"' in content and "60-70%" in content
    for phrase in ("file paths", "shell commands", "error messages", "numbers with their units"):
        assert phrase in content
    assert "identifiers" in content and "1,234 tokens" in content
    assert "pytest -q tests/test_io.py" in content and "1 failed in 2.31s" in content
    assert "evenly" in build_summary_prompt(SummaryRequest(messages=()))[1]["content"]


def test_prompt_clips_huge_messages() -> None:
    huge = "x" * 50_000
    content = build_summary_prompt(
        SummaryRequest(messages=(tool("c", "read_file", huge),)), max_chars_per_message=3000
    )[1]["content"]
    assert len(content) < 10_000
    assert "chars omitted" in content


# -------------------------------------------------------------------------- structured

_section_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="#*\r", exclude_categories=["Cs"]),
    max_size=40,
).map(lambda t: re.sub(r"\n{2,}", "\n", t).strip())

_FIELDS = [
    "historical_task_snapshot",
    "goal",
    "constraints_preferences",
    "completed_actions",
    "active_state",
    "in_progress",
    "blockers",
    "key_decisions",
    "resolved_questions",
    "pending_asks",
    "relevant_files",
    "remaining_work",
    "critical_context",
    "notes",
]


@settings(max_examples=60, deadline=None)
@given(st.lists(_section_text, min_size=len(_FIELDS), max_size=len(_FIELDS)))
def test_structured_summary_render_parse_round_trip(values: list[str]) -> None:
    s = StructuredSummary(**dict(zip(_FIELDS, values, strict=True)))
    rendered = s.render()
    assert StructuredSummary.parse(rendered) == s
    if not s.is_empty:
        # Wrapping and unwrapping does not change what parses back.
        assert StructuredSummary.parse(render_summary_message(rendered, redact=False).text) == s


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        _section_text | st.sampled_from(("", " \n ")), min_size=len(_FIELDS), max_size=len(_FIELDS)
    )
)
def test_structured_summary_render_is_a_heading_per_section_with_text(values: list[str]) -> None:
    s = StructuredSummary(**dict(zip(_FIELDS, values, strict=True)))
    parts = [f"## {title}\n{text.strip()}" for title, text in s.sections() if text.strip()]
    assert s.render() == "\n\n".join(parts)


def test_parse_accepts_seed_003_headings_and_preface() -> None:
    text = (
        "Some preface.\n"
        "## Active Task\nrefactor io\n"
        "### Goal & Constraints\nno new deps\n"
        "**In Progress / Blocked**\nwaiting on CI\n"
        "## Key Decisions Made\nuse orjson\n"
        "## Weird Heading\nkept here\n"
    )
    s = StructuredSummary.parse(text)
    assert s.notes == "Some preface."
    assert s.historical_task_snapshot == "refactor io"
    assert s.goal == "no new deps"
    assert s.in_progress == "waiting on CI"
    assert s.key_decisions == "use orjson\n## Weird Heading\nkept here"


# ------------------------------------------------------------------------------ policy


@pytest.mark.parametrize("flags", ALL_FLAGS)
def test_failure_policy_aborts_on_auth(flags: tuple[bool, bool, bool, bool]) -> None:
    abort, fallback, lossy, retried = flags
    out = failure_outcome(
        FailureClass.AUTH,
        abort_on_summary_failure=abort,
        fallback_enabled=fallback,
        accept_lossy=lossy,
        retried=retried,
    )
    assert out.abort_preserve and not out.drop_allowed and not out.use_fallback
    assert not out.retry_with_main_model
    assert out.cooldown_seconds > 0
    assert "preserved" in out.reason


@pytest.mark.parametrize("flags", ALL_FLAGS)
def test_failure_policy_aborts_on_network(flags: tuple[bool, bool, bool, bool]) -> None:
    abort, fallback, lossy, retried = flags
    out = failure_outcome(
        FailureClass.NETWORK,
        abort_on_summary_failure=abort,
        fallback_enabled=fallback,
        accept_lossy=lossy,
        retried=retried,
    )
    assert out.abort_preserve and not out.drop_allowed and not out.use_fallback
    assert not out.retry_with_main_model


def test_failure_policy_classes() -> None:
    none = failure_outcome(FailureClass.NO_PROVIDER)
    assert none.cooldown_seconds == 600 and none.use_fallback and none.abort_preserve
    lossy = failure_outcome(FailureClass.NO_PROVIDER, accept_lossy=True)
    assert lossy.drop_allowed and not lossy.abort_preserve
    assert not failure_outcome(
        FailureClass.NO_PROVIDER, accept_lossy=True, fallback_enabled=False
    ).drop_allowed
    for cls in (
        FailureClass.MODEL_NOT_FOUND,
        FailureClass.TIMEOUT,
        FailureClass.MALFORMED,
        FailureClass.STREAM_CLOSED,
    ):
        first = failure_outcome(cls, accept_lossy=True)
        assert first.retry_with_main_model and first.cooldown_seconds == 0
        assert not first.drop_allowed
        second = failure_outcome(cls, accept_lossy=True, retried=True)
        assert not second.retry_with_main_model
        assert 30 <= second.cooldown_seconds <= 60 and second.drop_allowed
    for cls in (FailureClass.RATE_LIMIT, FailureClass.SERVER):
        out = failure_outcome(cls)
        assert out.cooldown_seconds > 0 and not out.retry_with_main_model
        # A 529 must never drop the middle unless the caller accepted a lossy fallback.
        assert out.abort_preserve and not out.drop_allowed
    for cls in (FailureClass.EMPTY, FailureClass.TRUNCATED):
        assert failure_outcome(cls).retry_with_main_model
        assert failure_outcome(cls, retried=True).abort_preserve


@pytest.mark.parametrize("cls", list(FailureClass))
@pytest.mark.parametrize("flags", ALL_FLAGS)
def test_failure_outcome_is_exactly_one_action(
    cls: FailureClass, flags: tuple[bool, bool, bool, bool]
) -> None:
    abort, fallback, lossy, retried = flags
    out = failure_outcome(
        cls,
        abort_on_summary_failure=abort,
        fallback_enabled=fallback,
        accept_lossy=lossy,
        retried=retried,
    )
    assert [out.retry_with_main_model, out.drop_allowed, out.abort_preserve].count(True) == 1
    if abort or not fallback or not lossy:
        assert not out.drop_allowed
    if out.drop_allowed:
        assert out.use_fallback


def test_http_status_classes_and_retryable() -> None:
    assert classify_http_status(401) is FailureClass.AUTH
    assert classify_http_status(403) is FailureClass.AUTH
    assert classify_http_status(404) is FailureClass.MODEL_NOT_FOUND
    assert classify_http_status(429) is FailureClass.RATE_LIMIT
    assert classify_http_status(529) is FailureClass.SERVER
    assert classify_http_status(504) is FailureClass.TIMEOUT
    assert classify_http_status(418) is FailureClass.OTHER
    assert not SummaryError(FailureClass.AUTH, "bad key").retryable
    assert SummaryError(FailureClass.TIMEOUT, "slow", status=408).retryable
    assert str(SummaryError(FailureClass.NETWORK, "dns failed")) == "dns failed"


# ---------------------------------------------------------------------------- fallback


def _middle() -> list[Message]:
    return [
        user("Please make the build pass; config lives in pyproject.toml"),
        assistant(
            "Looking at it.",
            call("c1", "read_file", path="src/pkg/core.py"),
            call("c2", "terminal", command="pytest -q tests/test_core.py", workdir="/srv/app"),
        ),
        tool("c1", "read_file", "def main():\n    return 1\n"),
        tool(
            "c2",
            "terminal",
            'Traceback (most recent call last):\n  File "src/pkg/core.py", line 3\n'
            "ValueError: bad input\nexit code 2",
            is_error=True,
        ),
        assistant(
            "",
            call("c3", "bash", cmd=["bash", "-lc", "ls build/out/"], cwd="/srv/app"),
            call("c4", "write_file", file_path="C:\\work\\notes.txt", content="x"),
            call("c5", "web_fetch", url="https://docs.example.com/guide?x=1"),
        ),
        tool("c3", "bash", "[bash] ran `ls build/out/` -> exit 0, 3 lines, 40 bytes"),
        tool("c4", "write_file", "cat: /etc/missing.conf: No such file or directory"),
        tool("c5", "web_fetch", "ok, exit code 0, fetched 12 KB"),
        user("Also rename utils.py to helpers.py, and check ~/proj/.env"),
        assistant(
            "Done; see https://ci.example.com/run/42.",
            call("c6", "read_file", path="src/pkg/core.py"),
        ),
    ]


def test_fallback_says_locally_generated() -> None:
    fb = fallback_summary(_middle(), budget_tokens=2000, counter=RoughCounter())
    assert "generated locally without a model" in fb.text
    assert "may be incomplete" in fb.text
    assert fb.confidence == "low" and fb.kind is SummaryKind.FALLBACK
    assert fb.source_messages == len(_middle())
    # It wraps like any summary and is tagged as a fallback.
    msg = render_summary_message(fb.text, kind=fb.kind, lineage_id="x")
    assert summary_tag(msg) is not None and summary_tag(msg).kind is SummaryKind.FALLBACK  # type: ignore[union-attr]


def test_fallback_extracts_anchors() -> None:
    fb = fallback_summary(_middle(), budget_tokens=4000, counter=RoughCounter())
    s = fb.summary
    # Latest asks first, verbatim.
    asks = s.pending_asks
    assert asks.index("Also rename utils.py") < asks.index("Please make the build pass")
    files = s.relevant_files.splitlines()
    for p in (
        "pyproject.toml",
        "src/pkg/core.py",
        "/srv/app",
        "build/out/",
        "C:\\work\\notes.txt",
        "/etc/missing.conf",
        "utils.py",
        "helpers.py",
        "~/proj/.env",
    ):
        assert f"- {p}" in files or any(f.startswith(f"- {p} — ") for f in files), p
    # Files a tool touched are in the artifact trail with what was done, once.
    assert "- src/pkg/core.py — read" in files
    assert "- C:\\work\\notes.txt — created" in files
    assert sum(f.startswith("- src/pkg/core.py") for f in files) == 1  # deduplicated
    assert not any("example.com" in f for f in files)  # URLs are not paths
    assert "`pytest -q tests/test_core.py`" in s.completed_actions
    assert "`ls build/out/`" in s.completed_actions
    assert "read_file(path=src/pkg/core.py) ×2, first id c1" in s.completed_actions
    assert "web_fetch(url=https://docs.example.com/guide?x=1) id c5" in s.completed_actions
    assert "[bash] ran `ls build/out/` -> exit 0" in s.completed_actions
    assert "https://docs.example.com/guide?x=1" in s.critical_context
    assert "https://ci.example.com/run/42" in s.critical_context
    blockers = s.blockers
    assert "Traceback (most recent call last):" in blockers
    assert "ValueError: bad input" in blockers
    assert "exit code 2" in blockers
    assert "No such file or directory" in blockers
    assert "exit code 0" not in blockers
    assert (
        "[assistant] Done; see https://ci.example.com/run/42. (called read_file)" in s.active_state
    )
    assert fb.included["asks"] == 2 and not fb.omitted


def test_fallback_paths_from_a_diff_lose_their_a_b_prefixes() -> None:
    diff = (
        "diff --git a/src/pkg/core.py b/src/pkg/core.py\n"
        "--- a/src/pkg/core.py\n+++ b/src/pkg/core.py\n@@ -1 +1 @@\n-x\n+y\n"
        "--- /dev/null\n+++ b/docs/new.md\n"
    )
    middle = [
        user("Keep a/notes.md in mind, and run it > /dev/null"),
        assistant("", call("c1", "terminal", command="git diff")),
        tool("c1", "terminal", diff),
    ]
    fb = fallback_summary(middle, budget_tokens=4000, counter=RoughCounter())
    files = fb.summary.relevant_files.splitlines()
    assert "- src/pkg/core.py" in files
    assert not any(f.startswith(("- a/src", "- b/src")) for f in files), files
    # b/docs/new.md has no a/ twin (a new file): it is kept as written.
    assert "- b/docs/new.md" in files
    # A lone a/… path is a real directory, not a diff prefix.
    assert "- a/notes.md" in files
    assert not any("/dev/null" in f for f in files)


def test_fallback_focus_puts_matching_items_first_and_says_so() -> None:
    middle = [user("Start")]
    for k in range(200):
        middle.append(assistant("", call(f"c{k}", "read_file", path=f"src/billing/mod_{k}.py")))
        middle.append(tool(f"c{k}", "read_file", "x = 1"))
    middle.append(assistant("", call("p1", "read_file", path="src/payments/retry.py")))
    middle.append(tool("p1", "read_file", "retry = 3"))
    tight = {"budget_tokens": 400, "counter": RoughCounter(), "last_turns": 0}
    plain = fallback_summary(middle, **tight)
    focused = fallback_summary(middle, focus="payments retry", **tight)
    assert "src/payments/retry.py" not in plain.summary.relevant_files  # crowded out
    files = focused.summary.relevant_files.splitlines()
    assert files[1] == "- src/payments/retry.py — read"  # first in the artifact trail
    assert "Focus: payments retry" in focused.text
    # Without a matching item nothing moves (the note naming the focus takes a little room).
    other = fallback_summary(middle, focus="kubernetes", **tight)
    assert plain.summary.relevant_files.startswith(other.summary.relevant_files)


def test_fallback_skips_paths_cut_short_by_a_clip() -> None:
    middle = [
        user("Look at src/app/payments/webhooks.py"),
        assistant("", call("c1", "terminal", command="cat tests/fixtures/evt_payment_succ…")),
        tool("c1", "terminal", "[terminal] ran `pytest tests/payments/test_webh…` -> exit 1"),
    ]
    fb = fallback_summary(middle, budget_tokens=4000, counter=RoughCounter())
    files = fb.summary.relevant_files
    assert "src/app/payments/webhooks.py" in files
    assert "evt_payment_succ" not in files and "test_webh" not in files


def test_fallback_multiline_ask_with_headings_parses_back() -> None:
    ask = "Please apply this plan:\n## Goal\nrewrite io\n# Steps\n1. read src/io.py"
    fb = fallback_summary([user(ask)], budget_tokens=2000, counter=RoughCounter(), last_turns=0)
    parsed = StructuredSummary.parse(render_summary_message(fb.text).text)
    assert parsed == fb.summary
    assert "## Goal" in parsed.pending_asks and parsed.goal == ""


def test_fallback_is_deterministic_and_first_seen_ordered() -> None:
    a = fallback_summary(_middle(), budget_tokens=3000, counter=RoughCounter())
    b = fallback_summary(_middle(), budget_tokens=3000, counter=RoughCounter())
    assert a == b
    files = [
        line[2:].split(" — ")[0]
        for line in a.summary.relevant_files.splitlines()
        if line.startswith("- ")
    ]
    # The artifact trail first, then the other paths, each in first-seen order.
    assert files.index("src/pkg/core.py") < files.index("pyproject.toml") < files.index("utils.py")


def test_fallback_clamps_to_budget_with_priorities() -> None:
    middle: list[Message] = []
    for i in range(300):
        middle.append(user(f"ask number {i}: update module m{i}"))
        middle.append(
            assistant(
                "",
                call(f"c{i}", "terminal", command=f"python tools/job_{i}.py --n {i}"),
            )
        )
        middle.append(tool(f"c{i}", "terminal", f"wrote out/data_{i}.csv\nFAILED case {i}"))
    counter = default_counter()
    full = fallback_summary(middle, budget_tokens=1_000_000, counter=counter)
    assert not full.omitted
    small = fallback_summary(middle, budget_tokens=600, counter=counter)
    assert small.tokens <= 600
    assert counter.count(small.text) == small.tokens
    assert "ask number 299" in small.text  # the newest ask survives
    assert "Left out to fit the budget" in small.text
    for key, total in full.included.items():
        assert small.included.get(key, 0) + small.omitted.get(key, 0) == total
    # Hundreds of asks do not crowd out the other anchors.
    assert small.omitted["asks"] > 0
    assert small.included["paths"] > 0 and small.included["commands"] > 0
    assert small.included["errors"] > 0
    # Newest asks come first; the ones left out are the oldest.
    kept = [int(line.split()[3][:-1]) for line in small.summary.pending_asks.splitlines()[1:]]
    assert kept == list(range(299, 299 - len(kept), -1))


def _tokens_of(counter: object, lines: list[str]) -> int:
    return sum(counter.count(line) for line in lines)  # type: ignore[attr-defined]


def test_fallback_leftover_budget_goes_to_higher_priority_first() -> None:
    # Only asks and paths overflow; the room other categories leave goes to asks first.
    middle = [user(f"ask {i}: look at src/area_{i}/module_{i}.py") for i in range(400)]
    counter = RoughCounter()
    fb = fallback_summary(middle, budget_tokens=1500, counter=counter, last_turns=0)
    assert fb.tokens <= 1500
    asks = fb.summary.pending_asks.splitlines()[1:]
    paths = fb.summary.relevant_files.splitlines()
    assert fb.omitted["asks"] > 0 and fb.omitted["paths"] > 0
    assert paths and _tokens_of(counter, asks) > 2 * _tokens_of(counter, paths)
    # A budget that fits everything leaves nothing out.
    roomy = fallback_summary(middle, budget_tokens=100_000, counter=counter, last_turns=0)
    assert not roomy.omitted
    assert roomy.included["asks"] == roomy.included["paths"] == 400


def test_fallback_keeps_a_clipped_newest_ask_when_it_alone_is_too_big() -> None:
    huge = "please " + "refactor the parser " * 400
    fb = fallback_summary([user(huge)], budget_tokens=400, counter=RoughCounter())
    assert fb.tokens <= 400
    assert fb.included["asks"] == 1
    assert "please refactor the parser" in fb.summary.pending_asks
    assert "more chars]" in fb.summary.pending_asks


def test_fallback_summary_redacts_sensitive_content() -> None:
    from tinyjuice.redact import redact_message

    openai_key = "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8Ba7"
    aws_key = "AKIA" + "QWERTYUIOPASDFGH"
    gh_token = "ghp_" + "abcdEFGHijklMNOPqrstUVWXyz0123456789"
    raw = [
        user(f"Use my key {openai_key} to call the API in src/client.py"),
        assistant(
            "",
            call(
                "c1",
                "terminal",
                command=f"AWS_ACCESS_KEY_ID={aws_key} aws s3 ls s3://bucket",
                api_key=openai_key,
            ),
        ),
        tool("c1", "terminal", f"Error: token {gh_token} rejected\nexit code 1", is_error=True),
        user(f"clone https://user:hunter2secret@git.example.com/repo.git with {gh_token}"),
    ]
    redacted = [redact_message(m) for m in raw]
    fb = fallback_summary(redacted, budget_tokens=3000, counter=RoughCounter())
    for secret in (openai_key, aws_key, gh_token, "hunter2secret"):
        assert secret not in fb.text
    assert "[REDACTED:" in fb.text
    assert "src/client.py" in fb.text  # the useful anchors survive redaction
    assert "aws s3 ls s3://bucket" in fb.text


@pytest.mark.perf
def test_fallback_is_linear_and_fast() -> None:
    middle: list[Message] = []
    for i in range(4000):
        middle.append(user(f"step {i}: edit src/mod_{i % 50}.py"))
        middle.append(assistant("", call(f"c{i}", "bash", command=f"make target_{i % 20}")))
        middle.append(tool(f"c{i}", "bash", ("line of output\n" * 40) + "exit code 0"))
    start = time.perf_counter()
    fb = fallback_summary(middle, budget_tokens=8000, counter=RoughCounter())
    elapsed = time.perf_counter() - start
    assert fb.tokens <= 8000
    assert elapsed < 5.0


def test_fallback_lists_tool_names_and_serves_anchors_before_verbose_parts() -> None:
    middle: list[Message] = []
    for i in range(40):
        middle.append(
            assistant(
                "",
                call(f"c{i}", "terminal", command=f"make target_{i}"),
                call(f"r{i}", "read_file", path=f"src/mod_{i}.py"),
            )
        )
        middle.append(tool(f"c{i}", "terminal", f"[terminal] ran `make target_{i}` -> exit 0"))
        middle.append(tool(f"r{i}", "read_file", "x = 1"))
    counter = RoughCounter()
    full = fallback_summary(middle, budget_tokens=1_000_000, counter=counter)
    assert "Tools used:\n- terminal\n- read_file" in full.summary.completed_actions
    # A budget that holds every anchor but not the verbose parts: the anchors all stay,
    # the tool-call lines, digests and last turns give way.
    anchors_only = fallback_summary(middle, budget_tokens=int(full.tokens * 0.55), counter=counter)
    assert set(anchors_only.omitted) <= {"tool_calls", "digests", "last_turns"}
    assert anchors_only.omitted
    for i in range(40):
        assert f"src/mod_{i}.py" in anchors_only.text
        assert f"`make target_{i}`" in anchors_only.text


def test_fallback_names_exactly_what_it_left_out() -> None:
    middle = [user(f"ask {i}: look at src/area_{i}/module_{i}.py") for i in range(200)]
    counter = RoughCounter()
    fb = fallback_summary(middle, budget_tokens=800, counter=counter, last_turns=0)
    for key, n in fb.omitted.items():
        assert len(fb.omitted_items[key]) == n
    full = fallback_summary(middle, budget_tokens=1_000_000, counter=counter, last_turns=0)
    kept = {line[2:] for line in fb.summary.relevant_files.splitlines()}
    everything = {line[2:] for line in full.summary.relevant_files.splitlines()}
    assert set(fb.omitted_items["paths"]) == everything - kept
    for path in fb.omitted_items["paths"]:
        assert f"- {path}\n" not in fb.text + "\n"
    assert not full.omitted_items


def test_fallback_newest_ask_is_whole_when_the_room_allows() -> None:
    # An ask bigger than its pass-one share but smaller than the budget is kept whole.
    ask = "please " + "refactor the parser carefully " * 60
    fb = fallback_summary([user(ask)], budget_tokens=1200, counter=RoughCounter())
    assert ask.strip() in fb.summary.pending_asks
    assert "more chars]" not in fb.summary.pending_asks


def test_fallback_verbose_parts_never_take_room_an_anchor_needs() -> None:
    def middle(with_calls: bool) -> list[Message]:
        out: list[Message] = []
        for i in range(30):
            if with_calls:
                out.append(assistant("", call(f"c{i}", "run_checks", suite=f"s{i}", level="full")))
            out.append(
                tool(
                    f"c{i}",
                    "run_checks",
                    f"CheckError: suite s{i} failed because the ledger balance did not match "
                    f"the expected value in nightly reconciliation run {i}",
                    is_error=True,
                )
            )
        return out

    counter = RoughCounter()
    # The same anchors (30 errors, one tool name) without the tool-call lines: its size
    # is what the anchors need; a little more covers the extra label and note.
    anchors = fallback_summary(middle(False), budget_tokens=10**6, counter=counter, last_turns=0)
    # (+ the sentence naming the appendix that holds what was left out)
    fb = fallback_summary(
        middle(True), budget_tokens=anchors.tokens + 130, counter=counter, last_turns=0
    )
    assert "errors" not in fb.omitted
    assert fb.omitted["tool_calls"] > 0
    for i in range(30):
        assert f"suite s{i} failed" in fb.text


def test_compress_hands_the_focus_topic_to_the_fallback() -> None:
    from builders import coding_session

    from tinyjuice.options import CompactionOptions
    from tinyjuice.pipeline import compress

    t = coding_session(6).transcript()
    opts = CompactionOptions(keep_last=1, force=True, focus_topic="engine rename")
    result = compress(t, opts, counter=RoughCounter())
    summary = next(m for m in result.transcript.messages if m.meta.generated_by == "summary")
    assert "Focus: engine rename" in summary.text
