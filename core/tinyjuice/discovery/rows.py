"""One row of the session list: what a cheap header read knows, and the exact figures."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

__all__ = ["ExactFigures", "SessionRow"]


@dataclass(frozen=True, slots=True)
class ExactFigures:
    """What loading the whole session through ``tinyjuice.formats.load`` gives."""

    messages: int
    #: The prompt the next model call would send (the live context, after compactions).
    live_tokens: int
    context_window: int
    compactions: int
    format: str
    model: str | None = None

    @property
    def live_percent(self) -> float:
        return 100.0 * self.live_tokens / self.context_window if self.context_window else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExactFigures:
        return cls(**data)


@dataclass(frozen=True, slots=True)
class SessionRow:
    """A session found on this machine.

    ``messages`` is an estimate from the header read until ``exact`` is filled in;
    ``error`` says why the session could not be loaded (e.g. no reader for its format
    yet) — the row stays listed.
    """

    agent: str
    path: str
    size: int
    #: Last activity: the file's (or database's) modification time, epoch seconds.
    mtime: float
    #: The session inside a multi-session store (a Hermes state.db id).
    session: str | None = None
    project: str | None = None
    title: str | None = None
    messages_estimate: int | None = None
    #: The parent session file when this is a subagent's transcript.
    parent: str | None = None
    exact: ExactFigures | None = None
    error: str | None = None

    @property
    def key(self) -> str:
        return self.path if self.session is None else f"{self.path}#{self.session}"

    @property
    def messages(self) -> int | None:
        return self.exact.messages if self.exact else self.messages_estimate

    @property
    def status(self) -> str:
        if self.exact is not None:
            return "exact"
        return "unreadable" if self.error else "estimated"

    def with_exact(self, exact: ExactFigures | None, error: str | None) -> SessionRow:
        return replace(self, exact=exact, error=error)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``tjui ls --json`` (and of the cache)."""
        ex = self.exact
        return {
            "agent": self.agent,
            "path": self.path,
            "session": self.session,
            "project": self.project,
            "title": self.title,
            "last_activity": self.mtime,
            "size": self.size,
            "messages": self.messages,
            "messages_exact": ex is not None,
            "live_tokens": ex.live_tokens if ex else None,
            "context_window": ex.context_window if ex else None,
            "live_percent": round(ex.live_percent, 1) if ex else None,
            "compactions": ex.compactions if ex else None,
            "format": ex.format if ex else None,
            "model": ex.model if ex else None,
            "parent": self.parent,
            "status": self.status,
            "error": self.error,
            "messages_estimate": self.messages_estimate,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SessionRow:
        exact = None
        if d.get("messages_exact"):
            exact = ExactFigures(
                messages=int(d["messages"]),
                live_tokens=int(d["live_tokens"]),
                context_window=int(d["context_window"]),
                compactions=int(d["compactions"]),
                format=str(d["format"]),
                model=d.get("model"),
            )
        return cls(
            agent=str(d["agent"]),
            path=str(d["path"]),
            size=int(d["size"]),
            mtime=float(d["last_activity"]),
            session=d.get("session"),
            project=d.get("project"),
            title=d.get("title"),
            messages_estimate=d.get("messages_estimate"),
            parent=d.get("parent"),
            exact=exact,
            error=d.get("error"),
        )
