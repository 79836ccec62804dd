"""Commands' access to tinyjuice's analysis cache: a file read once, counted once.

A :class:`CachedSource` reads the file's bytes (and their sha256) once; a command asks
it for a stored result first (``inspect`` and ``compress --dry-run`` need not even parse
a file they saw before), then for the transcript and its token counts, which come from
the cache when the same bytes (or texts) were counted before. ``TJUI_NO_CACHE=1`` turns
it all off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tinyjuice.cache import AnalysisCache, Source, SourceIdentity, default_cache, read_source
from tinyjuice.formats import LoadError
from tinyjuice.model import Transcript
from tinyjuice.tokens import TokenCounter, TranscriptTokens, count_transcript
from tjui.clikit import fail

__all__ = ["CachedSource"]


class CachedSource:
    """One transcript file as a command reads it, with the cache beside it."""

    def __init__(
        self,
        path: Path,
        fmt: str | None = None,
        *,
        session: str | None = None,
        lenient: bool = False,
    ) -> None:
        self.fmt = fmt
        self.session = session
        self.lenient = lenient
        self.cache: AnalysisCache | None = default_cache()
        try:
            self.source: Source = read_source(path)
        except LoadError as exc:
            fail(str(exc))
        self._transcript: Transcript | None = None
        self._identity: SourceIdentity | None = None

    @property
    def variant(self) -> str:
        return f"{self.fmt}|{self.session}|{int(self.lenient)}"

    def result(self, kind: str, params: dict[str, Any]) -> Any | None:
        """A result stored for these exact bytes (None: compute it)."""
        if self.cache is None:
            return None
        return self.cache.get_result(self.source.identity, kind, self._params(params))

    def remember(self, kind: str, params: dict[str, Any], value: Any) -> None:
        if self.cache is not None:
            self.transcript  # noqa: B018 - parsing decides whether the file may be cached
            self.cache.put_result(self._identity, kind, self._params(params), value)

    def _params(self, params: dict[str, Any]) -> dict[str, Any]:
        from tinyjuice.cache import counter_spec

        return {**params, "variant": self.variant, "counter": counter_spec()}

    @property
    def transcript(self) -> Transcript:
        if self._transcript is None:
            try:
                self._transcript, self._identity = self.source.parse(
                    self.fmt, session=self.session, lenient=self.lenient
                )
            except LoadError as exc:
                fail(str(exc))
        return self._transcript

    def tokens(self, counter: TokenCounter) -> TranscriptTokens:
        """Counts for the transcript, from the cache where the same texts were counted."""
        transcript = self.transcript
        if self.cache is None:
            return count_transcript(transcript, counter)
        return self.cache.tokens(transcript, self._identity, counter, variant=self.variant).tokens

    def stored_tokens(self, counter: TokenCounter) -> TranscriptTokens | None:
        """Counts the cache holds for exactly these bytes (None: nothing is counted)."""
        if self.cache is None:
            return None
        transcript = self.transcript
        return self.cache.stored_tokens(transcript, self._identity, counter, variant=self.variant)
