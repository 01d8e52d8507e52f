"""The organization store's waiting line: taking a run out goes through `retrying.change`, keeps a
run added meanwhile, and gives up silently after a few lost writes (docs/architecture/slots.md: the
slot tick takes a run with nothing to start out later), never with an error a slot hand-off would
trip on."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import pytest

from chalicelib import retrying
from chalicelib.adapters.stores.tenants import REMOVE_WAITING_TRIES, OrganizationStore
from chalicelib.domain.records import Organization


def _org(*waiting: str) -> Organization:
    return Organization(
        org_id="acme",
        own_concurrency_limit=3,
        waiting=list(waiting),
        waiting_flag="1" if waiting else None,
        waiting_since_ms=5 if waiting else None,
        created_at="2026-12-01T09:00:00.000Z",
    )


@dataclass
class Table:
    """What the store reads (in turn; the last one again and again) and the lines its conditional
    writes were decided on; a write wins while `wins` says so (True once it runs out)."""

    reads: list[Organization | None]
    wins: list[bool] = field(default_factory=list)
    written: list[list[str]] = field(default_factory=list)

    def get(self, _org_id: str) -> Organization | None:
        return self.reads.pop(0) if len(self.reads) > 1 else self.reads[0]

    def remove_at(self, _org_id: str, _run_id: str, before: Organization) -> bool:
        self.written.append(list(before.waiting))
        return self.wins.pop(0) if self.wins else True


def _store(monkeypatch: pytest.MonkeyPatch, table: Table) -> OrganizationStore:
    store = OrganizationStore()
    monkeypatch.setattr(retrying.time, "sleep", lambda _s: None)
    monkeypatch.setattr(store, "get", table.get)
    monkeypatch.setattr(store, "_remove_at", table.remove_at)
    return store


def test_a_run_is_taken_out_of_the_line_as_read(monkeypatch: pytest.MonkeyPatch) -> None:
    table = Table([_org("r1", "r2", "r3")])
    _store(monkeypatch, table).remove_waiting("acme", "r2")
    assert table.written == [["r1", "r2", "r3"]]  # one write: r2 out at position 1, if still there


def test_a_lost_write_reads_the_line_again_with_the_run_added_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = Table([_org("r1", "r2"), _org("r1", "r2", "r9")], wins=[False])
    _store(monkeypatch, table).remove_waiting("acme", "r1")
    assert table.written == [["r1", "r2"], ["r1", "r2", "r9"]]


def test_a_run_not_in_line_or_an_unknown_organization_writes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = Table([_org("r1")])
    _store(monkeypatch, table).remove_waiting("acme", "r7")
    gone = Table([None])
    _store(monkeypatch, gone).remove_waiting("acme", "r1")
    assert table.written == gone.written == []


def test_writes_lost_every_time_leave_the_run_in_line_without_an_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    table = Table([_org("r1")], wins=[False] * 10)
    with caplog.at_level(logging.WARNING):
        _store(monkeypatch, table).remove_waiting("acme", "r1")
    assert len(table.written) == REMOVE_WAITING_TRIES == 5
    assert "run r1 left in the waiting line of acme after 5 lost writes" in caplog.text
