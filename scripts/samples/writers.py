"""Native-shape logs: each builds one agent's transcript and counts what it wrote; the
Hermes tool schemas and system prompt."""

from __future__ import annotations

import base64
import json
from itertools import accumulate
from typing import Any

from .common import (
    CWD,
    LEGACY_SUMMARY_PREFIX,
    SUMMARY_PREFIX,
    Clock,
    Ids,
    compaction,
    data_json,
    data_text,
    dumps_args,
    dumps_compact,
    fill,
    manifest_entry,
    noise,
)
from .shapes import shape, tagged

#: A message's content: a string or a list of content blocks / parts.
Content = str | list[dict[str, Any]]

#: The writers' fixed record shapes; ``"$name"`` strings are filled in.
_RECORDS: dict[str, Any] = data_json("writer_records.json")

Call = tuple[str, Any, str]  # (tool name, arguments as dict or raw string, result content)

#: The Hermes tool schemas and system prompt, and the ShareGPT samples' tools (a subset).
HERMES_TOOLS: list[dict[str, Any]] = data_json("hermes_tools.json")
HERMES_SYSTEM_PROMPT = data_text("text/hermes_system_prompt.txt")


def tool_by_name(name: str) -> dict[str, Any]:
    return next(t for t in HERMES_TOOLS if t["function"]["name"] == name)


_SHAREGPT_TOOLS = ("terminal", "read_file", "patch", "search_files")
SHAREGPT_TOOLS_JSON = json.dumps(
    [tool_by_name(n)["function"] for n in _SHAREGPT_TOOLS], ensure_ascii=False
)


def _arguments(args: Any) -> str:
    """Tool-call arguments as sent: a raw string as is, else as JSON."""
    return args if isinstance(args, str) else dumps_args(args)


class _Log:
    """What every writer keeps while it writes: the messages (chat-shaped writers), the
    reader's roles (one a message), tool calls, images, compactions and injected (not
    typed) user messages."""

    def __init__(self, ids: Ids) -> None:
        self.ids = ids
        self.messages: list[dict[str, Any]] = []  # the chat-shaped writers' messages
        self.roles: list[str] = []
        self.tool_calls = self.images = self.injected = 0
        self.compactions: list[dict[str, Any]] = []

    def entry(self, fmt: str, model: str | None, **more: Any) -> dict[str, Any]:
        """The sample's manifest entry from what the writer counted (``more`` appended)."""
        roles = self.roles or [m["role"] for m in self.messages]
        return manifest_entry(
            fmt, roles, self.tool_calls, self.compactions, model, self.images, **more
        )


class ChatLog(_Log):
    """OpenAI Chat Completions messages, or with a ``clock`` a Hermes session log's: its
    calls draw ``toolu_`` ids and carry ``call_id``, its assistant messages their reasoning
    and finish reason, its summaries count as compactions, and each message moves the clock."""

    def __init__(self, ids: Ids, clock: Clock | None = None) -> None:
        super().__init__(ids)
        self.clock = clock
        self.invalid_arguments: list[int] = []  # indexes of messages with unparsable arguments

    def _tick(self, lo: float, hi: float) -> None:
        if self.clock:
            self.clock.tick(lo, hi)

    def add(self, msg: dict[str, Any]) -> None:
        self.messages.append(msg)

    def user(self, content: Content) -> int:
        self._tick(20, 140)
        if isinstance(content, list):
            self.images += sum(1 for p in content if p.get("type") == "image_url")
        elif self.clock and content.startswith((SUMMARY_PREFIX, LEGACY_SUMMARY_PREFIX)):
            self.compactions.append(compaction(len(self.messages)))
        self.add({"role": "user", "content": content})
        return len(self.messages) - 1

    def assistant(self, text: str | None, *calls: Call, reasoning: str | None = None) -> list[str]:
        hermes = self.clock is not None
        self._tick(2, 12)
        msg: dict[str, Any] = {"role": "assistant", "content": text}
        if hermes:
            finish = "tool_calls" if calls else "stop"
            msg.update(content=text or "", reasoning=reasoning, finish_reason=finish)
        raw = [
            (self.ids.toolu() if hermes else self.ids.call(), name, _arguments(args))
            for name, args, _ in calls
        ]
        if raw:
            record = "hermes_call" if hermes else "openai_call"
            msg["tool_calls"] = [shape(record, id=c, name=n, arguments=a) for c, n, a in raw]
        for _, _, args in raw:
            try:
                json.loads(args)
            except json.JSONDecodeError:
                self.invalid_arguments.append(len(self.messages))
        self.add(msg)
        self.tool_calls += len(calls)
        for (cid, name, _), (_, _, result) in zip(raw, calls, strict=True):
            self._tick(0.3, 9)
            record = "hermes_tool_message" if hermes else "openai_tool_message"
            self.add(shape(record, id=cid, name=name, content=result))
        return [cid for cid, _, _ in raw]


