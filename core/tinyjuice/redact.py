"""Secret redaction for text, JSON values and messages.

Details: docs/compaction.md (`tinyjuice.redact`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from itertools import compress
from typing import Any

import orjson

from tinyjuice._escapes import Unescaped, decoded_views, unescape
from tinyjuice.model import EMPTY, MediaPart, Message, Part, TextPart, ToolCall
from tinyjuice.text import join_pieces, pieces_matching

__all__ = [
    "SecretHit",
    "SecretKind",
    "find_secrets",
    "is_sensitive_key",
    "marker",
    "redact_clip",
    "redact_json",
    "redact_message",
    "redact_messages",
    "redact_text",
    "texts_without_secrets",
    "without_source_fields",
]


class SecretKind(StrEnum):
    OPENAI_KEY = "openai_key"
    ANTHROPIC_KEY = "anthropic_key"
    OPENROUTER_KEY = "openrouter_key"
    GOOGLE_API_KEY = "google_api_key"
    AWS_ACCESS_KEY = "aws_access_key"
    GITHUB_TOKEN = "github_token"
    GITLAB_TOKEN = "gitlab_token"
    SLACK_TOKEN = "slack_token"
    SLACK_WEBHOOK = "slack_webhook"
    STRIPE_KEY = "stripe_key"
    HUGGINGFACE_TOKEN = "huggingface_token"
    JWT = "jwt"
    PRIVATE_KEY = "private_key"
    BEARER_TOKEN = "bearer_token"
    AUTHORIZATION = "authorization"
    URL_PASSWORD = "url_password"
    ENV_SECRET = "env_secret"
    SENSITIVE_KEY = "sensitive_key"
    AWS_SECRET_KEY = "aws_secret_key"
    AZURE_STORAGE_KEY = "azure_storage_key"
    STRIPE_WEBHOOK_SECRET = "stripe_webhook_secret"
    SLACK_APP_TOKEN = "slack_app_token"
    NPM_TOKEN = "npm_token"
    PYPI_TOKEN = "pypi_token"
    SENDGRID_KEY = "sendgrid_key"
    DIGITALOCEAN_TOKEN = "digitalocean_token"
    SHOPIFY_TOKEN = "shopify_token"
    DISCORD_WEBHOOK = "discord_webhook"
    TELEGRAM_BOT_TOKEN = "telegram_bot_token"
    GOOGLE_OAUTH_SECRET = "google_oauth_secret"
    GOOGLE_OAUTH_TOKEN = "google_oauth_token"
    VAULT_TOKEN = "vault_token"
    AGE_SECRET_KEY = "age_secret_key"
    GROQ_KEY = "groq_key"
    LIBPQ_PASSWORD = "libpq_password"
    PASSWORD_FIELD = "password_field"
    NETRC_PASSWORD = "netrc_password"


@dataclass(frozen=True, slots=True)
class SecretHit:
    """A secret found in a text: ``text[start:end]`` is what gets replaced."""

    kind: SecretKind
    start: int
    end: int


def marker(kind: SecretKind | str) -> str:
    return f"[REDACTED:{kind}]"


_MARKER_PREFIX = "[REDACTED:"
_NOT_MARKER = r"(?!\[REDACTED:)"
#: Characters that may not touch a key on its left (they would make it part of a word).
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_R = r"(?![A-Za-z0-9_\-])"


@dataclass(frozen=True, slots=True)
class _Rule:
    """A secret with a recognisable shape. Every pattern starts with a literal so the
    regex engine can jump between candidates instead of trying every position."""

    kind: SecretKind
    pattern: re.Pattern[str]
    #: Prefilter for patterns that do not start with a literal: the rule runs only when
    #: one of these occurs in the lower-cased text. Empty: always run (a literal-prefix
    #: search costs the same as the prefilter would).
    needles: tuple[str, ...]
    #: Regex group holding the secret (0 = the whole match).
    group: int = 0
    #: The match may not follow a word character.
    word_start: bool = True
    #: Runs only when :data:`_SHAPES` finds one of the newer provider shapes.
    shape: bool = False


def _rule(
    kind: SecretKind,
    pattern: str,
    needles: tuple[str, ...],
    *,
    group: int = 0,
    word_start: bool = True,
    flags: int = 0,
    shape: bool = False,
) -> _Rule:
    return _Rule(kind, re.compile(pattern, flags), needles, group, word_start, shape)


_RULES: tuple[_Rule, ...] = (
    _rule(
        SecretKind.PRIVATE_KEY,
        # A whole PEM block; an unterminated one (truncated output) up to its last base64 line.
        # "( BLOCK|)" rather than "( BLOCK)?": a back-reference to a group that did not
        # take part never matches, and the END line would never be found.
        r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY( BLOCK|)-----"
        r"(?:[\s\S]*?-----END \1PRIVATE KEY\2-----"
        # The last line of a cut block may be short: a padded one, or any base64 run the
        # cut ended (the end of the text, a quote, an escape, an ellipsis or a marker).
        r"|(?:\r?\n[A-Za-z0-9+/=]{16,})*(?:\r?\n[A-Za-z0-9+/]*={1,2}(?![A-Za-z0-9+/=])"
        r"|\r?\n[A-Za-z0-9+/]+(?=\Z|[\"'\\…\[]))?)",
        (),
        word_start=False,
    ),
    _rule(SecretKind.ANTHROPIC_KEY, r"sk-ant-[A-Za-z0-9_\-]{20,}", ()),
    _rule(SecretKind.OPENROUTER_KEY, r"sk-or-(?:v1-)?[A-Za-z0-9]{20,}" + _R, ()),
    _rule(
        SecretKind.OPENAI_KEY,
        # The body must hold a digit or a capital: "sk-learn-is-a-great-library" is prose.
        r"sk-(?!ant-|or-)(?:[A-Za-z0-9]+-)?(?=[A-Za-z0-9_\-]*[A-Z0-9])[A-Za-z0-9_\-]{20,}" + _R,
        (),
    ),
    _rule(SecretKind.GOOGLE_API_KEY, r"AIza[0-9A-Za-z_\-]{35}" + _R, ()),
    _rule(
        SecretKind.AWS_ACCESS_KEY,
        r"A(?:KIA|SIA|BIA|CCA)[0-9A-Z]{16}(?![A-Za-z0-9])",
        (),
    ),
    _rule(
        SecretKind.GITHUB_TOKEN,
        r"g(?:h[pousr]_[A-Za-z0-9]{30,}|ithub_pat_[A-Za-z0-9_]{22,})" + _R,
        (),
    ),
    _rule(
        SecretKind.GITLAB_TOKEN,
        r"gl(?:pat|dt|rt|cbt)-[A-Za-z0-9_\-]{20,}",
        (),
    ),
    _rule(
        SecretKind.SLACK_WEBHOOK,
        r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]{20,}",
        (),
        word_start=False,
    ),
    _rule(SecretKind.SLACK_TOKEN, r"xox[abposre]-[A-Za-z0-9\-]{10,}", ()),
    _rule(
        SecretKind.STRIPE_KEY, r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}" + _R, ("_live_", "_test_")
    ),
    _rule(SecretKind.HUGGINGFACE_TOKEN, r"hf_[A-Za-z0-9]{30,}" + _R, ()),
    _rule(
        SecretKind.JWT,
        r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}" + _R,
        (),
    ),
    _rule(
        SecretKind.URL_PASSWORD,
        # scheme://user:password@host — only the password goes. The password may hold
        # "@" itself: it runs to the last "@" before the host.
        r"://[^\s:/@\[\]\"'<>]+:" + _NOT_MARKER + r"([^\s/\[\]\"'<>]+)@(?![^\s@/\"'<>]*@)",
        (),
        group=1,
        word_start=False,
    ),
    _rule(
        SecretKind.AWS_SECRET_KEY,
        # ~/.aws/credentials, env files, "SecretAccessKey" in JSON: 40 base64 characters.
        r"(?i:aws_?secret_?access_?key|secret_?access_?key)[\"']?\s*[:=]\s*[\"']?"
        r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        ("secret_access_key", "secretaccesskey"),
        group=1,
    ),
    _rule(
        SecretKind.AZURE_STORAGE_KEY,
        # Connection strings: AccountKey=…; SharedAccessKey=… (base64).
        r"(?:AccountKey|SharedAccessKey)=" + _NOT_MARKER + r"([A-Za-z0-9+/]{20,}={0,2})",
        ("accountkey=", "sharedaccesskey="),
        group=1,
    ),
    _rule(SecretKind.STRIPE_WEBHOOK_SECRET, r"whsec_[A-Za-z0-9+/]{24,}=*" + _R, (), shape=True),
    _rule(
        SecretKind.SLACK_APP_TOKEN,
        r"xapp-\d-[A-Z0-9]{6,}-\d{6,}-[A-Za-z0-9]{20,}" + _R,
        (),
        shape=True,
    ),
    _rule(SecretKind.NPM_TOKEN, r"npm_[A-Za-z0-9]{36}" + _R, (), shape=True),
    _rule(SecretKind.PYPI_TOKEN, r"pypi-AgE[A-Za-z0-9_\-]{50,}", (), shape=True),
    _rule(
        SecretKind.SENDGRID_KEY, r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _R, (), shape=True
    ),
    _rule(SecretKind.DIGITALOCEAN_TOKEN, r"do[por]_v1_[a-f0-9]{64}" + _R, (), shape=True),
    _rule(SecretKind.SHOPIFY_TOKEN, r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _R, (), shape=True),
    _rule(
        SecretKind.DISCORD_WEBHOOK,
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{20,}",
        (),
        word_start=False,
    ),
    _rule(
        SecretKind.TELEGRAM_BOT_TOKEN,
        # "<bot id>:<secret>": the secret goes, the numeric id stays.
        r":(?<=[0-9]{8}:)(AA[A-Za-z0-9_\-]{33})" + _R,
        (),
        group=1,
        word_start=False,
        shape=True,
    ),
    _rule(SecretKind.GOOGLE_OAUTH_SECRET, r"GOCSPX-[A-Za-z0-9_\-]{28}" + _R, (), shape=True),
    _rule(SecretKind.GOOGLE_OAUTH_TOKEN, r"ya29\.[A-Za-z0-9_\-]{20,}", (), shape=True),
    _rule(SecretKind.VAULT_TOKEN, r"hv[sbr]\.[A-Za-z0-9_\-]{24,}" + _R, (), shape=True),
    _rule(SecretKind.AGE_SECRET_KEY, r"AGE-SECRET-KEY-1[0-9A-Z]{58}" + _R, (), shape=True),
    _rule(SecretKind.GROQ_KEY, r"gsk_[A-Za-z0-9]{48,}" + _R, (), shape=True),
    _rule(
        SecretKind.PASSWORD_FIELD,
        # A YAML/INI-style "password: value" line: the value is the only thing after the
        # colon (prose goes on with more words), and not a placeholder or a type name.
        r"^[ \t]*(?:- )?[\"']?(?:[A-Za-z0-9_\-]*[_\-])?(?i:password|passwd|passphrase|secret)"
        r"[\"']?[ \t]*:[ \t]+" + _NOT_MARKER + r"(?![$<{*~%]"
        r"|(?i:required|optional|none|null|true|false|string|str|bytes|int|bool|any|yes|no|empty)"
        r"[ \t]*\r?$"
        # A type annotation ("secret: SecretStr", "password: Optional[str]"), not a value.
        r"|[A-Z][A-Za-z]*[ \t]*\r?$|[^\s]*[\[(])"
        r"([^\s#'\"][^\s]*)[ \t]*\r?$",
        ("passw", "passphrase", "secret"),
        group=1,
        word_start=False,
        flags=re.M,
    ),
    _rule(
        SecretKind.NETRC_PASSWORD,
        r"machine\s+\S+\s+(?:login\s+\S+\s+)?password\s+" + _NOT_MARKER + r"(\S+)",
        ("passw",),
        group=1,
    ),
)

#: The words a sensitive "…_key" name may end with before "key".
_KEY_PREFIXES = (
    "api", "access", "secret", "private", "signing", "encryption", "account", "master",
    "session", "client",
)  # fmt: skip
# Names whose value is a secret: the last underscore/dash segment is a secret word
# ("DB_PASSWORD", "GITHUB_TOKEN", "client_secret", "OPENAI_API_KEY"), never a word
# that merely contains one ("max_tokens", "token_count", "BYPASS").
_SECRET_NAME_RE = re.compile(
    r"^(?:[a-z0-9]+_)*"
    r"(?:secret|password|passwd|passphrase|token|apikey|credentials?|authorization|cookie|"
    rf"(?:{'|'.join(_KEY_PREFIXES)})_?key)$"
)
_EXACT_SENSITIVE = frozenset(
    {"authorization", "proxy_authorization", "cookie", "set_cookie", "x_api_key", "auth"}
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def is_sensitive_key(key: str) -> bool:
    """A mapping key whose value is a credential (``password``, ``apiKey``, ``x-api-key``...)."""
    known = _SENSITIVE_KEYS.get(key)
    if known is not None:
        return known
    norm = _CAMEL.sub("_", key).replace("-", "_").lower().strip("_")
    sensitive = norm in _EXACT_SENSITIVE or _SECRET_NAME_RE.match(norm) is not None
    if len(_SENSITIVE_KEYS) >= _MEMO_SIZE:
        _SENSITIVE_KEYS.clear()
    _SENSITIVE_KEYS[key] = sensitive
    return sensitive


#: Answers remembered (pure functions of their argument): :func:`is_sensitive_key` for
#: each key, :func:`redact_text` for short texts — the same keys and short values
#: ("type", a session id, a model name) come back in every message's source fields.
#: Each is emptied when it reaches :data:`_MEMO_SIZE` entries.
_SENSITIVE_KEYS: dict[str, bool] = {}
_SHORT_TEXTS: dict[str, str | None] = {}
_MEMO_SIZE = 1 << 16
_SHORT = 64


#: Words that end a sensitive name; found with ``str.find`` in the lower-cased text.
_NAME_WORDS = (
    "secret", "passw", "passphrase", "token", "key", "credential", "cookie", "authorization",
)  # fmt: skip
_AUTH_WORDS = ("authorization", "api-key")
_MAX_NAME = 80

# From a secret word: the rest of the name, an optional closing quote, ":" or "=", a value.
_ASSIGN = re.compile(
    r"[A-Za-z0-9_\-]*[\"']?\s*([:=])\s*(?:"
    r"(?P<q>[\"'])" + _NOT_MARKER + r"(?P<quoted>(?:(?!(?P=q))[^\\\n]|\\.)+)(?P=q)"
    r"|" + _NOT_MARKER + r"(?![$\"'])(?P<bare>[^\s\"',;&#]+))"
)
# A bare value that looks generated rather than like a word or an expression.
_GENERATED = re.compile(r"(?=[^\s]*[0-9])[A-Za-z0-9_\-.+/~=]{8,}")
# After "Authorization"/"X-Api-Key": a header value. After a scheme word any value
# counts; a bare value must look generated, so "authorization: required" stays prose.
_AUTH_VALUE = re.compile(
    r"[\"']?\s*:\s*[\"']?(?:(?:basic|digest|token|apikey|key)\s+"
    + _NOT_MARKER
    + r"([^\s\"',;]{6,})"
    r"|" + _NOT_MARKER + r"((?=[^\s\"',;]*[0-9+/=])[^\s\"',;]{8,}|[^\s\"',;]{20,}))",
    re.I,
)
_BEARER_VALUE = re.compile(r"\s+" + _NOT_MARKER + r"([A-Za-z0-9._~+/\-]{16,}=*)")

# Overlap order: provider shapes first, then context rules, when two hits start at the
# same place with the same length.
_PRIORITY = {
    SecretKind.BEARER_TOKEN: 5,
    SecretKind.AUTHORIZATION: 6,
    SecretKind.SENSITIVE_KEY: 8,
    SecretKind.ENV_SECRET: 9,
}

_Hit = tuple[int, int, int, SecretKind]


def _occurrences(low: str, word: str) -> list[int]:
    out: list[int] = []
    i = low.find(word)
    while i >= 0:
        out.append(i)
        i = low.find(word, i + len(word))
    return out


def _name_hits(text: str, low: str, words: list[str], hits: list[_Hit]) -> None:
    """``NAME=value``, ``"name": "value"``, ``--name=value`` with a secret-like name."""
    done: set[int] = set()
    for word in words:
        for p in _occurrences(low, word):
            # Cheap first: most mentions of "token"/"key" are not followed by an assignment.
            m = _ASSIGN.match(text, p + len(word))
            if m is None or m.start(1) in done:
                continue
            done.add(m.start(1))
            ns = p
            while ns > 0 and text[ns - 1] in _WORD_CHARS and p - ns < _MAX_NAME:
                ns -= 1
            ne = p + len(word)
            while ne < m.start(1) and text[ne] in _WORD_CHARS:
                ne += 1
            name = text[ns:ne].strip("-_")
            if not name or not is_sensitive_key(name):
                continue
            if m.group("quoted") is not None:
                a, b = m.span("quoted")
                hits.append(
                    (a, a - b, _PRIORITY[SecretKind.SENSITIVE_KEY], SecretKind.SENSITIVE_KEY)
                )
                continue
            bare = m.group("bare")
            a, b = m.span("bare")
            env_style = m.group(1) == "=" and name.isupper()
            if env_style or _GENERATED.fullmatch(bare):
                hits.append((a, a - b, _PRIORITY[SecretKind.ENV_SECRET], SecretKind.ENV_SECRET))


def _header_hits(text: str, low: str, present: set[str], hits: list[_Hit]) -> None:
    """``Authorization: Basic …``, ``X-Api-Key: …`` and ``Bearer …``."""
    for word in _AUTH_WORDS:
        if word not in present:
            continue
        for p in _occurrences(low, word):
            m = _AUTH_VALUE.match(text, p + len(word))
            if m is not None:
                g = 1 if m.group(1) is not None else 2
                a, b = m.span(g)
                hits.append(
                    (a, a - b, _PRIORITY[SecretKind.AUTHORIZATION], SecretKind.AUTHORIZATION)
                )
    for p in _occurrences(low, "bearer") if "bearer" in present else ():
        if p > 0 and text[p - 1].isalnum():
            continue
        m = _BEARER_VALUE.match(text, p + 6)
        if m is not None:
            a, b = m.span(1)
            hits.append((a, a - b, _PRIORITY[SecretKind.BEARER_TOKEN], SecretKind.BEARER_TOKEN))


#: Every string whose presence can start a hit.
_NEEDLES: tuple[str, ...] = tuple(
    sorted({n for rule in _RULES for n in rule.needles} | {*_NAME_WORDS, *_AUTH_WORDS, "bearer"})
)
#: :data:`_NEEDLES` as (needle holding no other, the longer needles holding it): a
#: longer one ("secret_access_key") is looked for only where each it holds is present.
_NEEDLE_ROOTS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (root, tuple(n for n in _NEEDLES if n != root and root in n))
    for root in _NEEDLES
    if not any(other != root and other in root for other in _NEEDLES)
)


def _present(low: str) -> set[str]:
    """``{n for n in _NEEDLES if n in low}``, with fewer searches of ``low``."""
    present: set[str] = set()
    for root, longer in _NEEDLE_ROOTS:
        if root in low:
            present.add(root)
            present.update(n for n in longer if n in low)
    return present


# Anything that can start a hit, as it looks in the lower-cased text: a secret word only
# where it ends a sensitive name and is followed by the shape every assignment, header
# and JSON key goes on with (a closing quote, ":" or "="); provider keys with the length
# their rule needs; "://" only before "user:password@" or a Slack webhook path. Each
# alternative is a necessary condition of the rule it stands for, so a text with no
# match has no secret. Alternatives are grouped by first letter so the engine tries few
# per position.
#: After a secret word that ends a name: the separators :func:`is_sensitive_key` strips,
#: a closing quote, ":" or "=". A sensitive name ends with a secret word (camelCase only
#: adds separators), so a word going on with more letters ("tokens:", "key_size=") ends
#: none; a "…key" name needs one of :data:`_KEY_PREFIXES` right before "key".
_NAME_END = r"[_\-]*[\"']?\s*[:=]"
#: :data:`_NAME_END`, or a backslash where the quote, the white space or the ":" may be:
#: where a decoded reading (one level of JSON escapes or more) may show a name's end
#: through an escape (``token\\":``, ``password\\n:``), the text as it stands shows this.
_NAME_END_ESCAPED = r"[_\-]*[\"']?\s*[:=\\]"


def _after_key_k(end: str) -> str:
    """The "key" that ends a sensitive name (then ``end``), from just after its "k": a
    prefix word right before."""
    return (
        f"(?=ey{end})(?:"
        + "|".join(f"(?<={p}{sep}k)" for p in _KEY_PREFIXES for sep in ("", "_", "-"))
        + ")"
    )


_AFTER_KEY_K = _after_key_k(_NAME_END)
#: The long s: ``re``'s case-insensitive rules (a password field, an AWS secret) read it
#: as "s", and lower-casing leaves it as it is; a text holding one is always scanned.
_LONG_S = "\u017f"
#: "://" before "user:password@" or a Slack webhook path.
_URL_SECRET = (
    r"://(?:[^\s:/@\[\]\"'<>]+:[^\s@/\[\]\"'<>]+@|hooks\.slack\.com/services/"
    r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/)"
)
#: Newer provider shapes, lower-cased, each entered at a punctuation mark and checked
#: backwards from there (a new first letter would slow every filter down).
_SHAPE_ALTERNATIVES = (
    "_(?:(?<=whsec_)|(?<=npm_)|(?<=gsk_)|(?<=do[por]_v1_)|(?<=shp(?:at|ca|pa|ss)_))",
    "-(?:(?<=xapp-)|(?<=gocspx-)|(?<=pypi-)age|(?<=age-secret-key-)1)",
    r"\.(?:(?<=sg\.)[a-z0-9_\-]{22}\.|(?<=ya29\.)|(?<=hv[sbr]\.))",
    r":aa[a-z0-9_\-]{33}",
)
_SHAPES = "|".join(_SHAPE_ALTERNATIVES)
#: :data:`_SHAPES` one alternative at a time: each starts with one literal character and
#: is searched for at C speed; their alternation tests a character set at every position.
_SHAPE_PASSES = tuple(map(re.compile, _SHAPE_ALTERNATIVES))
#: Everything above as one alternation: the definition the tests hold the scans to
#: (:data:`_SCAN_PASSES`, :func:`_may_start`), which find the same places faster.
_CANDIDATE = re.compile(
    "|".join(
        (
            r"s(?:k-[a-z0-9_\-]{20}|ecret" + _NAME_END + ")",
            r"a(?:iza|(?:kia|sia|bia|cca)[0-9a-z]{16}|uthorization" + _NAME_END + ")",
            r"g(?:h[pousr]_|ithub_pat_|l(?:pat|dt|rt|cbt)-)",
            r"xox|hf_|eyj|bearer\s",
            _URL_SECRET,
            r"p(?:rivate key|ass(?:w(?:ord|d)|phrase)" + _NAME_END + r"|assword\s+\S)",
            _SHAPES,
            r"k(?:" + _AFTER_KEY_K + r"|_(?:live|test)_[a-z0-9]{16})",
            "token" + _NAME_END,
            "c(?:redentials?|ookie)" + _NAME_END,
            _LONG_S,
        )
    )
)
#: The alternatives :data:`_CANDIDATE_SCAN` enters at a letter (:data:`_SCAN_PASSES` holds
#: them as :func:`_word_passes` words them).
_LETTER_ENTRIES = (
    f"k(?:(?<=tok)en{_NAME_END}|{_AFTER_KEY_K}"
    + r"|(?<=sk)-[a-z0-9_\-]{20}|_(?:live|test)_[a-z0-9]{16})",
    f"c(?:(?<=sec)ret{_NAME_END}|redentials?{_NAME_END}|ookie{_NAME_END})",
    f"w(?<=passw)(?:(?:ord|d){_NAME_END}|ord\\s+\\S)",
    f"h(?:(?<=passph)rase{_NAME_END}|(?<=auth)orization{_NAME_END})",
    "z(?<=aiz)a",
)


def _word_passes(end: str) -> tuple[str, ...]:
    """:data:`_LETTER_ENTRIES` as passes, a name ending in ``end``: each word is entered
    where ``re`` can check the most letters before trying the pattern (a pattern that
    starts with a run of letters is tried only where the whole run stands), the letters
    before it checked backwards ("cr" of "secret", then "secret" behind)."""
    return (
        f"k(?:(?<=tok)en{end}|{_after_key_k(end)}"
        + r"|(?<=sk)-[a-z0-9_\-]{20}|_(?:live|test)_[a-z0-9]{16}"
        + f"|(?<=cook)ie{end})",
        f"cr(?:et(?<=secret){end}|edentials?{end})",
        f"w(?<=passw)(?:(?:ord|d){end}|ord\\s+\\S)",
        f"hrase(?<=passphrase){end}",
        f"z(?:a(?<=aiza)|ation(?<=authorization){end})",
    )


#: :data:`_CANDIDATE` for long scans: the same alternatives, each entered at its rarest
#: letter and checked backwards from there, so the engine stops at a third as many places.
#: The AWS alternative is left to :data:`_AWS_CANDIDATE`, run on the original case (its
#: rule only matches upper case, and a capital A is rare).
_CANDIDATE_SCAN = re.compile(
    "|".join(
        (
            *_LETTER_ENTRIES,
            "_(?:(?<=gh[pousr]_)|(?<=github_pat_)|(?<=hf_))",
            "-(?:(?<=glpat-)|(?<=gldt-)|(?<=glrt-)|(?<=glcbt-))",
            _SHAPES,
            r"xox|j(?<=eyj)|bearer\s",
            _URL_SECRET,
            "v(?<=priv)ate key",
            _LONG_S,
        )
    )
)
_AWS_CANDIDATE = re.compile(r"A(?:KIA|SIA|BIA|CCA)[0-9A-Z]{16}")


def _entered(*patterns: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each pattern compiled, with the literal character it starts with (its entry)."""
    return tuple((p[1] if p[0] == "\\" else p[0], re.compile(p)) for p in patterns)


