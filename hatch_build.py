"""Build hook: tjui's wheel depends on the tinyjuice distribution (core/).

An editable (development) install instead puts ``core/`` on the path next to the
repository (``dev-mode-dirs``), so ``pip install -e ".[dev]"`` sets up tjui and
tinyjuice, both editable, in one command without the tinyjuice copy a regular install
of ``core/`` would put in site-packages ahead of the working tree.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _core_version(root: str) -> str:
    text = (Path(root) / "core" / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'^version = "([^"]+)"', text, re.M)
    if match is None:
        raise RuntimeError("core/pyproject.toml names no version")
    return match.group(1)


class CoreDependencyHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version != "editable":
            build_data["dependencies"].append(f"tinyjuice=={_core_version(self.root)}")
