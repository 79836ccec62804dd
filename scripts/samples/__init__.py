"""The sample-session generator behind ``scripts/make_sessions.py``.

``build`` holds the stories and the native-shape logs; ``data/`` holds what they quote:
the made-up project ``ledgerline`` as real files (``data/ledgerline/``), long prompts and
summaries (``data/text/``) and tables (``data/*.json``).
"""
