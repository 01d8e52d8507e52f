"""The model judge's rules: its published spec, which criteria a case is graded on, the prompt it
is asked with, how its reply becomes a score, and its fingerprint (docs/concepts/verdicts.md,
docs/guides/judges.md).

Pure: asking the model is the service's job (`services.judging`); everything around the request
is here and unit-tested.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import (
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from chalicelib.domain.models import Case, Frozen, ScoreResult
from chalicelib.domain.redaction import redact
from chalicelib.domain.spec import spec_hash

JUDGE_SCORER = "judge"
"""The scorer name a dataset's `scoring.required` lists to be graded by a judge."""

PROMPT_V1 = (
    "You are a strict, impartial grader of an AI agent's answer. Grade the ANSWER to the QUESTION "
    "against each criterion separately, on a whole-number scale from 1 (not met at all) to "
    "{scale_max} (fully met). Judge only what the answer says; the reference answer, when given, "
    "is what a correct answer would say.{instructions}\n"
    'Reply with JSON only, no prose around it: {{"grades": [{{"criterion_id": "<id>", "score": '
    '<1-{scale_max}>, "reason": "<one sentence>"}}]}}, one entry for every criterion listed.'
)
PROMPTS: dict[str, str] = {"1": PROMPT_V1}
"""The judge's own prompt by version. A new wording is a new version: the fingerprint changes."""


CRITERION_ID_PATTERN = r"^[A-Za-z0-9_\-.]{1,64}$"
"""A criterion's id: 1-64 letters, digits, `_`, `-` or `.`."""
CRITERION_TEXT_CHARS = 2000
"""The longest a criterion's text may be, in characters."""
CRITERION_SOURCE_CHARS = 300
"""The longest a criterion's `source` may be, in characters."""
MAX_CRITERIA = 50
"""The most criteria one judge version holds."""


