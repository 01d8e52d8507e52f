"""The results bucket against moto's server over HTTP: a run's answers are deleted by their
prefix, more than one `DeleteObjects` (1,000 keys) at a time, and nothing beside them."""

from __future__ import annotations

from chalicelib.adapters.bucket import ResultsBucket
from chalicelib.names import answer_key, run_answers_prefix


def test_a_runs_answers_are_deleted_by_prefix_and_no_one_elses(aws_client) -> None:
    s3 = aws_client("s3")
    s3.create_bucket(Bucket="results")
    bucket = ResultsBucket(lambda: s3, "results")
    for i in range(1_005):  # past one DeleteObjects request
        bucket.put_text(answer_key("acme", "r1", f"candidate#c{i:04d}#001"), "long answer")
    bucket.put_text(answer_key("acme", "r10", "candidate#c0001#001"), "r10's")
    bucket.put_text(answer_key("other", "r1", "candidate#c0001#001"), "another organization's")
    bucket.put_text("acme/recordings/rec.jsonl", "{}")

    assert bucket.delete_prefix(run_answers_prefix("acme", "r1")) == 1_005
    left = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="results")["Contents"])
    assert left == [
        "acme/answers/r10/candidate#c0001#001.txt",
        "acme/recordings/rec.jsonl",
        "other/answers/r1/candidate#c0001#001.txt",
    ]
    assert bucket.delete_prefix(run_answers_prefix("acme", "r1")) == 0  # again: nothing there
