"""The review queue in the console (docs/guides/console.md, "Reviewing answers"): a dataset's
Review tab lists the answers a run sent, each beside what its case expects and every scorer's
reason; Pass moves the run's numbers and Undo puts them back; a viewer may not decide; the run's
page says what it sent, why a send fell short, sends a side's failed answers by hand and marks a
case a person decided with the reviewer's current name, "a former member" once they left."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.conftest import cases, sleepy_spec
from tests.e2e.test_review import BROKEN, publish, regressed, waiting
from tests.support.e2e import Api

IMG = '<img src=x onerror="window.__pwned=1">'


def tagged_regressed(api: Api, answers: dict[str, str]) -> tuple[str, list[dict]]:
    """As `regressed`, v2 answering `answers`, on cases tagged `math` and, odd ones, the markup
    IMG, even ones `geometry`: (dataset id, its cases)."""
    rows = [{**c, "tags": ["math", IMG if i % 2 else "geometry"]} for i, c in enumerate(cases(10))]
    ds = api.dataset(rows)
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(api, agent, sleepy_spec(answers=answers))
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True)
    assert api.wait(run["run_id"])["status"] == "completed"
    return ds, rows


def graded_by_a_judge(api: Api, ds: str, rows: list[dict]) -> str:
    """A judge (v1: one criterion, `correct`) and a new version of `ds` graded by its latest
    version; nothing asks its model here. -> the judge's id."""
    api.ok(
        "POST",
        "/api/v1/model-profiles",
        json={
            "model_profile_id": "grader",
            "model": "judge-model",
            "settings": {"base_url": "http://127.0.0.1:9/v1"},
        },
    )
    judge = api.ok("POST", "/api/v1/judges", json={"name": "quality"})["judge_id"]
    criteria = [{"criterion_id": "correct", "text": "The answer says what the reference says."}]
    api.ok(
        "POST",
        f"/api/v1/judges/{judge}/versions",
        json={"model_profile_id": "grader", "criteria": criteria},
    )
    scoring = {"required": ["judge"], "settings": {"judge": {"judge_id": judge}}}
    api.ok("POST", f"/api/v1/datasets/{ds}/versions", json={"scoring": scoring, "cases": rows})
    return judge


def review_tab(page: Page, console_url, api: Api, ds: str, state: str = "") -> None:
    page.goto(console_url(api, f"/datasets/{ds}?tab=review" + (f"&state={state}" if state else "")))


def item(page: Page, case_id: str):
    return page.locator(f'.review-item[data-case-id="{case_id}"]')


def candidate_rate(page: Page):
    return page.locator('.side[data-arm="candidate"] .side-rate')


def test_the_review_tab_decides_an_item_the_run_follows_and_undo_puts_it_back(
    api, page, console_url, shot
):
    ds, agent, run = regressed(api)
    run_id = run["run_id"]
    page.goto(console_url(api, f"/datasets/{ds}"))
    expect(page.locator("#tab-results")).to_have_attribute("aria-current", "page")
    expect(page.locator("#tab-review")).to_have_text("Review (3)")
    page.locator("#tab-review").click()
    page.wait_for_url(f"**/datasets/{ds}?tab=review")
    expect(page.locator("#tab-review")).to_have_attribute("aria-current", "page")
    expect(page.locator(".review-item")).to_have_count(3)
    card = item(page, "c005")
    expect(card.locator(".answer-text")).to_have_text("7")
    expect(card.locator(".question")).to_have_text("question 5")
    expect(card.locator(".reference")).to_have_text("42")
    expect(card.locator(".sent-why")).to_contain_text("a confirmed regression")
    expect(card.locator(".run-link")).to_have_attribute("href", f"/runs/{run_id}")
    reasons = card.locator(".scorer-reasons li")
    expect(reasons.first).to_contain_text("equals: failed — ")
    expect(card).not_to_contain_text("null")
    shot(page, "dataset-review-waiting")

    card.locator("textarea").fill("7 is right for this phrasing")
    card.get_by_role("button", name="Pass").click()
    said = page.locator("#review-said")
    expect(said).to_contain_text("You passed case c005 (overturning the scorers).")
    expect(said).to_contain_text(f"Run {run_id}: 7 → 8 passed; confirmed regressions 3 → 2")
    expect(page.locator("#tab-review")).to_have_text("Review (2)")
    expect(item(page, "c005")).to_have_count(0)
    expect(page.locator(".review-item")).to_have_count(2)

    page.locator("#review-state").select_option("decided")
    page.wait_for_url("**state=decided**")
    decided = item(page, "c005")
    expect(decided.locator(".verdict-line")).to_contain_text(f"Passed by {api.user_id}")
    expect(decided.locator(".corrected")).to_have_text("corrected")
    expect(decided.locator(".review-note-text")).to_have_text("7 is right for this phrasing")
    expect(decided).not_to_contain_text("null")
    shot(page, "dataset-review-decided")

    page.goto(console_url(api, f"/runs/{run_id}"))
    expect(candidate_rate(page)).to_contain_text("8/10 passed")
    expect(page.locator('tr[data-case-id="c005"] .review-mark')).to_have_text(
        f"candidate corrected by {api.user_id}"
    )

    review_tab(page, console_url, api, ds, "decided")
    item(page, "c005").get_by_role("button", name="Undo").click()
    expect(page.locator("#review-said")).to_contain_text(
        f"Undid the decision on case c005: it waits again. Run {run_id}: 8 → 7 passed"
    )
    expect(page.locator("#review-empty")).to_be_visible()
    expect(page.locator("#tab-review")).to_have_text("Review (3)")
    page.goto(console_url(api, f"/runs/{run_id}"))
    expect(candidate_rate(page)).to_contain_text("7/10 passed")
    expect(page.locator(".review-mark")).to_have_count(0)


