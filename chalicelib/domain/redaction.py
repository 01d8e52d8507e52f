"""Recognized secrets replaced before anything is kept or shown (docs/reference/data-protection.md).

Answers, call arguments and results, errors, every scorer and judge reason, `model`,
`guardrail`, notices and email, suite result reasons and dataset cases pass through `redact`
(or `redact_value`) before they are stored: the same placeholders everywhere,
`[REDACTED:<kind>]`. Where a secret sits in a `key=value` (or JSON, or `Bearer <token>`)
context the key stays and only the value goes: `aws_secret_access_key=[REDACTED:aws_secret_key]`.

Where the patterns come from. Most are the `denylist` regexes of detect-secrets' plugins (Yelp's
maintained detector, `detect_secrets.plugins.*`), read from the installed package on first use so
an upgrade brings its new patterns: AWS access key ids (AKIA, ASIA, ABIA, ACCA, A3T) and quoted
AWS secret keys after an `aws...key` name, GitHub (ghp_/gho_/ghu_/ghs_/ghr_), GitLab, OpenAI
(the `T3BlbkFJ` form), Slack tokens and webhooks, JWTs (checked with its `is_formally_valid`),
basic-auth passwords in URLs, Stripe, SendGrid, Twilio, Mailchimp, Discord, Telegram, npm,
PyPI, Square and Azure storage keys. Plugins that guess from entropy or keywords, or that match
ordinary upper-case words (Artifactory's `AP...`), are not used. Ours, only where it has none or
one too narrow to redact with: Anthropic keys (`sk-ant-`), OpenAI keys without the marker
(`sk-`, `sk-proj-`...), GitHub fine-grained tokens (`github_pat_`), Google API keys (`AIza`),
Slack tokens that are not all digits, AWS secret keys and session tokens in unquoted `key=value`
or JSON, `Bearer` tokens, `Authorization: Basic` values, and whole private-key blocks
(detect-secrets flags the `BEGIN ... PRIVATE KEY` line only).

A token-shaped match counts only at a word's start (`task-...` never loses its `sk-...` tail,
`xAKIA...` is not a key id: no false split) and runs to its word's end (a key with more glued
on is replaced whole). The organization's own stored secret values (`known`, from its secrets
store) are replaced wherever they appear, as `[REDACTED:secret]`; values shorter than
`MIN_KNOWN_CHARS` are not searched for (they would blank ordinary words).

Pure: no I/O. detect-secrets is imported lazily (its import costs ~0.2 s) and only for its
patterns; nothing is verified against any service.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

MIN_KNOWN_CHARS = 8
MIN_FRAGMENT_CHARS = 6
"""The shortest cut-off start of a known value (before a `...`) that is redacted."""
MAX_FRAGMENT_PROBES = 1000
"""How many places one known value's first characters are checked for a cut-off start, per text."""
PLACEHOLDER = "[REDACTED:{kind}]"
_WORD = "A-Za-z0-9"
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]*")
_JWT_TAIL = re.compile(r"[A-Za-z0-9_\-.+/=]*")


@dataclass(frozen=True)
class Rule:
    """One recognizer: a pattern, the kind its placeholder names, and what of a match is secret.

    Attributes:
        kind: the placeholder's kind (`aws_access_key` -> `[REDACTED:aws_access_key]`).
        pattern: the compiled regex.
        group: the group holding the secret (0: the whole match); the rest of a match (a key name,
            `Bearer `, a URL's user) is context and stays.
        word: a token-shaped secret: it must start a word (the character before is not a letter or
            digit) and it runs on to the end of its word (`tail`).
        tail: the characters a match is extended over at its end (None: none).
        valid: a further check of the secret text (e.g. a JWT's header decodes as JSON).
        source: `detect-secrets <plugin>` or `assay`.
        literal: text every match holds: the pattern is not run on a text without it (a few of
            detect-secrets' patterns backtrack quadratically on long near-misses).
        needs: lower-case ASCII every match holds in some case (`token` for `(?i)...token`): the
            pattern is not run on an ASCII text whose lower case lacks it. Only on ASCII texts:
            under `(?i)` a few other characters match ASCII letters (`ſ` is an `s`).
    """

    kind: str
    pattern: re.Pattern[str]
    group: int = 0
    word: bool = True
    tail: re.Pattern[str] | None = _TOKEN_TAIL
    valid: Callable[[str], bool] | None = None
    source: str = "assay"
    literal: str | None = None
    needs: str | None = None