class AnthropicLog(_Log):
    """Anthropic Messages with strict user/assistant alternation; counts a reader's view
    (``roles``: tool results split out of the user messages that carry them), the thinking
    blocks and the tool results marked as errors."""

    def __init__(self, ids: Ids) -> None:
        super().__init__(ids)
        self.pending: list[tuple[str, str, bool]] = []  # (tool_use_id, content, is_error)
        self.thinking_blocks = self.tool_errors = 0

    def user(self, *blocks: dict[str, Any] | str) -> None:
        """Flush pending tool results first (the API requires them to lead), then user blocks."""
        if self.messages and self.messages[-1]["role"] == "user":
            raise AssertionError("anthropic: roles must alternate")
        content = [
            shape("tool_result_block", id=tid, content=text, is_error=err or None)
            for tid, text, err in self.pending
        ]
        self.roles += ["tool"] * len(content)
        self.tool_errors += sum(err for _, _, err in self.pending)
        self.pending = []
        extra = [shape("text_block", text=b) if isinstance(b, str) else b for b in blocks]
        self.images += sum(1 for b in extra if b.get("type") == "image")
        content.extend(extra)
        if extra:
            self.roles.append("user")
        single = len(content) == 1 and content[0]["type"] == "text"  # a lone text: a string
        self.messages.append({"role": "user", "content": content[0]["text"] if single else content})

    def assistant(
        self, thinking: str | None, text: str | None, *calls: tuple[str, dict[str, Any], str, bool]
    ) -> None:
        if self.messages[-1]["role"] != "user":
            raise AssertionError("anthropic: roles must alternate")
        content = []
        if thinking:
            signature = base64.b64encode(noise(self.ids.rng, 180, 320)).decode()
            content.append(shape("thinking_block", text=thinking, signature=signature))
            self.thinking_blocks += 1
        content += [shape("text_block", text=text)] if text else []
        for name, args, result, err in calls:
            tid = self.ids.toolu()
            content.append(shape("tool_use_block", id=tid, name=name, input=args))
            self.pending.append((tid, result, err))
        self.tool_calls += len(calls)
        self.messages.append({"role": "assistant", "content": content})
        self.roles.append("assistant")


CC_MODEL = "claude-sonnet-4-5-20250929"
CC_BRANCH = "fix/payments-idempotency"
CC_CACHED_SYSTEM = 14_893  # system prompt + tool definitions, cached across sessions


