"""Summary-quality review: hand-made cases with known answers, the checks, past
compactions in the bundled transcripts, and the deterministic fallback on every
bundled session."""

from __future__ import annotations

import functools
from pathlib import Path

import orjson
import pytest

from tinyjuice.budget import summary_token_budget
from tinyjuice.facts import norm_path
from tinyjuice.formats import load
from tinyjuice.model import Message, MessageMeta, Role, TextPart, ToolCall
from tinyjuice.redact import redact_message
from tinyjuice.review import (
    CATEGORIES,
    Category,
    collect_items,
    fresh_request_lines,
    review_past_compactions,
    review_summary,
)
from tinyjuice.summary import fallback_summary, render_summary_message
from tinyjuice.tokens import RoughCounter, default_counter, message_tokens

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
SESSION_FILES = sorted(
    p.name for p in SESSIONS.iterdir() if p.suffix in {".json", ".jsonl", ".db", ".traj"}
    if p.name != "manifest.json"
)  # fmt: skip
#: The categories the fallback must keep in full whenever its budget allows.
ANCHORS = ("paths", "commands", "urls", "errors", "tools")


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


HASH = "4e1c9a7d2b61f0e3a9c58e4b7d10f2a6c3e9b815"


def middle() -> list[Message]:
    return [
        user("CI is red since #412 landed; ticket FIN-212. Start in src/app/money.py."),
        assistant(
            "Running the suite.",
            call("c1", "terminal", command="python -m pytest -q tests/billing"),
        ),
        tool(
            "c1",
            "terminal",
            "tests/billing/test_tax.py::test_rate [ 40%]\n"
            "E   TypeError: unsupported operand type(s) for *: 'float' and 'Decimal'\n"
            "47 failed, 304 passed in 12.5s",
        ),
        assistant(
            f"Reverting {HASH[:7]} would help; docs at https://docs.example.com/decimal.",
            call("c2", "read_file", path="/home/maya/proj/src/app/tax.py"),
        ),
        tool("c2", "read_file", "def rate(): ...\n# 1,284 lines, v2.13.1"),
        user("Now fix the rounding in money.py and keep ROUND_HALF_UP."),
    ]


def items_of(review, category: str) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {i.text: i.index for i in review.items if i.category.value == category}


def test_collect_items_known_answer() -> None:
    got: dict[str, dict[str, int]] = {}
    for cat, text, index in collect_items(middle(), start_index=10):
        got.setdefault(cat.value, {})[text] = index
    # "tests/billing" (one slash, no extension) is not taken for a path: the fallback's rule.
    assert got["paths"] == {
        "src/app/money.py": 10,
        "tests/billing/test_tax.py": 12,
        "/home/maya/proj/src/app/tax.py": 13,
        "money.py": 15,
    }
    assert got["commands"] == {"python -m pytest -q tests/billing": 11}
    assert got["urls"] == {"https://docs.example.com/decimal": 13}
    assert got["errors"] == {
        "E TypeError: unsupported operand type(s) for *: 'float' and 'Decimal'": 12,
        "47 failed, 304 passed in 12.5s": 12,
    }
    # "[ 40%]" is a progress counter, not a measured number; the numbers inside the
    # file read_file returned (message 14) are its content, not facts of the work.
    assert got["numbers"] == {"47 failed": 12, "304 passed": 12, "12.5s": 12}
    assert got["tools"] == {"terminal": 11, "read_file": 13}
    assert got["identifiers"] == {"#412": 10, "FIN-212": 10, HASH[:7]: 13}
    assert got["latest_ask"] == {"Now fix the rounding in money.py and keep ROUND_HALF_UP.": 15}
    # Display order follows CATEGORIES.
    order = [cat for cat, _, _ in collect_items(middle())]
    assert order == sorted(order, key=CATEGORIES.index)


