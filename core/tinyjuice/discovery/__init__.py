"""Finding the agent sessions on this machine, for a list that paints at once.

:func:`discover` walks each agent's store (:mod:`.roots`: Claude Code, Codex, Hermes,
Gemini CLI, opencode, Cline, Roo — each root overridable by an environment variable),
builds one :class:`SessionRow` per session from a cheap header read (:mod:`.headers`),
and reuses cached rows for files whose size and mtime are unchanged (:mod:`.cache`).
Exact figures (messages, live context tokens, compactions) come from
:func:`fill_row`, which loads the whole session: run it in a background worker.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from tinyjuice.discovery.cache import CACHE_ENV, RowCache, cache_dir
from tinyjuice.discovery.figures import exact_figures, fill_row, live_tokens
from tinyjuice.discovery.headers import header_row
from tinyjuice.discovery.roots import AGENTS, ROOT_ENV, AgentRoot, agent_roots
from tinyjuice.discovery.rows import ExactFigures, SessionRow
from tinyjuice.discovery.scan import Candidate, candidates, db_rows, store_stat

__all__ = [
    "AGENTS",
    "CACHE_ENV",
    "ROOT_ENV",
    "AgentRoot",
    "ExactFigures",
    "RowCache",
    "SessionRow",
    "agent_roots",
    "cache_dir",
    "discover",
    "exact_figures",
    "fill_row",
    "live_tokens",
    "sort_newest",
]


def _rows_for(c: Candidate, cache: RowCache | None) -> list[SessionRow]:
    try:
        if c.stat is not None:
            size, mtime_ns = c.stat.st_size, c.stat.st_mtime_ns
        else:
            size, _, mtime_ns = store_stat(c.path)
    except OSError:
        return []
    key = str(c.path)
    if cache is not None:
        hit = cache.get(key, size, mtime_ns)
        if hit is not None:
            return hit
    if c.db:
        rows = db_rows(c.agent, c.path)
    else:
        rows = [header_row(c.agent, c.path, c.stat or c.path.stat(), parent=c.parent)]
    if cache is not None:
        cache.put(key, size, mtime_ns, rows)
    return rows


def sort_newest(rows: Iterable[SessionRow]) -> list[SessionRow]:
    """Newest first; the bundled demo always last (it is not a session of this machine)."""
    return sorted(rows, key=lambda r: (r.agent == "demo", -r.mtime, r.key))


def discover(
    *,
    agents: Sequence[str] | None = None,
    extra: Sequence[tuple[str, Path]] = (),
    cache: RowCache | None = None,
) -> list[SessionRow]:
    """Every session found, newest first, as header rows (cached exact figures kept).

    ``agents`` limits the stores walked; ``extra`` adds ``(agent, path)`` files (the
    bundled demo). With ``cache``, unchanged files are not read at all; the caller
    saves the cache.
    """
    rows: list[SessionRow] = []
    seen: set[str] = set()
    for root in agent_roots():
        if agents is not None and root.agent not in agents:
            continue
        for c in candidates(root):
            seen.add(str(c.path))
            rows.extend(_rows_for(c, cache))
    for agent, path in extra:
        if agents is not None and agent not in agents:
            continue
        seen.add(str(path))
        rows.extend(_rows_for(Candidate(agent, path), cache))
    if cache is not None and agents is None:
        cache.prune(seen)
    return sort_newest(rows)