class ClaudeCodeLog(_Log):
    """Claude Code JSONL lines plus the reader's view (main chain, merged assistant messages)."""

    def __init__(self, ids: Ids, clock: Clock, session_id: str) -> None:
        super().__init__(ids)
        self.clock = clock
        self.session_id = session_id
        self.lines: list[dict[str, Any]] = []
        self.tip: str | None = None
        self.counting = True
        self.sidechain = False
        self.segment: list[tuple[dict[str, Any], float]] = []  # main-chain calls: usage, weight
        self.main_prompts: list[int] = []
        self.pending_weight = 0.0
        kinds = ("sidechain", "abandoned_branch")
        self.excluded = {f"{k}_{n}": 0 for k in kinds for n in ("messages", "lines")}

    @property
    def off_main(self) -> str | None:
        """The excluded branch lines written now belong to (None on the main chain)."""
        if self.sidechain:
            return "sidechain"
        return None if self.counting else "abandoned_branch"

    def _emit(self, kind: str, new_chain: bool = False, **more: Any) -> str:
        """Write a line of ``kind`` (``more``: its keys after ``type``) on the current chain or
        (``new_chain``) as the first of a new one, the old tip its logical parent."""
        if self.off_main:
            self.excluded[f"{self.off_main}_lines"] += 1
        uid, tip = self.ids.uuid(), self.tip
        chain = (None, tip) if new_chain else (tip, None)
        values = {"sidechain": self.sidechain, "cwd": CWD, "session": self.session_id}
        values.update(branch=CC_BRANCH, body={}, kind=kind, more=more, timestamp=self.clock.z())
        self.lines.append(
            shape("cc_line", parent=chain[0], logical_parent=chain[1], uuid=uid, **values)
        )
        self.tip = uid
        return uid

    def _count(self, role: str) -> None:
        if self.off_main:
            self.excluded[f"{self.off_main}_messages"] += 1
        else:
            self.roles.append(role)

    def prompt(self, text: Content, **extra: Any) -> str:
        self.clock.tick(15, 90)
        self._count("user")
        if not self.off_main:
            tags = ("<command-name>", "<local-command-stdout>")  # slash commands, their output
            command = isinstance(text, str) and text.lstrip().startswith(tags)
            self.injected += bool(extra.get("isMeta") or command)
            if isinstance(text, list):
                self.images += sum(1 for b in text if b.get("type") == "image")
        self.pending_weight += len(json.dumps(text)) / 3.2
        return self._emit("user", message={"role": "user", "content": text}, **extra)

    def snapshot(self, message_id: str, files: dict[str, int]) -> None:
        backups = {}
        for path, v in files.items():
            name = f"{self.ids.hex(16)}@v{v}"
            backups[path] = {"backupFileName": name, "version": v, "backupTime": self.clock.z()}
        self.lines.append(
            shape("cc_snapshot", id=message_id, backups=backups, timestamp=self.clock.z())
        )

    def assistant(self, *blocks: dict[str, Any], output: int | None = None) -> list[str]:
        """One API response: each content block on its own line, sharing id, requestId and usage."""
        self.clock.tick(3, 25)
        msg_id, req = self.ids.msg(), self.ids.req()
        size = sum(len(json.dumps(b)) for b in blocks) // 3
        out_tokens = output if output is not None else max(60, size + self.ids.rng.randint(20, 200))
        usage: dict[str, Any] = fill(_RECORDS["claude_code_usage"], output=out_tokens)
        if not self.off_main:
            self.segment.append((usage, self.pending_weight))
        self.pending_weight = out_tokens
        ids: list[str] = []
        for i, block in enumerate(blocks):
            if block["type"] == "tool_use":
                block = {**block, "id": self.ids.toolu()}
                ids.append(block["id"])
            last = i == len(blocks) - 1
            stop = ("tool_use" if block["type"] == "tool_use" else "end_turn") if last else None
            values = {"id": msg_id, "model": CC_MODEL, "block": block, "stop": stop}
            message = shape("cc_assistant_message", **values, usage=usage)
            self._emit("assistant", message=message, requestId=req)
            if i:
                self.clock.tick(0.2, 2)
        self._count("assistant")
        if not self.off_main:
            self.tool_calls += len(ids)
        return ids

    def result(
        self, tool_use_id: str, content: Content, use_result: Any, is_error: bool = False
    ) -> None:
        """A tool result line: its block, and ``use_result`` as the line's ``toolUseResult``."""
        self.clock.tick(0.3, 20)
        values = {"id": tool_use_id, "content": content, "is_error": is_error or None}
        block = shape("cc_tool_result_block", **values)
        self._count("tool")
        self.pending_weight += len(json.dumps(content)) / 3.2
        message = {"role": "user", "content": [block]}
        self._emit("user", message=message, toolUseResult=use_result)

    def compact(self, trigger: str, pre_tokens: int, summary: str) -> None:
        self.finish(target=pre_tokens - self.ids.rng.randint(600, 1800))
        self.clock.tick(20, 60)
        boundary = fill(_RECORDS["claude_code_boundary"], trigger=trigger, pre_tokens=pre_tokens)
        self._emit("system", new_chain=True, **boundary)
        self.clock.tick(0.5, 2)
        self.compactions.append(compaction(len(self.roles), trigger, pre_tokens))
        self.roles.append("user")
        self.pending_weight = len(summary) / 3.2
        message = {"role": "user", "content": summary}
        flags = {"isVisibleInTranscriptOnly": True, "isCompactSummary": True}
        self._emit("user", message=message, **flags)

    def finish(self, target: int) -> None:
        """End a segment (at a compaction or the session's end): give its calls prompt sizes
        that grow from the cached system prompt to ``target``."""
        calls, self.segment = self.segment, []
        if not calls:
            return
        rng = self.ids.rng
        first = CC_CACHED_SYSTEM + 3_800 + int(calls[0][1]) + rng.randint(200, 900)
        weights = [weight + rng.uniform(600, 5200) for _, weight in calls[1:]]
        total = sum(weights) or 1.0
        prompts = [first] + [int(first + (target - first) * w / total) for w in accumulate(weights)]
        reads = [CC_CACHED_SYSTEM, *prompts[:-1]]  # each call reads the one before from cache
        for (usage, _), prompt, read in zip(calls, prompts, reads, strict=True):
            fresh = rng.randint(1, 12)
            created = max(0, prompt - read - fresh)
            usage.update(input_tokens=fresh, cache_creation_input_tokens=created)
            usage["cache_read_input_tokens"] = read
            usage["cache_creation"]["ephemeral_5m_input_tokens"] = created
            self.main_prompts.append(fresh + read + created)


