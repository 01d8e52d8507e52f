"""Attempts' disposable workspaces in the results bucket, against moto's server over HTTP
(docs/guides/tools.md, "Workspaces"): paths that could leave a workspace are refused, a workspace
holds at most its cap, no two attempts (nor runs, nor organizations) see each other's files, and a
run's release deletes its workspaces and nothing beside them."""

from __future__ import annotations

import pytest

from chalicelib.adapters.bucket import ResultsBucket
from chalicelib.adapters.workspaces import BucketWorkspaces
from chalicelib.errors import InvalidInputError, PayloadTooLargeError

A = "candidate#c000#001"


@pytest.fixture
def s3(aws_client):
    client = aws_client("s3")
    client.create_bucket(Bucket="results")
    return client


def spaces(s3, cap: int = 1_000) -> BucketWorkspaces:
    return BucketWorkspaces(ResultsBucket(lambda: s3, "results"), lambda: cap)


def keys(s3) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket="results").get("Contents", []))


@pytest.mark.parametrize(
    "path",
    [
        "..",
        "../other/f",
        "a/../../f",
        "a/..",
        "/etc/passwd",
        "/f",
        "",
        "a//b",
        "a/",
        "tab\there",
        "line\nbreak",
        "y#001/f",
        "x" * 257,
    ],
)
def test_a_path_that_could_leave_the_workspace_is_refused_naming_the_argument(s3, path) -> None:
    ws = spaces(s3)
    with pytest.raises(InvalidInputError) as refused:
        ws.write("acme", "r1", A, path, "x")
    assert refused.value.field == "arguments.path"
    with pytest.raises(InvalidInputError):
        ws.read("acme", "r1", A, path)
    assert keys(s3) == [], "a refused path was written"


def test_plain_relative_paths_are_written_read_and_listed(s3) -> None:
    ws = spaces(s3)
    for path in ("notes.txt", "deep/er/f.md", "with space.txt", ".hidden", "a..b"):
        ws.write("acme", "r1", A, path, f"text of {path} ünï")
    assert ws.read("acme", "r1", A, "deep/er/f.md") == "text of deep/er/f.md ünï"
    assert ws.read("acme", "r1", A, "missing.txt") is None
    assert ws.list("acme", "r1", A) == [
        ".hidden",
        "a..b",
        "deep/er/f.md",
        "notes.txt",
        "with space.txt",
    ]
    assert ws.list("acme", "r1", A, "deep/") == ["deep/er/f.md"]
    assert all(k.startswith("acme/workspaces/r1/") for k in keys(s3))


def test_a_workspace_holds_at_most_its_cap_and_a_replaced_file_counts_once(s3) -> None:
    ws = spaces(s3, cap=10)
    ws.write("acme", "r1", A, "a", "123456")
    ws.write("acme", "r1", A, "b", "1234")  # exactly the cap
    with pytest.raises(PayloadTooLargeError) as full:
        ws.write("acme", "r1", A, "c", "1")
    assert full.value.field == "arguments.content"
    assert "at most 10 bytes" in full.value.message
    assert ws.read("acme", "r1", A, "c") is None, "a refused write was kept"
    ws.write("acme", "r1", A, "a", "12")  # replacing: the old 6 bytes no longer count
    ws.write("acme", "r1", A, "c", "1234")
    with pytest.raises(PayloadTooLargeError):
        ws.write("acme", "r1", A, "d", "é")  # 2 bytes in UTF-8 over the 10
    # another attempt's workspace has a cap of its own
    ws.write("acme", "r1", "candidate#c001#001", "a", "1234567890")


class _AtOnce(BucketWorkspaces):
    """Workspaces where another write of the same attempt lands just before each put, as a
    concurrent call of the tool gateway would."""

    def __init__(self, s3, cap: int, other: tuple[str, str]) -> None:
        super().__init__(ResultsBucket(lambda: s3, "results"), lambda: cap)
        self.other = other

    def _put(self, key: str, data: bytes) -> None:
        if self.other:
            path, content = self.other
            self.other = ()  # type: ignore[assignment]
            BucketWorkspaces.write(self, "acme", "r1", A, path, content)
        super()._put(key, data)


def test_writes_at_once_that_pass_the_cap_together_are_undone_and_refused(s3) -> None:
    ws = _AtOnce(s3, 10, ("other", "123456"))
    with pytest.raises(PayloadTooLargeError) as full:
        ws.write("acme", "r1", A, "mine", "123456")  # fits alone; not beside the other
    assert "at the same time" in full.value.message
    assert ws.list("acme", "r1", A) == ["other"]
    # a replacement undone puts the file it replaced back
    ws.other = ("third", "1234")
    with pytest.raises(PayloadTooLargeError):
        ws.write("acme", "r1", A, "other", "1234567")
    assert ws.read("acme", "r1", A, "other") == "123456"
    assert ws.list("acme", "r1", A) == ["other", "third"]


def test_two_attempts_never_see_each_other_s_files_even_when_their_keys_line_up(s3) -> None:
    """Case `x` writing `y/f` and case `x#001/y` writing `f`: joined as text, the first's key
    and path would name the second's file; each sees its own only."""
    ws = spaces(s3)
    first, second = "candidate#x#001", "candidate#x#001/y#001"
    ws.write("acme", "r1", first, "y/f", "the first's")
    ws.write("acme", "r1", second, "f", "the second's")
    assert ws.list("acme", "r1", first) == ["y/f"]
    assert ws.list("acme", "r1", second) == ["f"]
    assert ws.read("acme", "r1", first, "f") is None
    assert ws.read("acme", "r1", second, "y/f") is None
    assert ws.read("acme", "r1", second, "f") == "the second's"
    # the other arm's attempt of the same case, the same attempt key in another run or
    # organization: each its own
    for org, run, key in (
        ("acme", "r1", "baseline#x#001"),
        ("acme", "r2", first),
        ("other", "r1", first),
    ):
        assert ws.list(org, run, key) == []
        assert ws.read(org, run, key, "y/f") is None


def test_a_run_s_release_deletes_its_workspaces_and_nothing_beside_them(s3) -> None:
    ws = spaces(s3)
    for i in range(3):
        ws.write("acme", "r1", f"candidate#c{i:03d}#001", "f", "x")
        ws.write("acme", "r1", f"candidate#c{i:03d}#001", "sub/g", "y")
    ws.write("acme", "r10", A, "f", "r10's")
    ws.write("other", "r1", A, "f", "another organization's")
    s3.put_object(Bucket="results", Key="acme/answers/r1/candidate#c000#001.txt", Body=b"42")

    assert ws.release("acme", "r1") == 6
    assert ws.list("acme", "r1", A) == []
    assert ws.read("acme", "r10", A, "f") == "r10's"
    assert ws.read("other", "r1", A, "f") == "another organization's"
    assert "acme/answers/r1/candidate#c000#001.txt" in keys(s3)
    assert ws.release("acme", "r1") == 0  # again: nothing there
