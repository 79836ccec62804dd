"""Test transcripts for every layer: a small DSL, an OpenAI session file, fake summary
providers and invariant checks.

Build a conversation step by step; every step returns the builder, and ``label=`` records
the index of the message a step added (for parallel calls: the assistant message)::

    conv = (
        Conv()
        .user("Fix the failing test in src/app.py", label="ask")
        .terminal("pytest -q", lines=120, exit_code=1)
        .read_file("src/app.py", lines=80)
        .parallel(("read_file", {"path": "a.py"}, "a"), ("read_file", {"path": "b.py"}, "b"))
        .assistant("The fixture is stale; updated it.", label="answer")
    )
    transcript = conv.transcript(context_window=20_000)

Tool outputs look like what agents really log: terminal results are JSON objects with
``output`` and ``exit_code``; ``read_file`` returns numbered source lines; search returns
``path:line: text`` hits. Nothing here is random: the same calls give the same messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tinyjuice.formats import dumps, load_bytes
from tinyjuice.model import (
    MediaPart,
    Message,
    MessageMeta,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    Transcript,
    Usage,
)
from tinyjuice.summary import (
    FailureClass,
    SummaryError,
    SummaryRequest,
    SummaryText,
    render_summary_message,
)
from tinyjuice.tokens import CountKind, RoughCounter, TiktokenCounter

__all__ = [
    "DEFAULT_SYSTEM",
    "CallSpec",
    "Conv",
    "FakeProvider",
    "RetryingProvider",
    "SpyCounter",
    "anthropic_roles",
    "call_ids",
    "coding_session",
    "fake_secrets",
    "file_output",
    "openai_dump",
    "orphan_calls",
    "orphan_results",
    "search_output",
    "secret_fragments",
    "terminal_output",
    "text_message",
    "write_openai_session",
]

DEFAULT_SYSTEM = "You are a careful coding agent. Work in /work/repo and run the tests."

# A planted secret of each kind, assembled from pieces so no scanner flags this file.
_B64 = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo"


def fake_secrets() -> dict[str, str]:
    """One fake credential per kind (never real; built from pieces)."""
    return {
        "openai": "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0f",
        "aws": "AKIA" + "IOSFODNN7EXAMPLQ",
        "jwt": "eyJ"
        + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
        + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ"
        + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "postgres": "postgres://admin:" + "hunter2" + "Secr3tPw" + "@db.internal:5432/app",
        "github": "ghp_" + "Zx9" * 12,
    }


def secret_fragments(secret: str) -> list[str]:
    """The parts of ``secret`` that must not appear anywhere after redaction."""
    if secret.startswith("postgres://"):
        return ["hunter2Secr3tPw"]
    return [secret]


# --------------------------------------------------------------------------- outputs


def terminal_output(command: str, lines: int, exit_code: int) -> str:
    """A terminal tool result as agents log it: JSON with output and exit code."""
    body = [f"$ {command}"]
    for k in range(lines):
        if exit_code and k == lines - 2:
            body.append(f"FAILED tests/test_app.py::test_case_{k} - AssertionError: expected 3")
        else:
            body.append(f"tests/test_app.py::test_case_{k} PASSED [{k * 100 // max(lines, 1)}%]")
    out = "\n".join(body)
    return orjson.dumps({"output": out, "exit_code": exit_code}).decode()


def file_output(path: str, lines: int) -> str:
    """A read_file result: numbered source lines."""
    return "\n".join(
        f"{k + 1:>5}| def handler_{k}(request):  # {path}"
        if k % 4 == 0
        else f"{k + 1:>5}|     x = {k}"
        for k in range(lines)
    )


def search_output(pattern: str, path: str, matches: int) -> str:
    """A grep/search result: ``path:line: text`` hits plus a count line."""
    hits = [f"{path}/mod_{k}.py:{k + 3}: # {pattern} fix later" for k in range(matches)]
    return "\n".join([*hits, f"Found {matches} matches"])


# --------------------------------------------------------------------------- builder


@dataclass(frozen=True, slots=True)
class CallSpec:
    """One tool call and its result (``output=None``: the call is still in flight)."""

    name: str
    args: Any
    output: str | None
    is_error: bool = False
    images: int = 0


class Conv:
    """Builds a conversation; ``at[label]`` is the index of a labelled message."""

    def __init__(self, system: str | None = DEFAULT_SYSTEM) -> None:
        self.messages: list[Message] = []
        self.at: dict[str, int] = {}
        self._ids = 0
        if system is not None:
            self.system(system)

    # ---------------------------------------------------------------- plumbing

    def _add(self, message: Message, label: str | None = None) -> Conv:
        self.messages.append(message)
        if label:
            self.at[label] = len(self.messages) - 1
        return self

    def _new_id(self) -> str:
        self._ids += 1
        return f"call_{self._ids:03d}"

    def raw(self, message: Message, label: str | None = None) -> Conv:
        return self._add(message, label)

    # ---------------------------------------------------------------- messages

    def system(self, text: str = DEFAULT_SYSTEM, label: str | None = None) -> Conv:
        return self._add(Message(Role.SYSTEM, (TextPart(text),)), label)

    def user(
        self, text: str = "please continue", *, images: int = 0, label: str | None = None
    ) -> Conv:
        parts: tuple[Any, ...] = (TextPart(text),)
        parts += tuple(_image(k) for k in range(images))
        return self._add(Message(Role.USER, parts), label)

    def injected(
        self,
        text: str = "# AGENTS.md instructions\nUse ruff. Never push to main.",
        *,
        kind: str = "agents_md",
        label: str | None = None,
    ) -> Conv:
        """Injected context (AGENTS.md, environment block): a user message, not an ask."""
        meta = MessageMeta(is_injected=True, injected_kind=kind)
        return self._add(Message(Role.USER, (TextPart(text),), meta=meta), label)

    def assistant(
        self,
        text: str = "Done.",
        *,
        reasoning: str | None = None,
        thinking: str | None = None,
        label: str | None = None,
    ) -> Conv:
        parts: tuple[Any, ...] = ()
        if thinking:
            parts += (ThinkingPart(thinking, signature="sig-" + str(len(self.messages))),)
        if text:
            parts += (TextPart(text),)
        return self._add(Message(Role.ASSISTANT, parts, reasoning=reasoning), label)

    def exchange(self, ask: str, answer: str, *, label: str | None = None) -> Conv:
        self.user(ask, label=label)
        return self.assistant(answer)

    def summary(
        self,
        body: str = "## Goal\nFix the flaky test in tests/test_app.py.",
        *,
        role: Role = Role.USER,
        lineage_id: str | None = None,
        label: str | None = None,
    ) -> Conv:
        """An earlier compaction summary as tinyjuice writes it."""
        msg = render_summary_message(body, role=role, lineage_id=lineage_id)
        return self._add(msg, label)

    def agent_summary(self, body: str, *, label: str | None = None) -> Conv:
        """An agent-written summary (untagged; recognised by its prefix and flag)."""
        text = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted.\n\n" + body
        return self._add(
            Message(Role.USER, (TextPart(text),), meta=MessageMeta(is_summary=True)), label
        )

    # ---------------------------------------------------------------- tool calls

    def parallel(
        self,
        *calls: CallSpec | tuple[Any, ...],
        text: str = "",
        order: Sequence[int] | None = None,
        label: str | None = None,
    ) -> Conv:
        """One assistant message making every call, then the results in ``order``."""
        specs = [c if isinstance(c, CallSpec) else CallSpec(*c) for c in calls]
        ids = [self._new_id() for _ in specs]
        tool_calls = tuple(
            ToolCall(id=cid, name=s.name, arguments=_args(s.args))
            for cid, s in zip(ids, specs, strict=True)
        )
        parts = (TextPart(text),) if text else ()
        self._add(Message(Role.ASSISTANT, parts, tool_calls=tool_calls), label)
        for pos in order if order is not None else range(len(specs)):
            s = specs[pos]
            if s.output is None:
                continue
            content: tuple[Any, ...] = (TextPart(s.output),)
            content += tuple(_image(k) for k in range(s.images))
            self.messages.append(
                Message(
                    Role.TOOL,
                    content,
                    tool_call_id=ids[pos],
                    tool_name=s.name,
                    meta=MessageMeta(is_error=s.is_error),
                )
            )
        return self

    def call(
        self,
        name: str,
        args: Any,
        output: str | None,
        *,
        text: str = "",
        is_error: bool = False,
        label: str | None = None,
    ) -> Conv:
        return self.parallel(CallSpec(name, args, output, is_error), text=text, label=label)

    def terminal(
        self,
        command: str = "pytest -q",
        *,
        lines: int = 40,
        exit_code: int = 0,
        output: str | None = None,
        text: str = "",
        label: str | None = None,
    ) -> Conv:
        out = output if output is not None else terminal_output(command, lines, exit_code)
        return self.call("terminal", {"command": command}, out, text=text, label=label)

    def read_file(
        self,
        path: str = "src/app.py",
        *,
        lines: int = 60,
        output: str | None = None,
        text: str = "",
        label: str | None = None,
    ) -> Conv:
        out = output if output is not None else file_output(path, lines)
        args = {"path": path, "offset": 1, "limit": lines}
        return self.call("read_file", args, out, text=text, label=label)

    def search(
        self,
        pattern: str = "TODO",
        path: str = "src",
        *,
        matches: int = 12,
        label: str | None = None,
    ) -> Conv:
        out = search_output(pattern, path, matches)
        return self.call("search_files", {"pattern": pattern, "path": path}, out, label=label)

    def write_file(self, path: str, content: str, *, label: str | None = None) -> Conv:
        """A write_file call whose arguments are large JSON (shrink candidates)."""
        return self.call(
            "write_file",
            {"path": path, "content": content},
            f"Wrote {len(content)} bytes to {path}",
            label=label,
        )

    def screenshot(self, *, label: str | None = None) -> Conv:
        """A computer-use screenshot returned inside a tool result."""
        return self.parallel(
            CallSpec("computer", {"action": "screenshot"}, "Screenshot taken.", images=1),
            label=label,
        )

    def in_flight(
        self, name: str = "terminal", args: Any = None, *, label: str | None = None
    ) -> Conv:
        """An assistant tool call still waiting for its result (the last thing in a log)."""
        return self.call(
            name, args if args is not None else {"command": "make build"}, None, label=label
        )

    # ---------------------------------------------------------------- output

    def build(self) -> tuple[Message, ...]:
        return tuple(self.messages)

    def transcript(
        self,
        *,
        context_window: int | None = None,
        model: str | None = None,
        session_id: str | None = "sess-1",
        usage: Iterable[Usage] = (),
        tools: Sequence[dict[str, Any]] = (),
        fmt: str = "openai",
    ) -> Transcript:
        return Transcript(
            messages=self.build(),
            format=fmt,
            context_window=context_window,
            model=model,
            session_id=session_id,
            usage=tuple(usage),
            tools=tuple(tools),
        )


def _image(k: int) -> MediaPart:
    data = _B64 * (4 + k)
    return MediaPart("image/png", byte_size=len(data) * 3 // 4, source="base64", data=data)


def _args(args: Any) -> str:
    if args is None:
        return ""
    if isinstance(args, str):
        return args
    return orjson.dumps(args).decode()


# --------------------------------------------------------------------------- providers


@dataclass
class FakeProvider:
    """A scripted :class:`~tinyjuice.summary.SummaryProvider`.

    ``script`` is consumed one item per ``summarize`` call: a string is returned as the
    summary text, a :class:`FailureClass` is raised as a :class:`SummaryError`. The last
    item repeats. ``requests`` records what the pipeline sent.
    """

    script: list[str | FailureClass] = field(default_factory=lambda: ["## Goal\nShip it."])
    name: str = "fake"
    requests: list[SummaryRequest] = field(default_factory=list)

    def summarize(self, request: SummaryRequest) -> SummaryText:
        self.requests.append(request)
        step = self.script[min(len(self.requests) - 1, len(self.script) - 1)]
        if isinstance(step, FailureClass):
            raise SummaryError(step, f"scripted {step.value} failure", status=_STATUS.get(step))
        return SummaryText(step)


_STATUS = {
    FailureClass.AUTH: 401,
    FailureClass.SERVER: 529,
    FailureClass.RATE_LIMIT: 429,
    FailureClass.MODEL_NOT_FOUND: 404,
}


@dataclass
class RetryingProvider(FakeProvider):
    """A provider that can retry on the main model (``with_main_model``)."""

    main: FakeProvider | None = None

    def with_main_model(self) -> FakeProvider:
        assert self.main is not None
        return self.main


# --------------------------------------------------------------------------- checks


def call_ids(messages: Sequence[Message]) -> list[str]:
    return [c.id for m in messages for c in m.tool_calls]


def orphan_results(messages: Sequence[Message]) -> list[int]:
    """Indices of tool results with no earlier call carrying their id."""
    seen: set[str] = set()
    bad: list[int] = []
    for i, m in enumerate(messages):
        seen.update(c.id for c in m.tool_calls)
        if m.role is Role.TOOL and m.tool_call_id not in seen:
            bad.append(i)
    return bad


def orphan_calls(messages: Sequence[Message]) -> list[str]:
    """Ids of calls with no later tool result answering them."""
    answered = {m.tool_call_id for m in messages if m.role is Role.TOOL}
    return [cid for cid in call_ids(messages) if cid not in answered]


def openai_dump(messages: Sequence[Message]) -> bytes:
    """The OpenAI rendering of ``messages`` (for byte-identity checks)."""
    return dumps(Transcript(messages=tuple(messages), format="openai"), "openai")


def anthropic_roles(transcript: Transcript) -> list[str]:
    """Roles of the Anthropic request rendered from ``transcript`` and loaded back."""
    raw = dumps(transcript, "anthropic")
    doc = orjson.loads(raw)
    body = doc["messages"] if isinstance(doc, dict) else doc
    roles = [m["role"] for m in body]
    # Loading it back must work too (the rendering is a valid Anthropic document).
    load_bytes(raw, "compacted.json", "anthropic")
    return roles


# --------------------------------------------------------------------------- sessions


def coding_session(
    steps: int = 6,
    *,
    system: str | None = DEFAULT_SYSTEM,
    first_ask: str = (
        "Fix the failing test in src/app.py; the CI log is at https://ci.example.com/runs/42"
    ),
    last_ask: str = "Finally, rename the module to src/core/engine.py and rerun the tests.",
    last_answer: str | None = "Renamed src/app.py to src/core/engine.py; all 60 tests pass.",
    lines: int = 60,
) -> Conv:
    """A realistic agent session: each step is an ask, a terminal run, a file read and an answer.

    Labels: ``first`` (first ask), ``ask{i}``/``answer{i}`` per step, ``last`` (last ask),
    ``last_answer``.
    """
    c = Conv(system)
    c.user(first_ask, label="first")
    c.terminal("pytest -q", lines=lines, exit_code=1)
    c.assistant("The failure is in tests/test_app.py::test_case_58; looking at the code.")
    for i in range(steps):
        c.user(f"Step {i}: update src/mod_{i}.py and run tests/test_{i}.py", label=f"ask{i}")
        c.terminal(f"pytest tests/test_{i}.py -q", lines=lines, exit_code=i % 2)
        c.read_file(f"src/mod_{i}.py", lines=lines)
        c.assistant(f"Step {i} done: src/mod_{i}.py updated.", label=f"answer{i}")
    c.user(last_ask, label="last")
    if last_answer is not None:
        c.assistant(last_answer, label="last_answer")
    return c


def write_openai_session(
    path: Path,
    exchanges: int = 12,
    *,
    passed_lines: int = 40,
    pytest_flags: str = "",
    read_file_lines: int = 0,
    model: str | None = None,
    indent: int | None = None,
) -> Path:
    """Write an OpenAI chat-completions session to ``path``: a system prompt, then per
    exchange a user step, a ``terminal`` call running pytest (with a ``read_file`` call
    beside it when ``read_file_lines``), their outputs and a short answer, then one last
    ask. A bare message list, or ``{"model": …, "messages": […]}`` when ``model``."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(exchanges):
        messages.append({"role": "user", "content": f"Step {i}: fix src/app/module_{i}.py"})
        command = f"pytest tests/test_{i}.py{pytest_flags}"
        calls = [_openai_call(f"call_{i}", "terminal", {"command": command})]
        if read_file_lines:
            calls.append(_openai_call(f"call_{i}_read", "read_file", {"path": f"src/m{i}.py"}))
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        output = "\n".join(f"tests/test_{i}.py::case_{k} PASSED" for k in range(passed_lines))
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"call_{i}",
                "content": json.dumps({"output": output, "exit_code": 0}),
            }
        )
        if read_file_lines:
            source = "\n".join(f"line {k}" for k in range(read_file_lines))
            messages.append({"role": "tool", "tool_call_id": f"call_{i}_read", "content": source})
        messages.append({"role": "assistant", "content": f"Step {i} passes now."})
    messages.append({"role": "user", "content": "Now make the retry logic idempotent."})
    doc: Any = messages if model is None else {"model": model, "messages": messages}
    path.write_text(json.dumps(doc, indent=indent))
    return path