def test_a_viewer_has_no_working_pass_and_a_late_decision_reads_the_apis_message(
    api, new_api, page, console_url
):
    ds, _, _ = regressed(api)
    viewer = new_api(org_id=api.org_id, user_id="viewer@example.com", role="viewer")
    review_tab(page, console_url, viewer, ds)
    card = item(page, "c002")
    expect(card.get_by_role("button", name="Pass")).to_be_disabled()
    expect(card.get_by_role("button", name="Fail")).to_be_disabled()
    expect(card).to_contain_text("You cannot decide: it needs datasets:edit.")

    review_tab(page, console_url, api, ds)
    card = item(page, "c002")
    expect(card.get_by_role("button", name="Pass")).to_be_enabled()
    other = new_api(org_id=api.org_id, user_id="editor@example.com", role="editor")
    other.ok(
        "POST",
        f"/api/v1/datasets/{ds}/review/{waiting(api, ds)['c002']['item_id']}/decision",
        json={"verdict": "fail"},
    )
    card.get_by_role("button", name="Pass").click()
    expect(card.locator(".error")).to_contain_text("is decided")
    expect(card.get_by_role("button", name="Pass")).to_be_enabled()  # the page still works


def test_the_run_page_says_what_it_sent_and_sends_failed_answers_by_hand(
    api, new_api, operator, page, console_url, shot
):
    operator(assay_review_queue_limit=1)
    ds, _, run = regressed(api)
    page.goto(console_url(api, f"/runs/{run['run_id']}"))
    expect(page.locator("#routed")).to_contain_text("Sent 1 answer to review.")
    shot(page, "run-review-routed")
    link = page.locator("#routed-link")
    expect(link).to_have_attribute("href", f"/datasets/{ds}?tab=review")
    expect(page.locator("#routing-error")).to_contain_text("holds 1 waiting")
    expect(page.locator("#send-baseline")).to_be_visible()  # the run has a baseline
    link.click()
    page.wait_for_url(f"**/datasets/{ds}?tab=review")
    expect(page.locator(".review-item")).to_have_count(1)

    operator(assay_review_queue_limit=100)
    alone_ds = api.dataset(cases(4))
    agent = api.agent(sleepy_spec(answers={"c001": "7", "c003": "9"}))
    alone = api.start(agent, alone_ds)
    assert api.wait(alone["run_id"])["status"] == "completed"
    viewer = new_api(org_id=api.org_id, user_id="viewer@example.com", role="viewer")
    page.goto(console_url(viewer, f"/runs/{alone['run_id']}"))
    expect(page.locator("#send-candidate")).to_be_disabled()
    expect(page.locator("#review")).to_contain_text(
        "You cannot send answers to review: it needs datasets:edit."
    )

    page.goto(console_url(api, f"/runs/{alone['run_id']}"))
    expect(page.locator("#routed")).to_have_count(0)  # it sent nothing by itself
    expect(page.locator("#send-baseline")).to_have_count(0)  # no baseline side
    page.get_by_role("button", name="Send failed to review").click()
    expect(page.locator("#send-result")).to_contain_text(
        "Sent 2 answers to review from the candidate."
    )
    expect(page.locator("#send-result")).not_to_contain_text("null")
    page.get_by_role("button", name="Send failed to review").click()
    expect(page.locator("#send-result")).to_contain_text(
        "Sent 0 answers to review from the candidate; 2 failed answers not sent"
    )
    page.goto(console_url(api, f"/datasets/{alone_ds}"))
    expect(page.locator("#tab-review")).to_have_text("Review (2)")
    review_tab(page, console_url, api, alone_ds)
    expect(item(page, "c001").locator(".sent-why")).to_contain_text(
        f"sent by hand by {api.user_id}"
    )


