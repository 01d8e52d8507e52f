"""Deleting eval attempts' disposable workspaces (docs/guides/tools.md, "Workspaces").

Every workspace of a run (`<org>/workspaces/<run_id>/` in the results bucket) is deleted when the
run ends, whatever its end: completed, failed (by a starter refused or by the sweep), cancelled,
budget_exceeded. A run's running cases go on after a cancel and may write to their workspaces
after that delete, so the workspaces are deleted again each time such a case gives its slot back
(and when the sweep frees a slot a dead worker left), and with the run when it is deleted.

A failed delete never fails the run's end: it is logged, and the next of those deletes takes what
is left. Deleting the run fails rather than leave any (asking again finishes it).
"""

from __future__ import annotations

import logging

from chalicelib.bootstrap import Container

log = logging.getLogger(__name__)


def release(c: Container, org_id: str, run_id: str) -> int | None:
    """Delete every workspace of the organization's run; how many files went, None when the
    delete failed (logged, never raised: see the module)."""
    try:
        return c.workspaces.release(org_id, run_id)
    except Exception:  # noqa: BLE001 - the run's end stands whatever its workspaces do
        log.exception(
            "run %s: its workspaces could not be deleted; the next release or the run's delete "
            "takes them",
            run_id,
        )
        return None
