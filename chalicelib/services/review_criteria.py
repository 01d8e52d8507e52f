"""A reviewer's note made a judge criterion (docs/guides/judges.md, "A note becomes a criterion").

A person who decided an answer in the review queue often writes down why ("the reply must name
the refund window"). `add_note_as_criterion` adds such a note, scoped to case tags of the dataset,
to the judge the dataset grades with, by publishing the judge's next version through the one
publish path (`judges.publish`): the new version's rubric, and so the fingerprint every judge
score records, differ from the last one's.

What grades with the new version follows the existing rules for a changed judge: a dataset that
follows the judge's latest version grades its next runs with it; a dataset pinned to a version
stays pinned (nothing here moves a pin: a new dataset version naming the new judge version does),
and guard suites keep the judge version they pinned until their pins are moved (`move_pins`,
which needs `promotions:override`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from chalicelib.bootstrap import Container
from chalicelib.domain import access
from chalicelib.domain import judge_rules as rules
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Dataset, Judge
from chalicelib.errors import ConflictError, InvalidInputError, invalid_input
from chalicelib.services import judges, redacting

TRIES = 5
"""Publishes of the same judge by others, each between our read of its latest version and our
publish, before giving up (409 naming `judge_id`)."""

TAGS_SHOWN = 20
"""How many of the dataset's tags an error about an unknown tag lists."""


@dataclass(frozen=True)
class GuardPin:
    """A guard suite on the dataset that keeps grading with the judge version it pinned."""

    agent_id: str
    suite_id: str
    judge_version: int


@dataclass(frozen=True)
class CriterionAdded:
    """What `add_note_as_criterion` did.

    `judge` is the judge version holding the criterion: the one it published (`published`), or,
    when the latest version already held the very same criterion (same id, text and tags: the
    same note sent twice), that version, and nothing was published. `based_on` is the version
    the new one extends (the judge's latest when it was published). `pinned_version` is the judge
    version the dataset's latest version pins, None when it follows the latest (then its next runs
    grade with `judge`). `pin_moved` is always False: nothing here moves a pin. `guards`: guard
    suites on the dataset the caller may see, with the judge version each keeps.
    """

    judge: Judge
    criterion: rules.Criterion
    published: bool
    based_on: int
    dataset_id: str
    dataset_version: int
    pinned_version: int | None
    guards: list[GuardPin] = field(default_factory=list)
    pin_moved: bool = False

    @property
    def follows_latest(self) -> bool:
        """Whether the dataset grades with the judge's latest version (so its next runs with
        `judge`)."""
        return self.pinned_version is None

    @property
    def message(self) -> str:
        """What happened, in one sentence a person reads."""
        j, v = self.judge.judge_id, int(self.judge.version)
        c = self.criterion
        done = (
            f"judge {j} v{v} grades criterion {c.criterion_id}"
            if self.published
            else f"judge {j} v{v} already grades criterion {c.criterion_id}"
        ) + f" on cases tagged {', '.join(c.tags)}"
        if self.pinned_version is None:
            said = f"; dataset {self.dataset_id} follows the judge's latest version: its next runs "
            said += f"grade with v{v}"
        else:
            said = (
                f"; dataset {self.dataset_id} stays pinned to v{self.pinned_version}: its runs "
                f"grade with v{v} once a new dataset version names it in scoring.settings.judge"
            )
        if self.guards:
            said += (
                f"; {len(self.guards)} guard suite(s) keep the judge version they pinned until "
                "their pins are moved"
            )
        return done + said