def test_review_recall_and_missing_known_answer() -> None:
    summary = (
        "## Completed Actions\n"
        "- Ran `python -m pytest -q tests/billing` -> 47 failed, 304 passed\n"
        "- Read src/app/tax.py with read_file\n"
        "## Blockers\n"
        "- E   TypeError: unsupported operand type(s) for *: 'float' and 'Decimal'\n"
        "## Critical Context\n"
        "- #412 broke CI (FIN-212); candidate revert 4e1c9a7.\n"
        "## Historical Pending Asks\n"
        "- Now fix the rounding in   money.py and keep ROUND_HALF_UP.\n"
    )
    review = review_summary(middle(), summary, start_index=10, counter=RoughCounter())
    recall = review.recall
    # paths: money.py (in the ask) and the absolute tax.py by its shorter suffix are kept.
    assert items_of(review, "paths") == {
        "src/app/money.py": 10,
        "tests/billing/test_tax.py": 12,
        "/home/maya/proj/src/app/tax.py": 13,
        "money.py": 15,
    }
    missing = {k: [(i.text, i.index) for i in v] for k, v in review.missing.items()}
    assert missing["paths"] == [("src/app/money.py", 10), ("tests/billing/test_tax.py", 12)]
    assert recall["paths"] == 0.5
    assert recall["commands"] == 1.0
    assert missing["urls"] == [("https://docs.example.com/decimal", 13)]
    assert recall["urls"] == 0.0
    # "47 failed, 304 passed" keeps the error line "47 failed, 304 passed in 12.5s" for a
    # reader: four of its five words are there.
    assert "errors" not in missing
    assert recall["errors"] == 1.0
    assert missing["numbers"] == [("12.5s", 12)]
    assert recall["tools"] == 0.5 and missing["tools"] == [("terminal", 11)]
    assert recall["identifiers"] == 1.0  # the hash by its 7-character prefix
    assert recall["latest_ask"] == 1.0  # whitespace differences do not matter
    assert review.overall == pytest.approx(sum(i.found for i in review.items) / len(review.items))
    data = review.to_dict()
    assert data["missing"]["urls"] == [{"text": "https://docs.example.com/decimal", "index": 13}]
    assert data["total"]["paths"] == 4 and data["found"]["paths"] == 2
    assert set(data["recall"]) == {c.value for c in CATEGORIES}


def test_latest_ask_must_be_verbatim() -> None:
    paraphrase = "The user wants the rounding in money.py fixed, keeping ROUND_HALF_UP."
    review = review_summary(middle(), paraphrase, counter=RoughCounter())
    assert review.recall["latest_ask"] == 0.0
    assert review.missing["latest_ask"][0].index == 5


def test_matching_rules_for_paths_numbers_and_identifiers() -> None:
    mid = [
        user("Edit data.py, a.py and src/billing/tax.py and src/billing/proration.py."),
        tool("t", "terminal", "1,284 lines in 10.37s; commit 9d41a0e; see #41"),
        user("UTF-8 output for test_cents[JPY-0]"),
    ]
    summary = "Touched data.py, src/billing/{tax,proration}.py; 1284 lines in 10.37 s; #410"
    review = review_summary(mid, summary, counter=RoughCounter())
    found = {i.text: i.found for i in review.items}
    assert found["data.py"] is True
    assert found["a.py"] is False  # not found inside "data.py"
    assert found["src/billing/tax.py"] is True  # brace list expanded
    assert found["src/billing/proration.py"] is True
    assert found["1,284 lines"] is True  # comma and space are optional
    assert found["10.37s"] is True
    assert found["9d41a0e"] is False
    assert found["#41"] is False  # "#410" is another issue
    idents = items_of(review, "identifiers")
    assert "UTF-8" not in idents and "JPY-0" not in idents


def test_items_are_redacted_and_never_leak_in_the_review() -> None:
    key = "sk-" + "proj-" + "Ab12" * 10
    mid = [
        user(f"Use OPENAI_API_KEY={key} in config/settings.toml"),
        tool("t", "terminal", f"error: bad key {key}", is_error=True),
    ]
    review = review_summary(mid, "config/settings.toml", counter=RoughCounter())
    blob = orjson.dumps(review.to_dict()).decode()
    assert key not in blob
    assert "[REDACTED:" in blob
    assert review.check("no_secrets").ok is True


# ----------------------------------------------------------------------------- checks


def test_checks_on_a_tinyjuice_summary() -> None:
    body = "## Relevant Files\n- src/app/money.py"
    text = render_summary_message(body).text
    counter = RoughCounter()
    ok = review_summary(middle(), text, budget_tokens=500, counter=counter)
    assert ok.check("wrapper").ok is True
    assert ok.check("budget").ok is True
    assert ok.check("no_secrets").ok is True
    assert ok.check("no_fresh_request").ok is True
    assert ok.ok
    # The body, not the wrapper, is measured against the budget.
    assert ok.summary_tokens == counter.count(body)
    over = review_summary(middle(), text, budget_tokens=3, counter=counter)
    assert over.check("budget").ok is False and "over" in over.check("budget").detail
    no_end = text.replace("[END OF COMPACTION SUMMARY", "[END OF SOMETHING")
    assert review_summary(middle(), no_end, counter=counter).check("wrapper").ok is False