class CodexLog(_Log):
    """Codex rollout lines plus the reader's message view and usage events."""

    def __init__(self, ids: Ids, clock: Clock) -> None:
        super().__init__(ids)
        self.clock = clock
        self.lines: list[dict[str, Any]] = []
        self.last_kind: str | None = None  # "calls" while inside a run of call items
        self.prompt = 0
        keys = ("input", "cached_input", "output", "reasoning_output", "total")
        self.total = {f"{k}_tokens": 0 for k in keys}
        self.usage_events: list[int] = []

    def emit(
        self, kind: str, payload: dict[str, Any], tick: tuple[float, float] = (0.05, 1.5)
    ) -> None:
        self.clock.tick(*tick)
        self.lines.append(shape("codex_line", timestamp=self.clock.z(), kind=kind, payload=payload))

    def item(self, payload: dict[str, Any]) -> None:
        kind = payload["type"]
        if kind == "message":
            self.roles.append(payload["role"])
            self.last_kind = None
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            if self.last_kind != "calls":
                self.roles.append("assistant")
            self.last_kind = "calls"
            self.tool_calls += 1
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self.roles.append("tool")
            self.last_kind = None
        self.emit("response_item", payload)

    def user(self, text: str, injected: bool = False) -> None:
        self.item(shape("codex_user", text=text))
        if injected:
            self.injected += 1
        else:
            self.emit("event_msg", {"type": "user_message", "message": text, "images": []})

    def reasoning(self, title: str, body: str) -> None:
        text = f"**{title}**\n\n{body}"
        enc = "gAAAAAB" + base64.urlsafe_b64encode(noise(self.ids.rng, 380, 900)).decode()
        self.emit("response_item", shape("codex_reasoning", text=text, encrypted=enc), (2, 9))
        self.emit("event_msg", {"type": "agent_reasoning", "text": text})

    def say(self, text: str) -> None:
        self.item(shape("codex_assistant", text=text))
        self.emit("event_msg", {"type": "agent_message", "message": text})

    def shell(self, command: str, timeout_ms: int = 120_000) -> str:
        cid = self.ids.call()
        args = {"command": ["bash", "-lc", command], "workdir": CWD, "timeout_ms": timeout_ms}
        self.item(shape("codex_call", name="shell", arguments=dumps_compact(args), id=cid))
        return cid

    def output(self, cid: str, text: str, code: int = 0, custom: bool = False) -> None:
        meta = {"exit_code": code, "duration_seconds": round(self.ids.rng.uniform(0.05, 4.0), 1)}
        out = dumps_compact({"output": text, "metadata": meta})
        kind = "custom_tool_call_output" if custom else "function_call_output"
        self.item(shape("codex_output", kind=kind, id=cid, output=out))

    def tokens(self, grow: int, output: int, reasoning: int) -> None:
        """One model response finished: a token_count event with the prompt it used."""
        cached = self.prompt - self.prompt % 128 if self.prompt else 0
        self.prompt += grow
        values = (self.prompt, cached, output, reasoning, self.prompt + output)
        last = dict(zip(self.total, values, strict=True))
        for k in self.total:
            self.total[k] += last[k]
        self.usage_events.append(self.prompt)
        n = len(self.usage_events)
        used, resets = round(4 + n * 0.7, 1), 14_020 - 61 * n
        counts = {"total": dict(self.total), "last": last, "used": used, "resets": resets}
        self.emit("event_msg", fill(_RECORDS["codex_token_count"], **counts))
        self.prompt += output

    def compacted(self, summary: str) -> None:
        self.compactions.append(compaction(len(self.roles), pre_tokens=self.usage_events[-1]))
        self.roles.append("user")
        self.last_kind = None
        self.emit("compacted", {"message": summary}, (8, 20))
        self.emit("event_msg", {"type": "context_compacted"})