def add_note_as_criterion(
    c: Container,
    who: Identity,
    dataset_id: str,
    note: str,
    tags: list[str],
    *,
    source: str,
    criterion_id: str | None = None,
) -> CriterionAdded:
    """Add `note` as a criterion scoped to `tags` to the judge the dataset grades with, by
    publishing that judge's next version (its latest version with the criterion added).

    The note is kept as other tenant text is (surrounding whitespace off, secrets redacted) and
    is the criterion's text, at most `rules.CRITERION_TEXT_CHARS` characters as kept; `source`
    (e.g. `review item ri_...`) is kept as the criterion's `source`, redacted and cut to
    `rules.CRITERION_SOURCE_CHARS`. Without `criterion_id` the id is `note_` and 12 hex of the
    text and tags, so sending the same note twice publishes once. The judge, and whether its
    version is pinned, are read from the dataset's latest version's `scoring.settings.judge`;
    the pin is never moved (`CriterionAdded`).

    Raises:
        NotFoundError: (field `dataset_id`) no such dataset, or one the caller may not see; the
            judge or its model profile gone.
        ForbiddenError: (403, `permission` datasets:edit) the caller may not edit the dataset, or
            may not publish judges (datasets:edit across the organization).
        InvalidInputError: `note` blank or too long; `tags` empty, or `tags[i]` a tag no case of
            the dataset's latest version carries; `criterion_id` malformed or already the id of
            another criterion of the judge; `scoring.settings.judge` when the dataset grades with
            no judge, or its judge holds `rules.MAX_CRITERIA` criteria already; `source` blank.
        ConflictError: (field `judge_id`) the judge was published by others `TRIES` times in a
            row while this was.
    """
    who.require_on(access.DATASETS_EDIT, "dataset", dataset_id, "adding a criterion to a dataset")
    who.require(access.DATASETS_EDIT, "publishing a judge version")
    header = c.datasets.get(who.org_id, dataset_id)
    redactor = redacting.for_org(c, who.org_id)
    text = _kept_note(redactor, note)
    wanted = _distinct_tags(tags)
    kept_source = _kept_source(redactor, source)
    latest, pin = _judge_of(
        c.datasets.get(who.org_id, dataset_id, int(header.latest_version))
        if header.latest_version
        else None,
        dataset_id,
    )
    _check_tags(c, latest, wanted)
    criterion = _criterion(
        criterion_id or default_criterion_id(text, wanted), text, wanted, kept_source
    )
    judge_id = str(pin["judge_id"])
    pinned = pin.get("version")

    def added(row: Judge, held: rules.Criterion, published: bool, based_on: int) -> CriterionAdded:
        return CriterionAdded(
            judge=row,
            criterion=held,
            published=published,
            based_on=based_on,
            dataset_id=dataset_id,
            dataset_version=int(latest.version),
            pinned_version=int(pinned) if pinned is not None else None,
            guards=_guards(c, who, dataset_id),
        )

    for _ in range(TRIES):
        base = judges.resolve(c, who.org_id, {"judge_id": judge_id})
        same = next(
            (k for k in base.spec.criteria if k.criterion_id == criterion.criterion_id), None
        )
        if same is not None:
            if same.text == criterion.text and sorted(set(same.tags)) == sorted(wanted):
                row = c.judges.get(who.org_id, judge_id, base.version)
                return added(row, same, False, base.version)  # as first added
            raise InvalidInputError(
                f"criterion_id {criterion.criterion_id} is already a criterion of judge "
                f"{judge_id} (v{base.version}) with another text or tags: choose another id",
                field="criterion_id",
            )
        if len(base.spec.criteria) >= rules.MAX_CRITERIA:
            raise InvalidInputError(
                f"judge {judge_id} (v{base.version}) has {len(base.spec.criteria)} criteria, the "
                f"most a version holds: publish one with fewer before adding a note",
                field="scoring.settings.judge",
            )
        body = base.spec.model_dump(mode="json")
        body["criteria"] = [*body["criteria"], criterion.model_dump(mode="json")]
        try:
            row = judges.publish(c, who, judge_id, body, based_on=base.version)
        except judges.NewerVersion:
            continue  # somebody published meanwhile: add the criterion to their version instead
        return added(row, criterion, True, base.version)
    raise ConflictError(
        f"judge {judge_id} is being published by somebody else: try again", field="judge_id"
    )


def default_criterion_id(text: str, tags: list[str]) -> str:
    """`note_` and the first 12 hex of the SHA-256 of the text and the sorted tags: the same note
    on the same tags is the same criterion."""
    digest = hashlib.sha256("\n".join([text, *sorted(set(tags))]).encode()).hexdigest()
    return f"note_{digest[:12]}"


