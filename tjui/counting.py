"""Exact token counts for the inspector, off the UI's interpreter when the file is large.

tiktoken holds the GIL while it encodes, so counting a 50 MB transcript in a thread
would stall input for seconds. Large files are counted in a separate process (which
loads the file itself and sends back only the per-message numbers); small ones in the
calling thread, where a process start would cost more than it saves.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING

from tinyjuice.cache import SourceIdentity, default_cache, identify, read_source
from tinyjuice.model import Transcript
from tinyjuice.tokens import TokenCounter, TranscriptTokens, count_transcript, default_counter

if TYPE_CHECKING:
    from tinyjuice.store.commit import LoadedSource

#: Files at least this large are counted in a separate process.
SUBPROCESS_BYTES = 8 * 1024 * 1024


def _count_file(
    path: str, fmt: str | None, session: str | None
) -> tuple[tuple[int, ...], int, int, str, str]:
    source = read_source(path)
    transcript, identity = source.parse(fmt, session=session)
    t = _count(transcript, identity, default_counter(), fmt, session)
    return (t.per_message, t.system_prompt, t.tools, t.counter, t.kind.value)


def _variant(fmt: str | None, session: str | None) -> str:
    # The variant `tjui inspect` uses too: both share one cache entry per file.
    return f"{fmt}|{session}|0"


def _count(
    transcript: Transcript,
    identity: SourceIdentity | None,
    counter: TokenCounter,
    fmt: str | None,
    session: str | None,
) -> TranscriptTokens:
    cache = default_cache()
    if cache is None:
        return count_transcript(transcript, counter)
    return cache.tokens(transcript, identity, counter, variant=_variant(fmt, session)).tokens


def source_identity(loaded: LoadedSource) -> SourceIdentity | None:
    """The cache identity of a transcript the store loaded (None: not cacheable)."""
    if loaded.ref.is_db:
        return None
    return identify(loaded.path, loaded.data, bytes.fromhex(loaded.sha256), loaded.format)


def stored_tokens(
    transcript: Transcript,
    identity: SourceIdentity | None,
    fmt: str | None,
    session: str | None,
    counter: Callable[[], TokenCounter],
) -> TranscriptTokens | None:
    """Exact counts the cache holds for these exact bytes (None: count them).

    ``counter`` gives the counter, loaded only when the cache has counts for the bytes.
    """
    cache = default_cache()
    if cache is None or identity is None or not cache.holds_tokens(identity):
        return None
    return cache.stored_tokens(transcript, identity, counter(), variant=_variant(fmt, session))


def exact_tokens(
    transcript: Transcript,
    path: Path,
    fmt: str | None,
    session: str | None,
    counter: TokenCounter | None = None,
    identity: SourceIdentity | None = None,
) -> TranscriptTokens:
    """Exact counts for ``transcript`` (loaded from ``path``), in a subprocess if large.

    Both store what they count in the analysis cache (for ``identity``, the bytes the
    transcript was read from), so the next run finds them.
    """
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
    return _count(transcript, identity, counter, fmt, session)