_KEY_RUN = re.compile(r"[A-Za-z0-9]{20}")


def _has_key_run(token: str) -> bool:
    return _KEY_RUN.search(token) is not None


def _own_rules() -> tuple[list[Rule], list[Rule], list[Rule]]:
    """Patterns detect-secrets has none of (or none to redact with), see the module docstring:
    `(blocks, key=value contexts, tokens)`."""
    kv = r"""(?:\\?["'])?\s*(?:=|:=|=>|:)\s*(?:\\?["'])?"""
    blocks = [
        Rule(
            "private_key",
            re.compile(
                r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
                r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)"
            ),
            word=False,
            tail=None,
        ),
        Rule(
            "private_key",
            re.compile(r"PuTTY-User-Key-File-\d+:[\s\S]*?Private-MAC: *[0-9a-fA-F]+"),
            word=False,
            tail=None,
        ),
    ]
    tokens = [
        Rule("anthropic_key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{20,}")),
        # The whole token, then the check for a run of 20 letters and digits: a lazy scan for the
        # run inside the pattern is quadratic on a long `sk-sk-sk-...`.
        Rule("openai_key", re.compile(r"sk-[A-Za-z0-9_\-]{20,}"), valid=_has_key_run),
        Rule("github_token", re.compile(r"github_pat_[A-Za-z0-9_]{22,}")),
        Rule("github_token", re.compile(r"gh[pousr]_[A-Za-z0-9_]{30,}")),
        Rule("google_api_key", re.compile(r"AIza[0-9A-Za-z_\-]{35}")),
        Rule("slack_token", re.compile(r"(?:xox[abposre]|xapp)-[A-Za-z0-9\-]{10,}")),
    ]
    contexts = [
        Rule(
            "aws_secret_key",
            re.compile(
                r"(?i)(?:aws[_\-. ]?secret(?:[_\-. ]?access)?(?:[_\-. ]?key)?"
                r"|secret[_\-. ]?(?:access[_\-. ]?)?key)"
                + kv
                + r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
            ),
            group=1,
            word=False,
            tail=None,
            needs="secret",
        ),
        Rule(
            "aws_session_token",
            re.compile(
                r"(?i)(?:aws[_\-. ]?)?(?:session|security)[_\-. ]?token"
                + kv
                + r"([A-Za-z0-9/+=]{40,})"
            ),
            group=1,
            word=False,
            tail=None,
            needs="token",
        ),
        Rule(
            "basic_auth",
            re.compile(r"(?i)\bauthorization" + kv + r"basic\s+([A-Za-z0-9+/]{8,}={0,2})"),
            group=1,
            word=False,
            tail=None,
            needs="authorization",
        ),
        # A bearer token holds a digit, or upper- and lower-case letters and no `-` (so `bearer
        # bonds-are-financial-instruments` stays).
        Rule(
            "bearer_token",
            re.compile(r"(?i)\bbearer\s+((?=[A-Za-z0-9_\-.~+/]*[0-9])[A-Za-z0-9_\-.~+/]{16,}=*)"),
            group=1,
            word=False,
            tail=None,
            needs="bearer",
        ),
        Rule(
            "bearer_token",
            re.compile(
                r"\b[Bb](?i:earer)\s+((?=[A-Za-z_.~+/]*[a-z])(?=[A-Za-z_.~+/]*[A-Z])"
                r"[A-Za-z_.~+/]{20,}=*)(?![A-Za-z0-9_\-.~+/])"
            ),
            group=1,
            word=False,
            tail=None,
            needs="bearer",
        ),
        Rule(
            "aws_secret_key",
            re.compile(r"--aws-secret-access-key[\s=]+[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"),
            group=1,
            word=False,
            tail=None,
        ),
        # AWS's XML answers (STS AssumeRole, GetSessionToken) and their JSON-less logs.
        Rule(
            "aws_secret_key",
            re.compile(r"<SecretAccessKey>\s*([A-Za-z0-9/+]{40})\s*</SecretAccessKey>"),
            group=1,
            word=False,
            tail=None,
        ),
        Rule(
            "aws_session_token",
            re.compile(r"<(?:SessionToken|SecurityToken)>\s*([A-Za-z0-9/+=]{40,})\s*</"),
            group=1,
            word=False,
            tail=None,
        ),
    ]
    return blocks, contexts, tokens


