"""What the console says about a run (docs/guides/console.md), with hand-worked values."""

from __future__ import annotations

from chalicelib.domain import verdict_text
from chalicelib.domain.outcome import Comparison, Outcome
from chalicelib.domain.verdict_text import run_story, verdict_phrase

QUESTION = "Janet’s ducks lay 16 eggs per day. How much does she make?"


def outcome(*, comparison=None, passed=22, total=40, ungraded=0, incomplete=0, arms=None):
    return Outcome.model_validate(
        {
            "arm_id": "candidate",
            "total": total,
            "passed": passed,
            "failed": total - passed - ungraded - incomplete,
            "incomplete": incomplete,
            "ungraded": ungraded,
            "crashed": 0,
            "pass_rate": passed / (total - ungraded - incomplete),
            "first_pass_rate": passed / total,
            "average_score": None,
            "verdict": "partial",
            "undecided": ungraded + incomplete,
            "arms": arms or {},
            "comparison": comparison,
        }
    )


def comparison(broke=0, fixed=0, overall=None, flips=(), **extra):
    return Comparison.model_validate(
        {
            "candidate_arm_id": "candidate",
            "baseline_arm_id": "baseline",
            "baseline": {"version": 3},
            "verdict": "worse" if broke else ("better" if fixed else "no_difference"),
            "overall": overall,
            "confirmed_regressions": broke,
            "confirmed_fixes": fixed,
            "flips": list(flips),
            "pass_rate_before": 0.45,
            "pass_rate_after": 0.55,
            **extra,
        }
    )


def flip(outcome_, tries):
    return {
        "case_id": "gsm8k-1",
        "outcome": outcome_,
        "confirmed": True,
        "question": QUESTION,
        "candidate_tries": tries,
        "baseline_tries": ["passed"] * len(tries),
    }


def test_the_table_phrases():
    assert verdict_phrase("running", None) == "Pending"
    assert verdict_phrase("queued", None) == "Pending"
    assert verdict_phrase("completed", outcome()) == "No baseline"
    assert verdict_phrase("completed", outcome(comparison=comparison(broke=2))) == "Breaks 2"
    worse = comparison(broke=4, overall="worse")
    assert verdict_phrase("completed", outcome(comparison=worse)) == "Worse overall · 4 broke"
    assert verdict_phrase("completed", outcome(comparison=comparison(fixed=3))) == "Fixes 3"
    better = comparison(fixed=11, overall="better")
    assert verdict_phrase("completed", outcome(comparison=better)) == "Better overall · 11 fixed"
    assert verdict_phrase("completed", outcome(comparison=comparison(1, 2))) == "Breaks 1 · fixes 2"
    assert verdict_phrase("completed", outcome(comparison=comparison())) == "No change"
    assert verdict_phrase("cancelled", None) == "Cancelled"
    assert verdict_phrase("failed", None) == "Failed"


def test_a_side_that_could_not_run_says_so_instead_of_a_verdict():
    broken = comparison(could_not_run={"candidate": "setup error: no such tool"})
    assert verdict_phrase("completed", outcome(comparison=broken)) == "Could not run"
    arm = {
        "quality": {
            "cases": 2,
            "passed": 0,
            "failed": 2,
            "incomplete": 0,
            "ungraded": 0,
            "crashed": 0,
            "pass_rate": 0.0,
            "first_pass_rate": 0.0,
            "average_score": None,
            "undecided": 0,
            "undecided_reasons": {},
        },
        "efficiency": {
            "cost_usd": 0.0,
            "cost_per_passed_case_usd": None,
            "tokens_per_case": None,
            "input_tokens": 0,
            "output_tokens": 0,
            "latency_p50_ms": None,
            "latency_p95_ms": None,
        },
        "could_not_run": "setup error",
    }
    assert verdict_phrase("completed", outcome(arms={"candidate": arm})) == "Could not run"


def test_what_was_tested_against_what():
    assert verdict_text.tested("v4", "v3") == "v4 against v3"
    assert verdict_text.tested("the draft", None) == "The draft alone"


def story(**kw):
    base = dict(
        status="completed",
        name="The draft",
        against="v3",
        draft=True,
        draft_changed=False,
        recorded=80,
        expected=80,
        reason=None,
        outcome=outcome(comparison=comparison()),
    )
    return run_story(**(base | kw))


