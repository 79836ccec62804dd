"""The fallback summary's shortcuts (issue #14) decide exactly as the long way round."""

from __future__ import annotations

import pytest
from builders import o200k_pieces_counter
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyjuice.summary import fallback as fb
from tinyjuice.tokens import RoughCounter, TiktokenCounter, default_counter


def _exact_counter() -> TiktokenCounter:
    counter = default_counter()
    if not isinstance(counter, TiktokenCounter) or not fb._floors(counter):
        pytest.skip("needs a tiktoken encoding with a known pre-tokenizer")
    # A fresh cache: what it holds afterwards is what was counted.
    return TiktokenCounter(counter._enc, counter.name)


#: Whitespace the tokenizer may glue to its neighbours (a tab, a line break followed by a
#: slash, a no-break space, characters Python alone calls blank).
_TRICKY = (
    "",
    " ",
    "a",
    ")\n/",
    "x)\n/y z",
    "\t \t",
    "a \t b",
    "a\x1cb c",
    "a\u00a0b",
    "a \u3000 b",
    "do \n not  ",
    "- - -",
    "  leading and trailing  ",
    "\n\n",
    "emoji 🎉 and 日本語 text",
    "'s 're 'll 't",
    "1234567 89",
    "don't it's we'll '-' ''x''",
    "src/module_0/file_0.py",
    "a1b2c3 x-y_z ABCdef",
)


@pytest.mark.parametrize("item", _TRICKY)
def test_cost_floor_never_exceeds_the_exact_cost_on_tricky_text(item: str) -> None:
    counter = _exact_counter()
    exact = counter.count(fb._bullet(item)) + 1
    assert fb._MIN_COST <= fb._cost_floor(item) <= exact
    assert fb._piece_floor(item) <= exact


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80))
def test_cost_floor_never_exceeds_the_exact_cost(item: str) -> None:
    counter = _exact_counter()
    exact = counter.count(fb._bullet(item)) + 1
    # _allocate stops trying items once the room left is below _MIN_COST.
    assert fb._MIN_COST <= fb._cost_floor(item) <= exact
    assert fb._piece_floor(item) <= exact


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80) | st.sampled_from(_TRICKY))
def test_cost_floor_counts_the_bullet_s_runs(item: str) -> None:
    """Its definition: the runs of the bullet split at spaces neither empty nor blank,
    and the line break."""
    runs = fb._bullet(item).split(" ")
    assert fb._cost_floor(item) == sum(1 for r in runs if r and not r.isspace()) + 1


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_piece_floor_never_exceeds_the_exact_cost_on_ascii(item: str) -> None:
    counter = _exact_counter()
    assert fb._piece_floor(item) <= counter.count(fb._bullet(item)) + 1


_WORDS = st.sampled_from(
    ["src/app.py", "make", "test", "FAILED", "exit", "1", "x", "--flag", "\n", "  ", "é", "a/b/c"]
)
_ITEMS = st.lists(st.lists(_WORDS, min_size=1, max_size=12).map(" ".join), max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    st.fixed_dictionaries({key: _ITEMS for key, _ in fb._CATEGORIES}),
    st.integers(min_value=0, max_value=600),
)
def test_allocate_with_floors_decides_as_with_exact_costs(
    items: dict[str, list[str]], room: int
) -> None:
    counter = _exact_counter()
    items = {key: list(dict.fromkeys(v)) for key, v in items.items()}
    fb_floors, over = fb._floors, fb._FLOORS_OVER
    try:
        fb._FLOORS_OVER = 0  # floors whatever the room
        floored = fb._allocate(items, room, counter)
        memo: dict[str, int] = {}
        remembered = fb._allocate(items, room, counter, memo)
        again = fb._allocate(items, room, counter, memo)  # from the memo's exact costs
        fb._floors = lambda counter: False  # type: ignore[assignment]
        exact = fb._allocate(items, room, counter)
    finally:
        fb._floors, fb._FLOORS_OVER = fb_floors, over
    assert floored == remembered == again == exact


def test_allocate_counts_only_the_items_that_decide() -> None:
    counter = _exact_counter()
    items: dict[str, list[str]] = {key: [] for key, _ in fb._CATEGORIES}
    items["paths"] = [f"src/module_{i}/file_{i}.py" for i in range(2000)]
    items["digests"] = [f"[bash] ran job {i} with exit code {i % 3}" for i in range(2000)]
    chosen, left_out = fb._allocate(items, 500, counter)
    assert chosen["paths"] and left_out["paths"] and left_out["digests"]
    counted = [k for k in counter._cache if isinstance(k, str) and k.startswith("- ")]
    # Once the room is spent, an item's floor rules it out without encoding it.
    assert len(counted) < 400