#: :data:`_CANDIDATE_SCAN`'s alternatives regrouped by the one character each is entered
#: at, one pattern per character: a pattern that starts with one literal character is
#: searched for at C speed (``re`` skips to that character), while an alternation of
#: several first characters tests a character set at every position, about as slow as
#: all of these together. Each comes with its entry character: a text without it (found
#: at memchr speed) is not searched at all.
#:
#: A text where one of them matches is a text where :data:`_CANDIDATE_SCAN` matches, and
#: the other way round, but for a backslash: they also match where a decoded reading of
#: the text (JSON escapes other than ``\\u`` and ``\\/`` decoded, one level or more) may
#: show a match the text does not. Only a character an escape decodes to (``"``, ``\\``,
#: a control character) makes the difference; of those, only a name's closing quote and
#: the white space around it (:data:`_NAME_END_ESCAPED`) and the white space after
#: "bearer" can be part of a match: the ``://`` pass may see ``\\`` or a backspace in a
#: URL's user or password, but its classes take the escape as it stands too.
_SCAN_PASSES = _entered(
    *_word_passes(_NAME_END_ESCAPED),
    "_(?:(?<=gh[pousr]_)|(?<=github_pat_)|(?<=hf_)"
    "|(?<=whsec_)|(?<=npm_)|(?<=gsk_)|(?<=do[por]_v1_)|(?<=shp(?:at|ca|pa|ss)_))",
    "-(?:(?<=glpat-)|(?<=gldt-)|(?<=glrt-)|(?<=glcbt-)"
    "|(?<=xapp-)|(?<=gocspx-)|(?<=pypi-)age|(?<=age-secret-key-)1)",
    r"\.(?:(?<=sg\.)[a-z0-9_\-]{22}\.|(?<=ya29\.)|(?<=hv[sbr]\.))",
    r":(?:aa[a-z0-9_\-]{33}" + "|" + _URL_SECRET[1:] + ")",
    "xox",
    "j(?<=eyj)",
    r"bearer[\s\\]",
    "vate key(?<=private key)",
    _LONG_S,
)
#: Escapes whose decoded character may stand anywhere in a match (``\\u`` spells any
#: character, ``\\/`` the slashes of "://"): a text holding one is also read decoded.
_WIDE_ESCAPE = re.compile(r"\\[u/]")


