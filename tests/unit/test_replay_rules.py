"""Answering tool calls from a recording, the pure rules (docs/guides/tools.md): the options'
key and label, the recording format's check of `calls`, and baselines matched only under the same
replay."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from chalicelib.domain.baseline_rules import ArmRecord, default_baseline, reusable_baseline
from chalicelib.domain.history import ArmsRow
from chalicelib.domain.recording_format import parse_jsonl
from chalicelib.domain.replay import Replay

HOUR = 3_600_000
NOW = 100 * HOUR
REC_1 = Replay(from_recordings=True, recording_id="rec-1", recording_sha256="ab" * 32)


def test_the_key_and_label_say_the_recording_and_live_reads():
    assert (REC_1.key, REC_1.label) == (f"rec-1@{'ab' * 8}", "from recording rec-1")
    live = replace(REC_1, live_reads=True)
    assert (live.key, live.label) == (
        f"rec-1@{'ab' * 8}+live_reads",
        "from recording rec-1, live reads",
    )
    # the same id holding other content is another recording
    assert replace(REC_1, recording_sha256="cd" * 32).key != REC_1.key
    # live reads change nothing without a recording: no key, no label, no view
    assert Replay(live_reads=True).key is None and Replay(live_reads=True).label is None
    assert Replay().view() is None


def test_the_settings_a_run_keeps_read_back_the_same():
    assert Replay.of_settings(REC_1.settings()) == REC_1
    assert Replay.of_settings({"test_connections": {"shop": "shop-test"}}) == Replay()
    assert Replay.of_settings(None) == Replay()
    # from_recordings without an id (a malformed map) is no replay
    assert Replay.of_settings({"from_recordings": True}).from_recordings is False


@pytest.mark.parametrize(
    ("calls", "problem"),
    [
        ({"name": "x"}, "calls must be a list of calls"),
        ([1], "calls[0] must be an object"),
        ([{"name": ""}], "calls[0].name must be a non-empty string"),
        ([{"name": "x", "arguments": [1]}], "calls[0].arguments must be an object"),
    ],
)
def test_a_line_whose_calls_are_malformed_is_refused_naming_its_number(calls, problem):
    text = json.dumps({"case_id": "a", "answer": "1"}) + "\n"
    text += json.dumps({"case_id": "b", "answer": "2", "calls": calls}) + "\n"
    with pytest.raises(ValueError, match="content line 2") as info:
        parse_jsonl(text, "content")
    assert str(info.value) == f"content line 2: {problem}"


def test_calls_with_results_and_without_arguments_are_accepted():
    recording = parse_jsonl(
        '{"case_id": "a", "answer": "1", "calls": [{"name": "x", "result": {"n": 1}}, '
        '{"name": "y", "arguments": {"q": 2}, "result": null}]}\n',
        "content",
    )
    assert [c["name"] for c in recording.by_case["a"]["calls"]] == ["x", "y"]


BASE = ArmRecord(
    run_id="r1",
    arm_id="candidate",
    version=3,
    spec_hash="h3",
    model="m",
    dataset_id="ds",
    dataset_version=2,
    scoring_hash="s",
    environment_id=None,
    completed_at_ms=NOW - 2 * HOUR,
    answered_here=True,
    every_case_answered=True,
    replay=REC_1.key,
)
ASK = dict(version=3, dataset_id="ds", scoring_hash="s", environment_id=None, model="m")


def test_a_baseline_is_only_an_arm_measured_under_the_same_replay():
    live = replace(REC_1, live_reads=True)
    for wanted, found in (
        (REC_1.key, BASE),
        (None, None),  # a run without a recording never takes an arm measured from one
        (live.key, None),
        (replace(REC_1, recording_id="rec-2").key, None),
    ):
        assert default_baseline([BASE], replay=wanted, **ASK) == found, wanted
        assert (
            reusable_baseline(
                [BASE], dataset_version=2, now_ms=NOW, cache_hours=24, replay=wanted, **ASK
            )
            == found
        ), wanted
    # and an arm measured without one is not the baseline of a run from a recording
    plain = replace(BASE, replay=None)
    assert default_baseline([plain], replay=REC_1.key, **ASK) is None
    assert default_baseline([plain], **ASK) == plain


def test_the_history_keeps_arms_per_replay_and_reads_rows_kept_before_it():
    row = ArmsRow(3, "ds", (BASE, replace(BASE, run_id="r0", replay=None)))
    assert ArmsRow.of_json(3, "ds", row.as_json()) == row
    older = [{k: v for k, v in a.items() if k != "replay"} for a in row.as_json()]
    assert {a.replay for a in ArmsRow.of_json(3, "ds", older).arms} == {None}
