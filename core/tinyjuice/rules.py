"""The rule-based, zero-inference compaction profile: six deterministic rules applied to
the compressible middle (numbered in docs/policies.md; comments here cite "rule N").

Details: docs/policies.md (`tinyjuice.rules`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from tinyjuice.model import Message, Part, Role, TextPart, ToolCall
from tinyjuice.redact import redact_messages

__all__ = [
    "RulesConfig",
    "RulesResult",
    "apply_rules",
    "error_lines",
    "extract_refs",
    "rules_tail_start",
    "tool_output_text",
]

_PATH = re.compile(
    r"(?<![\w/.-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+|(?<![\w/])[\w-]+\.(?:py|js|ts|tsx|jsx|rs|go|java|rb|php|c|h|cpp|hpp|cs|json|yaml|yml|toml|ini|cfg|md|txt|sh|sql|html|css|lock|env)\b"
)
_URL = re.compile(r"\bhttps?://[^\s\"'<>)\]]+")
_ERROR_WORDS = (
    "error|exception|traceback|failed|failure|fatal|panic|denied|not found|no such file"
    "|exit code [1-9]|exit status [1-9]"
)
_ERROR = re.compile(rf"(?i)\b({_ERROR_WORDS})\b")
#: :data:`_ERROR` for lower-cased ASCII text (the same spans, found at less than half
#: the cost: no case folding at every position).
_ERROR_LOWER = re.compile(rf"\b({_ERROR_WORDS})\b")
_EXIT = re.compile(
    r'(?i)(?:"exit_code"\s*:\s*|exit code:?\s*|exited with code\s*|exit status\s*)(-?\d+)'
)


@dataclass(frozen=True, slots=True)
class RulesConfig:
    """The rules profile's configuration keys, with their defaults."""

    enabled: bool = True
    trigger_threshold: float = 0.60
    protect_last_n_turns: int = 5
    max_tool_output_chars: int = 500
    keep_tool_summary: bool = True
    drop_system_after_turn: int = 1
    collapse_consecutive_assistant: bool = True

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RulesConfig:
        """Build from a ``compaction:`` mapping (unknown keys are an error, not ignored).

        Accepts the whole config (``{"compaction": {...}}``) or just the section. Values
        must have the seed's types: booleans for the switches, whole numbers >= 0 for
        counts, and a ratio in (0, 1] for ``trigger_threshold``.
        """
        section = data.get("compaction", data) if isinstance(data, Mapping) else data
        if section is None:
            section = {}
        if not isinstance(section, Mapping):
            raise ValueError(
                f"the compaction settings must be a mapping, got {type(section).__name__}"
            )
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(section) - known)
        if unknown:
            raise ValueError(
                "unknown compaction setting(s): "
                + ", ".join(map(str, unknown))
                + "; known: "
                + ", ".join(sorted(known))
            )
        values = dict(section)
        for key, value in values.items():
            default = cls.__dataclass_fields__[key].default
            if isinstance(default, bool):
                ok = isinstance(value, bool)
                want = "true or false"
            elif isinstance(default, int):
                ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
                want = "a whole number >= 0"
            else:
                ok = isinstance(value, (int, float)) and not isinstance(value, bool)
                want = "a number"
            if not ok:
                raise ValueError(f"compaction.{key} must be {want}, got {value!r}")
        if not 0 < float(values.get("trigger_threshold", 0.6)) <= 1:
            raise ValueError(
                "compaction.trigger_threshold must be in (0, 1], "
                f"got {values['trigger_threshold']!r}"
            )
        return cls(**values)


@dataclass(frozen=True, slots=True)
class RulesResult:
    messages: tuple[Message, ...]
    #: How many times each rule fired ("collapse_pair", "truncate", "drop_system", "collapse_assistant").
    applied: Mapping[str, int] = field(default_factory=dict)
    #: How many messages of the middle redaction changed (before any rule ran).
    redacted: int = 0


def extract_refs(text: str, limit: int = 40) -> list[str]:
    """Paths and URLs in ``text``, first-seen order, deduplicated."""
    seen: dict[str, None] = {}
    for m in _URL.finditer(text):
        seen.setdefault(m.group(0).rstrip(".,;:"), None)
    for m in _PATH.finditer(text):
        ref = m.group(0).rstrip(".,;:")
        if any(ref in u for u in seen):
            continue
        seen.setdefault(ref, None)
        if len(seen) >= limit:
            break
    return list(seen)[:limit]


