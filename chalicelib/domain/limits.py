"""Bounds of numbers a tenant sends (issue 11 scope 8): each is documented in the README's
"Limits" and is a 400 naming the field beyond it, rather than a number the stores cannot keep.

DynamoDB keeps numbers of at most 38 significant digits; a version number past that was accepted
once and then made every read of its agent fail. The bounds sit far inside that range.
"""

from __future__ import annotations

MAX_ORG_CONCURRENCY = 1000
"""Largest concurrency limit of an organization (case tasks in flight at once), its own as the
operator sets it or the deployment's default (`EVAL_ORG_CONCURRENCY`); the smallest is 1."""

MAX_VERSION = 2**31 - 1
"""Largest version number of an agent, a dataset or a judge (2,147,483,647); the smallest is 1."""

MAX_IMPORT_LIMIT = 1_000_000
"""Largest `source.limit` of a dataset import (cases kept from the file)."""

MAX_CASE_BYTES = 256 * 1024
"""Largest case of a dataset version, as JSON in UTF-8 bytes (256 KiB): a case is kept as one
DynamoDB item, which takes at most 400 KB with its keys and redaction's longer markers."""

MAX_SPEC_BYTES = 48 * 1024
"""Largest agent spec, as JSON in UTF-8 bytes (48 KiB): a run keeps a copy of it on each of its
sides (a candidate per model, up to six, and the baseline) in its one DynamoDB item of 400 KB."""

MAX_CASE_IDS_BYTES = 256 * 1024
"""Largest total of one dataset version's case ids, each in UTF-8 plus one byte (256 KiB: some
37,000 ids of 6 characters, 1,000 of 250): the version and every eval run over it keep them in one
DynamoDB item of 400 KB, beside the run's copies of its specs."""

MAX_RUN_ITEM_BYTES = 350 * 1024
"""Largest an eval run's item may be planned at (350 KiB): its case ids and its sides' specs (a
copy of each), under DynamoDB's 400 KB with room for its settings, counters and outcome."""


def case_ids_bytes(case_ids: list[str]) -> int:
    """What `case_ids` take in a version's or a run's item: each id in UTF-8 plus one byte."""
    return sum(len(cid.encode()) + 1 for cid in case_ids)
