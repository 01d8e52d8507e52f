"""The model judge's pure rules (docs/concepts/verdicts.md, docs/guides/judges.md): its spec, rubric
fingerprint, criteria scoping, prompt, reply parsing, majority and invalidity rules, and how the
judge joins grading (`scorers.grade`/`combine`) and baseline choice (`baseline`).

Expected values are hand-computed literals.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

import pytest
from pydantic import ValidationError

from chalicelib.domain import judge_rules as rules
from chalicelib.domain.baseline_rules import (
    ArmRecord,
    default_baseline,
    reusable_baseline,
)
from chalicelib.domain.enums import AttemptState
from chalicelib.domain.judge_rules import (
    Criterion,
    JudgeReplyError,
    JudgeSpec,
    applicable_criteria,
    fingerprint,
    fingerprint_key,
    invalid_reason,
    majority_judge,
    messages,
    not_graded,
    parse_reply,
    rubric_hash,
    score_judge_key,
)
from chalicelib.domain.models import AgentAnswer, Case, ScoreResult, ScoringConfig
from chalicelib.domain.scorers import (
    SCORERS,
    JudgeScorer,
    applicable_scorers,
    combine,
    grade,
    is_gradable,
    validate_checks,
    validate_scoring,
)
from chalicelib.errors import InvalidInputError

# --- helpers ---------------------------------------------------------------------------------


def crit(cid: str, text: str = "Is correct", tags: list[str] | None = None) -> Criterion:
    return Criterion(criterion_id=cid, text=text, tags=tags or [])


def spec(*criteria: Criterion, **fields: Any) -> JudgeSpec:
    return JudgeSpec(
        model_profile_id=fields.pop("model_profile_id", "prof-1"),
        criteria=list(criteria) or [crit("a")],
        **fields,
    )


def case(**fields: Any) -> Case:
    return Case(
        case_id=fields.pop("case_id", "c1"), input=fields.pop("input", "What is 2+2?"), **fields
    )


def reply(*grades: tuple[str, Any] | tuple[str, Any, str]) -> str:
    items = []
    for g in grades:
        item: dict[str, Any] = {"criterion_id": g[0], "score": g[1]}
        if len(g) > 2:
            item["reason"] = g[2]
        items.append(item)
    return json.dumps({"grades": items})


FP = {
    "judge_id": "j1",
    "judge_version": 2,
    "model": "gpt-x",
    "rubric_hash": "0123456789abcdef0123456789",
    "prompt_version": "1",
}
TWO = spec(crit("a", "Answers the question"), crit("b", "Cites a source"))


# --- JudgeSpec validation ------------------------------------------------------------------------


def test_spec_defaults_are_scale_5_threshold_4_temperature_0_prompt_1_no_instructions():
    s = JudgeSpec(model_profile_id="p", criteria=[crit("a")])
    assert s.scale_max == 5
    assert s.threshold == 4
    assert s.temperature == 0.0
    assert s.prompt_version == "1"
    assert s.instructions == ""


def test_threshold_above_scale_max_is_refused():
    with pytest.raises(ValidationError, match="threshold must be at most scale_max"):
        spec(scale_max=5, threshold=6)


def test_threshold_equal_to_scale_max_is_allowed():
    s = spec(scale_max=5, threshold=5)
    assert (s.scale_max, s.threshold) == (5, 5)


def test_default_threshold_4_is_refused_on_a_scale_of_3():
    with pytest.raises(ValidationError, match="threshold must be at most scale_max"):
        spec(scale_max=3)


def test_a_criterion_id_used_twice_is_refused():
    with pytest.raises(ValidationError, match="a criterion_id is used twice"):
        spec(crit("a", "one"), crit("b"), crit("a", "two"))


def test_an_unknown_prompt_version_is_refused_naming_the_known_ones():
    with pytest.raises(ValidationError, match=r"unknown judge prompt version \(known: 1\)"):
        spec(prompt_version="2")


@pytest.mark.parametrize(
    "fields",
    [
        {"scale_max": 1, "threshold": 1},
        {"scale_max": 11},
        {"threshold": 0},
        {"temperature": -0.1},
        {"temperature": 2.5},
        {"instructions": "x" * 4001},
        {"model_profile_id": ""},
    ],
)
def test_out_of_bounds_fields_are_refused(fields):
    with pytest.raises(ValidationError):
        spec(**fields)


def test_bounds_edges_are_accepted():
    s = spec(scale_max=10, threshold=1, temperature=2, instructions="x" * 4000)
    assert (s.scale_max, s.threshold, s.temperature) == (10, 1, 2.0)
    assert spec(scale_max=2, threshold=2).scale_max == 2


def test_a_spec_needs_at_least_one_criterion():
    with pytest.raises(ValidationError):
        JudgeSpec(model_profile_id="p", criteria=[])


@pytest.mark.parametrize("cid", ["", "has space", "x" * 65, "slash/no"])
def test_bad_criterion_ids_are_refused(cid):
    with pytest.raises(ValidationError):
        Criterion(criterion_id=cid, text="t")


def test_criterion_text_must_not_be_empty():
    with pytest.raises(ValidationError):
        Criterion(criterion_id="a", text="")


# --- rubric hash and fingerprint -----------------------------------------------------------------


def test_rubric_hash_is_the_sha256_of_the_canonical_rubric_fields_only():
    s = JudgeSpec(model_profile_id="p", criteria=[crit("a", "Is correct")], temperature=0.5)
    canonical = (
        '{"criteria":[{"criterion_id":"a","tags":[],"text":"Is correct"}],'
        '"instructions":"","scale_max":5,"threshold":4}'
    )
    assert rubric_hash(s) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()


BASE_SPEC = spec(
    crit("a", "Answers the question"),
    crit("b", "Cites a source", ["research"]),
    instructions="Be strict.",
)


@pytest.mark.parametrize(
    "changed",
    [
        spec(
            crit("a", "Answers the question well"),
            crit("b", "Cites a source", ["research"]),
            instructions="Be strict.",
        ),  # a criterion's text
        spec(
            crit("a", "Answers the question"),
            crit("b", "Cites a source", ["news"]),
            instructions="Be strict.",
        ),  # a tag scope
        spec(
            crit("a", "Answers the question"),
            crit("b", "Cites a source"),
            instructions="Be strict.",
        ),  # scope removed
        spec(
            crit("a", "Answers the question"),
            crit("b", "Cites a source", ["research"]),
            instructions="Be strict.",
            threshold=3,
        ),  # threshold
        spec(
            crit("a", "Answers the question"),
            crit("b", "Cites a source", ["research"]),
            instructions="Be lenient.",
        ),  # instructions
        spec(
            crit("a", "Answers the question"),
            crit("b", "Cites a source", ["research"]),
            instructions="Be strict.",
            scale_max=7,
        ),  # scale
        spec(
            crit("a", "Answers the question"),
            crit("c", "Cites a source", ["research"]),
            instructions="Be strict.",
        ),  # a criterion id
        spec(crit("a", "Answers the question"), instructions="Be strict."),  # a criterion dropped
    ],
    ids=[
        "text",
        "tags",
        "unscoped",
        "threshold",
        "instructions",
        "scale",
        "criterion_id",
        "dropped",
    ],
)
def test_rubric_hash_changes_with_every_rubric_part(changed):
    assert rubric_hash(changed) != rubric_hash(BASE_SPEC)


def test_rubric_hash_ignores_model_profile_temperature_and_prompt_version(monkeypatch):
    monkeypatch.setitem(rules.PROMPTS, "2", rules.PROMPT_V1 + " (v2)")
    same = BASE_SPEC.model_copy(
        update={"model_profile_id": "other-profile", "temperature": 1.5, "prompt_version": "2"}
    )
    assert (same.model_profile_id, same.temperature, same.prompt_version) == (
        "other-profile",
        1.5,
        "2",
    )
    assert rubric_hash(same) == rubric_hash(BASE_SPEC)
    assert rubric_hash(spec(crit("a"), model_profile_id="x", temperature=0)) == rubric_hash(
        spec(crit("a"), model_profile_id="y", temperature=1)
    )


def test_rubric_hash_is_stable_for_equal_specs():
    assert rubric_hash(spec(crit("a", "t", ["x"]))) == rubric_hash(spec(crit("a", "t", ["x"])))


def test_fingerprint_records_judge_version_model_rubric_and_prompt():
    s = JudgeSpec(model_profile_id="p", criteria=[crit("a", "Is correct")])
    rh = hashlib.sha256(
        b'{"criteria":[{"criterion_id":"a","tags":[],"text":"Is correct"}],'
        b'"instructions":"","scale_max":5,"threshold":4}'
    ).hexdigest()
    assert fingerprint("judge-1", 3, "claude-x", s) == {
        "judge_id": "judge-1",
        "judge_version": 3,
        "model": "claude-x",
        "rubric_hash": rh,
        "prompt_version": "1",
    }


def test_prompt_version_is_its_own_fingerprint_part(monkeypatch):
    monkeypatch.setitem(rules.PROMPTS, "2", rules.PROMPT_V1)
    v1 = fingerprint("j", 1, "m", BASE_SPEC)
    v2 = fingerprint("j", 1, "m", BASE_SPEC.model_copy(update={"prompt_version": "2"}))
    assert v1["rubric_hash"] == v2["rubric_hash"]
    assert (v1["prompt_version"], v2["prompt_version"]) == ("1", "2")
    assert fingerprint_key(v1) != fingerprint_key(v2)


def test_fingerprint_key_joins_id_version_model_rubric_prefix_and_prompt():
    assert fingerprint_key(FP) == "j1@2|gpt-x|0123456789abcdef|prompt 1"


@pytest.mark.parametrize(
    "part, value",
    [
        ("judge_id", "j2"),
        ("judge_version", 3),
        ("model", "gpt-y"),
        ("rubric_hash", "f123456789abcdef0123"),
        ("prompt_version", "2"),
    ],
)
def test_fingerprint_key_differs_when_any_part_differs(part, value):
    assert fingerprint_key({**FP, part: value}) != fingerprint_key(FP)


def test_fingerprint_key_uses_only_the_first_16_rubric_hash_characters():
    assert fingerprint_key({**FP, "rubric_hash": "0123456789abcdefXXXX"}) == fingerprint_key(FP)


def test_fingerprint_key_of_a_sparse_fingerprint_reads_missing_parts_as_none():
    assert fingerprint_key({}) == "None@None|None|None|prompt None"


# --- applicable criteria --------------------------------------------------------------------------

U = crit("u", "Polite")
MATH = crit("m", "Shows working", ["math", "arith"])
GEO = crit("g", "Names the country", ["geo"])


def test_an_unscoped_criterion_applies_to_every_case():
    assert applicable_criteria(case(), [U]) == [U]
    assert applicable_criteria(case(tags=["anything"]), [U]) == [U]


def test_a_scoped_criterion_applies_only_when_a_tag_matches():
    assert applicable_criteria(case(tags=["math"]), [U, MATH, GEO]) == [U, MATH]
    assert applicable_criteria(case(tags=["geo", "other"]), [U, MATH, GEO]) == [U, GEO]


def test_a_case_with_several_matching_tags_gets_the_criterion_once():
    assert applicable_criteria(case(tags=["math", "arith", "geo"]), [U, MATH, GEO]) == [
        U,
        MATH,
        GEO,
    ]


def test_unmatched_criteria_are_omitted_entirely():
    assert applicable_criteria(case(), [U, MATH, GEO]) == [U]
    assert applicable_criteria(case(tags=["history"]), [MATH, GEO]) == []


def test_applicable_criteria_keep_the_spec_order():
    assert applicable_criteria(case(tags=["geo", "math"]), [GEO, U, MATH]) == [GEO, U, MATH]


# --- messages -------------------------------------------------------------------------------------


def test_system_prompt_carries_the_scale_and_the_instructions():
    s = spec(crit("a"), scale_max=7, threshold=5, instructions="  Penalise guessing.  ")
    system, _ = messages(s, case(), "4", s.criteria)
    assert "from 1 (not met at all) to 7 (fully met)" in system
    assert '"score": <1-7>' in system
    assert "what a correct answer would say. Penalise guessing.\n" in system
    assert "{" + "scale_max" not in system and "{instructions}" not in system


def test_system_prompt_without_instructions_has_nothing_extra():
    s = spec(crit("a"))
    system, _ = messages(s, case(), "4", s.criteria)
    assert "what a correct answer would say.\nReply with JSON only" in system
    assert "from 1 (not met at all) to 5 (fully met)" in system
    blank, _ = messages(spec(crit("a"), instructions="   "), case(), "4", s.criteria)
    assert blank == system


def test_instructions_with_braces_are_kept_verbatim():
    s = spec(crit("a"), instructions="Expect {json} output.")
    system, _ = messages(s, case(), "4", s.criteria)
    assert "would say. Expect {json} output.\n" in system


def test_user_message_lists_question_reference_answer_and_the_given_criteria_only():
    s = spec(U, MATH, GEO)
    _, user = messages(s, case(input="What is 2+2?", reference="4"), "It is 4.", [U, MATH])
    assert user == (
        "QUESTION:\nWhat is 2+2?\n\nREFERENCE ANSWER:\n4\n\nANSWER:\nIt is 4.\n\n"
        "CRITERIA:\n- u: Polite\n- m: Shows working"
    )
    assert "Names the country" not in user


def test_user_message_says_none_given_without_a_reference():
    _, user = messages(spec(U), case(input="Q?"), "A.", [U])
    assert (
        user == "QUESTION:\nQ?\n\nREFERENCE ANSWER:\n(none given)\n\nANSWER:\nA.\n\n"
        "CRITERIA:\n- u: Polite"
    )


def test_an_empty_reference_is_not_none_given():
    _, user = messages(spec(U), case(input="Q?", reference=""), "A.", [U])
    assert "REFERENCE ANSWER:\n\n\nANSWER:" in user


# --- parse_reply ----------------------------------------------------------------------------------


def test_plain_json_reply_passing_every_criterion():
    result = parse_reply(reply(("a", 5, "on point"), ("b", 4)), TWO, TWO.criteria, FP)
    assert result == ScoreResult(
        scorer="judge", passed=True, score=0.9, reason="a: 5/5 (on point); b: 4/5", fingerprint=FP
    )


def test_grades_5_and_3_on_scale_5_fail_with_score_0_8_and_only_the_failing_reason():
    result = parse_reply(reply(("a", 5, "on point"), ("b", 3, "no source")), TWO, TWO.criteria, FP)
    assert result.passed is False
    assert result.score == pytest.approx(0.8)
    assert result.reason == "b: 3/5 (no source)"


def test_a_secret_where_a_long_reason_is_cut_is_redacted_before_the_cut():
    # The cut falls inside the key: cut first, and the 10 characters left would not be recognized.
    reason = "x" * 489 + " AKIAIOSFODNN7EXAMPLE and more"
    result = parse_reply(reply(("a", 1, reason), ("b", 5)), TWO, TWO.criteria, FP)
    assert "AKIAIOSFOD" not in result.reason
    assert result.reason == "a: 1/5 (" + "x" * 489 + " [REDACTED:…)"


def test_every_failing_criterion_is_shown():
    result = parse_reply(reply(("a", 1, "wrong"), ("b", 2)), TWO, TWO.criteria, FP)
    assert result.passed is False
    assert result.score == pytest.approx(0.3)
    assert result.reason == "a: 1/5 (wrong); b: 2/5"


def test_grade_equal_to_threshold_passes_one_below_fails():
    s = spec(crit("a"), threshold=4)
    assert parse_reply(reply(("a", 4)), s, s.criteria, FP).passed is True
    assert parse_reply(reply(("a", 3)), s, s.criteria, FP).passed is False


def test_score_is_over_scale_max_times_criteria_count():
    s = spec(crit("a"), crit("b"), crit("c"), scale_max=10, threshold=7)
    result = parse_reply(reply(("a", 10), ("b", 7), ("c", 7)), s, s.criteria, FP)
    assert result.passed is True
    assert result.score == pytest.approx(0.8)
    assert result.reason == "a: 10/10; b: 7/10; c: 7/10"


def test_json_in_prose_is_read():
    text = "Here are my grades:\n" + reply(("a", 5), ("b", 5)) + "\nHope this helps."
    result = parse_reply(text, TWO, TWO.criteria, FP)
    assert (result.passed, result.score) == (True, 1.0)


def test_json_in_a_json_code_fence_is_read():
    text = "```json\n" + reply(("a", 4), ("b", 2, "none")) + "\n```"
    result = parse_reply(text, TWO, TWO.criteria, FP)
    assert result.passed is False
    assert result.score == pytest.approx(0.6)
    assert result.reason == "b: 2/5 (none)"


def test_a_missing_criterion_is_refused_naming_it():
    with pytest.raises(JudgeReplyError, match="the judge gave no grade for b"):
        parse_reply(reply(("a", 5)), TWO, TWO.criteria, FP)


def test_only_the_asked_criteria_are_required():
    # b was scoped out of this case: a reply grading only a is complete.
    result = parse_reply(reply(("a", 5)), TWO, [TWO.criteria[0]], FP)
    assert (result.passed, result.score, result.reason) == (True, 1.0, "a: 5/5")


@pytest.mark.parametrize("value", [2.5, True, False, 0, 6, -1, "4", None, [4]])
def test_bad_scores_are_refused(value):
    with pytest.raises(JudgeReplyError):
        parse_reply(reply(("a", 5), ("b", value)), TWO, TWO.criteria, FP)


def test_non_integer_score_message_and_out_of_range_message():
    with pytest.raises(JudgeReplyError, match=r"criterion b: score 2\.5 is not a whole number"):
        parse_reply(reply(("a", 5), ("b", 2.5)), TWO, TWO.criteria, FP)
    with pytest.raises(JudgeReplyError, match=r"criterion b: score 6 is outside 1\.\.5"):
        parse_reply(reply(("a", 5), ("b", 6)), TWO, TWO.criteria, FP)
    with pytest.raises(JudgeReplyError, match=r"criterion b: score True is not a whole number"):
        parse_reply(reply(("a", 5), ("b", True)), TWO, TWO.criteria, FP)


def test_range_follows_the_spec_scale():
    s = spec(crit("a"), scale_max=10, threshold=6)
    assert parse_reply(reply(("a", 10)), s, s.criteria, FP).score == 1.0
    with pytest.raises(JudgeReplyError):
        parse_reply(reply(("a", 11)), s, s.criteria, FP)


def test_an_integral_float_is_accepted_as_its_integer():
    result = parse_reply(reply(("a", 4.0), ("b", 5)), TWO, TWO.criteria, FP)
    assert (result.passed, result.score, result.reason) == (True, 0.9, "a: 4/5; b: 5/5")


def test_extra_unknown_criterion_ids_are_ignored():
    result = parse_reply(reply(("a", 5), ("zzz", 1, "noise"), ("b", 5)), TWO, TWO.criteria, FP)
    assert (result.passed, result.score, result.reason) == (True, 1.0, "a: 5/5; b: 5/5")


def test_entries_without_a_string_criterion_id_are_skipped():
    text = (
        '{"grades": [{"criterion_id": 7, "score": 0}, "junk", {"score": 1}, '
        '{"criterion_id": "a", "score": 5}, {"criterion_id": "b", "score": 4}]}'
    )
    result = parse_reply(text, TWO, TWO.criteria, FP)
    assert (result.passed, result.score) == (True, 0.9)


@pytest.mark.parametrize(
    "text", ["no json at all", "", "[1, 2]", '{"grades": {"a": 5}}', '{"marks": []}', "{not json}"]
)
def test_replies_without_a_grades_list_are_refused(text):
    with pytest.raises(JudgeReplyError):
        parse_reply(text, TWO, TWO.criteria, FP)


def test_a_reply_reason_is_cut_to_500_characters():
    result = parse_reply(reply(("a", 1, "x" * 600), ("b", 5)), TWO, TWO.criteria, FP)
    assert result.reason == "a: 1/5 (" + "x" * 500 + "…)"


def test_the_fingerprint_is_copied_onto_the_score():
    fp = dict(FP)
    result = parse_reply(reply(("a", 5), ("b", 5)), TWO, TWO.criteria, fp)
    assert result.fingerprint == FP
    assert result.fingerprint is not fp
    assert result.scorer == "judge"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_scores_are_refused_as_a_reply_error(literal):
    text = (
        '{"grades": [{"criterion_id": "a", "score": 5}, {"criterion_id": "b", "score": '
        + literal
        + "}]}"
    )
    with pytest.raises(JudgeReplyError):
        parse_reply(text, TWO, TWO.criteria, FP)


def test_a_malformed_grade_of_a_criterion_not_asked_is_ignored():
    only_a = [TWO.criteria[0]]
    text = '{"grades": [{"criterion_id": "a", "score": 5}, {"criterion_id": "b", "score": 0}]}'
    assert parse_reply(text, TWO, only_a, FP).passed is True


def test_braces_in_prose_around_the_grades_do_not_hide_them():
    text = (
        'Sure: {"grades": [{"criterion_id": "a", "score": 5}, {"criterion_id": "b", "score": '
        "4}]} (note: {x})"
    )
    assert parse_reply(text, TWO, TWO.criteria, FP).passed is True
    with pytest.raises(JudgeReplyError, match="no JSON object with"):
        parse_reply('{"verdict": "fine"}  {"x": 1}', TWO, TWO.criteria, FP)


def test_no_criterion_asked_is_a_reply_error_not_a_crash():
    with pytest.raises(JudgeReplyError):
        parse_reply('{"grades": []}', TWO, [], FP)


def test_rubric_hash_ignores_edits_that_do_not_change_the_grading():
    base = spec(crit("a", "t", ["x", "y"]), crit("b", "u"), instructions="Be fair.")
    assert rubric_hash(base) == rubric_hash(
        spec(crit("b", "u"), crit("a", "t", ["y", "x"]), instructions=" Be fair.\n")
    )


# --- not_graded and score_judge_key ---------------------------------------------------------------


def test_not_graded_decides_nothing_and_keeps_the_fingerprint():
    fp = dict(FP)
    result = not_graded("judge failed: timeout", fp)
    assert result == ScoreResult(
        scorer="judge", passed=None, score=0.0, reason="judge failed: timeout", fingerprint=FP
    )
    assert result.fingerprint is not fp


@pytest.mark.parametrize("fp", [None, {}])
def test_not_graded_without_a_fingerprint_records_none(fp):
    assert not_graded("judge skipped: budget", fp).fingerprint is None


def test_score_judge_key_is_the_key_of_the_deciding_judge_score():
    scores = [
        {"scorer": "equals", "passed": True, "fingerprint": {**FP, "judge_id": "nope"}},
        {"scorer": "judge", "passed": False, "fingerprint": FP},
    ]
    assert score_judge_key(scores) == "j1@2|gpt-x|0123456789abcdef|prompt 1"


def test_score_judge_key_ignores_judge_scores_that_decided_nothing():
    skipped = {"scorer": "judge", "passed": None, "fingerprint": {**FP, "judge_id": "skipped"}}
    decided = {"scorer": "judge", "passed": True, "fingerprint": FP}
    assert score_judge_key([skipped]) is None
    assert score_judge_key([skipped, decided]) == "j1@2|gpt-x|0123456789abcdef|prompt 1"


def test_score_judge_key_is_none_without_a_judge_or_fingerprint():
    assert score_judge_key([]) is None
    assert score_judge_key([{"scorer": "equals", "passed": True}]) is None
    assert score_judge_key([{"scorer": "judge", "passed": True, "fingerprint": None}]) is None
    assert score_judge_key([{"scorer": "judge", "passed": True, "fingerprint": {}}]) is None


# --- majority_judge -------------------------------------------------------------------------------


def key_of(t: tuple[int, str | None]) -> str | None:
    return t[1]


def test_majority_two_against_one_keeps_the_majority():
    tries = [(1, "A"), (2, "B"), (3, "A")]
    assert majority_judge(tries, key_of) == [(1, "A"), (3, "A")]


def test_majority_beats_the_earliest_try():
    tries = [(1, "B"), (2, "A"), (3, "A")]
    assert majority_judge(tries, key_of) == [(2, "A"), (3, "A")]


def test_a_tie_goes_to_the_judge_of_the_earliest_try():
    assert majority_judge([(1, "B"), (2, "A")], key_of) == [(1, "B")]
    assert majority_judge([(1, "A"), (2, "B"), (3, "B"), (4, "A")], key_of) == [(1, "A"), (4, "A")]


def test_a_tie_skips_ungraded_tries_when_finding_the_earliest_judge():
    assert majority_judge([(1, None), (2, "B"), (3, "A")], key_of) == [(1, None), (2, "B")]


def test_tries_without_a_judge_are_kept():
    tries = [(1, "A"), (2, None), (3, "A"), (4, "B")]
    assert majority_judge(tries, key_of) == [(1, "A"), (2, None), (3, "A")]


def test_a_single_judge_leaves_the_tries_unchanged():
    tries = ((1, "A"), (2, None), (3, "A"))
    kept = majority_judge(tries, key_of)
    assert kept == [(1, "A"), (2, None), (3, "A")]
    assert majority_judge([(1, None), (2, None)], key_of) == [(1, None), (2, None)]
    assert majority_judge([], key_of) == []


# --- invalid_reason -------------------------------------------------------------------------------

K1, K2 = "j1@1|m|aaaa|prompt 1", "j1@2|m|bbbb|prompt 1"


def test_the_same_judge_on_both_sides_is_valid():
    assert invalid_reason([K1], [K1]) is None
    assert invalid_reason([K1, K1, K1], [K1]) is None


def test_different_single_judges_invalidate_naming_both():
    assert invalid_reason([K1], [K2]) == (
        "the sides were graded by different judges (j1@1|m|aaaa|prompt 1 against "
        "j1@2|m|bbbb|prompt 1): a flip would say something about the grading, not the agent"
    )


@pytest.mark.parametrize(
    "cand, base", [([K1, K2], [K1]), ([K1], [K1, K2]), ([], [K1, K2]), ([K1, K2], [])]
)
def test_a_side_graded_by_two_judges_is_invalid(cand, base):
    assert invalid_reason(cand, base) == "the judge changed while the run's cases were graded"


@pytest.mark.parametrize("cand, base", [([], [K1]), ([K1], []), ([], [])])
def test_a_side_without_judge_keys_does_not_invalidate(cand, base):
    assert invalid_reason(cand, base) is None


def test_invalid_reason_accepts_one_shot_iterables():
    assert invalid_reason(iter([K1]), iter([K2])) is not None
    assert invalid_reason(iter([K1]), iter([K1])) is None


# --- JudgeScorer and grade(judge=...) -------------------------------------------------------------

JUDGE_SETTINGS = {"judge_id": "j1", "version": 2}


def resolved(s: JudgeSpec) -> dict[str, Any]:
    return {
        **JUDGE_SETTINGS,
        "resolved": {"version": 2, "spec": s.model_dump(mode="json"), "fingerprint": FP},
    }


def scoring(*required: str, **settings: dict[str, Any]) -> ScoringConfig:
    return ScoringConfig(required=list(required), settings=settings)


class Recorder:
    def __init__(self, result: ScoreResult | Exception) -> None:
        self.result = result
        self.calls: list[tuple[Case, AgentAnswer, Any]] = []

    def __call__(self, c: Case, a: AgentAnswer, settings: Any) -> ScoreResult:
        self.calls.append((c, a, settings))
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


PASS = ScoreResult(scorer="judge", passed=True, score=0.9, reason="a: 5/5", fingerprint=FP)
FAIL = ScoreResult(scorer="judge", passed=False, score=0.4, reason="a: 2/5", fingerprint=FP)


def test_judge_is_registered_under_its_name():
    assert isinstance(SCORERS["judge"], JudgeScorer)
    assert rules.JUDGE_SCORER == JudgeScorer.name == "judge"


def test_grade_asks_the_judge_with_its_settings_when_it_applies():
    fn = Recorder(PASS)
    c, a = case(), AgentAnswer(answer="4")
    config = scoring("judge", judge=JUDGE_SETTINGS)
    result = grade(c, a, config, judge=fn)
    assert fn.calls == [(c, a, JUDGE_SETTINGS)]
    assert result.state == AttemptState.PASSED
    assert result.scores == [PASS]
    assert result.reason == "judge: a: 5/5"


def test_a_failing_judge_fails_the_answer():
    result = grade(
        case(),
        AgentAnswer(answer="5"),
        scoring("judge", judge=JUDGE_SETTINGS),
        judge=Recorder(FAIL),
    )
    assert result.state == AttemptState.FAILED
    assert result.reason == "judge: a: 2/5"


def test_grade_passes_resolved_settings_and_asks_when_a_scoped_criterion_matches():
    s = spec(crit("g", "Names the country", ["geo"]))
    fn = Recorder(PASS)
    c = case(tags=["geo"])
    result = grade(c, AgentAnswer(answer="France"), scoring("judge", judge=resolved(s)), judge=fn)
    assert len(fn.calls) == 1
    assert fn.calls[0][2] == resolved(s)
    assert result.state == AttemptState.PASSED


def test_judge_not_applicable_is_not_asked_and_leaves_the_case_ungraded():
    s = spec(crit("g", "Names the country", ["geo"]), crit("h", "Dates it", ["history"]))
    fn = Recorder(PASS)
    config = scoring("judge", judge=resolved(s))
    result = grade(case(tags=["math"]), AgentAnswer(answer="4"), config, judge=fn)
    assert fn.calls == []
    assert result.state == AttemptState.UNGRADED
    assert result.scores == []
    assert result.reason == "no required scorer applies (required: judge)"
    assert applicable_scorers(case(tags=["math"]), config) == []
    assert is_gradable(case(tags=["math"]), config) is False
    assert is_gradable(case(tags=["history"]), config) is True


def test_judge_not_applicable_beside_equals_leaves_equals_to_decide():
    s = spec(crit("g", "Names the country", ["geo"]))
    fn = Recorder(FAIL)
    result = grade(
        case(reference="4"),
        AgentAnswer(answer="4"),
        scoring("equals", "judge", judge=resolved(s)),
        judge=fn,
    )
    assert fn.calls == []
    assert result.state == AttemptState.PASSED
    assert [sc.scorer for sc in result.scores] == ["equals"]


def test_judge_scorer_applies_without_a_resolved_judge():
    assert JudgeScorer().applies(case(), JUDGE_SETTINGS) is True
    assert JudgeScorer().applies(case(), {**JUDGE_SETTINGS, "resolved": None}) is True


def test_without_a_judge_callable_the_judge_is_skipped_and_the_case_incomplete():
    result = grade(
        case(), AgentAnswer(answer="4"), scoring("judge", judge=JUDGE_SETTINGS), judge=None
    )
    assert result.scores == [
        ScoreResult(scorer="judge", passed=None, reason="judge skipped: not asked")
    ]
    assert result.state == AttemptState.INCOMPLETE
    assert result.reason == "judge could not decide: judge skipped: not asked"


def test_a_failed_judge_beside_a_passing_equals_is_incomplete():
    skipped = not_graded("judge failed: timeout", FP)
    result = grade(
        case(reference="4"),
        AgentAnswer(answer="4"),
        scoring("equals", "judge", judge=JUDGE_SETTINGS),
        judge=Recorder(skipped),
    )
    assert result.state == AttemptState.INCOMPLETE
    assert result.reason == "judge could not decide: judge failed: timeout"
    assert [s.passed for s in result.scores] == [True, None]


def test_a_failed_judge_beside_a_failing_equals_is_incomplete_until_graded_again():
    skipped = not_graded("judge failed: HTTP 503", FP)
    config = scoring("equals", "judge", judge=JUDGE_SETTINGS)
    result = grade(case(reference="4"), AgentAnswer(answer="5"), config, judge=Recorder(skipped))
    assert result.state == AttemptState.INCOMPLETE
    assert result.reason == "judge could not decide: judge failed: HTTP 503"
    assert combine([result.scores[0], PASS], config).state == AttemptState.FAILED


def test_a_judge_callable_that_raises_makes_the_attempt_incomplete():
    result = grade(
        case(),
        AgentAnswer(answer="4"),
        scoring("judge", judge=JUDGE_SETTINGS),
        judge=Recorder(RuntimeError("boom")),
    )
    assert result.state == AttemptState.INCOMPLETE
    assert result.scores[0].error is True
    assert result.reason == "judge: scorer raised RuntimeError: boom"


def test_a_broken_resolved_spec_is_an_error_not_a_silent_skip():
    bad = {
        **JUDGE_SETTINGS,
        "resolved": {"version": 2, "spec": {"criteria": []}, "fingerprint": FP},
    }
    fn = Recorder(PASS)
    config = scoring("judge", judge=bad)
    result = grade(case(), AgentAnswer(answer="4"), config, judge=fn)
    assert fn.calls == []
    assert result.state == AttemptState.INCOMPLETE
    assert applicable_scorers(case(), config) == ["judge"]


def test_the_judge_end_to_end_through_parse_reply():
    s = spec(
        crit("u", "Polite"),
        crit("m", "Shows working", ["math"]),
        crit("g", "Names a country", ["geo"]),
    )
    fp = fingerprint("j1", 2, "gpt-x", s)
    seen: list[list[str]] = []

    def ask(c: Case, a: AgentAnswer, settings: Any) -> ScoreResult:
        criteria = applicable_criteria(c, s.criteria)
        seen.append([cr.criterion_id for cr in criteria])
        return parse_reply(reply(("u", 5), ("m", 3, "no working")), s, criteria, fp)

    result = grade(
        case(tags=["math"]), AgentAnswer(answer="4"), scoring("judge", judge=resolved(s)), judge=ask
    )
    assert seen == [["u", "m"]]
    assert result.state == AttemptState.FAILED
    assert result.scores[0].score == pytest.approx(0.8)
    assert result.reason == "judge: m: 3/5 (no working)"
    assert score_judge_key([result.scores[0].model_dump()]) == fingerprint_key(fp)


@pytest.mark.parametrize(
    "required, answer_text, judge_result",
    [
        (("judge",), "4", PASS),
        (("judge",), "4", FAIL),
        (("judge",), "4", not_graded("judge failed: x", FP)),
        (("equals", "judge"), "4", PASS),
        (("equals", "judge"), "4", not_graded("judge failed: x", FP)),
        (("equals", "judge"), "5", not_graded("judge failed: x", FP)),
        (("equals", "judge"), "5", PASS),
        (("equals", "judge"), "4", FAIL),
    ],
)
def test_combine_gives_the_same_grade_as_grade(required, answer_text, judge_result):
    config = scoring(*required, judge=JUDGE_SETTINGS)
    graded = grade(
        case(reference="4"), AgentAnswer(answer=answer_text), config, judge=Recorder(judge_result)
    )
    assert combine(graded.scores, config) == graded


def test_combine_replaces_a_regraded_judge_score():
    config = scoring("equals", "judge", judge=JUDGE_SETTINGS)
    first = grade(case(reference="4"), AgentAnswer(answer="4"), config, judge=None)
    assert first.state == AttemptState.INCOMPLETE
    regraded = combine([first.scores[0], PASS], config)
    assert regraded.state == AttemptState.PASSED
    assert combine([first.scores[0], FAIL], config).state == AttemptState.FAILED


def test_combine_of_no_scores_is_ungraded_naming_the_required():
    result = combine([], scoring("equals", "judge", judge=JUDGE_SETTINGS))
    assert result.state == AttemptState.UNGRADED
    assert result.reason == "no required scorer applies (required: equals, judge)"


def test_the_judge_scorer_is_never_asked_directly():
    with pytest.raises(RuntimeError, match="grade\\(judge=...\\)"):
        JudgeScorer().score(case(), AgentAnswer(answer="4"), JUDGE_SETTINGS)


@pytest.mark.parametrize(
    "settings, field",
    [
        ({"judge_id": "j1", "model": "x"}, "scoring.settings.judge.model"),
        ({}, "scoring.settings.judge.judge_id"),
        ({"judge_id": ""}, "scoring.settings.judge.judge_id"),
        ({"judge_id": 7}, "scoring.settings.judge.judge_id"),
        ({"judge_id": "j1", "version": 0}, "scoring.settings.judge.version"),
        ({"judge_id": "j1", "version": True}, "scoring.settings.judge.version"),
        ({"judge_id": "j1", "version": "2"}, "scoring.settings.judge.version"),
        ({"judge_id": "j1", "version": 1.0}, "scoring.settings.judge.version"),
    ],
)
def test_bad_judge_settings_are_refused(settings, field):
    with pytest.raises(InvalidInputError) as err:
        validate_scoring(scoring("judge", judge=settings))
    assert err.value.field == field


def test_good_judge_settings_are_accepted():
    validate_scoring(scoring("judge", judge={"judge_id": "j1"}))
    validate_scoring(scoring("judge", judge={"judge_id": "j1", "version": 1}))
    validate_scoring(scoring("judge", judge={"judge_id": "j1", "version": None}))


def test_a_required_judge_needs_settings():
    with pytest.raises(InvalidInputError) as err:
        validate_scoring(scoring("judge"))
    assert err.value.field == "scoring.settings.judge"


def test_a_judge_check_on_a_case_is_refused():
    c = Case(case_id="c1", input="q", checks=[{"scorer": "judge", "judge_id": "j1"}])
    with pytest.raises(InvalidInputError) as err:
        validate_checks(c)
    assert err.value.field == "checks[0].scorer"


# --- baseline choice and the judge ----------------------------------------------------------------

HOUR = 3_600_000
NOW = 100 * HOUR
ARM = ArmRecord(
    run_id="r1",
    arm_id="baseline",
    version=3,
    spec_hash="h3",
    model="m",
    dataset_id="ds",
    dataset_version=2,
    scoring_hash="s",
    environment_id=None,
    completed_at_ms=NOW - HOUR,
    answered_here=True,
    every_case_answered=True,
)
ASK: dict[str, Any] = {
    "version": 3,
    "dataset_id": "ds",
    "scoring_hash": "s",
    "environment_id": None,
    "model": "m",
}


def reusable(records: list[ArmRecord], judge_key: str | None) -> ArmRecord | None:
    return reusable_baseline(
        records, dataset_version=2, now_ms=NOW, cache_hours=24, judge_key=judge_key, **ASK
    )


def test_an_arm_graded_by_another_judge_is_not_reused():
    assert reusable([replace(ARM, judge_key="A")], "B") is None
    assert default_baseline([replace(ARM, judge_key="A")], judge_key="B", **ASK) is None


def test_an_arm_graded_by_the_same_judge_is_reused():
    arm = replace(ARM, judge_key="A")
    assert reusable([arm], "A") == arm
    assert default_baseline([arm], judge_key="A", **ASK) == arm


def test_an_arm_no_judge_graded_matches_any_judge():
    assert reusable([ARM], "B") == ARM
    assert reusable([ARM], None) == ARM
    assert default_baseline([ARM], judge_key="B", **ASK) == ARM


def test_an_arm_graded_by_a_judge_is_not_reused_when_no_judge_grades_now():
    judged = replace(ARM, judge_key="A")
    assert reusable([judged], None) is None
    assert default_baseline([judged], **ASK) is None


def test_the_newest_arm_under_the_same_judge_wins_over_a_newer_arm_under_another():
    same = replace(ARM, run_id="same", judge_key="A", completed_at_ms=NOW - 3 * HOUR)
    other = replace(ARM, run_id="other", judge_key="B", completed_at_ms=NOW - HOUR)
    assert reusable([same, other], "A") == same
    assert default_baseline([other, same], judge_key="A", **ASK) == same


def test_missing_criteria_are_those_the_judge_lacks_or_words_otherwise_or_scopes_away() -> None:
    wanted = [
        crit("rubric-a", "Is polite", ["rubric-a"]),
        crit("rubric-b", "Is brief", ["rubric-b"]),
    ]
    assert rules.missing_criteria([*wanted], wanted) == []
    assert rules.missing_criteria([crit("rubric-a", "Is polite")], wanted) == [wanted[1]]
    assert (
        rules.missing_criteria(
            [crit("rubric-a", "Is rude", ["rubric-a"]), crit("rubric-b", "Is brief", ["other"])],
            wanted,
        )
        == wanted
    )
