"""The sample-session generator behind ``scripts/make_sessions.py``.

- ``build``: the list of samples, the manifest and README, ``--check``, the command line.
- ``stories/``: one module per story (or family of small ones), each a ``build_*(out_dir)``;
  ``stories/steps`` replays a story's steps (``data/stories/*.jsonl``) as calls of its
  writer; ``stories/hermes`` holds the Hermes stories (demo, gateway, state.db) and their
  tools.
- ``writers``: the native-shape logs the stories write through (OpenAI Chat and Hermes,
  Anthropic, Claude Code, Codex, ShareGPT), counting what they write; the Hermes tool
  schemas and system prompt, and ShareGPT's.
- ``shapes``: each agent's native records (``data/shapes.json``), shared with
  ``benchmarks/gen.py``.
- ``project``: the made-up project ledgerline: its files and its simulated test suite.
- ``common``: paths, seeds, ids, clocks, JSON and templates, manifest counts, fake secrets.
- ``data/``: what the stories say: ledgerline's files (``ledgerline/``), the stories'
  steps (``stories/``), the suite's failure reports (``bugs.txt``), the manifest's reading
  rules (``rules.json``), record templates (``shapes.json``, ``*_records.json``: ``"$name"``
  a filled-in value), long prompts and text templates (``text/``), the screenshots users
  paste (``images/``) and tables (``*.json``).
"""
