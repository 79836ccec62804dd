"""Reopening a file counted before paints with its exact counts: no estimate, no recount."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_helpers import wait_loaded, write_openai_session

import tjui.screens.main as main_screen
from tinyjuice.tokens import default_counter
from tjui.app import make_app


async def test_reopen_uses_the_cached_exact_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if default_counter().name == "rough":
        pytest.skip("no tokenizer")
    path = write_openai_session(tmp_path / "s.json")
    async with make_app(path).run_test(size=(120, 36)) as pilot:
        first = (await wait_loaded(pilot)).session
    assert first is not None

    def must_not_count(*args: object, **kwargs: object) -> None:
        raise AssertionError("counted again")

    monkeypatch.setattr(main_screen, "exact_tokens", must_not_count)
    monkeypatch.setattr(main_screen, "count_transcript", must_not_count)
    async with make_app(path).run_test(size=(120, 36)) as pilot:
        again = (await wait_loaded(pilot)).session
    assert again is not None
    assert again.tokens == first.tokens
    assert again.tokens.kind.value == "exact"
