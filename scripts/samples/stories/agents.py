"""The Codex, SWE-agent, Gemini CLI, Cline, opencode, aider, glaive and mini-SWE-agent samples."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from .. import shapes
from ..common import (
    CWD,
    Ids,
    data_json,
    data_text,
    dumps_compact,
    fill,
    manifest_entry,
    prompt_span,
    rng_for,
    seeded,
    write_db,
    write_json,
    write_jsonl,
    write_text,
)
from ..common import compaction as new_compaction
from ..project import ledgerline
from ..writers import CodexLog
from .steps import LogStory

#: Each agent's fixed record shapes, ``"$name"`` marking what the builder fills in.
RECORDS: dict[str, dict[str, Any]] = data_json("agent_records.json")


def build_codex(out_dir: Path) -> dict[str, Any]:
    ids, clock = seeded("codex", datetime(2025, 9, 19, 9, 31, 2, 0, tzinfo=UTC))
    cx = CodexLog(ids, clock)
    session = ids.uuid()
    cli = "src/app/cli.py"
    repo = ledgerline(cli)
    repo.patch(cli, "    mismatches = 0\n", "    mismatches = 0\n    pending = 0\n")
    story = LogStory({"rollout": cx}, repo, ids)  # its one tool: a file's text
    story.names["session"] = session
    story.replay("codex")
    write_jsonl(out_dir / "codex-rollout.jsonl", cx.lines)
    return cx.entry(
        "codex",
        "gpt-5-codex",
        context_window=272_000,
        session_id=session,
        lines=len(cx.lines),
        injected_user_messages=cx.injected,
        usage_events=len(cx.usage_events),
        prompt_tokens=prompt_span(cx.usage_events),
    )


def build_swe_agent(out_dir: Path) -> dict[str, Any]:
    ids, shape = Ids(rng_for("swe-agent")), RECORDS["swe-agent"]
    # the system prompt, the demonstration (thought/action style, observations as user
    # messages) and the issue; then per step an action, its observation and their tokens
    history = [fill(shape["system"], text=data_text("text/swe_agent_system.txt"))]
    history += [{**m, "agent": "main"} for m in data_json("stories/swe_agent_demonstration.json")]
    history.append(fill(shape["issue"], text=data_text("text/swe_agent_issue.txt")))
    steps: list[dict[str, Any]] = []
    obs: list[list[str]] = data_json("stories/swe_agent_steps.json")
    sent = received = 0
    for thought, action, observation, open_file in obs:
        cid, arguments = ids.call(), json.dumps({"command": action})
        call = shapes.shape("swe_tool_call", id=cid, name="bash", arguments=arguments)
        history.append(fill(shape["action"], thought=thought, action=action, call=call))
        history.append(fill(shape["observation"], content=f"OBSERVATION:\n{observation}", id=cid))
        sent += 6_200 + sum(len(json.dumps(m)) for m in history) // 4
        received += len(thought) // 4 + len(action) // 4 + 40
        time = round(ids.rng.uniform(0.05, 3.5), 3)
        path = f"/testbed/src/app/api/{open_file}" if open_file else "n/a"
        values = {"thought": thought, "action": action, "observation": observation}
        steps.append(fill(shape["step"], **values, time=time, open_file=path))
    cost = round(sent * 3e-6 + received * 15e-6, 4)
    stats: dict[str, Any] = {"cost": cost, "sent": sent, "received": received, "calls": len(obs)}
    stats["submission"] = obs[3][2].split("\n", 1)[1] + data_text("text/swe_agent_test_diff.txt")
    # the .traj document around the trajectory and history, its submission and usage
    doc = fill(data_json("swe_agent_doc.json"), trajectory=steps, history=history, **stats)
    doc["replay_config"] = json.dumps(doc["replay_config"])
    write_json(out_dir / "swe-agent.traj", doc)
    roles, model = [m["role"] for m in history], "anthropic/claude-sonnet-4-20250514"
    demo = sum(1 for m in history if m.get("is_demo"))
    more = {"trajectory_steps": len(steps), "demonstration_messages": demo}
    more["model_stats"] = doc["info"]["model_stats"]
    return manifest_entry("swe-agent", roles, len(obs), [], model, **more)


# ============================================================ newer agents and datasets
#
# One short task, told once as data and rendered in each agent's own shape: Maya asks to
# stop the invoices CSV export printing yen totals with two decimals. Each step is
# (kind, target, output); the builders map kinds to their agent's tool names and count
# what a faithful reader must produce while they write.

#: The task (data/agent_task.json): Maya's ask, its steps (kind, target, output), the summary
#: a compaction writes before step ``compact_before_step``, the last reply, per agent its
#: tool per step kind, and the thought before each step.
TASK: dict[str, Any] = data_json("agent_task.json")
ASK, SUMMARY, DONE, PRE = (TASK[k] for k in ("ask", "summary", "done", "compact_before_step"))
STEPS: list[list[str]] = TASK["steps"]


def task_steps(agent: str) -> Iterator[tuple[int, str, str, str, Any, str]]:
    """Per step: its index, kind, target and output, ``agent``'s tool for it (a name and
    argument key, or a command) and the thought before it."""
    for k, (kind, target, output) in enumerate(STEPS):
        thought = TASK["thoughts"][kind].format(target=target)
        yield k, kind, target, output, TASK["tools"][agent][kind], thought


def build_gemini_cli(out_dir: Path) -> dict[str, Any]:
    ids, clock = seeded("gemini-cli", datetime(2025, 9, 19, 9, 12, tzinfo=UTC))
    shape, model = RECORDS["gemini-cli"], "gemini-2.5-pro"
    sid = ids.uuid()
    lines: list[dict[str, Any]] = [fill(shape["session"], sid=sid, hash=ids.hex(64), t=clock.z())]
    roles, prompt = ["user"], 2_400

    def msg(kind: str, content: Any, **more: Any) -> dict[str, Any]:
        clock.tick()
        return {"id": ids.uuid(), "timestamp": clock.z(), "type": kind, "content": content, **more}

    lines.append(msg("user", [{"text": ASK}]))
    for k, kind, target, output, (name, key), thought in task_steps("gemini-cli"):
        if k == PRE:
            lines.append(msg("user", "/compress"))
            roles.append("user")
            lines.append(msg("info", f"Chat history compressed from {prompt:,} to 640 tokens."))
            snapshot = shape["snapshot"].format(summary=SUMMARY)
            kept = [msg("user", [{"text": snapshot}]), msg("gemini", [{"text": shape["ack"]}])]
            lines.append({"$set": {"messages": kept}})
            compaction = new_compaction(len(roles), "manual", prompt)
            roles += ["user", "assistant"]
        cid, t = f"{name}-{ids.b62(10)}", clock.z()
        call = fill(shape["call"], id=cid, name=name, args={key: target}, t=t)
        thoughts = fill(shape["thoughts"], subject=kind.title(), thought=thought, t=t)
        record = msg("gemini", thought, toolCalls=[call], model=model, thoughts=thoughts)
        lines.append(record)  # first written while the call runs, then again with its result
        prompt += len(output) // 3 + 180
        result = fill(shape["result"], id=cid, name=name, output=output)
        tokens = fill(shape["tokens"], prompt=prompt, cached=prompt - 400, total=prompt + 84)
        done = {**call, "status": "success", "result": result}
        lines.append({**record, "toolCalls": [done], "tokens": tokens})
        roles += ["assistant", "tool"]
    lines.append(msg("gemini", DONE, model=model))
    roles.append("assistant")
    stray = msg("user", "also bump the version")
    lines += [stray, {"$rewindTo": stray["id"]}, {"$set": {"lastUpdated": clock.z()}}]
    write_jsonl(out_dir / "gemini-cli-session.jsonl", lines)
    return manifest_entry("gemini-cli", roles, len(STEPS), [compaction], model)


def build_cline(out_dir: Path) -> dict[str, Any]:
    ids = Ids(rng_for("cline"))
    shape = RECORDS["cline"]
    ts = 1_758_272_400_000
    history = [fill(shape["task"], ts=ts, task=f"<task>\n{ASK}\n</task>")]
    ui: list[dict[str, Any]] = [{"ts": ts, "type": "say", "say": "text", "text": ASK}]
    roles, prompt, condense = ["user"], 11_800, "c" + ids.b62(8)
    for k, _, target, output, (name, key), thought in task_steps("cline"):
        at = ts + 10 * k
        if k == PRE:
            for m in history[1:]:
                m["condenseParent"] = condense
            text = f"## Conversation Summary\n{SUMMARY}"
            history.append(fill(shape["summary"], ts=at, condense=condense, text=text))
            ui.append(fill(shape["condense"], ts=at, prompt=prompt, summary=SUMMARY))
            compaction = new_compaction(len(roles), pre_tokens=prompt)
            roles.append("user")
        tid = ids.toolu()
        prompt += len(output) // 3 + 220
        req = dumps_compact(fill(shape["api_req"], request=f"[{name}]", reads=prompt - 709))
        ui.append({"ts": at + 1, "type": "say", "say": "api_req_started", "text": req})
        values = {"thought": thought, "id": tid, "name": name, "input": {key: target}}
        call = fill(shape["call"], ts=at + 2, **values)
        history += [call, fill(shape["result"], ts=at + 3, id=tid, output=output)]
        roles += ["assistant", "tool"]
    history.append(fill(shape["done"], ts=ts + 99, text=DONE))
    roles.append("assistant")
    task = out_dir / "cline-task"
    task.mkdir(exist_ok=True)
    write_json(task / "api_conversation_history.json", history, indent=None)
    write_json(task / "ui_messages.json", ui, indent=None)
    write_json(task / "task_metadata.json", fill(shape["meta"], ts=ts))
    model = "claude-sonnet-4-20250514"
    return manifest_entry("cline", roles, len(STEPS), [compaction], model)


def build_opencode(out_dir: Path) -> dict[str, Any]:
    ids = Ids(rng_for("opencode"))
    shape = RECORDS["opencode"]
    t0, sid, old = 1_758_272_400_000, "ses_" + ids.b62(26), "ses_" + ids.b62(26)
    messages: list[tuple[str, str, int, dict[str, Any]]] = []
    parts: list[tuple[str, str, str, int, dict[str, Any]]] = []

    def message(session: str, data: dict[str, Any], *body: dict[str, Any]) -> None:
        mid, at = "msg_" + f"{len(messages):04d}" + ids.b62(20), t0 + 1000 * len(messages)
        messages.append((mid, session, at, {**data, "time": {"created": at}}))
        for p in body:
            parts.append(("prt_" + f"{len(parts):05d}" + ids.b62(19), mid, session, at, p))

    asst, tokens = shape["assistant"], partial(fill, shape["tokens"])
    message(old, {"role": "user"}, {"type": "text", "text": "what does `make seed` load?"})
    message(sid, {"role": "user"}, {"type": "text", "text": ASK})
    roles, prompt = ["user"], 9_600
    for k, _, target, output, (name, key), thought in task_steps("opencode"):
        if k == PRE:
            message(sid, {"role": "user"}, {"type": "compaction", "auto": False})
            compaction = new_compaction(len(roles), "manual")
            summary = {**asst, "mode": "compaction", "summary": True}
            summary["tokens"] = tokens(fresh=40, output=180, read=prompt, write=0)
            message(sid, summary, {"type": "text", "text": SUMMARY})
            roles.append("assistant")
        prompt += len(output) // 3 + 200
        values = {"thought": thought, "id": ids.toolu(), "name": name}
        values.update(input={key: target}, result=output, title=target, start=t0, end=t0 + 900)
        step = fill(shape["step"], **values)
        message(sid, {**asst, "tokens": tokens(fresh=12, output=64, read=prompt, write=300)}, *step)
        roles += ["assistant", "tool"]
    done = {**asst, "tokens": tokens(fresh=8, output=40, read=prompt, write=0)}
    message(sid, done, {"type": "text", "text": DONE})
    roles.append("assistant")
    sessions = [
        (old, "global", None, CWD, "make seed", "0.15.0", t0, t0 + 500),
        (sid, "global", None, CWD, "JPY CSV export", "0.15.0", t0, t0 + 99_000),
    ]
    rows: dict[str, list[tuple[Any, ...]]] = {
        "session": sessions,
        "message": [(m, s, at, at, dumps_compact(d)) for m, s, at, d in messages],
        "part": [(p, m, s, at, at, dumps_compact(d)) for p, m, s, at, d in parts],
    }
    write_db(out_dir / "opencode.db", data_text("text/opencode_schema.sql"), rows)
    model = "claude-sonnet-4-5"
    return manifest_entry("opencode", roles, len(STEPS), [compaction], model, sessions=2)


def build_aider(out_dir: Path) -> dict[str, Any]:
    """Two runs of aider's chat history (data/text/aider_chat.md), the task's ask and its
    test run filled in: "#### " lines are typed input, "> " lines tool output."""
    run = "".join(f"> {ln}  \n" if ln else ">  \n" for ln in STEPS[4][2].splitlines())
    ask = "  \n#### ".join(ASK.splitlines())
    text = data_text("text/aider_chat.md").format(ask=ask, run=run)
    write_text(out_dir / "aider-chat-history.md", text)
    # The last run's messages: banner, /add and its output, ask, reply, its tool output,
    # /run and its output, /clear; then (after the compaction) an ask and its reply.
    roles = ["user"] * 4 + ["assistant", "tool"] + ["user"] * 3
    compaction = new_compaction(len(roles), "manual")
    roles += ["user", "assistant"]
    model = "anthropic/claude-sonnet-4-20250514"
    return manifest_entry("aider", roles, 1, [compaction], model, runs=2)


def build_glaive(out_dir: Path) -> dict[str, Any]:
    row, tools = RECORDS["sharegpt-glaive"]["row"], json.dumps(data_json("glaive_tools.json"))
    lines: list[Any] = []
    for ask, name, args, result, answer in data_json("glaive_rows.json"):
        call, result = json.dumps({"name": name, "arguments": args}), json.dumps(result)
        lines.append(fill(row, ask=ask, call=call, result=result, answer=answer, tools=tools))
    write_jsonl(out_dir / "sharegpt-glaive.jsonl", lines)
    roles = ["user", "assistant", "tool", "assistant"]
    return manifest_entry("sharegpt", roles, 1, [], None, conversations=len(lines))


def build_mini_swe_agent(out_dir: Path) -> dict[str, Any]:
    shape, model = RECORDS["mini-swe-agent"], "anthropic/claude-sonnet-4-20250514"
    ask = f"<pr_description>\n{ASK}\n</pr_description>"
    says = [("system", shape["system"]), ("user", ask)]
    roles = ["system", "user"]  # observations are user messages a reader makes tool results
    for k, _, target, output, command, thought in task_steps("mini-swe-agent"):
        code = 1 if "FAILED" in output else 0
        step = shape["step"].format(thought=thought, action=command.format(target))
        says.append(("assistant", step))
        says.append(("user", shape["observation"].format(code=code, output=output)))
        roles += ["assistant", "tool"]
        if k == 1:  # a reply without an action, and the agent's format-error notice
            says += [("assistant", shape["no_action"]), ("user", shape["format_error"])]
            roles += ["assistant", "user"]
    says.append(("assistant", shape["submit"]))
    roles.append("assistant")
    msgs = [{"role": role, "content": content} for role, content in says]
    doc = fill(shape["doc"], api_calls=len(roles) // 2, messages=msgs)
    write_json(out_dir / "mini-swe-agent.traj.json", doc)
    return manifest_entry("swe-agent", roles, len(STEPS), [], model)