# ------------------------------------------------------------------------- rules


def _strict_user_rules(text: str) -> tuple[tuple[str, str, str], ...]:
    from tinyjuice.facts import _CONSTRAINT_RE, norm_text, split_sentences

    return tuple(
        (norm_text(s), s, "user")
        for s in split_sentences(text)
        if _CONSTRAINT_RE.search(s) and 8 <= len(s) <= 300
    )


def test_constraint_hint_is_the_strict_pattern_loosened() -> None:
    from tinyjuice.facts import _CONSTRAINT_RE
    from tinyjuice.survival import _CONSTRAINT_HINT_RE

    # Matched against lowered text: the strict pattern must hold no upper case.
    assert _CONSTRAINT_RE.pattern == _CONSTRAINT_RE.pattern.lower()
    assert "\\b" not in _CONSTRAINT_HINT_RE.pattern


_RULE_BITS = st.sampled_from(
    [
        "Always",
        "NEVER",
        "do",
        "not",
        "don't",
        "must",
        "make",
        "sure",
        "keep",
        "the",
        "under",
        "no",
        "circumstances",
        "preFER",
        "alwayſ",
        "İ",
        "ı",
        "use",
        "only",
        " ",
        "\t",
        "\n",
        "\u00a0",
        ". ",
        "! ",
        "-",
        "•",
        "*",
        "x",
        "long sentence filler words",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_RULE_BITS, max_size=30).map("".join))
def test_constraint_hint_never_hides_a_rule(text: str) -> None:
    from tinyjuice.survival import _may_constrain

    if _strict_user_rules(text):
        assert _may_constrain(text)


def test_user_text_without_a_constraint_word_is_not_split(monkeypatch: pytest.MonkeyPatch) -> None:
    from tinyjuice import survival
    from tinyjuice.model import Message, Role, TextPart

    def boom(text: str) -> object:
        raise AssertionError("split_sentences called")

    asks = [Message(Role.USER, (TextPart(f"Fix bug {i}. Then run the tests."),)) for i in range(3)]
    monkeypatch.setattr(survival, "split_sentences", boom)
    assert survival.find_rules(asks) == ()
    assert survival.find_rules(asks, memo={}) == ()


# --------------------------------------------------------------------------- fit


def _many_items_middle() -> list[object]:
    from tinyjuice.model import Message, MessageMeta, Role, TextPart, ToolCall

    middle: list[object] = []
    for i in range(400):
        middle.append(Message(Role.USER, (TextPart(f"ask {i}: look at src/area_{i}/mod_{i}.py"),)))
        middle.append(
            Message(
                Role.ASSISTANT,
                (),
                tool_calls=(ToolCall(f"c{i}", "bash", f'{{"command": "make t{i} v={i * 7}"}}'),),
            )
        )
        middle.append(
            Message(
                Role.TOOL,
                (TextPart(f"FAILED case {i}: out/data_{i}.csv missing"),),
                tool_call_id=f"c{i}",
                tool_name="bash",
                meta=MessageMeta(is_error=i % 2 == 0),
            )
        )
    return middle


def test_appendix_id_moves_a_note_count_within_its_bounds() -> None:
    import random

    rng = random.Random(14)
    ids = ["f" * 16, "a1" * 8, "0123456789abcdef", "9" * 16, "abcdef" + "0" * 10]
    ids += ["".join(rng.choice("0123456789abcdef") for _ in range(16)) for _ in range(300)]
    for counter in (_exact_counter(), _o200k_pieces_counter()):
        note = fb._note(12_345, {"paths": 3, "digests": 40}, None, fb._PLACEHOLDER_ID)
        base = counter.count(note)
        down, up = fb._id_moves(counter)
        assert down + up == 2 * fb._APPENDIX_ID_CHARS  # (the old, symmetric spread: 32)
        for appendix_id in ids:
            moved = counter.count(note.replace(fb._PLACEHOLDER_ID, appendix_id))
            assert -down <= moved - base <= up