_CONNINFO_PASSWORD = re.compile(
    # A conninfo value: quoted, or a bare run ended by whitespace, a quote or the end.
    # Code is not a conninfo: "password=password)" and "password=pw," are arguments, and
    # "{pw}", "$PGPASSWORD", "%(pw)s", "<pw>" are placeholders.
    r"(?<![\w.\-])password\s*=\s*" + _NOT_MARKER + r"(?:'((?:[^'\\\n]|\\.)+)'"
    r"|(?![{$%<])([^\s'\",()]+)(?=[\s'\"]|$))"
)
_CONNINFO_KEYWORD = re.compile(
    r"(?<![\w.\-])(?:host|hostaddr|dbname|user|port|sslmode|connect_timeout)\s*="
)
#: How far along its line a conninfo keyword is looked for around "password=".
_CONNINFO_REACH = 300


def _conninfo_hits(text: str, hits: list[_Hit]) -> None:
    """libpq ``password=…`` in a conninfo string (``host=db user=app password=…``): any
    value counts when another conninfo keyword stands on the same line."""
    for m in _CONNINFO_PASSWORD.finditer(text):
        left = max(text.rfind("\n", 0, m.start()) + 1, m.start() - _CONNINFO_REACH)
        right = text.find("\n", m.end())
        right = min(len(text) if right < 0 else right, m.end() + _CONNINFO_REACH)
        if _CONNINFO_KEYWORD.search(text, left, m.start()) or _CONNINFO_KEYWORD.search(
            text, m.end(), right
        ):
            g = 1 if m.group(1) is not None else 2
            a, b = m.span(g)
            hits.append((a, a - b, 0, SecretKind.LIBPQ_PASSWORD))


