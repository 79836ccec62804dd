"""SWE-agent, Gemini CLI, Cline, opencode, aider, glaive and mini-SWE-agent samples."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..common import (
    CWD,
    Clock,
    Ids,
    chat_counts,
    data_json,
    data_text,
    dumps_compact,
    rng_for,
    roles_counts,
    write_text,
)
from ..common import compaction as new_compaction

# ============================================================================= SWE-agent


def _swe_doc(
    steps: list[dict[str, Any]],
    history: list[dict[str, Any]],
    submission: str,
    usage: tuple[int, int, int],
) -> dict[str, Any]:
    """The .traj document (data/swe_agent_doc.json) around the trajectory and history;
    ``usage`` is (tokens sent, tokens received, API calls)."""
    tokens_sent, tokens_received, api_calls = usage
    doc: dict[str, Any] = data_json("swe_agent_doc.json")
    doc["trajectory"], doc["history"] = steps, history
    doc["info"]["submission"] = submission
    doc["info"]["model_stats"] = {
        "instance_cost": round(tokens_sent * 3e-6 + tokens_received * 15e-6, 4),
        "tokens_sent": tokens_sent,
        "tokens_received": tokens_received,
        "api_calls": api_calls,
    }
    doc["replay_config"] = json.dumps(doc["replay_config"])
    return doc


def _swe_turn(
    ids: Ids, history: list[dict[str, Any]], steps: list[dict[str, Any]], step: Sequence[str]
) -> tuple[int, int]:
    """One action and its observation, into ``history`` and ``steps``; returns the tokens
    sent and received for it."""
    thought, action, observation, open_file = step
    cid = ids.call()
    history.append(
        {
            "role": "assistant",
            "content": thought,
            "thought": thought,
            "action": action,
            "tool_calls": [
                {
                    "function": {"arguments": json.dumps({"command": action}), "name": "bash"},
                    "id": cid,
                    "type": "function",
                }
            ],
            "message_type": "action",
            "agent": "main",
        }
    )
    history.append(
        {
            "role": "tool",
            "content": f"OBSERVATION:\n{observation}",
            "tool_call_ids": [cid],
            "message_type": "observation",
            "agent": "main",
        }
    )
    sent = 6_200 + sum(len(json.dumps(m)) for m in history) // 4
    received = len(thought) // 4 + len(action) // 4 + 40
    steps.append(
        {
            "action": action,
            "observation": observation,
            "response": thought,
            "thought": thought,
            "execution_time": round(ids.rng.uniform(0.05, 3.5), 3),
            "state": {
                "open_file": f"/testbed/src/app/api/{open_file}" if open_file else "n/a",
                "working_dir": "/testbed",
            },
            "extra_info": {},
        }
    )
    return sent, received


def build_swe_agent(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("swe-agent")
    ids = Ids(rng)
    history: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    calls = 0
    system = data_text("text/swe_agent_system.txt")
    history.append(
        {"role": "system", "content": system, "agent": "main", "message_type": "system_prompt"}
    )

    def add(msg: dict[str, Any]) -> None:
        history.append({**msg, "agent": "main"})

    # the demonstration (thought/action style, observations as user messages)
    for msg in data_json("stories/swe_agent_demonstration.json"):
        add(msg)

    issue = data_text("text/swe_agent_issue.txt")
    add(
        {
            "role": "user",
            "content": [{"type": "text", "text": issue}],
            "message_type": "observation",
        }
    )

    obs: list[list[str]] = data_json("stories/swe_agent_steps.json")
    tokens_sent = 0
    tokens_received = 0
    for thought, action, observation, open_file in obs:
        sent, received = _swe_turn(ids, history, steps, (thought, action, observation, open_file))
        calls += 1
        tokens_sent += sent
        tokens_received += received
    submission = obs[3][2].split("\n", 1)[1] + data_text("text/swe_agent_test_diff.txt")
    doc = _swe_doc(steps, history, submission, (tokens_sent, tokens_received, len(obs)))
    write_text(out_dir / "swe-agent.traj", json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
    return {
        "format": "swe-agent",
        **chat_counts(history, calls),
        "compactions": [],
        "images": 0,
        "model": "anthropic/claude-sonnet-4-20250514",
        "trajectory_steps": len(steps),
        "demonstration_messages": sum(1 for m in history if m.get("is_demo")),
        "model_stats": doc["info"]["model_stats"],
    }


# ============================================================ newer agents and datasets
#
# One short task, told once as data and rendered in each agent's own shape: Maya asks to
# stop the invoices CSV export printing yen totals with two decimals. Each step is
# (kind, target, output); the builders map kinds to their agent's tool names and count
# what a faithful reader must produce while they write.

#: The task: Maya's ask, the steps, the summary a compaction writes before step
#: ``compact_before_step``, the last reply, per agent its tool (name, argument) per step
#: kind, and the thought before each step.
TASK: dict[str, Any] = data_json("agent_task.json")
AGENT_ASK: str = TASK["ask"]
AGENT_STEPS: list[list[str]] = TASK["steps"]
AGENT_PRE: int = TASK["compact_before_step"]
AGENT_SUMMARY: str = TASK["summary"]
AGENT_DONE: str = TASK["done"]


def _thought(kind: str, target: str) -> str:
    return str(TASK["thoughts"][kind].format(target=target))


def _agent_manifest(fmt: str, roles: list[str], calls: int, compactions: list[dict[str, Any]],
                    model: str, **more: Any) -> dict[str, Any]:  # fmt: skip
    return {
        "format": fmt, **roles_counts(roles, calls), "compactions": compactions,
        "images": 0, "model": model, **more,
    }  # fmt: skip


def build_gemini_cli(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("gemini-cli")
    ids, clock = Ids(rng), Clock(datetime(2025, 9, 19, 9, 12, tzinfo=UTC), rng)
    tools = TASK["tools"]["gemini-cli"]
    sid = ids.uuid()
    lines: list[dict[str, Any]] = [{"sessionId": sid, "projectHash": ids.hex(64), "startTime": clock.z(),
                                    "lastUpdated": clock.z(), "kind": "main"}]  # fmt: skip
    roles, prompt = ["user"], 2_400

    def msg(kind: str, content: Any, **more: Any) -> dict[str, Any]:
        clock.tick()
        return {"id": ids.uuid(), "timestamp": clock.z(), "type": kind, "content": content, **more}

    lines.append(msg("user", [{"text": AGENT_ASK}]))
    for k, (kind, target, output) in enumerate(AGENT_STEPS):
        if k == AGENT_PRE:
            lines.append(msg("user", "/compress"))
            roles.append("user")
            lines.append(msg("info", f"Chat history compressed from {prompt:,} to 640 tokens."))
            snapshot = (
                f"<state_snapshot>\n<overall_goal>{AGENT_SUMMARY}</overall_goal>\n</state_snapshot>"
            )
            lines.append({"$set": {"messages": [msg("user", [{"text": snapshot}]),
                                                msg("gemini", [{"text": "Got it. Thanks for the additional context!"}])]}})  # fmt: skip
            compaction = new_compaction(len(roles), "manual", prompt)
            roles += ["user", "assistant"]
        name, key = tools[kind]
        call = {"id": f"{name}-{ids.b62(10)}", "name": name, "args": {key: target}, "status": "executing",
                "timestamp": clock.z()}  # fmt: skip
        record = msg("gemini", _thought(kind, target), toolCalls=[call], model="gemini-2.5-pro",
                     thoughts=[{"subject": kind.title(), "description": _thought(kind, target), "timestamp": clock.z()}])  # fmt: skip
        lines.append(record)  # first written while the call runs, then again with its result
        prompt += len(output) // 3 + 180
        done = {**call, "status": "success", "result": [{"functionResponse": {
            "id": call["id"], "name": name, "response": {"output": output}}}]}  # fmt: skip
        lines.append({**record, "toolCalls": [done], "tokens": {
            "input": prompt, "output": 60, "cached": prompt - 400, "thoughts": 24, "tool": 0,
            "total": prompt + 84}})  # fmt: skip
        roles += ["assistant", "tool"]
    lines.append(msg("gemini", AGENT_DONE, model="gemini-2.5-pro"))
    roles.append("assistant")
    stray = msg("user", "also bump the version")
    lines += [stray, {"$rewindTo": stray["id"]}, {"$set": {"lastUpdated": clock.z()}}]
    write_text(
        out_dir / "gemini-cli-session.jsonl", "".join(dumps_compact(r) + "\n" for r in lines)
    )
    return _agent_manifest(
        "gemini-cli",
        roles,
        len(AGENT_STEPS),
        [compaction],
        "gemini-2.5-pro",
    )


def build_cline(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("cline")
    ids = Ids(rng)
    tools = TASK["tools"]["cline"]
    ts = 1_758_272_400_000
    history: list[dict[str, Any]] = [{"role": "user", "ts": ts, "content": [
        {"type": "text", "text": f"<task>\n{AGENT_ASK}\n</task>"},
        {"type": "text", "text": f"<environment_details>\n# Current Working Directory ({CWD}) Files\nsrc/\ntests/\n</environment_details>"}]}]  # fmt: skip
    ui: list[dict[str, Any]] = [{"ts": ts, "type": "say", "say": "text", "text": AGENT_ASK}]
    roles, prompt, condense = ["user"], 11_800, "c" + ids.b62(8)
    for k, (kind, target, output) in enumerate(AGENT_STEPS):
        if k == AGENT_PRE:
            for m in history[1:]:
                m["condenseParent"] = condense
            history.append({"role": "user", "ts": ts + 10 * k, "isSummary": True, "condenseId": condense,
                            "content": [{"type": "text", "text": f"## Conversation Summary\n{AGENT_SUMMARY}"}]})  # fmt: skip
            ui.append({"ts": ts + 10 * k, "type": "say", "say": "condense_context", "contextCondense": {
                "cost": 0.0192, "prevContextTokens": prompt, "newContextTokens": 3_150, "summary": AGENT_SUMMARY}})  # fmt: skip
            compaction = new_compaction(len(roles), pre_tokens=prompt)
            roles.append("user")
        name, key = tools[kind]
        tid = ids.toolu()
        prompt += len(output) // 3 + 220
        ui.append({"ts": ts + 10 * k + 1, "type": "say", "say": "api_req_started", "text": dumps_compact(
            {"request": f"[{name}]", "tokensIn": 9, "tokensOut": 70, "cacheWrites": 700, "cacheReads": prompt - 709,
             "cost": 0.006})})  # fmt: skip
        history.append({"role": "assistant", "ts": ts + 10 * k + 2, "content": [
            {"type": "text", "text": _thought(kind, target)},
            {"type": "tool_use", "id": tid, "name": name, "input": {key: target}}]})  # fmt: skip
        history.append({"role": "user", "ts": ts + 10 * k + 3, "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": [{"type": "text", "text": output}]}]})  # fmt: skip
        roles += ["assistant", "tool"]
    history.append(
        {"role": "assistant", "ts": ts + 99, "content": [{"type": "text", "text": AGENT_DONE}]}
    )
    roles.append("assistant")
    task = out_dir / "cline-task"
    task.mkdir(exist_ok=True)
    write_text(
        task / "api_conversation_history.json", json.dumps(history, ensure_ascii=False) + "\n"
    )
    write_text(task / "ui_messages.json", json.dumps(ui, ensure_ascii=False) + "\n")
    meta = {"files_in_context": [{"path": "src/app/api/routes_invoices.py", "record_state": "active",
            "record_source": "read_tool"}], "model_usage": [{"ts": ts, "model_id": "claude-sonnet-4-20250514",
            "model_provider_id": "anthropic", "mode": "act"}]}  # fmt: skip
    write_text(task / "task_metadata.json", json.dumps(meta, ensure_ascii=False, indent=2) + "\n")
    return _agent_manifest(
        "cline",
        roles,
        len(AGENT_STEPS),
        [compaction],
        "claude-sonnet-4-20250514",
    )


_OPENCODE_SCHEMA = data_text("text/opencode_schema.sql")


def build_opencode(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("opencode")
    ids = Ids(rng)
    tools = TASK["tools"]["opencode"]
    t0, sid, old = 1_758_272_400_000, "ses_" + ids.b62(26), "ses_" + ids.b62(26)
    messages: list[tuple[str, str, int, dict[str, Any]]] = []
    parts: list[tuple[str, str, str, int, dict[str, Any]]] = []

    def message(session: str, data: dict[str, Any], *body: dict[str, Any]) -> None:
        mid, at = "msg_" + f"{len(messages):04d}" + ids.b62(20), t0 + 1000 * len(messages)
        messages.append((mid, session, at, {**data, "time": {"created": at}}))
        for p in body:
            parts.append(("prt_" + f"{len(parts):05d}" + ids.b62(19), mid, session, at, p))

    asst = {"role": "assistant", "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build",
            "path": {"cwd": CWD, "root": CWD}, "cost": 0}  # fmt: skip
    message(old, {"role": "user"}, {"type": "text", "text": "what does `make seed` load?"})
    message(sid, {"role": "user"}, {"type": "text", "text": AGENT_ASK})
    roles, prompt = ["user"], 9_600
    for k, (kind, target, output) in enumerate(AGENT_STEPS):
        if k == AGENT_PRE:
            message(sid, {"role": "user"}, {"type": "compaction", "auto": False})
            compaction = new_compaction(len(roles), "manual")
            message(sid, {**asst, "mode": "compaction", "summary": True, "tokens": {
                "input": 40, "output": 180, "reasoning": 0, "cache": {"read": prompt, "write": 0}}},
                {"type": "text", "text": AGENT_SUMMARY})  # fmt: skip
            roles.append("assistant")
        name, key = tools[kind]
        prompt += len(output) // 3 + 200
        state = {"status": "completed", "input": {key: target}, "output": output, "title": target,
                 "metadata": {}, "time": {"start": t0, "end": t0 + 900}}  # fmt: skip
        message(sid, {**asst, "tokens": {"input": 12, "output": 64, "reasoning": 0,
                                         "cache": {"read": prompt, "write": 300}}},
                {"type": "step-start"}, {"type": "text", "text": _thought(kind, target)},
                {"type": "tool", "callID": ids.toolu(), "tool": name, "state": state},
                {"type": "step-finish", "reason": "tool-calls", "cost": 0})  # fmt: skip
        roles += ["assistant", "tool"]
    message(sid, {**asst, "tokens": {"input": 8, "output": 40, "reasoning": 0, "cache": {"read": prompt, "write": 0}}},
            {"type": "text", "text": AGENT_DONE})  # fmt: skip
    roles.append("assistant")
    path = out_dir / "opencode.db"
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    con.executescript(_OPENCODE_SCHEMA)
    con.execute(
        "INSERT INTO session VALUES (?,?,?,?,?,?,?,?)",
        (old, "global", None, CWD, "make seed", "0.15.0", t0, t0 + 500),
    )
    con.execute("INSERT INTO session VALUES (?,?,?,?,?,?,?,?)", (sid, "global", None, CWD, "JPY CSV export", "0.15.0", t0, t0 + 99_000))  # fmt: skip
    con.executemany(
        "INSERT INTO message VALUES (?,?,?,?,?)",
        [(m, s, at, at, dumps_compact(d)) for m, s, at, d in messages],
    )
    con.executemany("INSERT INTO part VALUES (?,?,?,?,?,?)", [(p, m, s, at, at, dumps_compact(d)) for p, m, s, at, d in parts])  # fmt: skip
    con.commit()
    con.execute("VACUUM")
    con.close()
    return _agent_manifest(
        "opencode",
        roles,
        len(AGENT_STEPS),
        [compaction],
        "claude-sonnet-4-5",
        sessions=2,
    )


def build_aider(out_dir: Path) -> dict[str, Any]:
    """Two runs of aider's chat history (data/text/aider_chat.md), the task's ask and its
    test run filled in: "#### " lines are typed input, "> " lines tool output."""
    run = "".join(f"> {ln}  \n" if ln else ">  \n" for ln in AGENT_STEPS[4][2].splitlines())
    text = data_text("text/aider_chat.md").format(
        ask="  \n#### ".join(AGENT_ASK.splitlines()), run=run
    )
    write_text(out_dir / "aider-chat-history.md", text)
    # The last run's messages: banner, /add and its output, ask, reply, its tool output,
    # /run and its output, /clear; then (after the compaction) an ask and its reply.
    roles = ["user"] * 4 + ["assistant", "tool"] + ["user"] * 3
    compaction = new_compaction(len(roles), "manual")
    roles += ["user", "assistant"]
    return _agent_manifest(
        "aider", roles, 1, [compaction], "anthropic/claude-sonnet-4-20250514", runs=2
    )


_GLAIVE_TOOLS = data_json("glaive_tools.json")


_GLAIVE_ROWS = data_json("glaive_rows.json")


def build_glaive(out_dir: Path) -> dict[str, Any]:
    lines = []
    for ask, name, args, result, answer in _GLAIVE_ROWS:
        lines.append({"conversations": [
            {"from": "human", "value": ask},
            {"from": "function_call", "value": json.dumps({"name": name, "arguments": args})},
            {"from": "observation", "value": json.dumps(result)},
            {"from": "gpt", "value": answer}],
            "system": "You are a helpful assistant with access to the following functions. Use them if required.",
            "tools": json.dumps(_GLAIVE_TOOLS)})  # fmt: skip
    write_text(out_dir / "sharegpt-glaive.jsonl", "".join(dumps_compact(r) + "\n" for r in lines))
    return _agent_manifest(
        "sharegpt",
        ["user", "assistant", "tool", "assistant"],
        1,
        [],
        None,
        conversations=len(lines),
    )


def build_mini_swe_agent(out_dir: Path) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer. Reply with "
         "a THOUGHT and exactly one bash code block."},
        {"role": "user", "content": f"<pr_description>\n{AGENT_ASK}\n</pr_description>"}]  # fmt: skip
    roles, calls = ["system", "user"], 0
    commands = TASK["tools"]["mini-swe-agent"]
    for k, (kind, target, output) in enumerate(AGENT_STEPS):
        action = commands[kind].format(target)
        msgs.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: {_thought(kind, target)}\n\n```bash\n{action}\n```",
            }
        )
        msgs.append({"role": "user", "content": f"<returncode>{1 if 'FAILED' in output else 0}</returncode>\n<output>\n{output}\n</output>"})  # fmt: skip
        roles += ["assistant", "tool"]
        calls += 1
        if k == 1:
            msgs.append(
                {"role": "assistant", "content": "THOUGHT: The totals are written unformatted."}
            )
            msgs.append({"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 0 actions."})  # fmt: skip
            roles += ["assistant", "user"]
    msgs.append({"role": "assistant", "content": "THOUGHT: Done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff\n```"})  # fmt: skip
    roles.append("assistant")
    doc = {"info": {"exit_status": "Submitted", "submission": "diff --git a/src/app/api/routes_invoices.py ...",
                    "model_stats": {"instance_cost": 0.0412, "api_calls": len(roles) // 2},
                    "config": {"model": {"model_name": "anthropic/claude-sonnet-4-20250514"}},
                    "mini_version": "1.9.0"},
           "messages": msgs, "trajectory_format": "mini-swe-agent-1"}  # fmt: skip
    write_text(
        out_dir / "mini-swe-agent.traj.json", json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    )
    return _agent_manifest(
        "swe-agent",
        roles,
        calls,
        [],
        "anthropic/claude-sonnet-4-20250514",
    )
