"""A scorer's reason never quotes a piece of a secret the answer holds (`AnswerSecrets`), with
hand-made values: a regex match touching a secret is widened to it and shown as its placeholder,
a failure quotes the answer redacted, a final number inside a secret and a JSON value that is a
piece of one are not quoted.
"""

from __future__ import annotations

from chalicelib.domain.models import AgentAnswer, Case, ScoringConfig
from chalicelib.domain.scorer_base import AnswerSecrets, final_number_at
from chalicelib.domain.scorers import grade

KEY = "AKIAZ3Q7M2P9X4K8LW5R"
ORG = "orgvalue-Qx7Lm2Pz9Wk3Hh"
ANSWER = f"the key is {KEY} and {ORG}"
PLACED_KEY = "[REDACTED:aws_access_key]"
PLACED_ORG = "[REDACTED:secret]"


def _reason(answer: str, check: dict[str, object], known: tuple[str, ...] = (ORG,)) -> str:
    case = Case(case_id="c", input="q", checks=[check])  # type: ignore[list-item]  # a plain dict as a check, as a stored case holds it
    result = grade(
        case,
        AgentAnswer(answer=answer),
        ScoringConfig(required=[str(check["scorer"])]),
        known=known,
    )
    assert not result.scores[0].error, result.scores[0]
    return result.scores[0].reason


def test_answer_secrets_widen_a_span_to_the_secrets_it_touches() -> None:
    secrets = AnswerSecrets.of(ANSWER, (ORG,))
    start = ANSWER.index(KEY) + 4
    assert secrets.touches(start, start + 16)
    assert not secrets.touches(0, 3)
    assert not secrets.touches(start, start)  # an empty match quotes nothing
    assert secrets.redacted(start, start + 16) == PLACED_KEY
    assert secrets.redacted(4, start) == f"key is {PLACED_KEY}"
    assert secrets.redacted() == f"the key is {PLACED_KEY} and {PLACED_ORG}"
    assert secrets.redacted(ANSWER.index("Qx7"), len(ANSWER)) == PLACED_ORG
    assert AnswerSecrets.of("no secret here").redacted(2, 8) == " secre"


def test_a_long_quote_is_never_cut_inside_a_placeholder() -> None:
    answer = "x" * 70 + " " + KEY
    quoted = AnswerSecrets.of(answer).quote()
    assert quoted == repr("x" * 70 + " ") + "..."


def test_a_regex_matching_a_piece_of_a_secret_quotes_its_placeholder() -> None:
    lookbehind = {"scorer": "regex", "pattern": "(?<=AKIA)[A-Z0-9]{16}"}
    assert _reason(ANSWER, lookbehind) == f"/(?<=AKIA)[A-Z0-9]{{16}}/ matched '{PLACED_KEY}'"
    tail = {"scorer": "regex", "pattern": "(?<=orgvalue-).{14}"}
    assert _reason(ANSWER, tail) == f"/(?<=orgvalue-).{{14}}/ matched '{PLACED_ORG}'"
    # Without the stored value known, only what has a secret's shape is recognized.
    assert "Qx7Lm2Pz9Wk3Hh" in _reason(ANSWER, tail, known=())
    one = {"scorer": "regex", "pattern": "(?<=AKIAZ3Q7)."}
    assert _reason(ANSWER, one) == f"/(?<=AKIAZ3Q7)./ matched '{PLACED_KEY}'"
    plain = {"scorer": "regex", "pattern": "the key"}
    assert _reason(ANSWER, plain) == "/the key/ matched 'the key'"


def test_a_failure_quotes_the_answer_with_its_secrets_as_placeholders() -> None:
    failing = {"scorer": "regex", "pattern": "^nope"}
    assert _reason(ANSWER, failing) == (
        f"expected a match for /^nope/, got 'the key is {PLACED_KEY} and {PLACED_ORG}'"
    )
    equals = {"scorer": "equals", "value": "nope"}
    assert _reason(f"  {ORG}  ", equals) == f"expected 'nope', got '{PLACED_ORG}'"
    icontains = {"scorer": "icontains", "value": ["a1", "b2"]}
    assert _reason(ORG, icontains) == (
        f"expected the answer to contain one of 'a1', 'b2' (ignoring case), got '{PLACED_ORG}'"
    )


def test_a_final_number_inside_a_secret_is_not_quoted() -> None:
    pin = "door-pin-83920174"
    at = final_number_at(f"open {pin}")
    assert at is not None and at[0] == 83920174 and f"open {pin}"[at[1] : at[2]] == "83920174"
    check = {"scorer": "numeric_answer", "value": 7}
    assert _reason(f"open {pin}", check, known=(pin,)) == (
        "expected 7, got a number written inside a secret the answer holds (not quoted)"
    )
    assert _reason(f"open {pin} in 9", check, known=(pin,)) == "expected 7, got 9"


def test_a_json_value_that_is_a_piece_of_a_secret_is_not_quoted() -> None:
    blob = '{"user": "svc", "pass": "Hunter2Hunter2"}'
    check = {
        "scorer": "json_schema",
        "schema": {"properties": {"pass": {"maxLength": 3}, "n": {"type": "string"}}},
    }
    reason = _reason(blob, check, known=(blob,))
    assert "Hunter2" not in reason
    assert reason == (
        "answer does not match the schema at $.pass (maxLength) (the answer's values are not "
        "quoted: the answer holds a secret, and a value may be a piece of it)"
    )
    # A failing value written apart from every secret is quoted as always; one also written
    # inside a secret is not (5 is a character of the key).
    other = _reason('{"n": 6, "s": "AKIAZ3Q7M2P9X4K8LW5R"}', check)
    assert other == "answer does not match the schema at $.n: 6 is not of type 'string'"
    inside = _reason('{"n": 5, "s": "AKIAZ3Q7M2P9X4K8LW5R"}', check)
    assert inside.startswith("answer does not match the schema at $.n (type) (the answer's")
