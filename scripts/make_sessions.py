#!/usr/bin/env python3
"""Generate tjui's bundled sample sessions in ``sessions/`` (the code lives in ``samples/``).

python scripts/make_sessions.py            # (re)write sessions/
python scripts/make_sessions.py --check    # regenerate into a temp dir, exit 1 on drift
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from samples.build import check, file_names, generate, main

from tinyjuice.formats._hermes_state import STATE_SCHEMA

__all__ = ["STATE_SCHEMA", "check", "file_names", "generate", "main"]

if __name__ == "__main__":
    sys.exit(main())