class Criterion(Frozen):
    """One thing the judge grades; scoped to cases with any of `tags` (none: every case).

    `source` says where it came from (e.g. `review item ri_...`, for a reviewer's note made a
    criterion): shown to people with the version, never asked of the judge and no part of the
    rubric (`rubric_hash`). Left out of the criterion's JSON when there is none.
    """

    # Built at the first judge spec read, not at import: most case workers never grade with a judge.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    criterion_id: str = Field(pattern=CRITERION_ID_PATTERN)
    text: str = Field(min_length=1, max_length=CRITERION_TEXT_CHARS)
    tags: list[str] = Field(default_factory=list)
    source: str | None = Field(None, min_length=1, max_length=CRITERION_SOURCE_CHARS)

    @model_serializer(mode="wrap")
    def _without_missing_source(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        if out.get("source") is None:
            out.pop("source", None)
        return out


class JudgeSpec(Frozen):
    """What a published judge version grades with (the body of `POST /judges/{id}/versions`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    model_profile_id: str = Field(min_length=1)
    """The model profile the judge is asked on (its model, price and connection settings)."""
    criteria: list[Criterion] = Field(min_length=1, max_length=MAX_CRITERIA)
    scale_max: StrictInt = Field(5, ge=2, le=10)
    """Each criterion is graded 1..scale_max."""
    threshold: StrictInt = Field(4, ge=1, validate_default=True)
    """A criterion passes at a grade >= threshold; the answer passes when every applicable one
    does."""
    prompt_version: str = "1"
    """Version of the judge's own prompt (`PROMPTS`)."""
    temperature: float = Field(0.0, ge=0, le=2, allow_inf_nan=False)
    """0 grades the same answer the same way twice; higher is allowed with a warning."""
    instructions: str = Field("", max_length=4000)
    """Extra guidance for the judge, part of the rubric."""

    @field_validator("prompt_version")
    @classmethod
    def _known_prompt(cls, value: str) -> str:
        if value not in PROMPTS:
            raise ValueError(f"unknown judge prompt version (known: {', '.join(sorted(PROMPTS))})")
        return value

    @field_validator("threshold")
    @classmethod
    def _within_scale(cls, value: int, info: ValidationInfo) -> int:
        if value > info.data.get("scale_max", 5):
            raise ValueError("threshold must be at most scale_max")
        return value

    @field_validator("criteria")
    @classmethod
    def _unique_ids(cls, value: list[Criterion]) -> list[Criterion]:
        ids = [c.criterion_id for c in value]
        if len(set(ids)) < len(ids):
            raise ValueError("a criterion_id is used twice")
        return value


def rubric_hash(spec: JudgeSpec) -> str:
    """The rubric's fingerprint: criteria (with their tag scopes), scale, threshold, instructions.

    Only what changes the grading counts: criteria in id order, tags as a set, instructions
    without surrounding whitespace (the judge is asked the same way either side of such edits).
    """
    criteria = [
        {"criterion_id": c.criterion_id, "text": c.text, "tags": sorted(set(c.tags))}
        for c in sorted(spec.criteria, key=lambda c: c.criterion_id)
    ]
    return spec_hash(
        {
            "criteria": criteria,
            "scale_max": spec.scale_max,
            "threshold": spec.threshold,
            "instructions": spec.instructions.strip(),
        }
    )


def fingerprint(judge_id: str, version: int, model: str, spec: JudgeSpec) -> dict[str, Any]:
    """What every judge score records: which judge graded it (docs/guides/judges.md)."""
    return {
        "judge_id": judge_id,
        "judge_version": version,
        "model": model,
        "rubric_hash": rubric_hash(spec),
        "prompt_version": spec.prompt_version,
    }


def fingerprint_key(fp: Mapping[str, Any]) -> str:
    """One comparable string per judge fingerprint (two scores with equal keys had the same
    judge)."""
    return (
        f"{fp.get('judge_id')}@{fp.get('judge_version')}|{fp.get('model')}|"
        f"{str(fp.get('rubric_hash'))[:16]}|prompt {fp.get('prompt_version')}"
    )


def score_judge_key(scores: Iterable[Mapping[str, Any]]) -> str | None:
    """The fingerprint key of the judge score among an attempt's scores, None when no judge graded
    it."""
    for s in scores:
        if s.get("scorer") == JUDGE_SCORER and s.get("fingerprint") and s.get("passed") is not None:
            return fingerprint_key(s["fingerprint"])
    return None


def applicable_criteria(case: Case, criteria: Sequence[Criterion]) -> list[Criterion]:
    """The criteria that grade `case`: unscoped ones, and those sharing a tag with it (a case with
    several matching tags gets each criterion once; unmatched criteria are left out entirely)."""
    tags = set(case.tags)
    return [c for c in criteria if not c.tags or tags.intersection(c.tags)]


def messages(
    spec: JudgeSpec, case: Case, answer: str, criteria: Sequence[Criterion]
) -> tuple[str, str]:
    """`(system prompt, user message)` the judge is asked with."""
    extra = f" {spec.instructions.strip()}" if spec.instructions.strip() else ""
    system = PROMPTS[spec.prompt_version].format(scale_max=spec.scale_max, instructions=extra)
    listed = "\n".join(f"- {c.criterion_id}: {c.text}" for c in criteria)
    reference = case.reference if case.reference is not None else "(none given)"
    user = (
        f"QUESTION:\n{case.input}\n\nREFERENCE ANSWER:\n{reference}\n\nANSWER:\n{answer}\n\n"
        f"CRITERIA:\n{listed}"
    )
    return system, user


class JudgeReplyError(ValueError):
    """The judge's reply could not be read as grades: the answer is not graded."""


def _grades_object(text: str) -> Any:
    """The reply's JSON object: the whole text, else the first object in it holding "grades"
    (models wrap JSON in prose or ``` fences, and prose may hold braces of its own)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    decoder = json.JSONDecoder()
    found_object = False
    for start in (i for i, ch in enumerate(text or "") if ch == "{"):
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        found_object = True
        if isinstance(value, dict) and "grades" in value:
            return value
    raise JudgeReplyError(
        'the judge\'s reply holds no JSON object with "grades"'
        if found_object
        else "the judge's reply holds no JSON object"
    )


REASON_CHARS = 500
"""How much of one criterion's reason is kept; the rest is cut, marked with an ellipsis."""


def cut_reason(text: str) -> str:
    """`text` cut to `REASON_CHARS` (redact before cutting: a secret straddling the cut would
    leave a start too short to recognize)."""
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS] + "…"


def parse_reply(
    text: str, spec: JudgeSpec, criteria: Sequence[Criterion], fp: Mapping[str, Any]
) -> ScoreResult:
    """The judge's score from its reply: passed when every criterion is graded >= threshold.

    `score` is the mean grade over `scale_max` (0..1); the reason lists each criterion's grade.
    Raises JudgeReplyError for a reply without a whole-number grade in 1..scale_max for every
    criterion asked.
    """
    if not criteria:
        raise JudgeReplyError("no criterion was asked")
    data = _grades_object(text)
    grades = data.get("grades") if isinstance(data, dict) else None
    if not isinstance(grades, list):
        raise JudgeReplyError('the judge\'s reply has no "grades" list')
    asked = {c.criterion_id for c in criteria}
    by_id: dict[str, tuple[int, str]] = {}
    for item in grades:
        # Grades of criteria nobody asked about are ignored, however malformed.
        if not isinstance(item, dict) or item.get("criterion_id") not in asked:
            continue
        value = item.get("score")
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value != int(value)
        ):
            raise JudgeReplyError(
                f"criterion {item['criterion_id']}: score {value!r} is not a whole number"
            )
        if not 1 <= int(value) <= spec.scale_max:
            raise JudgeReplyError(
                f"criterion {item['criterion_id']}: score {value} is outside 1..{spec.scale_max}"
            )
        earlier = by_id.get(item["criterion_id"])
        if earlier is not None and earlier[0] != int(value):
            raise JudgeReplyError(
                f"criterion {item['criterion_id']} was graded twice ({earlier[0]} and {int(value)})"
            )
        by_id[item["criterion_id"]] = (
            int(value),
            cut_reason(redact(str(item.get("reason") or ""))),
        )
    missing = [c.criterion_id for c in criteria if c.criterion_id not in by_id]
    if missing:
        raise JudgeReplyError(f"the judge gave no grade for {', '.join(missing)}")
    marks = [(c.criterion_id, *by_id[c.criterion_id]) for c in criteria]
    failing = [m for m in marks if m[1] < spec.threshold]
    shown = failing or marks
    reason = "; ".join(
        f"{cid}: {g}/{spec.scale_max}" + (f" ({why})" if why else "") for cid, g, why in shown
    )
    return ScoreResult(
        scorer=JUDGE_SCORER,
        passed=not failing,
        score=sum(g for _, g, _ in marks) / (spec.scale_max * len(marks)),
        reason=reason,
        fingerprint=dict(fp),
    )


