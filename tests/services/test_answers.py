"""An answer as its attempt keeps it and as `GET /eval-runs/{id}/answer` gives it back, on fakes
(issue 11, scope 7; docs/reference/data-protection.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chalicelib.config import Settings
from chalicelib.domain.identity import Identity
from chalicelib.domain.run_rules import Task
from chalicelib.errors import InvalidInputError, NotFoundError
from chalicelib.services import answers
from chalicelib.services.run_case import KeptAnswer, _answer_kept
from tests.fakes import FakeBucket, FakeContainer
from tests.fakes.ledger import a_run, an_arm, an_attempt

ACME = Identity("acme", "ana")
TASK = Task("candidate", "c1", 1)


@pytest.fixture
def c() -> FakeContainer:
    return FakeContainer(
        settings=Settings(assay_answer_inline_bytes=2_000, assay_answer_max_bytes=5_000),
        bucket=FakeBucket(),
    )


def test_a_short_answer_is_kept_whole_inline_with_its_size_in_bytes(c):
    assert _answer_kept(c, a_run(), TASK, "zażółć 42") == KeptAnswer("zażółć 42", None, 13, False)
    assert _answer_kept(c, a_run(), TASK, None) == KeptAnswer(None, None, 0, False)


def test_an_answer_past_the_inline_size_goes_to_the_bucket_with_its_start_inline(c):
    answer = "a" * 2_999 + "!"  # 3,000 bytes: over 2,000 inline, within 5,000
    kept = _answer_kept(c, a_run(), TASK, answer)
    assert kept.answer == "a" * 1_000 and kept.answer_bytes == 3_000
    assert kept.answer_truncated is False
    assert kept.answer_ref == "s3://results/acme/answers/r1/candidate#c1#001.txt"
    assert c.bucket.texts[kept.answer_ref] == answer


def test_an_answer_past_the_size_bound_is_kept_cut_at_a_character_boundary(c):
    answer = "42 " + "é" * 10_000  # 3 + 20,000 = 20,003 bytes
    kept = _answer_kept(c, a_run(), TASK, answer)
    assert kept.answer_bytes == 20_003 and kept.answer_truncated is True
    # 3 + 2 x 2,498 = 4,999 bytes: one more "é" would be 5,001, over the 5,000 kept.
    assert kept.answer_ref is not None
    assert c.bucket.texts[kept.answer_ref] == "42 " + "é" * 2_498
    assert kept.answer == "42 " + "é" * 997  # its first 1,000 characters inline


def test_a_truncated_answer_that_fits_inline_is_kept_inline(c):
    c.settings = Settings(assay_answer_inline_bytes=5_000, assay_answer_max_bytes=4_000)
    kept = _answer_kept(c, a_run(), TASK, "b" * 4_500)
    assert kept == KeptAnswer("b" * 4_000, None, 4_500, True)


def test_the_answer_read_gives_an_inline_answer_whole(c):
    c.runs.add(a_run(status="completed"))
    c.runs.add_attempt("acme", an_attempt("c1", "passed", answer="42", answer_bytes=2))
    read = answers.read_answer(c, ACME, "r1", "candidate#c1#001")
    assert (read.answer, read.answer_bytes, read.url) == ("42", 2, None)


def test_the_answer_read_gives_a_presigned_url_for_one_in_the_bucket(c):
    c.runs.add(a_run(status="completed"))
    ref = c.bucket.put_text("acme/answers/r1/candidate#c1#001.txt", "x" * 3_000)
    row = an_attempt("c1", "passed", answer="x" * 1_000, answer_ref=ref, answer_bytes=3_000)
    c.runs.add_attempt("acme", row)
    read = answers.read_answer(c, ACME, "r1", "candidate#c1#001")
    assert read.answer is None and read.answer_bytes == 3_000
    assert (
        read.url
        == "https://signed.example/results/acme/answers/r1/candidate#c1#001.txt?expires=300"
    )
    assert read.expires_in_seconds == 300


def test_another_organization_s_run_is_not_found_whatever_the_key(c):
    c.runs.add(a_run(status="completed"))
    c.runs.add_attempt("acme", an_attempt("c1", "passed", answer="42"))
    for key in ("candidate#c1#001", "garbage"):
        with pytest.raises(NotFoundError):
            answers.read_answer(c, Identity("other", "eve"), "r1", key)


def test_an_unknown_attempt_is_not_found_and_a_malformed_key_is_refused(c):
    c.runs.add(a_run(status="completed"))
    with pytest.raises(NotFoundError) as missing:
        answers.read_answer(c, ACME, "r1", "candidate#c9#001")
    assert missing.value.field == "attempt_key"
    for key in ("", "candidate", "candidate#c1", "candidate#c1#x", "#c1#001"):
        with pytest.raises(InvalidInputError):
            answers.read_answer(c, ACME, "r1", key)


def test_a_case_id_holding_a_hash_is_read_by_its_whole_key(c):
    c.runs.add(a_run(status="completed"))
    c.runs.add_attempt("acme", an_attempt("c#1", "passed", answer="42"))
    assert answers.split_key("candidate#c#1#001") == ("candidate", "c#1", 1)
    assert answers.read_answer(c, ACME, "r1", "candidate#c#1#001").answer == "42"


def test_a_borrowed_first_answer_is_read_from_the_run_it_came_from(c):
    borrowed = replace(
        an_arm("baseline"), answers=False, source_run_id="r0", source_arm_id="candidate"
    )
    c.runs.add(a_run("r0", status="completed"))
    c.runs.add(a_run(status="completed", arms=(an_arm("candidate"), borrowed)))
    c.runs.add_attempt("acme", an_attempt("c1", "failed", run_id="r0", answer="41"))
    assert answers.read_answer(c, ACME, "r1", "baseline#c1#001").answer == "41"


def test_deleting_a_run_deletes_its_long_answers_and_no_other_runs(c):
    from chalicelib.services import runs

    for run_id in ("r1", "r10"):  # r1's prefix must not take r10's answers
        c.runs.add(a_run(run_id, status="cancelled"))
        c.bucket.put_text(f"acme/answers/{run_id}/candidate#c1#001.txt", "long")
    c.bucket.put_text("other/answers/r1/candidate#c1#001.txt", "another organization's")
    runs.delete_run(c, ACME, "r1")
    assert sorted(c.bucket.texts) == [
        "s3://results/acme/answers/r10/candidate#c1#001.txt",
        "s3://results/other/answers/r1/candidate#c1#001.txt",
    ]


def test_an_answer_goes_to_the_bucket_when_the_attempt_s_calls_leave_no_room_inline():
    c = FakeContainer(
        settings=Settings(assay_answer_inline_bytes=300_000, assay_answer_max_bytes=1_000_000),
        bucket=FakeBucket(),
    )
    answer = "a" * 200_000  # within the inline size, but not beside 300 KB of calls
    assert _answer_kept(c, a_run(), TASK, answer, 0).answer_ref is None
    kept = _answer_kept(c, a_run(), TASK, answer, 300_000)
    assert kept.answer_ref is not None and kept.answer == "a" * 1_000
    assert c.bucket.texts[kept.answer_ref] == answer
