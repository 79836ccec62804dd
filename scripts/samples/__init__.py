"""The sample-session generator behind ``scripts/make_sessions.py``.

- ``build``: the list of samples, the manifest and README, ``--check``, the command line.
- ``stories/``: one module per story (or family of small ones), each a ``build_*(out_dir)``;
  ``stories/steps`` is the one replayer (``LogStory``): a story's steps
  (``data/stories/*.jsonl``) become calls of its writer; ``stories/hermes_steps`` holds the
  Hermes stories' tools and world steps.
- ``writers``: the native-shape logs the stories write through (Hermes, OpenAI Chat,
  Anthropic, Claude Code, Codex, ShareGPT).
- ``shapes``: each agent's native message shapes, spelled once; ``benchmarks/gen.py``
  builds its large synthetic transcripts from them too.
- ``tools``: Hermes tool schemas and system prompt, and the tool outputs stories quote.
- ``project``: the made-up project ledgerline (its files and simulated test suite);
  ``bugs``: reads the causes of its red suite and pytest's reports (``data/bugs.txt``).
- ``common``: paths, seeds, ids, clocks, JSON and templates, fake secrets.
- ``data/``: what the stories say: ledgerline's files as real files (``data/ledgerline/``),
  the stories' steps (``data/stories/``), the suite's failure reports (``data/bugs.txt``),
  the manifest's reading rules (``data/rules.json``), record templates the writers fill
  in with ``common.fill`` (``data/*_records.json``), long prompts and text templates
  (``data/text/``), the screenshots users paste (``data/images/``) and tables
  (``data/*.json``).
"""