def _lowered(text: str) -> str:
    low = text.lower()
    if len(low) != len(text):
        # A few characters lower-case to two; keep positions aligned with the original.
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    return low


def _may_start(text: str, low: str) -> bool:
    """Whether a hit may start in ``text`` (``low``: :func:`_lowered`): the joined scan's
    test on one text (:data:`_SCAN_PASSES` on ``low``, :data:`_AWS_CANDIDATE` on
    ``text``). It stands for :data:`_CANDIDATE` at less than half the cost: a pass
    skips to its one character at C speed, the alternation tests a set at each."""
    if "A" in text and _AWS_CANDIDATE.search(text) is not None:
        return True
    return any(entry in low and pattern.search(low) is not None for entry, pattern in _SCAN_PASSES)


def _scan(text: str, low: str, candidate: bool = False) -> list[_Hit]:
    """Every hit in ``text`` read as it stands (overlapping, unsorted). ``candidate``:
    the caller's own scan found a place where a hit may start (the filter is skipped;
    it only saves the rules' work, it never changes what they find)."""
    if not candidate and not _may_start(text, low):
        return []
    present = _present(low)
    shapes = False
    for shape in _SHAPE_PASSES:
        if shape.search(low) is not None:
            shapes = True
            break
    hits: list[_Hit] = []
    for rule in _RULES:
        if (rule.needles and present.isdisjoint(rule.needles)) or (rule.shape and not shapes):
            continue
        for m in rule.pattern.finditer(text):
            if rule.word_start and m.start() > 0 and text[m.start() - 1] in _WORD_CHARS:
                continue
            a, b = m.span(rule.group)
            if b > a:
                hits.append((a, a - b, 0, rule.kind))
    words = [w for w in _NAME_WORDS if w in present]
    if words:
        _name_hits(text, low, words, hits)
    if "passw" in present:
        _conninfo_hits(text, hits)
    _header_hits(text, low, present, hits)
    return hits