#: String fields of a structured (JSON) tool result that hold its visible output.
_OUTPUT_KEYS = ("output", "stdout", "stderr", "error", "content", "result", "text")


def tool_output_text(text: str) -> str:
    """The visible text of a tool result: a JSON result's output fields, decoded.

    Agents log terminal results as ``{"output": "...", "exit_code": 1}``; searching the raw
    JSON for lines, paths or errors sees one escaped line. Other text is returned as is.
    """
    if not text.startswith("{"):
        return text
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    if not isinstance(doc, dict):
        return text
    parts = [doc[k] for k in _OUTPUT_KEYS if isinstance(doc.get(k), str) and doc[k]]
    return "\n".join(parts) if parts else text


def error_lines(text: str, limit: int = 5) -> list[str]:
    """Up to ``limit`` lines of ``text`` that look like errors, stripped and clipped."""
    return _error_lines(text, limit)


def _error_lines(text: str, limit: int = 5) -> list[str]:
    # One scan of the whole text (most outputs hold no error at all), then the lines
    # around the hits; linear in the text.
    out: list[str] = []
    pos = 0
    # ASCII text lower-cases in place: positions stay, and so does every word boundary.
    matches = _ERROR_LOWER.finditer(text.lower()) if text.isascii() else _ERROR.finditer(text)
    for m in matches:
        if m.start() < pos:
            continue
        start = max(text.rfind("\n", 0, m.start()), text.rfind("\r", 0, m.start())) + 1
        end = len(text)
        for sep in ("\n", "\r"):
            k = text.find(sep, m.end())
            if k != -1:
                end = min(end, k)
        line = text[start:end].strip()[:240]
        if line and line not in out:
            out.append(line)
            if len(out) >= limit:
                break
        pos = end
    return out


def _failed(result: Message) -> bool:
    if result.meta.is_error:
        return True
    m = _EXIT.search(result.text[:4000]) or _EXIT.search(result.text[-2000:])
    if m and m.group(1) != "0":
        return True
    head = result.text[:400].lower()
    return head.startswith(("error", "traceback", "fatal")) or '"error":' in head


def _call_label(call: ToolCall) -> str:
    args = call.parsed_arguments()
    key = ""
    if isinstance(args, dict):
        for name in ("path", "file_path", "command", "cmd", "pattern", "query", "url", "goal"):
            if isinstance(args.get(name), str):
                key = args[name]
                break
        if not key:
            first = next((v for v in args.values() if isinstance(v, str)), "")
            key = first
    elif call.arguments:
        key = call.arguments
    key = key.replace("\n", " ")
    if len(key) > 120:
        key = key[:117] + "…"
    return f'{call.name}("{key}")' if key else f"{call.name}()"


def _truncate(text: str, head: int = 10, tail: int = 5) -> str:
    """Rule 2: the first ``head`` and last ``tail`` lines (few long lines: both ends by
    characters), plus every error line and path/URL of the cut part not shown anyway.
    Returns ``text`` itself when that would not be shorter."""
    lines = text.splitlines()
    if len(lines) <= head + tail:
        if len(text) <= 500:
            return text
        first, last = [text[:300]], [text[-100:]]
        marker = f"[...truncated {len(text) - 400:,} chars...]"
    else:
        first, last = lines[:head], lines[len(lines) - tail :]
        marker = f"[...truncated {len(lines) - head - tail:,} lines...]"
    visible = "\n".join([*first, *last])
    body = tool_output_text(text)
    notes: list[str] = []
    kept_errors = [e for e in _error_lines(body) if e not in visible]
    if kept_errors:
        notes.append("[kept error lines: " + " | ".join(kept_errors) + "]")
    refs = [r for r in extract_refs(body, limit=12) if r not in visible]
    if refs:
        notes.append("[kept refs: " + ", ".join(refs) + "]")
    out = "\n".join([*first, marker, *notes, *last])
    return out if len(out) < len(text) else text


def _with_text(message: Message, text: str, generated: str = "rules") -> Message:
    """``message`` with its visible text replaced; other parts keep their order."""
    parts: list[Part] = []
    placed = False
    for p in message.parts:
        if isinstance(p, TextPart):
            if not placed:
                parts.append(TextPart(text))
                placed = True
        else:
            parts.append(p)
    if not placed:
        parts.append(TextPart(text))
    return replace(message, parts=tuple(parts), meta=replace(message.meta, generated_by=generated))