def _openai_call(id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def text_message(text: str, role: Role = Role.USER) -> Message:
    """A message holding one text part."""
    return Message(role=role, parts=(TextPart(text),))


class WordCounter:
    """One token per whitespace-separated word, no per-message overhead: exact math."""

    name = "words"
    kind = CountKind.ESTIMATED
    message_overhead = 0

    def count(self, text: str) -> int:
        return len(text.split())

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]


class SpyCounter(RoughCounter):
    """A rough counter that records every text it is asked to count."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def count_many(self, texts):  # type: ignore[no-untyped-def]
        self.seen.extend(texts)
        return super().count_many(texts)


def o200k_pieces_counter(base: TiktokenCounter) -> TiktokenCounter:
    """A counter with o200k's pre-tokenizer and ``base``'s merges: the pieces alone
    decide whether counts add up over stretches or stay above a floor (every piece is at
    least one token either way), and no o200k file is needed."""
    import tiktoken

    from tinyjuice.tokens import SPACE_SPLIT_PATTERNS

    pattern = next(p for p in SPACE_SPLIT_PATTERNS if p.startswith("[^\\r\\n"))
    enc = tiktoken.Encoding(
        "o200k-pieces",
        pat_str=pattern,
        mergeable_ranks=base._enc._mergeable_ranks,  # type: ignore[attr-defined]
        special_tokens={},
    )
    return TiktokenCounter(enc, "o200k-pieces")


@contextmanager
def parsed_lines(monkeypatch: Any) -> Iterator[list[bytes]]:
    """Every JSON line the readers parse (``orjson.loads`` as ``tinyjuice.formats._io``
    calls it) while the block runs, in order."""
    import tinyjuice.formats._io as io

    parsed: list[bytes] = []
    real = io.orjson.loads

    def loads(raw: bytes) -> Any:
        parsed.append(raw)
        return real(raw)

    monkeypatch.setattr(io.orjson, "loads", loads)
    try:
        yield parsed
    finally:
        monkeypatch.setattr(io.orjson, "loads", real)


def claude_code_with_secrets(path: Path) -> dict[str, str]:
    """``sessions/claude-code.jsonl`` written to ``path`` with secrets in its early tool
    results: in their source records (``toolUseResult``, a key and a value) and in one
    result's text. Returns the secrets, by kind."""
    s = fake_secrets()
    sessions = Path(__file__).resolve().parents[1] / "sessions"
    lines = (sessions / "claude-code.jsonl").read_text(encoding="utf-8").splitlines()
    out: list[str] = []
    texted = False
    for i, line in enumerate(lines):
        record = json.loads(line)
        result = record.get("toolUseResult")
        if 10 <= i <= 60 and isinstance(result, dict):
            result["password"] = "hunter2" + "Secr3tPw"
            result["env"] = f"GITHUB_TOKEN={s['github']} AWS_ACCESS_KEY_ID={s['aws']}"
            block = record["message"]["content"][0]
            if not texted and isinstance(block.get("content"), str):
                block["content"] += f"\nexport OPENAI_API_KEY={s['openai']}"
                texted = True
        out.append(json.dumps(record))
    assert texted
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return s