def not_graded(reason: str, fp: Mapping[str, Any] | None) -> ScoreResult:
    """A judge score that decides nothing (the judge failed or was skipped): neither pass nor
    fail."""
    return ScoreResult(
        scorer=JUDGE_SCORER,
        passed=None,
        score=0.0,
        reason=reason,
        fingerprint=dict(fp) if fp else None,
    )


T = TypeVar("T")


def majority_judge(tries: Sequence[T], key_of: Any) -> list[T]:
    """A case's tries graded by the judge that graded most of them (docs/guides/judges.md): a case
    whose tries carry two judges' grades settles by whichever graded more of them; a tie goes to the
    judge of the earliest try. Tries no judge graded stay. `key_of(try)` gives its judge key or
    None."""
    keys = [key_of(t) for t in tries]
    counts = Counter(k for k in keys if k is not None)
    if len(counts) <= 1:
        return list(tries)
    top = max(counts.values())
    winner = next(k for k in keys if k is not None and counts[k] == top)
    return [t for t, k in zip(tries, keys, strict=True) if k is None or k == winner]


def invalid_reason(candidate_keys: Iterable[str], baseline_keys: Iterable[str]) -> str | None:
    """Why two sides' grades cannot be compared, or None: a judge that changed within a side, or
    sides graded by different judges (model, version, rubric or prompt)."""
    cand, base = set(candidate_keys), set(baseline_keys)
    if len(cand) > 1 or len(base) > 1:
        return "the judge changed while the run's cases were graded"
    if cand and base and cand != base:
        return (
            f"the sides were graded by different judges ({next(iter(cand))} against "
            f"{next(iter(base))}): a flip would say something about the grading, not the agent"
        )
    return None


@dataclass(frozen=True)
class Republished:
    """The one judge that graded both sides of a comparison, at two of its publications: `before`
    graded the baseline, `after` the candidate."""

    judge_id: str
    before: int
    after: int


def score_publication(scores: Iterable[Mapping[str, Any]]) -> tuple[str, int] | None:
    """`(judge_id, version)` of the judge score that decided among an attempt's scores (the one
    `score_judge_key` keys), None when no judge decided it or its fingerprint names no version."""
    for s in scores:
        if s.get("scorer") == JUDGE_SCORER and s.get("fingerprint") and s.get("passed") is not None:
            fp = s["fingerprint"]
            version = fp.get("judge_version")
            if not fp.get("judge_id") or isinstance(version, bool | str) or version is None:
                return None
            try:
                number = int(version)
            except (TypeError, ValueError, OverflowError):
                return None
            return (str(fp["judge_id"]), number) if number == version else None
    return None


def republished(
    candidate: Iterable[tuple[str, int]], baseline: Iterable[tuple[str, int]]
) -> Republished | None:
    """The judge published again between two sides' gradings, or None (docs/guides/suites.md).

    `candidate` and `baseline` are the `(judge_id, version)` publications that graded each side
    (`score_publication`). Only one publication on each side, of the same judge at two versions,
    is a republish: a judge that changed within a side, two different judges, the same
    publication on both sides or a side no judge graded is None.
    """
    cand, base = set(candidate), set(baseline)
    if len(cand) != 1 or len(base) != 1:
        return None
    (now_id, now), (then_id, then) = next(iter(cand)), next(iter(base))
    if now_id != then_id or now == then:
        return None
    return Republished(now_id, before=then, after=now)


def missing_criteria(have: Sequence[Criterion], wanted: Sequence[Criterion]) -> list[Criterion]:
    """The `wanted` criteria (an imported file's rubrics, issue 13) that a judge's `have` does
    not grade as wanted: one is there when a criterion of the same id has the same text and
    reaches its tags (no tags, or one of them)."""
    by_id = {c.criterion_id: c for c in have}
    out = []
    for want in wanted:
        got = by_id.get(want.criterion_id)
        if (
            got is None
            or got.text.strip() != want.text.strip()
            or (got.tags and not set(got.tags) & set(want.tags))
        ):
            out.append(want)
    return out