def test_reviewed_cases_carry_the_reviewers_current_name_and_a_former_member_none(
    api, new_api, page, console_url
):
    ds, _, run = regressed(api)
    run_id = run["run_id"]
    editor = new_api(org_id=api.org_id, user_id="editor@example.com", role="editor")
    items = waiting(api, ds)
    decide = f"/api/v1/datasets/{ds}/review/{{}}/decision"
    editor.ok("POST", decide.format(items["c002"]["item_id"]), json={"verdict": "pass"})
    api.ok("POST", decide.format(items["c007"]["item_id"]), json={"verdict": "fail"})

    page.goto(console_url(api, f"/runs/{run_id}"))
    corrected = page.locator('tr[data-case-id="c002"] .review-mark')
    expect(corrected).to_have_text("candidate corrected by editor@example.com")
    expect(page.locator('tr[data-case-id="c007"] .review-mark')).to_have_text(
        f"candidate reviewed by {api.user_id}"
    )

    api.ok("DELETE", "/api/v1/members/editor@example.com")
    page.reload()
    expect(corrected).to_have_text("candidate corrected by a former member")
    expect(page.locator("#cases")).not_to_contain_text("editor@example.com")
    review_tab(page, console_url, api, ds, "decided")
    expect(item(page, "c002").locator(".verdict-line")).to_contain_text("Passed by a former member")
    expect(item(page, "c007").locator(".verdict-line")).to_contain_text(f"Failed by {api.user_id}")
    expect(item(page, "c007").locator(".corrected")).to_have_count(0)
    expect(page.locator("#main")).not_to_contain_text("editor@example.com")


def test_markup_in_an_answer_is_text_and_a_note_goes_to_the_judge_by_tag_or_says_why_not(
    api, page, console_url, shot
):
    alerts: list[str] = []
    page.on("dialog", lambda d: (alerts.append(d.message), d.dismiss()))
    ds, rows = tagged_regressed(api, {**BROKEN, "c005": IMG})

    review_tab(page, console_url, api, ds)
    card = item(page, "c005")
    expect(card.locator(".answer-text")).to_have_text(IMG)
    card.locator("textarea").fill(f"fine {IMG}")
    card.get_by_role("button", name="Fail").click()
    expect(page.locator("#review-said")).to_contain_text("You failed case c005.")
    review_tab(page, console_url, api, ds, "decided")
    card = item(page, "c005")
    expect(card.locator(".review-note-text")).to_have_text(f"fine {IMG}")
    picker = card.locator("fieldset.criterion")
    expect(picker.get_by_label("math")).to_be_checked()
    picker.get_by_label(IMG).uncheck()
    picker.get_by_role("button", name="Make this note a judge criterion").click()
    expect(picker.locator(".error")).to_contain_text("grades with no judge")
    picker.get_by_label("math").uncheck()
    picker.get_by_role("button", name="Make this note a judge criterion").click()
    expect(picker.locator(".error")).to_have_text("Pick at least one tag for the criterion.")

    judge = graded_by_a_judge(api, ds, rows)
    picker.get_by_label("math").check()
    picker.get_by_role("button", name="Make this note a judge criterion").click()
    said = picker.locator(".criterion-result [role=status]")
    expect(said).to_contain_text(f"judge {judge} v2 grades criterion ")
    expect(said).to_contain_text("on cases tagged math")
    shot(page, "dataset-review-criterion")
    [criterion] = [
        c
        for c in api.ok("GET", f"/api/v1/judges/{judge}/versions/2")["spec"]["criteria"]
        if c["criterion_id"] != "correct"
    ]
    assert criterion["text"] == f"fine {IMG}" and criterion["tags"] == ["math"]
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("img[src=x]").count() == 0 and alerts == []


def test_the_queue_filters_by_agent_and_by_tag(api, page, console_url):
    ds, _ = tagged_regressed(api, BROKEN)  # c002 (geometry), c005 and c007 (IMG)
    other = api.agent(sleepy_spec(answers={"c004": "9"}), publish=1)
    alone = api.start(other, ds, candidate="version", version=1)
    assert api.wait(alone["run_id"])["status"] == "completed"
    api.ok("POST", f"/api/v1/eval-runs/{alone['run_id']}/review", json={"side": "candidate"})

    review_tab(page, console_url, api, ds)
    expect(page.locator("#tab-review")).to_have_text("Review (4)")
    expect(page.locator(".review-item")).to_have_count(4)
    page.locator("#review-agent_id").select_option(other)
    page.wait_for_url(f"**agent_id={other}**")
    expect(page.locator(".review-item")).to_have_count(1)
    expect(item(page, "c004").locator(".sent-why")).to_contain_text("sent by hand")
    page.locator("#review-agent_id").select_option("")
    page.locator("#review-tag").select_option("geometry")
    page.wait_for_url("**tag=geometry**")
    expect(page.locator(".review-item")).to_have_count(2)  # c002, and c004 of the other agent
    expect(item(page, "c005")).to_have_count(0)
    page.locator("#review-tag").select_option(IMG)
    expect(page.locator(".review-item")).to_have_count(2)
    expect(item(page, "c005")).to_have_count(1)
    expect(item(page, "c007")).to_have_count(1)
    page.go_back()
    expect(page.locator("#review-tag")).to_have_value("geometry")