_DETECTORS: tuple[tuple[str, str, tuple[tuple[str, int, bool], ...]], ...] = (
    # (plugin module, class, one (kind, secret group, token-shaped) per entry of its `denylist`)
    ("aws", "AWSKeyDetector", (("aws_access_key", 0, True), ("aws_secret_key", 1, False))),
    ("github_token", "GitHubTokenDetector", (("github_token", 0, True),)),
    ("gitlab_token", "GitLabTokenDetector", tuple(("gitlab_token", 0, True) for _ in range(7))),
    ("openai", "OpenAIDetector", (("openai_key", 0, True),)),
    ("slack", "SlackDetector", (("slack_token", 0, True), ("slack_webhook", 0, True))),
    ("jwt", "JwtTokenDetector", (("jwt", 0, True),)),
    ("basic_auth", "BasicAuthDetector", (("basic_auth", 1, False),)),
    ("stripe", "StripeDetector", (("stripe_key", 0, True),)),
    ("sendgrid", "SendGridDetector", (("sendgrid_key", 0, True),)),
    ("twilio", "TwilioKeyDetector", (("twilio_key", 0, True), ("twilio_key", 0, True))),
    ("mailchimp", "MailchimpDetector", (("mailchimp_key", 0, True),)),
    ("discord", "DiscordBotTokenDetector", (("discord_token", 0, True),)),
    ("telegram_token", "TelegramBotTokenDetector", (("telegram_token", 0, True),)),
    ("npm", "NpmDetector", (("npm_token", 1, False),)),
    ("pypi_token", "PypiTokenDetector", (("pypi_token", 0, True), ("pypi_token", 0, True))),
    ("square_oauth", "SquareOAuthDetector", (("square_oauth", 0, True),)),
    ("azure_storage_key", "AzureStorageKeyDetector", (("azure_storage_key", 0, False),)),
)


_LITERALS = {"NpmDetector": "_authToken", "OpenAIDetector": "T3BlbkFJ"}

_NEEDS = {
    # (class, entry of its denylist) -> `Rule.needs`: the patterns that cost most on plain prose
    ("AWSKeyDetector", 1): "aws",
    ("SlackDetector", 0): "xox",
    ("SlackDetector", 1): "hooks.slack.com",
    ("MailchimpDetector", 0): "-us",
    ("TelegramBotTokenDetector", 0): ":",
    ("StripeDetector", 0): "k_live_",
    ("DiscordBotTokenDetector", 0): ".",
}


def _detector_rules() -> list[Rule]:
    rules: list[Rule] = []
    for module_name, class_name, entries in _DETECTORS:
        module = importlib.import_module(f"detect_secrets.plugins.{module_name}")
        detector = getattr(module, class_name)
        denylist = list(detector.denylist)
        if len(denylist) != len(entries):
            raise RuntimeError(
                f"detect-secrets {class_name} has {len(denylist)} patterns, assay knows "
                f"{len(entries)}: check chalicelib.domain.redaction against the new release"
            )
        valid = getattr(detector, "is_formally_valid", None)
        for n, (pattern, (kind, group, word)) in enumerate(zip(denylist, entries, strict=True)):
            tail = (_JWT_TAIL if kind == "jwt" else _TOKEN_TAIL) if word else None
            rules.append(
                Rule(
                    kind,
                    pattern,
                    group=group,
                    word=word,
                    tail=tail,
                    valid=valid,
                    source=f"detect-secrets {class_name}",
                    literal=_LITERALS.get(class_name),
                    needs=_NEEDS.get((class_name, n)),
                )
            )
    return rules


_rules: tuple[Rule, ...] | None = None
_rules_lock = threading.Lock()


def rules() -> tuple[Rule, ...]:
    """Every recognizer, in order of precedence (built once per process)."""
    global _rules
    if _rules is None:
        with _rules_lock:
            if _rules is None:
                blocks, contexts, tokens = _own_rules()
                # A private-key block first (it swallows whatever it holds), then the key=value and
                # `Bearer` contexts (so a JWT after `Bearer ` is a bearer token), detect-secrets'
                # patterns, then our own tokens; where two overlap the earlier start wins, then this
                # order.
                _rules = (*blocks, *contexts, *_detector_rules(), *tokens)
    return _rules


Known = str | tuple[str, str]
"""A value to redact wherever it appears: a stored secret's value (`[REDACTED:secret]`), or
`(value, kind)` for a secret found elsewhere (e.g. in the original answer) and named by its kind."""

_CLIP = re.compile(r"""["']?(?:…|\.\.\.)""")
"""Where a quoted text was cut (`'abc'...`, `abc…`): a secret cut there leaves a prefix behind."""