# --------------------------------------------------------------- escaped text
# A key whose lines are joined by "\n" escapes, or a name behind \", cannot be read from
# the characters; the text is read again with one level of escapes decoded (and again
# for nested JSON, see tinyjuice._escapes), and each hit is mapped back to the
# characters it came from, whole escapes included.


def _escaped_hits(text: str) -> list[_Hit]:
    """Hits in the decoded readings of ``text``, as spans of ``text``."""
    levels = decoded_views(text)
    if not any(_scan(v, _lowered(v)) for v in levels):
        return []  # the common case: nothing found, nothing to map back
    out: list[_Hit] = []
    views: list[Unescaped] = []
    view = text
    for _ in levels:
        u = unescape(view)
        assert u is not None
        views.append(u)
        view = u.text
        for start, neg_len, prio, kind in _scan(view, _lowered(view)):
            a, b = start, start - neg_len
            for v in reversed(views):
                a, b = v.start(a), v.end(b)
            out.append((a, a - b, prio, kind))
    return out


def _may_hide(text: str, low: str) -> bool:
    """Whether escapes in ``text`` may hide a hit from a plain reading: a needle is
    there, or an escape that can hide one (``\\u`` spells letters, ``\\/`` the slashes
    of "://")."""
    return "\\" in text and (
        "\\u" in low or "\\/" in text or _MESSAGE_QUICK.search(low) is not None
    )


def _resolve(hits: list[_Hit]) -> list[SecretHit]:
    """Sorted, non-overlapping hits: the longest first at a start, then by priority; a
    hit overlapping an earlier one extends it (a secret is never left half-covered)."""
    hits.sort()
    out: list[SecretHit] = []
    for start, neg_len, _prio, kind in hits:
        end = start - neg_len
        if out and start < out[-1].end:
            if end > out[-1].end:
                out[-1] = SecretHit(out[-1].kind, out[-1].start, end)
            continue
        out.append(SecretHit(kind, start, end))
    return out


def find_secrets(text: str) -> list[SecretHit]:
    """Secrets in ``text``, sorted by position, never overlapping.

    Text holding JSON escapes is also read with them decoded (see :func:`_escaped_hits`).
    """
    return _find_secrets(text)


def _find_secrets(text: str, candidate: bool = False) -> list[SecretHit]:
    """:func:`find_secrets`; ``candidate``: see :func:`_scan`."""
    if not text:
        return []
    low = _lowered(text)
    hits = _scan(text, low, candidate)
    if "\\" in text:
        hits = _with_escapes(text, low, hits)
    return _resolve(hits) if hits else []


