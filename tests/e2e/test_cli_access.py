"""The CLI's access commands as the real command against the embedded stack (issue 14,
docs/reference/access.md): `whoami`, `members`, `keys`, `token`'s first sign-in, and what a refusal
prints."""

from __future__ import annotations

import json
import os
import subprocess
import uuid

import pytest

from chalicelib.api.common import issue_token
from tests.e2e.conftest import sleepy_spec
from tests.e2e.test_cli_commands import ASSAY


@pytest.fixture
def cli(stack, api):
    """`cli(*args, token=None)`: the `assay` command as `api`'s user (its organization's first
    sign-in, so its admin), or with another bearer value as ASSAY_TOKEN."""
    s = stack.settings

    def token_of(user: str) -> str:
        return issue_token(api.org_id, user, secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer)

    env = {**os.environ, "ASSAY_URL": stack.api_url, "ASSAY_JWT_SECRET": s.assay_jwt_secret}

    def run(*args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [ASSAY, *args],
            env={**env, "ASSAY_TOKEN": token or token_of(api.user_id)},
            capture_output=True,
            text=True,
            timeout=120,
        )

    run.token_of = token_of  # type: ignore[attr-defined]
    return run


def test_whoami_says_the_first_person_of_an_organization_is_its_admin(cli, api):
    done = cli("whoami")
    assert done.returncode == 0, done.stderr
    head, permissions, grants = done.stdout.splitlines()
    assert head == (
        f"organization {api.org_id}: {api.user_id}, a person signed in as themselves; role admin"
    )
    assert "members:manage" in permissions and "settings:manage" in permissions
    assert grants == "  grants: none"
    me = json.loads(cli("whoami", "--json").stdout)
    assert (me["role"], me["person"], me["api_key_id"]) == ("admin", True, None)


def test_members_are_added_changed_granted_and_removed(cli, api):
    # `+` and `@` go into the path as written (`assay.client.PATH_SAFE`)
    agent = api.agent(sleepy_spec())
    cli("whoami")  # the admin's first sign-in
    done = cli("members", "add", "ana+ci@example.com", "--role", "viewer")
    assert (done.returncode, done.stdout) == (0, "added ana+ci@example.com as viewer\n"), (
        done.stderr
    )
    assert cli("members", "role", "ana+ci@example.com", "runner").stdout == (
        "ana+ci@example.com is now runner\n"
    )
    granted = cli("members", "grant", "ana+ci@example.com", "agent", agent, "agents:edit")
    assert granted.stdout == f"ana+ci@example.com holds agents:edit on agent {agent}\n"
    listed = cli("members", "list").stdout.splitlines()
    assert f"ana+ci@example.com\trunner\tgrants: agent {agent}: agents:edit" in listed
    assert f"{api.user_id}\tadmin\tgrants: none" in listed
    ana = cli("whoami", token=cli.token_of("ana+ci@example.com"))
    assert "role runner" in ana.stdout and f"agent {agent}: agents:edit" in ana.stdout
    revoked = cli("members", "revoke-grant", "ana+ci@example.com", "agent", agent, "--json")
    assert json.loads(revoked.stdout)["grants"] == []
    assert cli("members", "remove", "ana+ci@example.com").stdout == "removed ana+ci@example.com\n"
    members = json.loads(cli("members", "list", "--json").stdout)["members"]
    assert [m["user_id"] for m in members] == [api.user_id]


def test_a_viewer_adding_a_member_is_refused_in_one_line_naming_members_manage(cli, api):
    cli("whoami")
    cli("members", "add", "vera@example.com", "--role", "viewer")
    vera = cli.token_of("vera@example.com")
    done = cli("members", "add", "eve@example.com", "--role", "admin", token=vera)
    assert done.returncode == 3 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("assay: POST /api/v1/members -> 403 forbidden: ")
    assert "members:manage" in line
    as_json = cli("members", "list", "--json", token=vera)
    assert as_json.returncode == 3
    error = json.loads(as_json.stdout)["error"]
    assert (error["status"], error["code"]) == (403, "forbidden")
    assert "members:manage" in error["message"]


def test_an_api_key_is_printed_once_used_as_assay_token_and_revoked(cli, api):
    cli("whoami")
    made = cli("keys", "create", "--scope", "runs:view", "agents:view", "--name", "ci")
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert made.stdout == key + "\n" and key.startswith(f"assay_{api.org_id}.")
    assert "export ASSAY_TOKEN=" in made.stderr and key not in made.stderr
    # ASSAY_TOKEN goes as `Authorization: Bearer <key>`: the key is who asks
    me = json.loads(cli("whoami", "--json", token=key).stdout)
    assert (me["person"], me["permissions"]) == (False, ["runs:view", "agents:view"])
    key_id = me["api_key_id"]
    assert f"API key {key_id} acting for {api.user_id}" in cli("whoami", token=key).stdout
    # a key is made by a person, never by a key
    again = cli("keys", "create", "--scope", "runs:view", token=key)
    assert again.returncode == 3 and "person" in again.stderr
    [row] = cli("keys", "list").stdout.splitlines()
    assert row.split("\t")[:3] == [key_id, "ci", "runs:view,agents:view"]
    assert row.endswith("\tactive")
    assert cli("keys", "revoke", key_id).stdout.startswith(f"revoked {key_id} at ")
    after = cli("whoami", token=key)
    assert after.returncode == 3 and "401" in after.stderr and "revoked" in after.stderr
    assert json.loads(cli("keys", "list", "--json").stdout)["api_keys"][0]["revoked_at"]


def test_a_key_cannot_be_scoped_beyond_its_creator(cli, api):
    cli("whoami")
    cli("members", "add", "vic@example.com", "--role", "viewer")
    done = cli("keys", "create", "--scope", "agents:edit", token=cli.token_of("vic@example.com"))
    assert done.returncode == 3 and "agents:edit" in done.stderr and done.stdout == ""


def test_usage_errors_exit_3(cli):
    for args in (
        ("members", "grant", "ana@example.com", "project", "p1", "agents:run"),
        ("members", "add", "ana@example.com"),
        ("keys", "create"),
        ("keys",),
    ):
        done = cli(*args)
        assert done.returncode == 3, (args, done.stderr)
        assert "error:" in done.stderr


def test_the_first_token_of_a_new_organization_signed_by_assay_token_makes_its_admin(cli):
    assert "makes its user that organization's admin" in cli("token", "--help").stdout
    org = f"org_{uuid.uuid4().hex[:10]}"
    first = cli("token", "--org", org, "--user", "founder@example.com").stdout.strip()
    second = cli("token", "--org", org, "--user", "late@example.com").stdout.strip()
    assert "role admin" in cli("whoami", token=first).stdout
    late = cli("whoami", token=second)
    assert "not a member: no role" in late.stdout and "permissions: none" in late.stdout
