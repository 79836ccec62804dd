"""Loading and compacting pause the cyclic GC and always restore it as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from builders import FakeProvider, coding_session

from tinyjuice._gc import gc_paused
from tinyjuice.formats import dumps, load_bytes
from tinyjuice.options import CompactionOptions
from tinyjuice.pipeline import compress
from tinyjuice.summary import SummaryRequest, SummaryText


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_paused_inside_and_enabled_again_after() -> None:
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_enabled_again_after_an_exception() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_caller_that_disabled_it_keeps_it_disabled() -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_compress_and_load_leave_the_collector_as_they_found_it() -> None:
    transcript = coding_session(6).transcript()
    seen: list[bool] = []

    class Watching(FakeProvider):
        def summarize(self, request: SummaryRequest) -> SummaryText:
            seen.append(gc.isenabled())
            return FakeProvider.summarize(self, request)

    for enabled in (True, False):
        gc.enable() if enabled else gc.disable()
        result = compress(transcript, CompactionOptions(keep_last=1, force=True))
        assert result.report.status.value == "compacted"
        assert gc.isenabled() is enabled
        load_bytes(dumps(transcript, "openai"), "x.json")
        assert gc.isenabled() is enabled
        # With a provider (network time), the collector is not paused at all.
        compress(transcript, CompactionOptions(keep_last=1, force=True), provider=Watching())
        assert seen[-1] is enabled
        assert gc.isenabled() is enabled