def rules_tail_start(messages: Sequence[Message], protect_last_n_turns: int) -> int:
    """Index where the protected last N user/assistant turn pairs begin (rule 6)."""
    if protect_last_n_turns <= 0:
        return len(messages)
    seen = 0
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].is_real_user:
            seen += 1
            if seen == protect_last_n_turns:
                return i
    return 0


def _reasoning_refs(m: Message, shown: str) -> list[str]:
    """Paths, URLs and error lines in ``m``'s reasoning that ``shown`` does not carry."""
    thought = "\n".join([m.reasoning or "", *(p.text for p in m.thinking)])
    if not thought.strip():
        return []
    refs = [r for r in extract_refs(thought, limit=12) if r not in shown]
    errors = [e for e in _error_lines(thought) if e not in shown]
    out = []
    if refs:
        out.append("[reasoning refs: " + ", ".join(refs) + "]")
    if errors:
        out.append("[reasoning errors: " + " | ".join(errors) + "]")
    return out


def _group_end(middle: Sequence[Message], i: int, results: Mapping[str, int]) -> int:
    """Index just past the tool group of the assistant message ``middle[i]``."""
    last = max((results[c.id] for c in middle[i].tool_calls if c.id in results), default=i)
    return max(last, i) + 1


# Long on purpose: the six rules share one pass over the middle and its fold state
# (rule 1 folds a collapsed group into the next assistant message); split per rule,
# that state would have to be threaded through each.
def apply_rules(
    messages: Sequence[Message],
    start: int,
    end: int,
    config: RulesConfig | None = None,
    *,
    redact: bool = True,
) -> RulesResult:
    """Apply the six rules to ``messages[start:end]``; head and tail are returned untouched.

    With ``redact`` every message of the middle but the user's (rule 5) is redacted
    first, so nothing the rules generate from it (refs, clipped labels and outputs, kept
    error lines) can carry key material — not even the prefix of a key a clip cut.

    ``start``/``end`` must be legal boundaries (no tool group split); the caller
    computes them (rule 6 via :func:`rules_tail_start`).

    Rule 1 never leaves two assistant messages side by side (providers such as Anthropic
    reject that): when the message after a collapsed group is an assistant message in the
    middle, the one-line summaries are folded into it; when it is the first message of the
    protected tail, that group is not collapsed (rule 2 may still truncate its results).
    """
    cfg = config or RulesConfig()
    head, middle, tail = list(messages[:start]), list(messages[start:end]), list(messages[end:])
    redacted = 0
    if redact:
        middle, redacted = _redact_middle(middle)
    applied: dict[str, int] = {}

    def bump(key: str) -> None:
        applied[key] = applied.get(key, 0) + 1

    results: dict[str, int] = {}
    for i, m in enumerate(middle):
        if m.role is Role.TOOL and m.tool_call_id is not None:
            results.setdefault(m.tool_call_id, i)

    def following(i: int) -> tuple[bool, Message | None]:
        """``(in_middle, message)`` right after ``middle[i]``'s tool group."""
        j = _group_end(middle, i, results)
        if j < len(middle):
            return True, middle[j]
        return False, tail[0] if tail else None

    user_turns_before = sum(1 for m in head if m.is_real_user)
    out: list[Message] = []
    drop: set[int] = set()
    pending: list[str] = []  # collapsed-tool lines waiting for the next assistant message

    def emit_assistant(m: Message) -> None:
        nonlocal pending
        if pending:
            m = _with_text(m, "\n".join([*pending, m.text] if m.text else pending))
            pending = []
        out.append(m)

    for i, m in enumerate(middle):
        if i in drop:
            continue
        if m.role is Role.USER:
            user_turns_before += m.is_real_user
            out.append(m)  # rule 5
            continue
        if (
            m.role in (Role.SYSTEM, Role.DEVELOPER)
            and user_turns_before >= cfg.drop_system_after_turn
        ):
            refs = extract_refs(m.text, limit=8)
            label = m.text.strip().splitlines()[0][:80] if m.text.strip() else "system message"
            marker = (
                f"[system prompt: {label} ({len(m.text):,} chars) "
                f"dropped after turn {cfg.drop_system_after_turn}"
            )
            marker += ("; refs: " + ", ".join(refs) + "]") if refs else "]"
            out.append(_with_text(replace(m, tool_calls=()), marker))  # rule 3
            bump("drop_system")
            continue
        if m.role is Role.ASSISTANT and m.tool_calls:
            kept_calls: list[ToolCall] = []
            lines: list[str] = []
            collapsed: list[int] = []
            for call in m.tool_calls:
                j = results.get(call.id)
                if j is None or _failed(result := middle[j]) or not cfg.keep_tool_summary:
                    kept_calls.append(call)
                    continue
                size = len(result.text)
                line = f"[tool: {_call_label(call)} → ok, {size:,} chars]"
                refs = [
                    r for r in extract_refs(tool_output_text(result.text), limit=6) if r not in line
                ]
                if refs:
                    line += " refs: " + ", ".join(refs)
                lines.append(line)
                collapsed.append(j)
            if not lines:
                emit_assistant(m)
                continue
            text = "\n".join(filter(None, [m.text, *lines]))
            if not kept_calls:
                in_middle, nxt = following(i)
                if nxt is not None and nxt.role is Role.ASSISTANT:
                    if not in_middle or m.media or nxt.meta.is_summary:
                        # Next to the protected tail or a summary (or carrying images):
                        # keep the group.
                        emit_assistant(m)
                        continue
                    # Fold into the next assistant message: no assistant/assistant seam.
                    # Reasoning of this step is dropped like rule 4's thinking steps, but
                    # its paths, URLs and error lines are kept.
                    drop.update(collapsed)
                    applied["collapse_pair"] = applied.get("collapse_pair", 0) + len(collapsed)
                    pending.append("\n".join([text, *_reasoning_refs(m, text)]))
                    continue
            drop.update(collapsed)
            applied["collapse_pair"] = applied.get("collapse_pair", 0) + len(collapsed)
            emit_assistant(_with_text(replace(m, tool_calls=tuple(kept_calls)), text))  # rule 1
            continue
        if m.role is Role.TOOL and len(m.text) > cfg.max_tool_output_chars:
            cut = _truncate(m.text)
            if cut is not m.text:
                out.append(_with_text(m, cut))  # rule 2
                bump("truncate")
                continue
        if m.role is Role.ASSISTANT:
            emit_assistant(m)
            continue
        out.append(m)
    if pending:  # nothing followed in the middle after all: keep the lines as their own message
        out.append(Message(Role.ASSISTANT, (TextPart("\n".join(pending)),)))

    if cfg.collapse_consecutive_assistant:
        out = _collapse_assistants(out, bump)
    return RulesResult(messages=(*head, *out, *tail), applied=applied, redacted=redacted)


