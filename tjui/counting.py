"""Exact token counts for the inspector, off the UI's interpreter when the file is large.

tiktoken holds the GIL while it encodes, so counting a 50 MB transcript in a thread
would stall input for seconds. Large files are counted in a separate process (which
loads the file itself and sends back only the per-message numbers); small ones in the
calling thread, where a process start would cost more than it saves.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from itertools import accumulate
from pathlib import Path

from tinyjuice.formats import load
from tinyjuice.model import Transcript
from tinyjuice.tokens import TokenCounter, TranscriptTokens, count_transcript, default_counter

#: Files at least this large are counted in a separate process.
SUBPROCESS_BYTES = 8 * 1024 * 1024


def _count_file(
    path: str, fmt: str | None, session: str | None
) -> tuple[tuple[int, ...], int, int, str, str]:
    transcript = load(path, fmt, session=session)
    counter = default_counter()
    t = count_transcript(transcript, counter)
    return (t.per_message, t.system_prompt, t.tools, t.counter, t.kind.value)


def exact_tokens(
    transcript: Transcript,
    path: Path,
    fmt: str | None,
    session: str | None,
    counter: TokenCounter | None = None,
) -> TranscriptTokens:
    """Exact counts for ``transcript`` (loaded from ``path``), in a subprocess if large."""
    counter = counter or default_counter()
    try:
        large = path.is_file() and path.stat().st_size >= SUBPROCESS_BYTES
    except OSError:
        large = False
    if large and counter.name != "rough":
        try:
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
                per, system, tools, name, kind = pool.submit(
                    _count_file, str(path), fmt, session
                ).result()
            per_message = tuple(per)
            if len(per_message) == len(transcript.messages):
                return TranscriptTokens(
                    per_message=per_message,
                    prefix=(0, *accumulate(per_message)),
                    system_prompt=int(system),
                    tools=int(tools),
                    counter=str(name),
                    kind=counter.kind.__class__(kind),
                )
        except Exception:  # a process could not start, or the file changed: count here
            pass
    return count_transcript(transcript, counter)