def _kept_note(redactor: redacting.Redactor, note: Any) -> str:
    """The note as kept: stripped, redacted, within the criterion's length. Raises
    InvalidInputError (field `note`)."""
    if not isinstance(note, str) or not note.strip():
        raise InvalidInputError("note is empty: write what the judge should check", field="note")
    text = redactor.text(note.strip())
    if len(text) > rules.CRITERION_TEXT_CHARS:
        raise InvalidInputError(
            f"note is {len(text)} characters as kept (secrets replaced); a criterion holds at "
            f"most {rules.CRITERION_TEXT_CHARS}",
            field="note",
        )
    return text


def _kept_source(redactor: redacting.Redactor, source: Any) -> str:
    """`source` as kept: stripped, redacted, cut to `rules.CRITERION_SOURCE_CHARS`. Raises
    InvalidInputError (field `source`) when blank."""
    if not isinstance(source, str) or not source.strip():
        raise InvalidInputError("source is empty: say where the note came from", field="source")
    kept = redactor.text(source.strip())
    return kept[: rules.CRITERION_SOURCE_CHARS]


def _distinct_tags(tags: Any) -> list[str]:
    """The tags, each once, in the order given. Raises InvalidInputError (`tags`, `tags[i]`)."""
    if not isinstance(tags, list) or not tags:
        raise InvalidInputError(
            "tags is empty: name at least one case tag the criterion grades", field="tags"
        )
    for i, tag in enumerate(tags):
        if not isinstance(tag, str) or not tag:
            raise InvalidInputError(f"tags[{i}] must be a case tag", field=f"tags[{i}]")
    return list(dict.fromkeys(tags))


def _judge_of(version: Dataset | None, dataset_id: str) -> tuple[Dataset, dict[str, Any]]:
    """The dataset's latest version and its `scoring.settings.judge` (`{"judge_id",
    "version"?}`).

    Raises InvalidInputError (field `scoring.settings.judge`) when it grades with no judge.
    """
    scoring = (version.scoring if version is not None else None) or {}
    pin = (scoring.get("settings") or {}).get(rules.JUDGE_SCORER)
    if (
        version is None
        or rules.JUDGE_SCORER not in (scoring.get("required") or [])
        or not isinstance(pin, dict)
        or not pin.get("judge_id")
    ):
        where = f"v{version.version}" if version is not None else "no version yet"
        raise InvalidInputError(
            f"dataset {dataset_id} ({where}) grades with no judge: add a version whose scoring "
            'requires "judge" and names it in scoring.settings.judge ({"judge_id": ...}), then '
            "add the note",
            field="scoring.settings.judge",
        )
    return version, pin


def _check_tags(c: Container, version: Dataset, tags: list[str]) -> None:
    """Refuse a tag no case of `version` carries. Raises InvalidInputError (field `tags[i]`)."""
    carried: set[str] = set()
    for case in c.datasets.cases(version.org_id, version.dataset_id, int(version.version)):
        carried.update(t for t in case.get("tags") or [] if isinstance(t, str))
    for i, tag in enumerate(tags):
        if tag not in carried:
            known = sorted(carried)
            shown = ", ".join(known[:TAGS_SHOWN]) + (" ..." if len(known) > TAGS_SHOWN else "")
            raise InvalidInputError(
                f"tags[{i}]: no case of dataset {version.dataset_id} v{version.version} carries "
                f"the tag {tag[:100]!r}"
                + (f" (its tags: {shown})" if known else " (its cases carry no tags)"),
                field=f"tags[{i}]",
            )


def _criterion(criterion_id: str, text: str, tags: list[str], source: str) -> rules.Criterion:
    """The criterion. Raises InvalidInputError (field `criterion_id`) for a malformed id."""
    try:
        return rules.Criterion(criterion_id=criterion_id, text=text, tags=tags, source=source)
    except ValidationError as exc:
        raise invalid_input(exc) from None


def _guards(c: Container, who: Identity, dataset_id: str) -> list[GuardPin]:
    """The guard suites on the dataset (of agents the caller may see) that pin a judge version."""
    out = []
    for suite in c.suites.of_org(who.org_id):
        if not suite.guards or suite.dataset_id != dataset_id:
            continue
        if not who.sees("agent", suite.agent_id):
            continue
        pinned = (suite.pins or {}).get("judge_version")
        if pinned is not None:
            out.append(GuardPin(suite.agent_id, suite.suite_id, int(pinned)))
    return sorted(out, key=lambda g: (g.agent_id, g.suite_id))
