"""tinyjuice must never import textual or rich (it is a library agent hosts embed)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import tinyjuice

#: Modules that import a host agent's package (checked in that agent's own environment:
#: tests/hermes/test_hermes_agent.py). Everything else must import here.
NEEDS_HOST = frozenset({"tinyjuice.hermes.engine"})


def _all_modules() -> list[str]:
    names = ["tinyjuice"]
    for info in pkgutil.walk_packages(tinyjuice.__path__, prefix="tinyjuice."):
        if info.name not in NEEDS_HOST:
            names.append(info.name)
    return names


def test_every_tinyjuice_module_is_found() -> None:
    names = _all_modules()
    assert "tinyjuice.model" in names
    assert "tinyjuice.formats.openai" in names
    assert len(names) >= 10


def test_core_imports_no_ui_libraries() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {_all_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
        "sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"UI modules imported by tinyjuice: {proc.stdout} {proc.stderr}"
