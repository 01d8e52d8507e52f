"""Answering an eval run's tool calls from a recording (docs/guides/tools.md): the options a start
names, what a run and its arms keep of them, how they are labelled, and the key baselines are
matched on.

A start (or a suite) may ask for `from_recordings` with a `recording_id`: every tool call the
agents make is answered from the calls the recording holds for the case (`replayed`), and a call
it does not hold is held (`divergent`); `live_reads` lets a `read` tool it does not hold run on
its own connection. Answers measured that way are not comparable with answers measured another
way, so a baseline is only ever reused from an arm measured with the same options
(`Replay.key`), and both sides of a run say how they were measured (`Replay.label`).

Pure: no I/O, no clock, no environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Replay"]


@dataclass(frozen=True)
class Replay:
    """How an eval run answers its agents' tool calls from a recording.

    `from_recordings`: answer tool calls from the recording `recording_id` (of the run's
    organization). `recording_sha256`: the hex sha256 of that recording's content when the run
    started (a recording deleted and uploaded again under the same id with other content is
    another recording). `live_reads`: a `read` tool the recording does not cover runs on its own
    connection; it changes nothing without `from_recordings` and is then left out of the key and
    the label.
    """

    from_recordings: bool = False
    recording_id: str | None = None
    recording_sha256: str | None = None
    live_reads: bool = False

    @property
    def key(self) -> str | None:
        """What a baseline is matched on: None when tool calls are not answered from a recording,
        else `<recording_id>@<first 16 hex of its sha256>` with `+live_reads` when they run. Two
        arms measured the same way have the same key."""
        if not self.from_recordings:
            return None
        sha = (self.recording_sha256 or "")[:16]
        return f"{self.recording_id}@{sha}" + ("+live_reads" if self.live_reads else "")

    @property
    def label(self) -> str | None:
        """How a side measured this way is labelled: "from recording rec-1", "from recording
        rec-1, live reads"; None when tool calls are not answered from a recording."""
        if not self.from_recordings:
            return None
        return f"from recording {self.recording_id}" + (", live reads" if self.live_reads else "")

    def settings(self) -> dict[str, Any]:
        """What a run keeps beside its test connections (`run.settings["isolation"]`):
        `{"from_recordings", "recording_id", "recording_sha256", "live_reads"}`."""
        return {
            "from_recordings": self.from_recordings,
            "recording_id": self.recording_id,
            "recording_sha256": self.recording_sha256,
            "live_reads": self.live_reads,
        }

    def view(self) -> dict[str, Any] | None:
        """What the API shows of an arm's or a plan's replay: None when tool calls are not
        answered from a recording, else `{"recording_id", "live_reads", "label"}`."""
        if not self.from_recordings:
            return None
        return {
            "recording_id": self.recording_id,
            "live_reads": self.live_reads,
            "label": self.label,
        }

    @classmethod
    def of_settings(cls, raw: Any) -> Replay:
        """The options a run's isolation settings (or an arm's kept map) hold; no replay for
        anything that is not a mapping (runs started before recordings answered tool calls)."""
        if not isinstance(raw, Mapping):
            return cls()
        recording_id = raw.get("recording_id")
        sha = raw.get("recording_sha256")
        return cls(
            from_recordings=bool(raw.get("from_recordings")) and isinstance(recording_id, str),
            recording_id=recording_id if isinstance(recording_id, str) else None,
            recording_sha256=sha if isinstance(sha, str) else None,
            live_reads=bool(raw.get("live_reads")),
        )