def _with_escapes(text: str, low: str, hits: list[_Hit]) -> list[_Hit]:
    """``hits`` of a text holding backslashes, joined by the hits of its decoded readings.

    A plain hit that ran over an escape (a bare value read on past ``\\n`` or up to
    ``\\"``) yields to the decoded hits it overlaps, which end where the value does; one
    that stands alone never ends inside an escape (half of one would break the JSON).
    """
    esc = _escaped_hits(text) if _may_hide(text, low) else []
    out: list[_Hit] = []
    for start, neg_len, prio, kind in hits:
        end = start - neg_len
        if "\\" in text[start:end]:
            if any(a < end and start < a - n for a, n, _p, _k in esc):
                continue
            run = len(text[start:end]) - len(text[start:end].rstrip("\\"))
            end -= run % 2
            if end <= start:
                continue
        out.append((start, start - end, prio, kind))
    return out + esc


def redact_text(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]`` (same object if none)."""
    if len(text) > _SHORT:
        return _redacted(text)
    done = _SHORT_TEXTS.get(text, text)
    if done is text:  # not seen yet (a stored answer is None or another object)
        done = _redacted(text)
        if len(_SHORT_TEXTS) >= _MEMO_SIZE:
            _SHORT_TEXTS.clear()
        _SHORT_TEXTS[text] = None if done is text else done
    return text if done is None else done


def _redacted(text: str, candidate: bool = False) -> str:
    hits = _find_secrets(text, True) if candidate else find_secrets(text)
    if not hits:
        return text
    pieces: list[str] = []
    pos = 0
    for hit in hits:
        pieces.append(text[pos : hit.start])
        pieces.append(marker(hit.kind))
        pos = hit.end
    pieces.append(text[pos:])
    return "".join(pieces)


def redact_clip(text: str, clip: Callable[[str], str]) -> str:
    """``clip(text)`` that never shows part of a secret.

    A clip can cut a key so that what is left no longer looks like one (an AWS secret
    read as a path, half a PEM line); ``text`` is redacted before the clip, and what the
    clip returns is redacted again.
    """
    return redact_text(clip(redact_text(text)))


def _redact_all(value: Any) -> Any:
    """Everything under a sensitive key: every non-empty scalar becomes a marker."""
    if isinstance(value, str):
        if not value or value.startswith(_MARKER_PREFIX):
            return value
        return marker(SecretKind.SENSITIVE_KEY)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return marker(SecretKind.SENSITIVE_KEY)
    if isinstance(value, Mapping):
        return _map_dict(value, lambda _k, v: _redact_all(v))
    if isinstance(value, list | tuple):
        return _map_list(value, _redact_all)
    return value


def _map_dict(value: Mapping[str, Any], fn: Callable[[str, Any], Any]) -> Any:
    out: dict[str, Any] | None = None
    for k, v in value.items():
        nv = fn(k, v)
        if nv is not v and out is None:
            out = dict(value)
        if out is not None:
            out[k] = nv
    return value if out is None else out


def _map_list(value: list[Any] | tuple[Any, ...], fn: Callable[[Any], Any]) -> Any:
    out: list[Any] | None = None
    for i, v in enumerate(value):
        nv = fn(v)
        if nv is not v and out is None:
            out = list(value)
        if out is not None:
            out[i] = nv
    if out is None:
        return value
    return tuple(out) if isinstance(value, tuple) else out


#: Values :func:`redact_json` returns as they are (when not under a sensitive key).
_SCALARS = frozenset((int, float, bool, type(None)))


def redact_json(value: Any, text: Callable[[str], str] | None = None) -> Any:
    """A JSON-like value with secrets redacted; the same object when nothing changed.

    String leaves go through :func:`redact_text` (or ``text``, which must answer as it
    does); every scalar under a sensitive key (``password``, ``api_key``,
    ``Authorization``...) becomes a marker string, so the result serialises to valid
    JSON with the same structure.
    """
    redact = redact_text if text is None else text
    if isinstance(value, str):
        return redact(value)
    # One loop per container, strings and numbers handled in it: the source fields of a
    # long transcript hold hundreds of thousands of entries.
    if isinstance(value, Mapping):
        out: dict[str, Any] | None = None
        for k, v in value.items():
            if isinstance(k, str) and is_sensitive_key(k):
                nv = _redact_all(v)
            elif type(v) is str:
                nv = redact(v)
            elif type(v) in _SCALARS:
                continue
            else:
                nv = redact_json(v, text)
            if nv is not v:
                if out is None:
                    out = dict(value)
                out[k] = nv
        return value if out is None else out
    if isinstance(value, list | tuple):
        items: list[Any] | None = None
        for i, v in enumerate(value):
            if type(v) is str:
                nv = redact(v)
            elif type(v) in _SCALARS:
                continue
            else:
                nv = redact_json(v, text)
            if nv is not v:
                if items is None:
                    items = list(value)
                items[i] = nv
        if items is None:
            return value
        return tuple(items) if isinstance(value, tuple) else items
    return value


def _redact_arguments(arguments: str, text: Callable[[str], str]) -> str:
    if not arguments:
        return arguments
    try:
        parsed = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return text(arguments)
    cleaned = redact_json(parsed, text)
    if cleaned is parsed:
        return arguments
    return orjson.dumps(cleaned).decode("utf-8")


def _redact_call(call: ToolCall, text: Callable[[str], str]) -> ToolCall:
    args = _redact_arguments(call.arguments, text)
    extra = redact_json(call.extra, text) if call.extra else call.extra
    if args is call.arguments and extra is call.extra:
        return call
    return replace(call, arguments=args, extra=extra)


def _redact_part(part: Part, redact: Callable[[str], str]) -> Part:
    extra = redact_json(part.extra, redact) if part.extra else part.extra
    if isinstance(part, MediaPart):
        url = _media_url(part)
        data = part.data if url is None else redact(url)
        if data is part.data and extra is part.extra:
            return part
        return replace(part, data=data, extra=extra)
    text = redact(part.text)
    if text is part.text and extra is part.extra:
        return part
    return replace(part, text=text, extra=extra)


def _media_url(part: MediaPart) -> str | None:
    """``part.data`` when redaction reads it as text: a remote address (a signed URL may
    carry a token in its query). A ``data:`` URL or a base64 payload is encoded bytes,
    never scanned: a match in it would be chance, and redacting it would break the image."""
    data = part.data
    if data is None or part.source == "base64" or data[:5].lower() == "data:":
        return None
    return data


def redact_message(msg: Message, text: Callable[[str], str] | None = None) -> Message:
    """``msg`` with secrets redacted in text, thinking, reasoning, tool-call arguments, an
    image's remote URL, and the source fields kept in ``extra`` (of the message, its parts
    and its tool calls). The same object when nothing changed.

    Every string goes through :func:`redact_text`, or ``text`` (which must answer as it
    does: the same object for a string it leaves alone)."""
    redact = redact_text if text is None else text
    parts = tuple(_redact_part(p, redact) for p in msg.parts)
    if all(a is b for a, b in zip(parts, msg.parts, strict=True)):
        parts = msg.parts
    calls = tuple(_redact_call(c, redact) for c in msg.tool_calls)
    if all(a is b for a, b in zip(calls, msg.tool_calls, strict=True)):
        calls = msg.tool_calls
    reasoning = redact(msg.reasoning) if msg.reasoning else msg.reasoning
    extra = redact_json(msg.extra, redact) if msg.extra else msg.extra
    if (
        parts is msg.parts
        and calls is msg.tool_calls
        and reasoning is msg.reasoning
        and extra is msg.extra
    ):
        return msg
    return replace(msg, parts=parts, tool_calls=calls, reasoning=reasoning, extra=extra)


def without_source_fields(messages: Sequence[Message]) -> list[Message]:
    """Each message without the source fields it keeps for writing back (``extra`` of the
    message, of its parts and of its tool calls); a message with none, as it is.

    A message that no writer will write (one the plan summarises away) needs no raw
    record, and carries none out of the pipeline: dropped, it is neither scanned nor
    exposed (docs/compaction.md, "What redaction covers")."""
    # The reader seam's constructor (positional, in field order): several times cheaper
    # than ``replace``, and a long middle is tens of thousands of messages with a record.
    from tinyjuice.formats._messages import new_message

    out: list[Message] = []
    append = out.append
    # Each ``extra`` is compared with EMPTY before its truth is asked: the shared empty
    # mapping answers ``len`` in Python, and most parts and calls hold it.
    for m in messages:
        parts, calls = m.parts, m.tool_calls
        if len(parts) == 1:  # most messages: no generator to run
            if parts[0].extra is not EMPTY and parts[0].extra:
                parts = (replace(parts[0], extra=EMPTY),)
        elif parts and any(p.extra is not EMPTY and p.extra for p in parts):
            parts = tuple(replace(p, extra=EMPTY) if p.extra else p for p in parts)
        if len(calls) == 1:  # most calling messages: no generator either
            if calls[0].extra is not EMPTY and calls[0].extra:
                calls = (replace(calls[0], extra=EMPTY),)
        elif calls and any(c.extra is not EMPTY and c.extra for c in calls):
            calls = tuple(replace(c, extra=EMPTY) if c.extra else c for c in calls)
        if parts is m.parts and calls is m.tool_calls and (m.extra is EMPTY or not m.extra):
            append(m)
            continue
        append(
            new_message(
                m.role,
                parts,
                calls,
                m.tool_call_id,
                m.tool_name,
                m.reasoning,
                m.meta,
                EMPTY,
                m.hints,
            )
        )
    return out


#: Every needle that can start a hit anywhere in a message (texts, arguments, source
#: fields), unconditionally: "auth" is an exactly-sensitive JSON key.
_MESSAGE_QUICK = re.compile(
    r"sk-|aiza|a(?:kia|sia|bia|cca)|gh[pousr]_|github_pat_|gl(?:pat|dt|rt|cbt)-|xox|hf_|eyj|"
    r"://|private key|_live_|_test_|api-key|bearer|auth|" + _SHAPES + "|" + "|".join(_NAME_WORDS)
)


def _json_strings(value: Any, out: list[str]) -> bool:
    """Append to ``out`` every string :func:`redact_json` would pass to
    :func:`redact_text` in ``value`` (its string leaves, each as it stands); whether a
    key :func:`is_sensitive_key` calls sensitive occurs (everything under it may change).

    Keys are never read as text by :func:`redact_json`, only judged by name, and values
    are redacted one by one: a record whose keys merely mention a needle ("input_tokens")
    or whose leaves hold newlines (escapes once serialised) is judged by its leaves.
    """
    sensitive = False
    stack = [value]
    pop, push, add = stack.pop, stack.append, out.append
    while stack:
        v = pop()
        kind = type(v)
        if kind is dict or (kind is not list and isinstance(v, Mapping)):
            # A record's keys are mostly the same few, known not to be sensitive: the
            # test runs over them at C speed, key by key only when one is new.
            if not sensitive and not _SAFE_KEYS.issuperset(v):
                sensitive = _any_sensitive_key(v)
            # String leaves are taken here, not pushed: a source record holds mostly
            # short strings (ids, timestamps), and each push and pop costs.
            for item in v.values():
                kind = type(item)
                if kind is str:
                    add(item)
                elif kind not in _SCALARS:
                    push(item)
        elif kind is list or kind is tuple or isinstance(v, list | tuple):
            for item in v:
                kind = type(item)
                if kind is str:
                    add(item)
                elif kind not in _SCALARS:
                    push(item)
        elif isinstance(v, str):
            add(v)
    return sensitive


#: Keys :func:`is_sensitive_key` calls not sensitive (emptied at :data:`_MEMO_SIZE`).
_SAFE_KEYS: set[Any] = set()


def _any_sensitive_key(record: Mapping[Any, Any]) -> bool:
    """Whether a key of ``record`` is sensitive; the others are remembered as safe."""
    for k in record:
        if not isinstance(k, str):
            continue
        known = _SENSITIVE_KEYS.get(k)
        if known is None:
            known = is_sensitive_key(k)
        if known:
            return True
        if len(_SAFE_KEYS) >= _MEMO_SIZE:
            _SAFE_KEYS.clear()
        _SAFE_KEYS.add(k)
    return False


#: Where tool-call arguments may name the key ``auth`` (:func:`is_sensitive_key` calls it
#: sensitive whatever its case and surrounding ``_``/``-``, though it holds none of the
#: scan's needles): any ``auth`` at all, so no spelling of the key is missed.
_AUTH_KEY = re.compile("auth", re.IGNORECASE)


def _message_strings(msg: Message) -> tuple[list[str], bool, bool]:
    """Every string :func:`redact_message` may change, read as it redacts them; whether
    tool-call arguments hold an escape (their decoded strings may read differently from
    their characters); and whether a source field holds a sensitive key, or tool-call
    arguments may (``auth``, see :data:`_AUTH_KEY`). (The common
    message, one plain text, is read inline by :func:`redact_messages`, the only caller.)
    """
    out: list[str] = []
    opaque = False
    sensitive = False
    for p in msg.parts:
        if isinstance(p, MediaPart):
            if (url := _media_url(p)) is not None:
                out.append(url)
        else:
            out.append(p.text)
        if p.extra is not EMPTY and p.extra and _json_strings(p.extra, out):
            sensitive = True
    if msg.reasoning:
        out.append(msg.reasoning)
    for c in msg.tool_calls:
        out.append(c.arguments)
        if "\\" in c.arguments:
            opaque = True
        if _AUTH_KEY.search(c.arguments):
            # ``auth`` is a sensitive key only as a whole name (no needle of the scan).
            sensitive = True
        if c.extra is not EMPTY and c.extra and _json_strings(c.extra, out):
            sensitive = True
    if msg.extra is not EMPTY and msg.extra and _json_strings(msg.extra, out):
        sensitive = True
    return out, opaque, sensitive


#: Joins the strings scanned together: no :data:`_CANDIDATE` match can run from one string
#: into the next (whitespace ends every open class; ``\x00`` is neither space, ``:`` nor
#: ``=``), so each string is judged as if it stood alone, or more leniently.
_JOIN = "\n\x00"


def _hit_texts(texts: Iterable[str]) -> tuple[dict[str, None], set[str]]:
    """The distinct non-empty texts of ``texts`` (as keys, in first-seen order), and
    those among them holding a place where a hit may start.

    Every distinct text is lower-cased and scanned, joined with the others, for
    :data:`_CANDIDATE_SCAN` (as :data:`_SCAN_PASSES`, one pass each; a pass whose entry
    character the joined text lacks is skipped) and :data:`_AWS_CANDIDATE` on the
    original case; after a match a pass moves on to the next text (one match is enough
    to flag it).
    """
    distinct = dict.fromkeys(texts)
    distinct.pop("", None)
    originals = list(distinct)
    hit: set[str] = set()
    if not originals:
        return distinct, hit
    joined, starts = join_pieces(originals, _JOIN)
    if "A" in joined:
        hit.update(map(originals.__getitem__, pieces_matching(_AWS_CANDIDATE, joined, starts)))
    if joined.isascii():
        low = joined.lower()  # one call, the same starts (ASCII keeps every length)
    else:
        # One by one: an ASCII piece is lower-cased at C speed, the joined text would be
        # read a character at a time; and a character may lower-case to two.
        low, starts = join_pieces([t.lower() for t in originals], _JOIN)
    for entry, pattern in _SCAN_PASSES:
        if entry in low:
            hit.update(map(originals.__getitem__, pieces_matching(pattern, low, starts)))
    return distinct, hit


def _flag_strings(entries: Iterable[tuple[int, str]]) -> set[int]:
    """The messages (by index) holding a string where a hit may start (see
    :func:`_hit_texts`): a match flags every message holding that string."""
    owners: list[int] = []
    texts: list[str] = []
    for i, text in entries:
        owners.append(i)
        texts.append(text)
    return _owners_of(owners, texts, _hit_texts(texts)[1])


def _owners_of(owners: Sequence[int], texts: Sequence[str], chosen: set[str]) -> set[int]:
    """``{owners[k] for k where texts[k] in chosen}``, at C speed."""
    if not chosen:
        return set()
    return set(compress(owners, map(chosen.__contains__, texts)))


def texts_without_secrets(texts: Iterable[str]) -> set[str]:
    """The texts among ``texts`` that :func:`redact_text` returns unchanged, found with
    one joined scan (:func:`_hit_texts`, the test :func:`redact_messages` skips a
    message by): a text holding no backslash (escapes are read decoded, one by one)
    where no hit can start. A text not returned may still hold no secret."""
    plain = [t for t in texts if t and "\\" not in t]
    distinct, hit = _hit_texts(plain)
    return set(distinct).difference(hit)


class _BatchText:
    """:func:`redact_text` remembering long texts for one batch: a Claude Code message
    holds its tool output twice (the text, and ``toolUseResult`` in its record), and a
    text left alone is answered as the caller's own object.

    ``scanned`` texts are known to :func:`_hit_texts`: those outside ``unsafe`` (a hit
    may start in them, or they hold a backslash and are read decoded too) are left as
    they are without a second look, as :func:`texts_without_secrets` leaves them."""

    __slots__ = ("memo", "scanned", "unsafe")

    def __init__(
        self, scanned: Mapping[str, None] | None = None, unsafe: set[str] | None = None
    ) -> None:
        self.memo: dict[str, str | None] = {}
        self.scanned: Mapping[str, None] = {} if scanned is None else scanned
        self.unsafe: set[str] = set() if unsafe is None else unsafe

    def __call__(self, text: str) -> str:
        scanned = text in self.scanned
        if scanned and text not in self.unsafe:
            return text
        if len(text) <= _SHORT:
            return redact_text(text)  # remembered there already
        done = self.memo.get(text, text)
        if done is text:  # not seen yet (a stored answer is None or another object)
            # A scanned text is unsafe through a match of the joined scan, or a backslash.
            done = _redacted(text, scanned and "\\" not in text)
            self.memo[text] = None if done is text else done
        return text if done is None else done


def redact_messages(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """:func:`redact_message` over many messages, and how many changed.

    Every distinct string of the messages is scanned once, joined, for anything that can
    start a hit (:func:`_flag_strings`); only messages with a candidate are redacted in
    full. A text holding escapes is judged by its decoded readings too, as
    :func:`find_secrets` reads it: the scan also flags a place where an escape may hide
    a match (see :data:`_SCAN_PASSES`), and a text holding an escape that may stand
    anywhere in one (``\\u``, ``\\/``) has its decoded readings scanned the same way,
    for the messages not flagged yet.
    JSON whose decoded strings may differ from its characters cannot be judged by its
    characters: a message holding such JSON is redacted in full whenever it holds any
    needle at all. Source fields (``extra``) are read as :func:`redact_json` reads them:
    each string leaf on its own, keys only by name (a message with a sensitive key is
    redacted in full). The result is the same as calling :func:`redact_message` on each
    (messages that cannot hold a secret are returned as the same objects), at a fraction
    of the per-message cost.
    """
    owners: list[int] = []
    texts: list[str] = []
    opaque: list[int] = []
    keyed: set[int] = set()
    for i, m in enumerate(messages):
        parts = m.parts
        if (
            len(parts) == 1
            and type(parts[0]) is TextPart
            and (parts[0].extra is EMPTY or not parts[0].extra)
            and not m.tool_calls
            and not m.reasoning
            and (m.extra is EMPTY or not m.extra)
        ):
            texts.append(parts[0].text)  # the common case: one plain text
            owners.append(i)
            continue
        strings, is_opaque, has_sensitive_key = _message_strings(m)
        if is_opaque:
            opaque.append(i)
        if has_sensitive_key:
            keyed.add(i)
        texts += strings
        owners += [i] * len(strings)
    scanned, hit = _hit_texts(texts)
    candidates = _owners_of(owners, texts, hit) | keyed
    escaped = {t for t in scanned if "\\" in t}
    if escaped:
        # The passes also match where a decoded reading may show a match through an
        # escape (see _SCAN_PASSES), but for \u and \/: a text holding one of those
        # is read decoded, its readings scanned the same way.
        wide = {t for t in escaped if _WIDE_ESCAPE.search(t)}
        if wide:
            views: list[tuple[int, str]] = []
            for i, text in zip(owners, texts, strict=True):
                if i not in candidates and text in wide:
                    views.extend((i, view) for view in decoded_views(text))
            candidates |= _flag_strings(views)
    for i in opaque:
        if i in candidates:
            continue
        strings, _, _ = _message_strings(messages[i])
        if _MESSAGE_QUICK.search("\x00".join(s.lower() for s in strings if s)):
            candidates.add(i)
    out = list(messages)
    changed = 0
    redact = _BatchText(scanned, hit | escaped)
    for i in sorted(candidates):
        r = redact_message(out[i], redact)
        if r is not out[i]:
            out[i] = r
            changed += 1
    return out, changed
