"""The prompt a provider sends for a handoff summary (:func:`build_summary_prompt`)."""

from __future__ import annotations

from collections.abc import Sequence

from tinyjuice.markers import strip_summary_wrappers
from tinyjuice.model import MediaPart, Message, Role
from tinyjuice.summary.contract import _SECTIONS, SummaryRequest
from tinyjuice.summary.wrapper import is_summary_message

_SYSTEM_PROMPT = (
    "You write handoff summaries of agent conversations. The earlier turns you are shown are "
    "about to be removed from the context window; another model will continue the work "
    "from your summary plus the most recent turns, so it must be able to pick up without "
    "re-reading anything. Record facts, not impressions. The summary is reference material "
    "for that model, never a new request: describe the user's earlier asks in the past "
    "tense as history. Do not add a preamble, closing remarks or wrapper lines; output only "
    "the summary."
)

_VERBATIM_RULES = (
    "Copy these verbatim, never paraphrased: file paths, shell commands, error messages, "
    "numbers with their units (durations, sizes, counts, versions, percentages), "
    "identifiers (functions, classes, variables, branches, commits, issue ids, model "
    "names) and URLs.",
    "List every file path that was read, written, created or mentioned under Relevant "
    "Files, one per line.",
    "Write completed actions as past-tense facts with evidence, e.g. "
    '"Ran `pytest -q` -> 3 failed (test_parse, test_load, test_save)".',
    "Quote unfulfilled user requests verbatim under Historical Pending Asks and label them "
    "as historical.",
    "Secrets were replaced by [REDACTED:...] markers: keep the markers, never guess values.",
    "If something is unknown, say so; do not invent.",
)


def _keep_ends(text: str, limit: int) -> str:
    """Multi-line: the first two thirds and the last third, with the count of what was cut."""
    if limit <= 0 or len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[… {cut:,} chars omitted …]\n{text[len(text) - tail :]}"


def _serialise_turns(messages: Sequence[Message], max_chars: int) -> str:
    blocks: list[str] = []
    for i, m in enumerate(messages):
        if is_summary_message(m):
            label = "EARLIER SUMMARY"
            body = strip_summary_wrappers(m.text)
        elif m.role is Role.TOOL:
            name = m.tool_name or "tool"
            label = f"TOOL RESULT {name}" + (f" (call {m.tool_call_id})" if m.tool_call_id else "")
            if m.meta.is_error:
                label += " [error]"
            body = m.text
        else:
            label = m.role.value.upper()
            if m.meta.is_injected:
                label += f" (injected {m.meta.injected_kind or 'context'})"
            body = m.text
        lines = [_keep_ends(body.strip(), max_chars)] if body.strip() else []
        lines += [
            f"[media: {p.media_type}, {p.byte_size:,} bytes]"
            for p in m.parts
            if isinstance(p, MediaPart)
        ]
        for call in m.tool_calls:
            args = _keep_ends(call.arguments, min(max_chars, 1500))
            lines.append(f"-> tool call {call.name} (id {call.id}): {args}")
        blocks.append(f"[{i}] {label}:\n" + ("\n".join(lines) if lines else "(empty)"))
    return "\n\n".join(blocks)


def _trail_block(messages: Sequence[Message]) -> str:
    """The artifact trail of the turns for the prompt ("" when no tool touched a file)."""
    from tinyjuice.facts import file_actions

    trail = file_actions(messages)
    if not trail:
        return ""
    lines = "\n".join(f"- {a.line()}" for a in trail)
    return (
        "Artifact trail (every file a tool touched, with what was done; extracted from the "
        "tool calls). Carry ALL of it under Relevant Files, each file with its actions, "
        f"before anything else:\n{lines}"
    )


def build_summary_prompt(
    request: SummaryRequest, *, max_chars_per_message: int = 6000
) -> list[dict[str, str]]:
    """Chat messages (``system`` + ``user``) asking a model for a handoff summary.

    With ``request.previous_summary`` the prompt asks to *update the previous summary
    with the new turns* (one complete updated summary, not a new one on top); wrappers
    around the previous summary and around summaries inside the turns are stripped first,
    so summaries never nest. With a ``focus_topic`` the model is told to spend 60–70% of
    the summary on it. Each message is clipped to ``max_chars_per_message`` (head and
    tail kept); reasoning is left out.
    """
    parts: list[str] = []
    previous = strip_summary_wrappers(request.previous_summary or "")
    turns = _serialise_turns(request.messages, max_chars_per_message)
    if previous:
        parts.append(
            "Update the previous summary with the new turns. Below are the PREVIOUS SUMMARY "
            "(from an earlier compaction) and the NEW TURNS that happened after it. Produce "
            "one complete, updated summary that replaces the previous one: keep everything "
            "from it that is still true, move work that is now finished to Completed "
            "Actions, add the new facts, files, commands, errors and decisions, and drop "
            "nothing a later step may need. Do not nest or quote the previous summary."
        )
        parts.append(f"<previous_summary>\n{previous}\n</previous_summary>")
        parts.append(f"<new_turns>\n{turns}\n</new_turns>")
    else:
        parts.append("Summarize the conversation turns below.")
        parts.append(f"<turns>\n{turns}\n</turns>")
    trail = _trail_block(request.messages)
    if trail:
        parts.append(trail)
    section_lines = "\n".join(f"## {title}\n({hint})" for _, title, hint in _SECTIONS)
    parts.append(
        "Write the summary in Markdown with exactly these sections, in this order, each as "
        'a "## " heading; write "None." under a section with nothing to say:\n' + section_lines
    )
    parts.append("Rules:\n" + "\n".join(f"- {rule}" for rule in _VERBATIM_RULES))
    parts.append(f"Length: at most about {max(1, request.token_budget):,} tokens.")
    topic = (request.focus_topic or "").strip()
    if topic:
        parts.append(
            f'Focus topic: "{topic}". Spend about 60-70% of the summary on everything '
            "related to this topic and keep its details in full; cover the rest briefly."
        )
    else:
        parts.append("Distribute attention evenly across the sections.")
    return [
        {"role": "system", "content": _SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]
