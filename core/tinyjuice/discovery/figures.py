"""The exact figures of a row: load the session through ``tinyjuice.formats.load``.

Slow by design (a whole load and an exact count): callers run it in a background
worker and cache the result. A session whose format has no reader yet, or that
cannot be read, gives an error string for the row instead of an exception.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tinyjuice.discovery.rows import ExactFigures, SessionRow
from tinyjuice.model import Transcript
from tinyjuice.policies import resolve_window, usage_series
from tinyjuice.tokens import TokenCounter, TranscriptTokens, count_transcript, default_counter

__all__ = ["exact_figures", "fill_row", "live_tokens"]


def live_tokens(transcript: Transcript, tokens: TranscriptTokens) -> int:
    """The live context: what the next model call would send, after the last compaction.

    (The usage series restarts at each compaction that reset the context, so this is
    the prompt as the agent holds it now — measured when the transcript records usage.)
    """
    return usage_series(transcript, tokens).next_tokens


def exact_figures(
    path: str | Path,
    session: str | None = None,
    *,
    counter: TokenCounter | None = None,
) -> ExactFigures:
    """Load ``path`` (``session`` of a multi-session store) and compute its figures.

    Raises :class:`~tinyjuice.formats.LoadError` when it cannot be read.
    """
    from tinyjuice.formats import load

    transcript = _own_chain(load(path, session=session))
    tokens = count_transcript(transcript, counter or default_counter())
    window = resolve_window(transcript).context_window
    return ExactFigures(
        messages=len(transcript.messages),
        live_tokens=live_tokens(transcript, tokens),
        context_window=window,
        compactions=len(transcript.compactions),
        format=transcript.format,
        model=transcript.model,
    )


def _own_chain(transcript: Transcript) -> Transcript:
    """A subagent's file (Claude Code ``subagents/agent-*.jsonl``) holds only sidechain
    lines: its own conversation is that sidechain."""
    if transcript.messages or not transcript.sidechains:
        return transcript
    longest = max(transcript.sidechains.values(), key=len)
    return replace(transcript, messages=longest, usage=(), compactions=())


def fill_row(row: SessionRow, counter: TokenCounter | None = None) -> SessionRow:
    """``row`` with its exact figures, or with the reason it cannot be loaded."""
    from tinyjuice.formats import LoadError

    try:
        return row.with_exact(exact_figures(row.path, row.session, counter=counter), None)
    except LoadError as exc:
        return row.with_exact(None, _reason(row.agent, str(exc)))
    except (OSError, ValueError, MemoryError) as exc:
        return row.with_exact(None, f"cannot load: {exc}")


def _reason(agent: str, message: str) -> str:
    if "unrecognised transcript" in message:
        return f"no {agent} reader for this file: listed from its header only"
    return message