def test_checks_do_not_apply_to_agent_summaries_without_prefix() -> None:
    review = review_summary(middle(), "The user asked for a fix.", counter=RoughCounter())
    assert review.check("wrapper").ok is None
    assert review.check("budget").ok is None
    assert review.ok


def test_secret_leak_is_flagged_without_showing_the_secret() -> None:
    token = "gh" + "p_" + "Zz9Y" * 9
    review = review_summary(middle(), f"pushed with {token}", counter=RoughCounter())
    check = review.check("no_secrets")
    assert check.ok is False
    assert "github_token" in check.detail and token not in check.detail
    assert not review.ok


@pytest.mark.parametrize(
    ("summary", "flagged"),
    [
        ("## Notes\nPlease run the migration now.", 1),
        ("## Active State\n- Can you also update the README?", 1),
        ("## Next Steps\n1. You should now delete the old table.", 1),
        ("Your task is to finish the export.", 1),
        ("## Historical Pending Asks\n- Please run the migration now.", 0),
        ('## Key Decisions\n- The user said "please keep ROUND_HALF_UP".', 0),
        ("## Notes\n> Please run the migration.", 0),
        ("## Active State\n- [user] please rerun the suite", 0),
        ("## Completed Actions\n- Ran the migration; it passed.", 0),
        ("5. All user messages:\n   - Please fix it properly.\n6. Pending Tasks:\n   - None", 0),
    ],
)
def test_fresh_request_heuristic(summary: str, flagged: int) -> None:
    assert len(fresh_request_lines(summary)) == flagged
    check = review_summary(middle(), summary, counter=RoughCounter()).check("no_fresh_request")
    assert check.ok is (flagged == 0)


def test_fallback_summary_never_reads_as_a_fresh_request() -> None:
    asks = [user("Please make the build pass."), user("Can you also bump the version?")]
    fb = fallback_summary(asks, budget_tokens=2000, counter=RoughCounter())
    text = render_summary_message(fb.text, kind=fb.kind).text
    assert fresh_request_lines(text) == []
    assert review_summary(asks, text, counter=RoughCounter()).recall["latest_ask"] == 1.0


# ------------------------------------------------------------------ past compactions


def test_review_past_compactions_claude_code() -> None:
    t = load(SESSIONS / "claude-code.jsonl")
    reviews = review_past_compactions(t, counter=RoughCounter())
    summaries = [i for i, m in enumerate(t.messages) if m.meta.is_summary]
    assert [r.index for r in reviews] == summaries == [e.summary_index for e in t.compactions]
    assert [r.trigger for r in reviews] == [e.trigger.value for e in t.compactions]
    assert [r.pre_tokens for r in reviews] == [e.pre_tokens for e in t.compactions]
    # Each summary is measured against the turns since the previous one.
    assert reviews[0].start == 0
    assert reviews[1].start == reviews[0].index
    for r in reviews:
        summary = t.messages[r.index].text
        assert r.review.source_messages == r.index - r.start
        for item in r.review.items:
            assert r.start <= item.index < r.index
        # Found paths really appear (whole, or by a shorter suffix) in the summary.
        for item in r.review.items:
            if item.category is Category.PATHS and item.found:
                tail = "/".join(norm_path(item.text).split("/")[-2:])
                assert tail in summary.lower(), item.text
        data = r.to_dict()
        assert data["index"] == r.index and data["span"] == [r.start, r.index]
        assert set(data["missing"]) <= {c.value for c in CATEGORIES}


def test_review_past_compactions_other_formats() -> None:
    counter = RoughCounter()
    codex = load(SESSIONS / "codex-rollout.jsonl")
    (r,) = review_past_compactions(codex, counter=counter)
    assert r.index == codex.compactions[0].summary_index and r.start == 0
    assert r.review.total("paths") > 0
    demo = load(SESSIONS / "demo.json")  # a Hermes log: the summary follows the head
    (d,) = review_past_compactions(demo, counter=counter)
    assert d.index == demo.compactions[0].summary_index and d.start == 0
    assert {i.index for i in d.review.items} <= set(range(d.index))
    assert d.review.check("wrapper").ok is False  # Hermes' prefix without an end marker
    hermes = load(SESSIONS / "hermes-state.db")
    (h,) = review_past_compactions(hermes, counter=counter)
    assert h.index == 0 and h.review.items == () and h.review.overall is None
    assert review_past_compactions(load(SESSIONS / "openai-chat.json"), counter=counter) == ()