def test_fill_hashes_the_appendix_only_when_the_bound_cannot_decide(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = _exact_counter()
    middle = _many_items_middle()
    hashed = []
    real_id = fb._Draft.appendix_id

    def spy(self: fb._Draft) -> str | None:
        hashed.append(1)
        return real_id(self)

    monkeypatch.setattr(fb._Draft, "appendix_id", spy)
    shortcut = fb.fallback_summary(middle, budget_tokens=6000, counter=counter)  # type: ignore[arg-type]
    with_bound = len(hashed)
    hashed.clear()
    monkeypatch.setattr(fb, "_floors", lambda counter: False)
    exact = fb.fallback_summary(middle, budget_tokens=6000, counter=counter)  # type: ignore[arg-type]
    assert shortcut.omitted and shortcut.included == exact.included
    assert (shortcut.text, shortcut.appendix, shortcut.tokens) == (
        exact.text,
        exact.appendix,
        exact.tokens,
    )
    assert with_bound < len(hashed)


# ----------------------------------------------------------------------- collect


def _sessions() -> list[object]:
    from pathlib import Path

    from tinyjuice.formats import load

    root = Path(__file__).resolve().parents[2] / "sessions"
    found = sorted(p for p in root.glob("*.json*") if p.is_file() and p.name != "manifest.json")
    found += [root / "swe-agent.traj"]
    return [load(p).messages for p in found] + [_many_items_middle()]


def test_flat_facts_chain_what_the_per_message_facts_hold() -> None:
    import itertools

    for messages in _sessions():
        segment = fb._extract(messages)  # type: ignore[arg-type]
        flat = fb._flat_facts(messages)  # type: ignore[arg-type]
        per_message = [segment.items(j) for j in range(len(messages))]  # type: ignore[arg-type]
        for c, key in enumerate(fb._FIELDS):
            chained = list(itertools.chain.from_iterable(f[key] for f in per_message))
            assert chained == segment.columns[c], key
            if key in ("asks", "calls"):
                assert list(flat[key]) == chained, key
            else:
                # A repeated call's items are left out: first occurrences are the same.
                assert dict.fromkeys(flat[key]) == dict.fromkeys(chained), key


def test_a_segment_holds_each_message_s_own_items() -> None:
    """Message j's slice of a segment is what extracting j alone gives (its tool calls
    as first seen: a repeat is worked out once, its items the same)."""
    for messages in _sessions()[:4]:
        segment = fb._extract(messages)  # type: ignore[arg-type]
        for j in range(0, len(messages), max(1, len(messages) // 40)):  # type: ignore[arg-type]
            alone = fb._extract([messages[j]])  # type: ignore[index]
            assert segment.items(j) == alone.items(0), j


def test_collect_without_a_memo_equals_collect_with_one() -> None:
    from tinyjuice.model import Message, Role, ToolCall

    repeated = [
        Message(Role.ASSISTANT, (), tool_calls=(ToolCall(f"r{i}", "bash", args),))
        for i, args in enumerate(
            ['{"command": "cat a/x.py"}', '{"command": "ls b/"}'] * 3
            + ['{"command": "cat b/x.py"}', '{"path": "a/x.py"}', '{"command": "ls b/"}']
        )
    ]
    for messages in [*_sessions(), repeated]:
        plain = fb._collect(messages, 3)  # type: ignore[arg-type]
        remembered = fb._collect(messages, 3, fb.FactsMemo())  # type: ignore[arg-type]
        assert plain.items == remembered.items
        assert plain.call_counts == remembered.call_counts


def _rules_pool() -> list[object]:
    from tinyjuice.model import Message, MessageMeta, Role, TextPart

    def msg(role: Role, text: str, **kw: object) -> Message:
        return Message(role, (TextPart(text),), **kw)  # type: ignore[arg-type]

    ask = "Always run the tests before you commit. Never push to main."
    rules = "- Always run the tests before you commit.\n- Prefer small commits over big ones."
    return [
        msg(Role.USER, ask),
        msg(Role.USER, "Please look at the failing build."),
        msg(Role.ASSISTANT, "Never mind: I will always check first."),
        msg(Role.USER, "Contents of CLAUDE.md:\n" + rules, meta=MessageMeta(is_injected=True)),
        msg(Role.SYSTEM, "# Rules\n" + rules),
        msg(Role.TOOL, "<skill>\n" + rules, tool_name="Skill", tool_call_id="s1"),
        msg(Role.TOOL, "- Always keep going.", tool_name="bash", tool_call_id="b1"),
        msg(Role.ASSISTANT, "- Always use tabs.", tool_name="skill"),
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(range(8)), max_size=12))
def test_add_rules_skips_spans_without_a_rules_source(picks: list[int]) -> None:
    """The shortcut (no injected context, skill or system message: no rule but the
    user's, which the summary leaves to the asks) lists what find_rules does."""
    from tinyjuice.survival import find_rules, may_hold_source_rules

    pool = _rules_pool()
    middle = [pool[i] for i in picks]
    items: dict[str, list[str]] = {}
    fb._add_rules(middle, items)  # type: ignore[arg-type]
    want = [f"[{r.source}] {r.text}" for r in find_rules(middle) if r.source != "user"]  # type: ignore[arg-type]
    assert items["rules"] == want
    if want:
        assert may_hold_source_rules(middle)  # type: ignore[arg-type]
    if not {3, 4, 5, 7} & set(picks):
        assert not may_hold_source_rules(middle)  # type: ignore[arg-type]


#: Texts around the cuts of the line count: line breaks after letters, digits and
#: punctuation, before blanks, slashes and headings.
_LINE_TEXTS = st.lists(
    st.one_of(
        st.sampled_from(
            (*_TRICKY, "\n", "\n- ", "\n/", "\n ", ".\n", "x.\n/y", "\r\n#", "a\n", "7\n\n")
        ),
        st.sampled_from(("z\n", "é\n", "…\n", "'s\n", "\n\n## ", "\n    ", "Q")),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    ),
    max_size=12,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE_TEXTS, min_size=1, max_size=4))
def test_line_count_sums_to_the_whole_count(texts: list[str]) -> None:
    """A text counted stretch by stretch (cut after a line break that a character
    neither blank nor "/" follows, and before one that follows an ASCII letter or
    digit) counts as much as in one piece; so do texts sharing sections, counted by one
    LineCounter (which remembers each section's count)."""
    counter = _exact_counter()
    lines = fb.line_counter(counter)
    for text in (*texts, "\n\n## ".join(texts), "\n\n## ".join(reversed(texts)), *texts):
        assert lines.count(text) == counter.count(text)


def _o200k_pieces_counter() -> TiktokenCounter:
    return o200k_pieces_counter(_exact_counter())


@settings(max_examples=300, deadline=None)
@given(_LINE_TEXTS)
def test_line_count_sums_to_the_whole_count_under_o200k_pieces(text: str) -> None:
    counter = _o200k_pieces_counter()
    assert fb._floors(counter)
    assert fb.line_counter(counter).count(text) == counter.count(text)


@settings(max_examples=500, deadline=None)
@given(_LINE_TEXTS)
def test_stretches_are_the_line_cuts(text: str) -> None:
    """The fast split equals the pattern that defines the cuts."""
    assert fb._stretches(text) == fb._LINE_CUT_RE.split(text)


def test_line_counter_counts_a_summary_message_as_the_counter() -> None:
    """The batch counts the summary turn it inserts with a line counter: the same."""
    from tinyjuice.budget import SummaryKind
    from tinyjuice.summary import render_summary_message
    from tinyjuice.tokens import message_tokens

    counter = _exact_counter()
    body = "## Pending Asks\n- fix src/app.py\n- run make test…\n\n## Blockers\n- FAILED 3"
    msg = render_summary_message(body, kind=SummaryKind.FALLBACK)
    lines = fb.line_counter(counter)
    assert isinstance(lines, fb.LineCounter)
    assert message_tokens(msg, lines) == message_tokens(msg, counter)
    rough = RoughCounter()
    assert fb.line_counter(rough) is rough


def test_one_line_reads_a_long_text_s_head_as_its_whole() -> None:
    """_one_line flattens only a head when that already runs over the limit: the same
    result as flattening the whole text, whatever the whitespace."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from tinyjuice.redact import redact_clip
    from tinyjuice.text import flatten, one_line

    def reference(text: str, limit: int) -> str:
        flat = flatten(text)
        if len(flat) <= limit:
            return flat
        return redact_clip(text[: max(fb._CLIP_READ, 4 * limit)], lambda r: one_line(r, limit))

    # The long ones run past the read: its head, or its whole, is flattened.
    words = st.sampled_from(
        [
            *("a", "word", " ", "  \n\t ", "\n", " " * 300, "\n" * 150, "x" * 70),
            *("api_key=sk-abc123", "y" * 9000, " " * 9000),
        ]
    )

    @settings(max_examples=300, deadline=None)
    @given(st.lists(words, max_size=80), st.integers(1, 120))
    def check(parts: list[str], limit: int) -> None:
        text = "".join(parts)
        expected = reference(text, limit)
        assert fb._one_line(text, limit) == expected
        # A read known to hold nothing to redact is clipped without redacting it first.
        clean = fb._clean_reads([text], limit)
        assert fb._one_line(text, limit, clean) == expected

    check()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["tools", "paths"]), st.lists(_WORDS, max_size=5))))
def test_remembered_blocks_equal_the_plain_ones(renders: list[tuple[str, list[str]]]) -> None:
    """A draft's blocks, rendered again and again as its items change, are the plain
    blocks of the items as they are (a list changed in place included)."""
    blocks = fb._Blocks()
    kept: dict[str, list[str]] = {}
    for key, items in renders:
        mine = kept.setdefault(key, [])
        mine[:] = items  # the same list, changed in place
        assert blocks(key, mine) == fb._block(key, items)


#: Lines around the pieces a line count reads from other counts: punctuation runs at the
#: end (after letters, digits, spaces, blanks the tokenizer does or does not call so) and
#: numbers after a space.
_END_TEXTS = st.lists(
    st.one_of(
        st.sampled_from(
            ("a", "7", " ", "  ", "\t", "\n", "\n ", "…", ".", ")", "'", "'s", "é", "\x1c")
        ),
        st.sampled_from(("\u00a0", "-", "`", ":", " 12", "x 3", "\t5", "1,234", "/", "\r", "\n/")),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=6),
    ),
    min_size=1,
    max_size=8,
).map("".join)


def _counts_kept_as_when_fitting(counter: TiktokenCounter, text: str) -> None:
    """Count what _allocate counts before a summary is: each line alone (the bullets)."""
    for stretch in fb._stretches(text):
        counter.count(stretch.rstrip("\n"))


@settings(max_examples=500, deadline=None)
@given(_END_TEXTS, st.integers(0, 3), st.booleans())
def test_a_stretch_counted_from_kept_counts_is_the_whole_count(
    line: str, breaks: int, kept: bool
) -> None:
    """A stretch's count read from its line's count (a line break joins the line's end
    piece: :func:`fb._end_piece`) or cut before a number is its count in one piece."""
    text = line + "\n" * breaks
    for counter in (_exact_counter(), _o200k_pieces_counter()):
        whole = TiktokenCounter(counter._enc, counter.name).count(text)
        if kept:
            _counts_kept_as_when_fitting(counter, text)
        assert fb.line_counter(counter).count(text) == whole
        # Read again from what the first count kept (a derived stretch's count).
        assert fb.line_counter(counter).count(text) == whole


@pytest.mark.parametrize("line", ["x.\n/-", "x.\n/;", "…\n/-", "a;\n//.", "b.\n-", "\n/-"])
def test_a_line_break_before_the_end_run_is_not_a_piece_boundary(line: str) -> None:
    """Under o200k a punctuation piece takes the line breaks and slashes after it
    (``x.\\n/-`` splits ``x | .\\n/ | -``): a line whose end run follows a line break is
    counted whole, and no wrong count is kept (found by review: 5 counted for 4)."""
    text = line + "\n"
    for counter in (_exact_counter(), _o200k_pieces_counter()):
        whole = TiktokenCounter(counter._enc, counter.name).count(text)
        counter.count(line)  # the line counted alone, as when the budget was allocated
        assert fb.line_counter(counter).count(text) == whole
        assert counter.count(text) == whole


_LINES = st.lists(st.sampled_from(("a b", "x\ny", "", "\n", " - ", "é…")) | _WORDS, max_size=8)


@settings(max_examples=200, deadline=None)
@given(_LINES)
def test_block_is_the_items_bullets_one_a_line(items: list[str]) -> None:
    assert fb._block("tools", items) == "\n".join(fb._bullet(i) for i in items)


@settings(max_examples=100, deadline=None)
@given(_LINES)
def test_remembered_costs_are_the_bullets_counts(items: list[str]) -> None:
    counter = _exact_counter()
    memo: dict[str, int] = {}
    fb._remember_costs(items, counter, memo)
    assert memo == {i: counter.count(fb._bullet(i)) + 1 for i in items}
