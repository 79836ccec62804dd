"""The live context after a compaction, subagents, one policy everywhere, reader fixes.

Transcripts are written here line by line in the agents' on-disk shapes (Claude Code
session JSONL with ``compact_boundary`` + ``isCompactSummary``, a Codex rollout with a
``compacted`` item), never through tinyjuice's writers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from cc_shapes import SESSION, Chain, subagent_session, turns, two_compactions
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyjuice.formats import load
from tinyjuice.live import live_split, live_view, with_history
from tinyjuice.pipeline import compress
from tinyjuice.report import CompactionOptions
from tinyjuice.tokens import count_transcript, default_counter
from tjui.cli import main


def run(*args: str) -> Any:
    res = CliRunner().invoke(main, [str(a) for a in args])
    return res


def run_json(*args: str) -> dict[str, Any]:
    res = run(*args, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


# ------------------------------------------------------------------ Claude Code


def test_claude_code_two_compactions_live_start_is_the_last_summary(tmp_path: Path) -> None:
    t = load(two_compactions(tmp_path))
    assert len(t.compactions) == 2
    last = t.compactions[-1]
    assert t.live_start == last.message_index == last.summary_index
    assert t.messages[t.live_start].meta.is_summary
    assert all(not m.text.startswith(("before-first", "between")) for m in t.live_messages())
    assert [m.text[:12] for m in t.live_messages()[1:3]] == ["after-second"] * 2


def test_inspect_json_live_and_history(tmp_path: Path) -> None:
    path = two_compactions(tmp_path)
    t = load(path)
    data = run_json("inspect", path)
    per = count_transcript(t, default_counter()).per_message
    start = t.live_start
    assert data["live"]["from_index"] == start
    assert data["live"]["messages"] == len(t.messages) - start
    # No system prompt or tool schemas in a Claude Code file: live = the messages after it.
    assert data["live"]["tokens"] == sum(per[start:])
    assert data["history"] == {"messages": start, "tokens": sum(per[:start])}
    # Existing keys keep their whole-file meaning.
    assert data["messages"] == len(t.messages)
    assert data["tokens"]["total"] == sum(per)
    assert len(data["compactions"]) == 2
    # The measured prompt after the reset is the latest one, after the second boundary.
    assert data["live"]["measured_prompt"] == t.usage[-1].prompt_tokens
    assert data["subagents"] == []
    whole = run_json("inspect", path, "--whole-file")
    assert whole["live"]["from_index"] == 0 and whole["history"]["messages"] == 0


def test_compress_keeps_only_post_resetturns(tmp_path: Path) -> None:
    path = two_compactions(tmp_path)
    out = tmp_path / "out.json"
    data = run_json("compress", path, "--keep-last", "1", "--to", "openai", "-o", out)
    assert data["status"] == "compacted" and data["live"]["from_index"] > 0
    texts = [json.dumps(m) for m in json.loads(out.read_text())["messages"]]
    assert not any("before-first" in x for x in texts)
    assert not any("between: step" in x for x in texts)
    assert any("latest ask: write the totals" in x for x in texts)


def test_compress_whole_file_keeps_todays_behaviour(tmp_path: Path) -> None:
    path = two_compactions(tmp_path)
    out = tmp_path / "out.json"
    data = run_json(
        "compress", path, "--keep-last", "1", "--whole-file", "--to", "openai", "-o", out
    )
    assert data["live"]["from_index"] == 0
    assert data["before"]["messages"] == len(load(path).messages)
    text = out.read_text()
    assert "before-first: step 0" in text  # the protected head of the whole file


def test_at_before_the_reset_is_refused(tmp_path: Path) -> None:
    res = run("compress", two_compactions(tmp_path), "--at", "2", "--dry-run")
    assert res.exit_code == 2
    assert "before the agent's last compaction" in res.output


def test_summarize_works_on_the_live_context(tmp_path: Path) -> None:
    data = run_json("summarize", two_compactions(tmp_path), "--keep-last", "1")
    blob = json.dumps(data)
    assert "before-first: step 0" not in blob


# ------------------------------------------------------------------------ Codex


def _rollout_item(payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2025-10-07T10:00:00.000Z", "type": "response_item", "payload": payload}


def _rollout_msg(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def _codex(tmp_path: Path) -> Path:
    summary = "Renamed the config loader; tests were next."
    lines = [
        {
            "timestamp": "2025-10-07T10:00:00.000Z",
            "type": "session_meta",
            "payload": {"id": "0199c3aa-1111-7222-8333-444455556666", "cwd": "/src/app"},
        },
        _rollout_item(_rollout_msg("user", "old ask: rename load_cfg to load_config everywhere")),
        _rollout_item(_rollout_msg("assistant", "old answer: renamed in 12 files")),
        {
            "timestamp": "2025-10-07T10:05:00.000Z",
            "type": "compacted",
            "payload": {
                "message": summary,
                "replacement_history": [
                    _rollout_msg("user", "old ask: rename load_cfg to load_config everywhere"),
                    _rollout_msg("user", f"Another language model started this task:\n{summary}"),
                ],
            },
        },
        {
            "timestamp": "2025-10-07T10:05:00.000Z",
            "type": "event_msg",
            "payload": {"type": "context_compacted"},
        },
        _rollout_item(_rollout_msg("user", "new ask: now run the tests")),
        _rollout_item(_rollout_msg("assistant", "new answer: 48 passed")),
    ]
    p = tmp_path / "rollout-2025-10-07T10-00-00-0199c3aa.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return p


def test_codex_compacted_replacement_history_is_the_live_context(tmp_path: Path) -> None:
    t = load(_codex(tmp_path))
    assert t.live_start == 2
    live = [m.text for m in t.live_messages()]
    assert live[0] == "old ask: rename load_cfg to load_config everywhere"
    assert live[1].endswith("tests were next.") and t.messages[3].meta.is_summary
    assert live[2:] == ["new ask: now run the tests", "new answer: 48 passed"]
    data = run_json("inspect", _codex(tmp_path))
    assert (data["live"]["messages"], data["history"]["messages"]) == (4, 2)


# -------------------------------------------------------------------- subagents


def test_subagent_file_loads_as_its_own_conversation(tmp_path: Path) -> None:
    subagent_session(tmp_path)
    agent = tmp_path / SESSION / "subagents" / "agent-a91c2f0.jsonl"
    t = load(agent)
    assert len(t.messages) == 4 and t.extra["subagent"] == "a91c2f0"
    out = tmp_path / "agent.json"
    res = run("convert", agent, "--to", "openai", "-o", out)
    assert res.exit_code == 0, res.output
    assert len(json.loads(out.read_text())["messages"]) == 4


def test_parent_lists_its_subagents_and_counts_them(tmp_path: Path) -> None:
    path = subagent_session(tmp_path)
    data = run_json("inspect", path)
    (sub,) = data["subagents"]
    assert (sub["id"], sub["source"], sub["messages"]) == ("a91c2f0", "file", 4)
    from tinyjuice.breakdown import compute_breakdown
    from tinyjuice.subagents import list_subagents

    t = load(path)
    tokens = count_transcript(t, default_counter())
    b = compute_breakdown(t, tokens, subagents=len(list_subagents(t)))
    bucket = next(c for c in b.categories if c.key == "subagents")
    assert bucket.tokens == tokens.per_message[2] > 0  # the Task result
    assert b.subagents == 1


def test_an_empty_conversation_is_never_written(tmp_path: Path) -> None:
    p = tmp_path / "meta.jsonl"
    p.write_text(
        json.dumps({"type": "summary", "summary": "Inventory audit", "leafUuid": "x1"}) + "\n"
    )
    out = tmp_path / "out.json"
    res = run("convert", p, "--to", "openai", "-o", out)
    assert res.exit_code == 2 and not out.exists()
    assert "no messages" in res.output
    res = run("compress", p, "-o", out, "--to", "openai", "--force")
    assert res.exit_code == 2 and not out.exists()


# ------------------------------------------------------------------ reader bugs


def test_lenient_skips_a_malformed_first_line(tmp_path: Path) -> None:
    c = Chain()
    turns(c, "turn", 2, 1_000)
    p = tmp_path / "s.jsonl"
    p.write_text('{"type": "user", "uuid": oops\n' + "\n".join(json.dumps(x) for x in c.lines))
    strict = run("inspect", p)
    assert strict.exit_code == 2 and "line 1" in strict.output and "--lenient" in strict.output
    data = run_json("inspect", p, "--lenient")
    assert data["format"] == "claude-code" and data["messages"] == 4
    assert any("skipped 1 malformed line(s): 1" in w for w in data["warnings"])


def test_uuid_without_parent_uuid_loads_every_line(tmp_path: Path) -> None:
    c = Chain()
    turns(c, "turn", 3, 1_000)
    c.user("and the last ask")
    for line in c.lines:
        del line["parentUuid"]
    t = load(c.write(tmp_path / "s.jsonl"))
    assert len(t.messages) == 7
    assert t.messages[-1].text == "and the last ask"


# ----------------------------------------------------------------- one policy


def test_one_threshold_in_compress_explain_and_the_inspector(tmp_path: Path) -> None:
    path = two_compactions(tmp_path)
    comp = run_json("compress", path, "--dry-run")
    expl = run_json("explain", path)
    from tjui.session import InspectorSession

    t = live_view(load(path))
    session = InspectorSession.build(t, count_transcript(t, default_counter()), default_counter())
    threshold = comp["budget"]["threshold_tokens"]
    assert threshold == expl["threshold_tokens"] == 167_000
    assert session.plan.budget.threshold_tokens == threshold
    assert session.trigger is not None and session.trigger.threshold_tokens == threshold
    # --policy says otherwise, everywhere.
    comp = run_json("compress", path, "--dry-run", "--policy", "hermes")
    expl = run_json("explain", path, "--policy", "hermes")
    assert comp["budget"]["threshold_tokens"] == expl["threshold_tokens"] == 150_000


# ------------------------------------------------------------------- property


_TEXT = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=40)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=st.lists(_TEXT, min_size=1, max_size=6),
    after=st.lists(_TEXT, min_size=1, max_size=8),
    resets=st.integers(min_value=1, max_value=2),
    keep=st.integers(min_value=0, max_value=3),
    whole=st.booleans(),
)
def test_compress_output_holds_nothing_from_before_the_last_reset(
    tmp_path_factory: pytest.TempPathFactory,
    before: list[str],
    after: list[str],
    resets: int,
    keep: int,
    whole: bool,
) -> None:
    c = Chain()
    for r in range(resets):
        for i, text in enumerate(before):
            c.user(f"OLD{r}-{i} {text}")
            c.assistant(f"OLD{r}-{i}-answer {text}", 1_000)
        c.compact(f"summary {r}", pre=50_000)
    for i, text in enumerate(after):
        c.user(f"NEW-{i} {text}")
        c.assistant(f"NEW-{i}-answer {text}", 2_000)
    t = load(c.write(tmp_path_factory.mktemp("p") / "s.jsonl"))
    split = live_split(t, whole_file=whole)
    result = compress(split.live, CompactionOptions(keep_last=keep, force=True))
    blob = orjson.dumps([m.text for m in result.transcript.messages]).decode()
    if whole:
        assert split.live is t and split.start == 0  # today's behaviour: every message
        return
    assert "OLD" not in blob
    # A commit in place puts the history back exactly as it was, before the live part.
    spliced = with_history(split, result.transcript)
    assert spliced.messages[: split.start] == t.messages[: split.start]
    assert spliced.live_start == split.start


def test_batch_keeps_trajectories_below_the_policys_trigger(tmp_path: Path) -> None:
    from benchmarks.trajectories import trajectory_line
    from tjui.commands.batch import batch

    src = tmp_path / "ds.jsonl"
    src.write_bytes(b"".join(trajectory_line(i) for i in range(3)))
    t = load(src)
    window = 128_000  # the default window: these trajectories name no model
    threshold = int(window * 0.02)
    assert count_transcript(t, default_counter()).total > threshold

    def go(*extra: str) -> dict[str, Any]:
        out = tmp_path / f"out{len(extra)}.jsonl"
        args = [str(src), "--target-tokens", "1000000", "-o", str(out), "--workers", "1"]
        res = CliRunner().invoke(batch, [*args, "--json", "--no-progress", *extra])
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)

    # The format's own policy (hermes: 96,000 of 128K) leaves them as they are...
    assert go()["skipped_under_target"] == 3
    # ...a policy that fires at 2% makes each end below its trigger.
    data = go("--policy", "custom:ratio=0.02")
    assert data["skipped_under_target"] == 0
    out = tmp_path / "out2.jsonl"
    for line in out.read_bytes().splitlines():
        from tinyjuice.formats import load_bytes

        after = count_transcript(load_bytes(line, "x.jsonl", "sharegpt"), default_counter())
        assert after.total < threshold
    bad = CliRunner().invoke(
        batch, [str(src), "--target-tokens", "9", "-o", str(out), "--policy", "nope"]
    )
    assert bad.exit_code == 2 and "--policy" in bad.output


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=st.lists(_TEXT, min_size=1, max_size=6),
    after=st.lists(_TEXT, min_size=1, max_size=8),
    replay=st.booleans(),
    keep=st.integers(min_value=0, max_value=3),
)
def test_codex_compress_output_holds_nothing_from_before_the_reset(
    tmp_path_factory: pytest.TempPathFactory,
    before: list[str],
    after: list[str],
    replay: bool,
    keep: int,
) -> None:
    lines: list[dict[str, Any]] = []
    for i, text in enumerate(before):
        lines.append(_rollout_item(_rollout_msg("user", f"OLD-{i} {text}")))
        lines.append(_rollout_item(_rollout_msg("assistant", f"OLD-{i}-answer {text}")))
    payload: dict[str, Any] = {"message": "the summary Codex wrote"}
    if replay:
        payload["replacement_history"] = [
            _rollout_msg("user", "kept ask: the one Codex re-sends"),
            _rollout_msg("user", "Another model was working on this:\nthe summary Codex wrote"),
        ]
    lines.append({"timestamp": "2025-10-07T10:05:00.000Z", "type": "compacted", "payload": payload})
    for i, text in enumerate(after):
        lines.append(_rollout_item(_rollout_msg("user", f"NEW-{i} {text}")))
        lines.append(_rollout_item(_rollout_msg("assistant", f"NEW-{i}-answer {text}")))
    path = tmp_path_factory.mktemp("cx") / "rollout-2025-10-07T10-00-00-0199c3aa.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    t = load(path)
    assert t.live_start == 2 * len(before)
    result = compress(live_view(t), CompactionOptions(keep_last=keep, force=True))
    blob = orjson.dumps([m.text for m in result.transcript.messages]).decode()
    assert "OLD-" not in blob


def test_compress_text_says_it_worked_on_the_live_context(tmp_path: Path) -> None:
    path = two_compactions(tmp_path)
    start = load(path).live_start
    res = run("compress", path, "--keep-last", "1", "--dry-run")
    assert res.exit_code == 0
    assert f"live context: messages from {start} on" in res.output
    whole = run("compress", path, "--keep-last", "1", "--dry-run", "--whole-file")
    assert "live context:" not in whole.output
    table = run("inspect", path)
    assert "live context" in table.output and "already compacted" in table.output
