"""Every bundled sample is detected as its own format: the newer agents' sniffers claim
their own files and none of the others'."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinyjuice.formats import FORMAT_NAMES, _parse, _readings, detect
from tinyjuice.formats import _module as format_module
from tinyjuice.formats._base import LoadOptions

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
MANIFEST = json.loads((SESSIONS / "manifest.json").read_text())["files"]
NEW = ("gemini-cli", "cline", "opencode", "aider")


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_sample_is_detected_as_its_format(name: str) -> None:
    assert detect(SESSIONS / name) == MANIFEST[name]["format"]


@pytest.mark.parametrize("name", sorted(n for n, e in MANIFEST.items() if e["format"] not in NEW))
def test_new_sniffers_do_not_claim_older_formats(name: str) -> None:
    path = SESSIONS / name
    source = _parse(path, path.read_bytes(), LoadOptions())
    for reading in _readings(source):
        for fmt in NEW:
            assert format_module(fmt).sniff(reading) == 0, (name, fmt)


def test_every_format_has_a_sample() -> None:
    assert {e["format"] for e in MANIFEST.values()} == set(FORMAT_NAMES)