def test_the_verdict_in_sentences_quotes_a_broken_case_with_its_tries():
    s = story(
        outcome=outcome(
            comparison=comparison(
                broke=2,
                fixed=1,
                overall="worse",
                flips=[flip("regression", ["failed", "failed", "failed"])],
                p_value=0.03125,
            )
        )
    )
    assert s.sentences == (
        "The draft breaks 2 cases and fixes 1 case every time it is asked.",
        "For example, it now fails “Janet’s ducks lay 16 eggs per day. How much does she make?” "
        "(gsm8k-1): 3 of 3 tries failed, where v3 passed it.",
        "Overall: worse (exact McNemar p = 0.0312).",
        "Pass rate 45.0% before (v3), 55.0% after.",
    )
    assert s.headline == (
        "Against v3: worse; 2 confirmed regressions, 1 confirmed fix; "
        "overall: worse (exact McNemar p = 0.0312)"
    )
    assert s.main_action is None  # a confirmed regression: Publish is not the main action
    assert s.publish_blockers == ("2 cases confirmed broken",)


def test_publish_is_the_main_action_only_when_nothing_broke_and_every_case_is_decided():
    clean = story(
        outcome=outcome(comparison=comparison(fixed=1, flips=[flip("fixed", ["passed"])]))
    )
    assert clean.main_action == "publish" and clean.publish_blockers == ()
    assert clean.sentences[2] == "Overall: not significant (no confirmed flip to test)."
    ungraded = story(outcome=outcome(comparison=comparison(), ungraded=2), required=["equals"])
    assert ungraded.main_action is None
    assert ungraded.publish_blockers == ("2 cases left unanswered or ungraded",)
    assert (
        "2 cases could not be graded (they have no reference for their scorer equals): they "
        "count as neither passed nor failed."
    ) in ungraded.sentences
    one = story(outcome=outcome(comparison=comparison(), ungraded=1), required=["regex"])
    assert (
        "1 case could not be graded (the required scorer regex does not apply to it): it "
        "counts as neither passed nor failed."
    ) in one.sentences
    assert not any("judge" in s for s in ungraded.sentences + one.sentences)
    judged = story(outcome=outcome(comparison=comparison(), incomplete=2), judge_failed=2)
    assert judged.main_action is None
    assert (
        "The judge failed to grade 2 answers: they count as neither passed nor failed until "
        "Grade again grades them, without asking the agent."
    ) in judged.sentences
    judged_one = story(outcome=outcome(comparison=comparison(), incomplete=1), judge_failed=1)
    assert (
        "The judge failed to grade 1 answer: it counts as neither passed nor failed until "
        "Grade again grades it, without asking the agent."
    ) in judged_one.sentences
    # a version's run publishes nothing; a draft that changed since is tested again
    assert story(draft=False).main_action is None
    changed = story(draft_changed=True)
    assert changed.main_action == "test_again" and changed.draft_changed
    assert changed.publish_blockers == ("the draft changed since this run",)


def test_a_draft_published_already_offers_no_publish():
    published = story(published_as=2, outcome=published_outcome())
    assert published.main_action is None and published.published_as == 2
    assert published.publish_blockers == ("the draft is published as v2",)
    # the same run while the draft is not published is the one to publish
    assert story(outcome=published_outcome()).main_action == "publish"
    # a draft that changed since is tested again, whatever was published
    changed = story(draft_changed=True, published_as=2)
    assert changed.main_action == "test_again" and changed.published_as is None
    # a version's run says nothing of the draft
    assert story(draft=False, published_as=2).published_as is None


def published_outcome():
    return outcome(comparison=comparison(fixed=1, flips=[flip("fixed", ["passed"])]))


def test_while_it_answers_and_without_a_baseline():
    running = story(status="running", recorded=12, expected=80, outcome=None)
    assert running.sentences == (
        "12 of 80 answers are in.",
        "The comparison with v3 waits for both sides.",
    )
    assert running.phrase == "Pending" and running.main_action is None
    first = story(against=None, outcome=outcome(passed=22, total=40))
    assert first.sentences == (
        "No baseline: The draft passed 22 of 40 cases (55.0%). "
        "There is nothing to compare it with yet.",
    )
    assert first.main_action == "publish"