def test_sharegpt_summary_turn_is_reviewed(tmp_path: Path) -> None:
    rows = {
        "conversations": [
            {"from": "human", "value": "Fix src/a.py; run `make test`."},
            {"from": "gpt", "value": "Done, see https://ci.example.com/1 and src/b.py."},
            {"from": "human", "value": "[CONTEXT SUMMARY]: Fixed src/a.py."},
            {"from": "gpt", "value": "Continuing."},
        ]
    }
    path = tmp_path / "s.jsonl"
    path.write_bytes(orjson.dumps(rows) + b"\n")
    t = load(path)
    (r,) = review_past_compactions(t, counter=RoughCounter())
    assert r.index == 2 and r.start == 0
    assert r.review.found("paths") == 1 and r.review.total("paths") == 2
    assert [i.text for i in r.review.missing["paths"]] == ["src/b.py"]
    assert r.review.missing["urls"][0].index == 1


# -------------------------------------------------- the fallback on every session


@functools.cache
def _session_middle(name: str) -> tuple[Message, ...]:
    t = load(SESSIONS / name)
    return tuple(redact_message(m) for m in t.messages if m.role is not Role.SYSTEM)


def _accounted(cat: str, missing: str, omitted: tuple[str, ...], trail: tuple[str, ...]) -> bool:
    """A missing review item is one the fallback reported leaving out (a touched file's
    path: in its artifact trail entry, ``path — actions``, the same file by a suffix)."""
    if cat in ("errors", "commands"):
        return any(missing[:100] in o for o in omitted)
    if cat == "paths" and any(
        norm_path(missing).endswith(norm_path(t.split(" — ")[0]).lstrip("/")) for t in trail
    ):
        return True
    return missing in omitted


@pytest.mark.parametrize("name", SESSION_FILES)
def test_fallback_keeps_every_anchor_whenever_the_budget_allows(name: str) -> None:
    counter = default_counter()
    mid = _session_middle(name)
    full = fallback_summary(mid, budget_tokens=10_000_000, counter=counter)
    assert not full.omitted
    window = 200_000
    budgets = {
        "pipeline": summary_token_budget(window, sum(message_tokens(m, counter) for m in mid)),
        "exact": full.tokens,  # just enough for everything
        "80%": int(full.tokens * 0.8),  # the verbose parts give way first
    }
    for label, budget in budgets.items():
        fb = fallback_summary(mid, budget_tokens=budget, counter=counter)
        review = review_summary(mid, fb.text, budget_tokens=budget, counter=counter)
        assert review.check("budget").ok, label
        anchors_cut = {k: v for k, v in fb.omitted.items() if k in ANCHORS}
        if anchors_cut:
            # Only when the anchors alone exceed the budget; then it says what it cut.
            assert label == "pipeline" and "Left out to fit the budget" in fb.text
            continue
        for cat in ANCHORS:
            if review.total(cat):
                assert review.recall[cat] == 1.0, (label, cat, review.missing.get(cat))


@pytest.mark.parametrize("name", SESSION_FILES)
def test_fallback_reports_exactly_what_a_tight_budget_cost(name: str) -> None:
    counter = default_counter()
    mid = _session_middle(name)
    fb = fallback_summary(mid, budget_tokens=300, counter=counter)
    review = review_summary(mid, fb.text, counter=counter)
    assert fb.tokens <= 300
    for cat in ANCHORS:
        omitted = fb.omitted_items.get(cat, ())
        assert len(omitted) == fb.omitted.get(cat, 0)
        missing = review.missing.get(cat, ())
        # Every item the review misses is one the fallback says it left out …
        for item in missing:
            trail = fb.omitted_items.get("artifacts", ())
            assert _accounted(cat, item.text, omitted, trail), (cat, item.text)
        # … and an item the fallback kept is never missing.
        if not omitted and not (cat == "paths" and fb.omitted.get("artifacts")):
            assert not missing
    if any(fb.omitted.get(c) for c in ANCHORS):
        assert "Left out to fit the budget" in fb.text


def test_tight_budget_really_leaves_anchors_out_somewhere() -> None:
    # The branch above is not vacuous: the demo session's anchors do not fit 300 tokens.
    counter = default_counter()
    mid = _session_middle("demo.json")
    fb = fallback_summary(mid, budget_tokens=300, counter=counter)
    review = review_summary(mid, fb.text, counter=counter)
    assert fb.omitted.get("paths", 0) > 0 and review.missing.get("paths")