def _needles(known: Iterable[Known]) -> dict[str, str]:
    needles: dict[str, str] = {}
    for item in known:
        value, kind = (item, "secret") if isinstance(item, str) else item
        if not isinstance(value, str) or len(value) < MIN_KNOWN_CHARS:
            continue
        # The value as written, inside JSON text, and as Python's repr shows it (scorer reasons).
        for form in (value, json.dumps(value)[1:-1], repr(value)[1:-1]):
            needles.setdefault(form, kind)
    return needles


def _matching_prefix(text: str, at: int, needle: str) -> int:
    """How many of `needle`'s first characters `text` holds from `at` (binary search: a prefix of
    the answer is a prefix of every shorter one)."""
    low, high = 0, min(len(needle), len(text) - at)
    while low < high:
        middle = (low + high + 1) // 2
        if text.startswith(needle[:middle], at):
            low = middle
        else:
            high = middle - 1
    return low


def _known_spans(text: str, known: Iterable[Known]) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    needles = _needles(known)
    for needle, kind in sorted(needles.items(), key=lambda n: len(n[0]), reverse=True):
        start = text.find(needle)
        while start != -1:
            spans.append((start, start + len(needle), kind))
            start = text.find(needle, start + len(needle))
    if needles and _CLIP.search(text):
        # A reason that quotes an answer cuts it (`'...AKIAIOSF'...`): the cut-off start of a known
        # value, right before the cut, goes too. Each start of a value's first characters is
        # probed at most once, and a probe costs O(log n) comparisons: a text full of cuts and
        # near-misses cannot make this quadratic.
        for needle, kind in needles.items():
            head = needle[:MIN_FRAGMENT_CHARS]
            at = text.find(head)
            probes = 0
            while at != -1 and probes < MAX_FRAGMENT_PROBES:
                probes += 1
                length = _matching_prefix(text, at, needle)
                if length < len(needle) and _CLIP.match(text, at + length):
                    spans.append((at, at + length, kind))
                at = text.find(head, at + 1)
    return spans


def _rule_spans(text: str, rule: Rule, lowered: str | None = None) -> list[tuple[int, int, str]]:
    """`rule`'s matches in `text` (`lowered`: `text.lower()` when `text` is ASCII, else None)."""
    spans: list[tuple[int, int, str]] = []
    if rule.literal is not None and rule.literal not in text:
        return spans
    if rule.needs is not None and lowered is not None and rule.needs not in lowered:
        return spans
    for m in rule.pattern.finditer(text):
        group = rule.group if rule.group <= (rule.pattern.groups or 0) else 0
        start, end = m.span(group)
        if start < 0 or start == end:
            continue
        if rule.word and start > 0 and re.match(f"[{_WORD}]", text[start - 1]):
            continue
        if rule.tail is not None:
            tail = rule.tail.match(text, end)  # a `*` pattern: it matches, if only the empty string
            end = tail.end() if tail else end
            while end > start and text[end - 1] == ".":  # a sentence's full stop is not the token's
                end -= 1
        if rule.valid is not None and not rule.valid(text[start:end]):
            continue
        spans.append((start, end, rule.kind))
    return spans


def find(text: str, known: Iterable[Known] = ()) -> list[tuple[int, int, str]]:
    """The secrets in `text` as sorted, non-overlapping `(start, end, kind)` spans.

    Overlapping matches merge into one span named after the one that starts first (on a tie:
    the organization's own values, then `rules()` order).
    """
    known = tuple(known)
    if len(text) <= _CACHED_TEXT_CHARS:
        return list(_find_cached(text, known))
    return _find(text, known)


_CACHED_TEXT_CHARS = 4096
"""Texts up to this many characters have their spans kept (`_find_cached`): a case's answer is
read for secrets more than once (to learn them, then to redact), and the same keys and short
values recur in every attempt."""


@functools.lru_cache(maxsize=4096)
def _find_cached(text: str, known: tuple[Known, ...]) -> tuple[tuple[int, int, str], ...]:
    return tuple(_find(text, known))


def _find(text: str, known: tuple[Known, ...]) -> list[tuple[int, int, str]]:
    found = _known_spans(text, known)
    lowered = text.lower() if text.isascii() else None
    for rule in rules():
        found.extend(_rule_spans(text, rule, lowered))
    found.sort(key=lambda s: s[0])  # stable: on a tie, the earlier rule stays first
    merged: list[tuple[int, int, str]] = []
    for start, end, kind in found:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2])
        else:
            merged.append((start, end, kind))
    return merged


