"""What fixes an error, as the command that fixes it: the CLI prints `fix_for` after an API error's
own line, and `unreachable_text` when no API answered.

The rules match an `ApiError`'s status and message (the service's own words, e.g. `agent a1 not
found`, `the organization has no default environment`); a message no rule knows gets no hint."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from re import Match
from typing import Protocol
from urllib.parse import unquote

from assay.transport import ApiError


class Groups(Protocol):
    """What a hint reads of its rule's match: its groups, quoted as shell words."""

    def group(self, index: int) -> str: ...


Rule = tuple[int, re.Pattern[str], Callable[[Groups, ApiError], str]]


def _agent_in_path(err: ApiError) -> str:
    """The agent id in the request's path (`/api/v1/agents/<id>/...`), else `AGENT`."""
    found = re.match(r"/api/v1/agents/([^/?]+)", err.path or "")
    return shlex.quote(unquote(found.group(1))) if found else "AGENT"


def _dataset_in_path(err: ApiError) -> str:
    """The dataset id in the request's path (`/api/v1/datasets/<id>/...`), else `DATASET`."""
    found = re.match(r"/api/v1/datasets/([^/?]+)", err.path or "")
    return shlex.quote(unquote(found.group(1))) if found else "DATASET"


RULES: list[Rule] = [
    (
        404,
        re.compile(r"^no recording (\S+)"),
        lambda m, e: (
            f"upload it (assay recordings upload FILE --id {m.group(1)}) or make it of a run "
            f"(assay recordings from-run RUN_ID --recording-id {m.group(1)}), or name another "
            "with --from-recording (assay recordings list shows the recordings there are)"
        ),
    ),
    (
        404,
        re.compile(r"no default environment"),
        lambda m, e: (
            "create one: assay environments create production --default (or pass environment_id)"
        ),
    ),
    (
        404,
        re.compile(r"^version (\S+) of agent (\S+) not found"),
        lambda m, e: (
            f"publish the draft: assay agents publish {m.group(2)} "
            f"(assay agents show {m.group(2)} lists its versions)"
        ),
    ),
    (
        404,
        re.compile(r"^agent (\S+) not found"),
        lambda m, e: (
            f"create it: assay agents create {m.group(1)} --spec FILE "
            "(assay agents list shows the agents there are)"
        ),
    ),
    (
        404,
        re.compile(r"^environment (\S+) not found"),
        lambda m, e: (
            f"create it: assay environments create {m.group(1)} "
            "(assay environments list shows the environments there are)"
        ),
    ),
    (
        404,
        re.compile(r"^dataset (\S+) not found"),
        lambda m, e: (
            f"create it: assay import {m.group(1)} FILE --create NAME "
            "(assay datasets list shows the datasets there are)"
        ),
    ),
    (
        404,
        re.compile(r"^model profile (\S+) not found"),
        lambda m, e: (
            f"create it: assay profiles create {m.group(1)} FILE "
            "(assay profiles list shows the profiles there are)"
        ),
    ),
    (
        404,
        re.compile(r"^suite (\S+) not found"),
        lambda m, e: (
            f"assay suites list {_agent_in_path(e)} shows the agent's suites; "
            f"assay suites create {_agent_in_path(e)} FILE saves one"
        ),
    ),
    (
        404,
        re.compile(r"^eval run (\S+) has no baseline"),
        lambda m, e: (
            "start a run with one: assay run AGENT --dataset DATASET --paired-baseline "
            "(or --baseline-run RUN_ID)"
        ),
    ),
    (
        404,
        re.compile(r"^review item (\S+) not found"),
        lambda m, e: (
            f"assay review list {_dataset_in_path(e)} --all lists the items of the dataset's queue"
        ),
    ),
    (
        409,
        re.compile(r"^review item (\S+) is decided already"),
        lambda m, e: (
            f"take the decision back first: assay review undo {_dataset_in_path(e)} {m.group(1)}"
        ),
    ),
    (
        409,
        re.compile(r"^review item (\S+) is replaced by a newer answer of its case \(item (\S+?)\)"),
        lambda m, e: (
            f"decide the newer answer: assay review show {_dataset_in_path(e)} {m.group(2)}"
        ),
    ),
    (
        409,
        re.compile(r"^review item (\S+) is not decided"),
        lambda m, e: f"assay review show {_dataset_in_path(e)} {m.group(1)} shows where it stands",
    ),
    (
        400,
        re.compile(r"^review item (\S+) has no note to make a criterion of"),
        lambda m, e: (
            f"take the decision back (assay review undo {_dataset_in_path(e)} {m.group(1)}), "
            "then decide it again with --note TEXT"
        ),
    ),
    (
        400,
        re.compile(r"^(?:a note is|note: String should have) at most (\d+) characters"),
        lambda m, e: f"shorten --note to {m.group(1)} characters or fewer",
    ),
    (
        400,
        re.compile(r"^eval run (\S+) has no (\S+) side"),
        lambda m, e: "name the side it has with --side (candidate or baseline)",
    ),
    (
        409,
        re.compile(r"^eval run (\S+) is still running: send"),
        lambda m, e: f"wait for it to end (assay watch {m.group(1)}), then send again",
    ),
    (
        404,
        re.compile(r"^no secret named (\S+)"),
        lambda m, e: f"set it: assay secrets set {m.group(1)} --from-env VARIABLE",
    ),
    (
        404,
        re.compile(r"^no recording (\S+)"),
        lambda m, e: f"upload it: assay recordings upload FILE --id {m.group(1)}",
    ),
    (
        400,
        re.compile(r"secret (\S+) not found: store it first"),
        lambda m, e: (
            f"store it: assay secrets set {m.group(1)} --from-env VARIABLE (or --value-stdin)"
        ),
    ),
    (
        400,
        re.compile(r"PUT /api/v1/secrets/\{name\}"),
        lambda m, e: (
            "store the value as a secret: assay secrets set NAME --from-env VARIABLE (or "
            "--value-stdin), then refer to it by NAME"
        ),
    ),
    (
        400,
        re.compile(r"^tags\[\d+\]: no case of dataset (\S+) "),
        lambda m, e: "name a tag the dataset's cases carry with --tag (repeatable)",
    ),
    (
        400,
        re.compile(r"^agent (\S+) was never published"),
        lambda m, e: f"publish it: assay agents publish {m.group(1)} (or run the draft: --draft)",
    ),
    (
        409,
        re.compile(r"^agent (\S+) already exists"),
        lambda m, e: f"change its draft instead: assay agents draft {m.group(1)} FILE",
    ),
    (
        409,
        re.compile(r"^environment (\S+) already exists"),
        lambda m, e: "assay environments list shows it",
    ),
    (
        409,
        re.compile(r"^model profile (\S+) already exists"),
        lambda m, e: "assay profiles list shows it",
    ),
    (
        409,
        re.compile(r"^suite (\S+) already exists"),
        lambda m, e: (
            f"assay suites list {_agent_in_path(e)} shows it; save this one under another suite_id"
        ),
    ),
    (
        409,
        re.compile(
            r"(?:is used by|whose first answers the baseline borrows,).*?eval run (\S+?)[ :,)]"
        ),
        lambda m, e: f"cancel the run: assay cancel {m.group(1)}",
    ),
    (
        409,
        re.compile(r"has runs still running \((\S+?)[,)]"),
        lambda m, e: f"cancel them, e.g. assay cancel {m.group(1)}",
    ),
    (
        409,
        re.compile(r"^promotion (\S+) onto (\S+) is still waiting"),
        lambda m, e: (
            "its guards' eval runs decide it first: assay suites list "
            f"{_agent_in_path(e)} shows how they came out"
        ),
    ),
]
"""(status, pattern searched in the message, the hint from the match and the error)."""