class ShareGPTLog(_Log):
    def __init__(self, ids: Ids) -> None:
        super().__init__(ids)
        system = data_text("text/sharegpt_system.txt").format(tools=SHAREGPT_TOOLS_JSON)
        self.turns: list[dict[str, str]] = [{"from": "system", "value": system}]
        self.roles.append("system")

    def human(self, text: str) -> None:
        if text.startswith(LEGACY_SUMMARY_PREFIX):
            self.compactions.append(compaction(len(self.roles)))
        self.turns.append({"from": "human", "value": text})
        self.roles.append("user")

    def gpt(self, think: str | None, text: str, *calls: tuple[str, dict[str, Any], Any]) -> None:
        parts = ([tagged("think", think)] if think else []) + ([text] if text else [])
        for name, args, _ in calls:
            call = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
            parts.append(tagged("tool_call", call))
        self.turns.append({"from": "gpt", "value": "\n".join(parts)})
        self.roles.append("assistant")
        self.tool_calls += len(calls)
        if calls:  # one tool turn with every result, each given a call id now
            bodies = [
                {"tool_call_id": self.ids.call(), "name": n, "content": r} for n, _, r in calls
            ]
            blocks = [tagged("tool_response", json.dumps(b, ensure_ascii=False)) for b in bodies]
            self.turns.append({"from": "tool", "value": "\n".join(blocks)})
            self.roles += ["tool"] * len(calls)

    def row(self, prompt_index: int, model: str, stamp: str) -> dict[str, Any]:
        entry: dict[str, Any] = fill(
            _RECORDS["sharegpt_entry"],
            prompt_index=prompt_index,
            turns=self.turns,
            tools=SHAREGPT_TOOLS_JSON,
            model=model,
            stamp=stamp,
            api_calls=self.roles.count("assistant"),
        )
        return entry
