"""The eval runs' response shapes: a run, its list, its progress, arms and summaries, a case's
attempts and answers, events, the comparison, the specs and their changes, the chart, and what a
grade again or a rescore did (`chalicelib.api.views` holds every other resource's).

Pure functions from frozen records or a service's return value to JSON-ready dicts, as there.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from chalicelib.api import chart_svg
from chalicelib.domain.baseline_rules import model_of
from chalicelib.domain.chart import Chart
from chalicelib.domain.enums import ArmRole, AttemptState
from chalicelib.domain.evaluations import evaluation_of, is_implied, selector_value
from chalicelib.domain.models import ScoringConfig
from chalicelib.domain.money import micros_to_usd
from chalicelib.domain.outcome import ArmResult, Comparison
from chalicelib.domain.records import (
    Arm,
    Attempt,
    Evaluation,
    Run,
)
from chalicelib.domain.replay import Replay
from chalicelib.domain.text import utf8_length
from chalicelib.domain.verdict_text import (
    compared_words,
    run_story,
    side_name,
    tested,
    verdict_phrase,
)
from chalicelib.services.answers import AnswerRead
from chalicelib.services.evaluations import EvaluationList
from chalicelib.services.grading import GradeAgain, Regraded, Rescore
from chalicelib.services.runs import CasesPage, RunEvents, RunList, RunRead, SpecChanges

# --- grading again --------------------------------------------------------------------------------


def regraded_view(r: Regraded) -> dict[str, Any]:
    """One score graded again (each of `scores` of a grade again): `{score_id, state_before,
    state, reason}` for a new grade, `{score_id, state_before, kept, reason}` for an earlier one
    kept, `{score_id, skipped}` for one somebody graded meanwhile."""
    if r.skipped is not None:
        return {"score_id": r.score_id, "skipped": r.skipped}
    if r.kept is not None:
        return {
            "score_id": r.score_id,
            "state_before": r.state_before,
            "kept": r.kept,
            "reason": r.reason,
        }
    return {
        "score_id": r.score_id,
        "state_before": r.state_before,
        "state": r.state,
        "reason": r.reason,
    }


def grade_again_view(done: GradeAgain) -> dict[str, Any]:
    """What a grade again did (`POST /eval-runs/{id}/grade-again`, each of a rescore's `runs`):
    `{run_id, graded, changed, still_ungraded, pending, judge_cost_usd, stopped, scores}`."""
    return {
        "run_id": done.run_id,
        "graded": done.graded,
        "changed": done.changed,
        "still_ungraded": done.still_ungraded,
        "pending": done.pending,
        "judge_cost_usd": micros_to_usd(done.judge_cost_micros),
        "stopped": done.stopped,
        "scores": [regraded_view(r) for r in done.scores],
    }


def rescore_view(done: Rescore) -> dict[str, Any]:
    """A dataset's rescore (`POST /datasets/{id}/scores/rescore`): `{dataset_id, runs:
    [grade_again_view], graded, changed}` (summed over its runs)."""
    return {
        "dataset_id": done.dataset_id,
        "runs": [grade_again_view(r) for r in done.runs],
        "graded": sum(r.graded for r in done.runs),
        "changed": sum(r.changed for r in done.runs),
    }


# --- eval runs -------------------------------------------------------------------------------


def progress_view(run: Run) -> dict[str, Any]:
    """A run's progress (`GET /eval-runs/{id}/progress`, `GET /api/evaluations/progress/{id}`, and
    `progress` of a run and of its events): recorded results against the total, read from the
    database (docs/guides/by-hand.md); `fraction` 0..1, `in_flight` the slots it holds."""
    expected, recorded = int(run.expected), int(run.recorded)
    return {
        "run_id": run.run_id,
        "status": run.status,
        "phase": run.phase,
        "recorded": recorded,
        "expected": expected,
        "total": expected,
        "fraction": (min(recorded, expected) / expected) if expected else 1.0,
        "passed": int(run.passed),
        "failed": int(run.failed),
        "incomplete": int(run.incomplete),
        "ungraded": int(run.ungraded),
        "in_flight": int(run.slots),
    }


def arm_view(arm: Arm) -> dict[str, Any]:
    """One arm of a run header (`arms` of every run view): its kept map without the spec (that
    needs agents:edit, `GET .../arms/{id}/spec`): `{arm_id, role, version, draft, spec_hash,
    model_profile_id, model}` (`model`: its model profile, else the model its spec names, else
    None, `replay`: how its first answers' tool calls were answered from a recording,
    `{recording_id, live_reads, label ("from recording rec-1, live reads")}`, else None), then
    `answers, rerun` for a baseline and `source_run_id, source_arm_id, source_dataset_version,
    source_completed_at` for one whose first answers are borrowed."""
    out: dict[str, Any] = {
        "arm_id": arm.arm_id,
        "role": arm.role.value,
        "version": arm.version,
        "draft": arm.draft,
        "spec_hash": arm.spec_hash,
        "model_profile_id": arm.model_profile_id,
        "model": model_of(arm.spec),
        "replay": arm.replay.view(),
    }
    if arm.role is ArmRole.BASELINE:
        out |= {"answers": arm.answers, "rerun": arm.rerun}
    if arm.source_run_id is not None:
        out |= {
            "source_run_id": arm.source_run_id,
            "source_arm_id": arm.source_arm_id,
            "source_dataset_version": arm.source_dataset_version,
            "source_completed_at": arm.source_completed_at,
        }
    return out


def summary_view(result: ArmResult) -> dict[str, Any]:
    """One arm's summary (each of `summaries` of `GET /eval-runs/{id}`): `{quality, efficiency,
    tags, could_not_run, judges}` as the outcome keeps it (docs/concepts/verdicts.md), money in
    USD."""
    return result.as_json()


def _sides(run: Run) -> tuple[str, str | None]:
    """The names of a run's first candidate and its baseline (None without one): "v4", "the
    draft"."""
    first = run.arms[0] if run.arms else None
    base = next((a for a in run.arms if a.role is ArmRole.BASELINE), None)
    candidate = (
        side_name(first.version, first.draft)
        if first
        else side_name(run.resolved_version, bool(run.draft))
    )
    return candidate, side_name(base.version, base.draft) if base else None


def run_view(run: Run, *, summaries: dict[str, ArmResult] | None = None) -> dict[str, Any]:
    """A run header (`POST /agents/{id}/eval-runs` adds `warnings`, `POST .../cancel`, each of the
    listings; `GET /eval-runs/{id}` adds more): its pins (`evaluation_id`, and the evaluation
    routes' `agentId` and `resolvedAgentVersion` beside `agent_id` and `resolved_version`), times,
    `progress`, costs in USD, tokens, arms without their specs, the kept outcome without its
    `arms`, `summaries` per arm (the outcome's, or `summaries` computed now for a run without
    one), `replay` (how its tool calls are answered from a recording, as `arm_view`'s), `tested`
    ("v4 against v3", "The draft alone"), `reruns` and `reruns_auto` (with `reruns: "auto"`: what
    was chosen and why, `{chosen, reason, from_run_id, luck, bound}`, else None) and
    `verdict_phrase` ("Breaks 2", "No
    baseline", `domain.verdict_text.verdict_phrase`)."""
    kept = run.outcome.as_json() if run.outcome else None
    settings = run.settings or {}
    resolved = int(run.resolved_version) if run.resolved_version is not None else None
    return {
        "run_id": run.run_id,
        "agent_id": run.agent_id,
        "evaluation_id": evaluation_of(run.evaluation_id, run.agent_id, run.dataset_id),
        "agentId": run.agent_id,
        "resolvedAgentVersion": resolved,
        "status": run.status,
        "phase": run.phase,
        "purpose": run.purpose,
        "candidate": run.candidate,
        "resolved_version": resolved,
        "draft": bool(run.draft),
        "spec_hash": run.spec_hash,
        "dataset_id": run.dataset_id,
        "dataset_version": int(run.dataset_version),
        "environment_id": run.environment_id,
        "created_at": run.created_at,
        "created_by": run.created_by,
        "started_at": run.started_at,
        "completed_at": run.completed_at,
        "reason": run.reason,
        "progress": progress_view(run),
        "cost_usd": micros_to_usd(int(run.cost_micros or 0)),
        "judge_cost_usd": micros_to_usd(int(run.judge_cost_micros or 0)),
        "total_cost_usd": micros_to_usd(
            int(run.cost_micros or 0) + int(run.judge_cost_micros or 0)
        ),
        "judge_calls": int(run.judge_calls or 0),
        "warnings": list(settings.get("warnings") or []),
        "gradings": run.gradings or [],
        "routed_to_review": run.routed_to_review,
        "routed_replacing": run.routed_replacing,
        "routing_error": run.routing_error,
        "recomputing": bool(run.outcome_stale),
        "tokens": {"input": int(run.input_tokens or 0), "output": int(run.output_tokens or 0)},
        "arms": [arm_view(a) for a in run.arms],
        "outcome": {k: v for k, v in kept.items() if k != "arms"} if kept else None,
        "stability": (kept or {}).get("stability"),
        "replay": Replay.of_settings(settings.get("isolation")).view(),
        "reused_baseline_run_id": settings.get("reused_baseline_run_id"),
        "suite_id": settings.get("suite_id"),
        "missing_baseline_version": settings.get("missing_baseline_version"),
        "reruns": settings.get("reruns"),
        "reruns_auto": settings.get("reruns_auto"),
        "summaries": (
            {arm_id: summary_view(r) for arm_id, r in summaries.items()}
            if summaries is not None
            else (kept or {}).get("arms")
        ),
        "tested": tested(*_sides(run)),
        "verdict_phrase": verdict_phrase(run.status, run.outcome, summaries),
    }


def evaluation_view(evaluation: Evaluation) -> dict[str, Any]:
    """An evaluation (`/api/evaluations...`): `{evaluation_id, name, agent_id, dataset_id, version
    ("latest" | "published" | number), implied, created_at, created_by, updated_at}`; an implied
    one (`implied: true`) has no creation time."""
    return {
        "evaluation_id": evaluation.evaluation_id,
        "name": evaluation.name,
        "agent_id": evaluation.agent_id,
        "dataset_id": evaluation.dataset_id,
        "version": selector_value(evaluation.version),
        "implied": is_implied(evaluation.evaluation_id),
        "created_at": evaluation.created_at or None,
        "created_by": evaluation.created_by or None,
        "updated_at": evaluation.updated_at,
    }


def evaluation_list_view(page: EvaluationList) -> dict[str, Any]:
    """A page of evaluations (`GET /api/evaluations`): `{evaluations: [evaluation_view],
    next_cursor}`."""
    return {
        "evaluations": [evaluation_view(e) for e in page.evaluations],
        "next_cursor": page.next_cursor,
    }


def run_read_view(read: RunRead) -> dict[str, Any]:
    """One run (`GET /eval-runs/{id}`): its `run_view` with `ungraded_score_ids`, `story` (what
    its console page opens on: `{phrase, headline (the comparison in the CLI's words, None without
    one), sentences, main_action ("publish" | "test_again" | None), publish_blockers,
    draft_changed, published_as (the version a draft run's unchanged draft is published as, else
    None)}`, `domain.verdict_text.run_story`) and, when read, `results` (every attempt's
    `attempt_view`, by attempt key). `published_as`: the agent's latest version when its draft is
    that version's spec (`services.runs.RunRead.published_as`), else None."""
    run = read.run
    view = run_view(run, summaries=read.summaries)
    view["ungraded_score_ids"] = read.ungraded_score_ids
    name, against = _sides(run)
    story = run_story(
        status=run.status,
        # the sentence opens on its subject: "The draft ...", but a version keeps its name, "v2 ..."
        name=name[:1].upper() + name[1:] if name.startswith("the ") else name,
        against=against,
        draft=bool(run.draft),
        draft_changed=read.draft_hash_now is not None and read.draft_hash_now != run.spec_hash,
        published_as=read.published_as,
        recorded=int(run.recorded),
        expected=int(run.expected),
        reason=run.reason,
        outcome=run.outcome,
        summaries=read.summaries,
        judge_failed=len(read.ungraded_score_ids),
        required=ScoringConfig.model_validate(run.scoring).required if run.scoring else (),
    )
    view["story"] = {
        "phrase": story.phrase,
        "headline": story.headline,
        "sentences": list(story.sentences),
        "main_action": story.main_action,
        "publish_blockers": list(story.publish_blockers),
        "draft_changed": story.draft_changed,
        "published_as": story.published_as,
    }
    if read.attempts is not None:
        view["results"] = [attempt_view(a) for a in read.attempts]
    return view


def run_list_view(page: RunList) -> dict[str, Any]:
    """A page of runs (`GET /eval-runs`, `GET /agents/{id}/eval-runs`, `GET
    /datasets/{id}/eval-runs`): `{runs: [run_view], next_cursor}`."""
    return {"runs": [run_view(r) for r in page.runs], "next_cursor": page.next_cursor}


def answer_url(run_id: str, attempt_key: str) -> str:
    """The path of `GET /eval-runs/{id}/answer` for one attempt (its key percent-encoded)."""
    return f"/api/v1/eval-runs/{run_id}/answer?attempt_key={quote(attempt_key, safe='')}"


def _answer_bytes(row: Attempt) -> int | None:
    """The whole answer's UTF-8 length: as recorded, else (an attempt recorded before it was kept)
    the inline answer's when that is all of it, else unknown (None)."""
    if row.answer_bytes is not None:
        return int(row.answer_bytes)
    if row.answer_ref:
        return None
    return utf8_length(row.answer) if row.answer is not None else 0


def attempt_view(row: Attempt) -> dict[str, Any]:
    """One attempt (`results` of `GET /eval-runs/{id}`, the cases' `attempts`, each event of `GET
    .../events`): its state, `score` (the mean of its decided scores, None without one), answer
    as kept, calls, scores, costs in USD, tokens, `latency_ms` and when it was recorded.

    The answer (issue 11, scope 7): `answer_bytes` is the whole answer's UTF-8 length in bytes;
    `answer_truncated` says it was longer than `ASSAY_ANSWER_MAX_BYTES` and is kept cut there;
    `answer_whole` is false when `answer` here is not everything the agent answered (only the
    first 1,000 characters of one kept in the bucket at `answer_ref`, or a truncated one), and
    `answer_url` (`GET /eval-runs/{id}/answer`) then gives all that is kept.
    """
    scores = row.scores or []
    decided = [s.get("score", 0.0) for s in scores if s.get("passed") is not None]
    has_answer = row.answer is not None
    return {
        "attempt_key": row.attempt_key,
        "arm_id": row.arm_id,
        "case_id": row.case_id,
        "attempt": int(row.attempt),
        "state": row.state,
        "passed": row.state == AttemptState.PASSED,
        "score": (sum(decided) / len(decided)) if decided else None,
        "answer": row.answer,
        "answer_bytes": _answer_bytes(row),
        "answer_truncated": bool(row.answer_truncated),
        "answer_whole": not has_answer or not (row.answer_ref or row.answer_truncated),
        "answer_url": answer_url(row.run_id, row.attempt_key) if has_answer else None,
        "answer_ref": row.answer_ref,
        "calls": row.calls,
        "scores": scores,
        "reason": row.reason,
        "error": row.error,
        "crash": bool(row.crash),
        "guardrail": row.guardrail,
        "cost_usd": micros_to_usd(int(row.cost_micros or 0)),
        "judge_cost_usd": micros_to_usd(int(row.judge_cost_micros or 0)),
        "regraded": row.regraded or [],
        "review": row.review,
        "tokens": {"input": int(row.input_tokens or 0), "output": int(row.output_tokens or 0)},
        "latency_ms": float(row.latency_ms or 0),
        "model": row.model,
        "recorded_at": row.recorded_at,
    }


def answer_view(attempt_key: str, read: AnswerRead) -> dict[str, Any]:
    """One attempt's kept answer (`GET /eval-runs/{id}/answer?attempt_key=`): `{run_id,
    attempt_key, arm_id, case_id, attempt, answer_bytes, answer_truncated, answer}`, with `answer`
    None and `url` + `expires_in_seconds` (a presigned GET of the text) for one kept in the
    results bucket."""
    row = read.attempt
    out: dict[str, Any] = {
        "run_id": read.run_id,
        "attempt_key": attempt_key,
        "arm_id": attempt_key.partition("#")[0],
        "case_id": row.case_id,
        "attempt": int(row.attempt),
        "answer_bytes": read.answer_bytes,
        "answer_truncated": bool(row.answer_truncated),
        "answer": read.answer,
    }
    if read.url is not None:
        out |= {"url": read.url, "expires_in_seconds": read.expires_in_seconds}
    return out


def events_view(found: RunEvents) -> dict[str, Any]:
    """One long-poll of a run's live updates (`GET /eval-runs/{id}/events`, `GET
    /api/evaluations/stream/{id}`): `{run_id, events: [{type: "attempt_recorded", cursor,
    ...attempt_view}], cursor, status, progress, done}`."""
    run = found.run
    return {
        "run_id": run.run_id,
        "events": [
            {"type": "attempt_recorded", "cursor": r.recorded_key, **attempt_view(r)}
            for r in found.attempts
        ],
        "cursor": found.cursor,
        "status": run.status,
        "progress": progress_view(run),
        "done": found.done,
    }


def comparison_view(run: Run, comparison: Comparison) -> dict[str, Any]:
    """A candidate arm against the baseline (`GET /eval-runs/{id}/comparison`): `{run_id,
    status}` and the comparison as the outcome keeps it (verdict, counts, flips, pass rates,
    efficiency axes, each case's outcome) and `in_words`, the CLI's words for it ("against the
    baseline: worse; 1 confirmed regression, 0 confirmed fixes; overall: not significant (exact
    McNemar p = 1)", `domain.verdict_text.compared_words`)."""
    return {
        "run_id": run.run_id,
        "status": run.status,
        **comparison.as_json(),
        "in_words": compared_words(comparison),
    }


def cases_view(run_id: str, page: CasesPage) -> dict[str, Any]:
    """A page of a run's cases (`GET /eval-runs/{id}/cases`): `{run_id, diverged_cases, cases:
    [{case_id, expects, outcome, blocked_calls, divergent_calls, arms: {arm_id: {settled, attempts:
    [attempt_view]}}}], next_cursor}`. `blocked_calls` and `divergent_calls` count a case's calls
    of those statuses over the attempts it shows; `diverged_cases` counts the run's cases (every
    one, whatever the filters) with a divergent call (docs/guides/tools.md, "Reading the
    calls")."""
    cases = page.cases
    return {
        "run_id": run_id,
        "next_cursor": page.next_cursor,
        "diverged_cases": page.diverged_cases,
        "cases": [
            {
                "case_id": case.case_id,
                "expects": case.expects,
                "outcome": case.outcome,
                "blocked_calls": case.blocked_calls,
                "divergent_calls": case.divergent_calls,
                "arms": {
                    arm_id: {
                        "settled": side.settled,
                        "review": (
                            {
                                **side.review,
                                "by": {
                                    "user_id": side.review.get("by"),
                                    "name": page.reviewers.get(str(side.review.get("by"))),
                                },
                            }
                            if side.review
                            else None
                        ),
                        "attempts": [attempt_view(a) for a in side.attempts],
                    }
                    for arm_id, side in case.arms.items()
                },
            }
            for case in cases
        ],
    }


def arm_spec_view(run_id: str, arm: Arm) -> dict[str, Any]:
    """The spec one side ran, as copied onto the run at start (`GET
    /eval-runs/{id}/arms/{arm_id}/spec`): `{run_id, arm_id, version, draft, spec_hash, spec}`."""
    return {"run_id": run_id, **_side(arm), "spec": arm.spec}


def _side(arm: Arm) -> dict[str, Any]:
    return {
        "arm_id": arm.arm_id,
        "version": arm.version,
        "draft": arm.draft,
        "spec_hash": arm.spec_hash,
    }


def spec_changes_view(run_id: str, found: SpecChanges) -> dict[str, Any]:
    """What changed between the specs a run tested (`GET /eval-runs/{id}/spec-changes`):
    `{run_id, candidate, baseline, changes, left_out}`; each side `{arm_id, version, draft,
    spec_hash}`, each change `{path, change, before, after, lines, cut}`, `left_out` the changes
    past the first `domain.spec_diff.MAX_CHANGES` (docs/guides/console.md)."""
    return {
        "run_id": run_id,
        "candidate": _side(found.candidate),
        "baseline": _side(found.baseline),
        "changes": [change.as_json() for change in found.diff.changes],
        "left_out": found.diff.left_out,
    }


def chart_view(chart: Chart) -> dict[str, Any]:
    """The pass-rate chart (`GET …/eval-runs/chart`, docs/guides/console.md): `svg` to insert
    inline, the window (`last`, `measured`, `shown`, `switch`), the lines and the points (x the
    index oldest first, y the pass rate 0..1)."""
    return {
        "svg": chart_svg.render(chart),
        "last": str(chart.last),
        "measured": chart.measured,
        "shown": chart.shown,
        "switch": chart.switch,
        "series": [
            {"dataset_id": s.dataset_id, "name": s.name, "dash": s.dash} for s in chart.series
        ],
        "points": [
            {
                "run_id": p.run_id,
                "dataset_id": p.dataset_id,
                "x": p.x,
                "y": p.y,
                "colour": str(p.colour),
                "hollow": p.hollow,
                "label": p.label,
                "tooltip": p.tooltip,
            }
            for p in chart.points
        ],
    }