class _QuotedMatch:
    """A match whose groups are shell words (`shlex.quote`): what a hint prints is pasted into a
    shell, and an id in a message may be another member's (a run id, a secret's name in a spec)."""

    def __init__(self, found: Match[str]) -> None:
        self._found = found

    def group(self, index: int) -> str:
        return shlex.quote(self._found.group(index))


def _pasteable(found: Match[str], err: ApiError) -> bool:
    """Whether every id a hint could print (the match's groups and the agent in the path) is
    printable ASCII: a control character or a look-alike letter in a command one copies is worse
    than no hint."""
    ids = [g for g in found.groups() if g is not None]
    ids += [_agent_in_path(err), _dataset_in_path(err)]
    return all(i.isascii() and i.isprintable() for i in ids)


def fix_for(err: ApiError) -> str | None:
    """The command that fixes `err`, in a sentence (`create one: assay environments create
    production --default ...`), or None when no rule knows its message.

    Ids taken from the message or the path are quoted as shell words (`shlex.quote`: `a;rm -rf ~`
    is printed `'a;rm'`), and an id with a control or non-ASCII character gets no hint at all."""
    for status, pattern, hint in RULES:
        if err.status == status:
            found = pattern.search(err.message)
            if found:
                if not _pasteable(found, err):
                    return None
                return hint(_QuotedMatch(found), err)
    return None


def unreachable_text(url: str, cause: str) -> str:
    """What the CLI says when no API answered at `url` (`cause`: the connection's own error)."""
    return (
        f"the API at {url} is not answering ({cause}): start one with `assay dev`, or point "
        "ASSAY_URL (or --url) at a running assay"
    )