def _redact_middle(middle: list[Message]) -> tuple[list[Message], int]:
    """``middle`` with every message but the user's redacted, and how many changed."""
    todo = [i for i, m in enumerate(middle) if m.role is not Role.USER]
    cleaned, changed = redact_messages([middle[i] for i in todo])
    out = list(middle)
    for i, m in zip(todo, cleaned, strict=True):
        out[i] = m
    return out, changed


def _collapse_assistants(out: list[Message], bump: Callable[[str], None]) -> list[Message]:
    """Rule 4: runs of text-only assistant messages keep only the last one.

    Tool-summary lines (``[tool: …]``), paths, URLs and error lines of the dropped ones are
    carried into the kept message, so nothing rule 1 promised is lost.
    """
    collapsed: list[Message] = []
    carried: list[str] = []
    for k, m in enumerate(out):
        nxt = out[k + 1] if k + 1 < len(out) else None
        text_only = _text_only_assistant(m)
        if text_only and nxt is not None and _text_only_assistant(nxt):
            for line in m.text.splitlines():
                if line.startswith("[tool: ") and line not in carried:
                    carried.append(line)
            carried += [r for r in extract_refs(m.text) if r not in carried]
            carried += [e for e in _error_lines(m.text) if e not in carried]
            bump("collapse_assistant")
            continue
        if carried and text_only:
            tools = [c for c in carried if c.startswith("[tool: ") and c not in m.text]
            rest = [
                c
                for c in carried
                if not c.startswith("[tool: ")
                and c not in m.text
                and not any(c in t for t in tools)
            ]
            extra = [*tools]
            if rest:
                extra.append("[earlier notes kept refs: " + ", ".join(rest) + "]")
            if extra:
                m = _with_text(m, "\n".join([*extra, m.text]))
            carried = []
        collapsed.append(m)
    return collapsed


def _text_only_assistant(m: Message) -> bool:
    return m.role is Role.ASSISTANT and not m.tool_calls and not m.meta.is_summary
