"""The sample-session generator behind ``scripts/make_sessions.py``: ``build`` (the samples,
manifest, README and ``--check``), ``stories/`` (one module per family of samples; ``steps``
replays a story's steps), ``writers`` (the native-shape logs, counting what they write),
``shapes`` (records shared with ``benchmarks/gen.py``), ``project`` (the made-up project's
files as the stories edit them), ``common`` (plumbing) and ``data/`` (what the stories say;
README's "Bundled sessions" lists it).
"""
