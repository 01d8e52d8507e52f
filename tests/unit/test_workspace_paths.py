"""Which paths can name a file of an attempt's workspace (`workspaces.check_path`)."""

from __future__ import annotations

import pytest

from chalicelib.adapters.workspaces import check_path
from chalicelib.errors import InvalidInputError


@pytest.mark.parametrize("path", ["note.txt", "a/b c/d-e_f.md", "x" * 256])
def test_relative_paths_of_the_allowed_characters_are_accepted(path: str):
    assert check_path(path) == path


@pytest.mark.parametrize(
    "path",
    [
        "note.txt\n",  # a trailing line break: `$` alone would let it through
        "a\nb",
        "a\u0000b",
        "../x",
        "a/../b",
        "/etc/passwd",
        "a//b",
        "a/",
        "",
        "%2e%2e/x",
        "..\\x",
        "x" * 257,
    ],
)
def test_other_paths_are_refused_naming_the_field(path: str):
    with pytest.raises(InvalidInputError) as err:
        check_path(path)
    assert err.value.field == "arguments.path"