def redact(text: str, known: Iterable[Known] = (), *, context: str = "") -> str:
    """`text` with every recognized secret, and every value in `known`, replaced by its placeholder.

    Args:
        text: any text about to be kept or shown.
        known: the organization's own stored secret values (`secrets.values(org_id)`), and
            `(value, kind)` pairs of secrets found elsewhere (`secrets_in`).
        context: what precedes `text` where it came from, e.g. `"aws_secret_access_key="` for the
            value of that key in a JSON object: read for context, never changed or returned.
    """
    if not text:
        return text
    known = tuple(known)
    if context:
        offset = len(context)
        spans = [
            (max(start, offset) - offset, end - offset, kind)
            for start, end, kind in find(context + text, known)
            if end > offset
        ]
    else:
        spans = find(text, known)
    if not spans:
        return text
    out: list[str] = []
    at = 0
    for start, end, kind in spans:
        out.append(text[at:start])
        out.append(PLACEHOLDER.format(kind=kind))
        at = end
    out.append(text[at:])
    return "".join(out)


def secrets_in(*texts: str | None, known: Iterable[Known] = ()) -> list[tuple[str, str]]:
    """`(secret, kind)` of every secret in `texts`: pass them as `known` to redact text that quotes
    them, perhaps cut short (a scorer's reason quoting the original answer)."""
    known = tuple(known)
    found: dict[str, str] = {}
    for text in texts:
        if text:
            for start, end, kind in find(text, known):
                found.setdefault(text[start:end], kind)
    return list(found.items())


_PLACED = re.compile(r"\[REDACTED:([a-z_]+)\]")


def holds_placeholder(text: str) -> bool:
    """Whether `text` holds a redaction placeholder (`[REDACTED:<kind>]`): a text kept redacted
    whose secret is gone, e.g. a dataset case's reference that named a key."""
    return _PLACED.search(text) is not None


def value_holds_placeholder(value: Any) -> bool:
    """Whether any string inside a JSON-like value (dict keys and values, lists) holds a
    placeholder: e.g. an expected tool call or a JSON Schema kept redacted."""
    if isinstance(value, str):
        return holds_placeholder(value)
    if isinstance(value, list | tuple):
        return any(value_holds_placeholder(v) for v in value)
    if isinstance(value, dict):
        return any(
            value_holds_placeholder(k) or value_holds_placeholder(v) for k, v in value.items()
        )
    return False


def first_secret(value: Any, known: Iterable[Known] = ()) -> tuple[str, str] | None:
    """Where the first secret inside a JSON-like value is: `(path, kind)`, the path relative to
    `value` (`".options.token"`, `".headers[0]"`, `""` for a string), or None when it holds none.

    Read as `redact_value` reads (a dict's string value after its key); never returns the secret.
    """
    known = tuple(known)

    def walk(node: Any, path: str, context: str) -> tuple[str, str] | None:
        if isinstance(node, str):
            out = redact(node, known, context=context)
            if out == node:
                return None
            kinds = [m.group(1) for m in _PLACED.finditer(out) if m.group(0) not in node]
            return path, (kinds or ["secret"])[0]
        if isinstance(node, list | tuple):
            for i, item in enumerate(node):
                if (hit := walk(item, f"{path}[{i}]", "")) is not None:
                    return hit
        elif isinstance(node, dict):
            for key, item in node.items():
                step = f"{path}.{key}"
                if isinstance(key, str) and (hit := walk(key, step, "")) is not None:
                    return hit
                if (hit := walk(item, step, f"{key}=" if isinstance(key, str) else "")) is not None:
                    return hit
        return None

    return walk(value, "", "")


def redact_value(value: Any, known: Iterable[Known] = ()) -> Any:
    """`redact` applied to every string inside a JSON-like value (dict keys and values, lists,
    strings); a dict's string value is read as the value of its key
    (`{"AWS_SECRET_ACCESS_KEY": "..."}`)."""
    known = tuple(known)
    if isinstance(value, str):
        return redact(value, known)
    if isinstance(value, list | tuple):
        return [redact_value(v, known) for v in value]
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = redact(k, known) if isinstance(k, str) else k
            # A value is read after its key (`"aws_secret_access_key": "..."` is a key=value
            # context).
            out[key] = (
                redact(v, known, context=f"{k}=")
                if isinstance(v, str) and isinstance(k, str)
                else redact_value(v, known)
            )
        return out
    return value
