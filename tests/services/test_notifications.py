"""Owner notices (docs/guides/suites.md) on fakes: the center, email where a
person has it on, no secret shown."""

from __future__ import annotations

import pytest

from chalicelib.domain.identity import Identity
from chalicelib.errors import NotFoundError
from chalicelib.services import notifications
from chalicelib.services.notifications import EmailSetting
from tests.fakes import FakeContainer

ANA = Identity("acme", "ana@example.com")


def _tell(c: FakeContainer, user_id: str, title: str = "t", body: str = "b") -> str:
    return notifications.notify(
        c, "acme", user_id, kind="suite_result", title=title, body=body, links={"suite_id": "s1"}
    ).notification_id


def test_an_address_is_emailed_by_default_and_a_plain_user_id_is_not(c: FakeContainer) -> None:
    _tell(c, ANA.user_id, "Suite s1: failed", "Cases that broke: c1")
    _tell(c, "bob")
    assert c.mailer.sent == [(ANA.user_id, "Suite s1: failed", "Cases that broke: c1")]
    assert [n.emailed for n in notifications.list_for(c, ANA)] == [True]
    assert [n.emailed for n in notifications.list_for(c, Identity("acme", "bob"))] == [False]


def test_email_turned_off_leaves_the_notice_in_the_center_only(c: FakeContainer) -> None:
    assert notifications.set_email(c, ANA, False) == EmailSetting(email=False, address=ANA.user_id)
    _tell(c, ANA.user_id)
    assert c.mailer.sent == []
    assert len(notifications.list_for(c, ANA)) == 1
    assert notifications.set_email(c, Identity("acme", "bob"), True) == EmailSetting(
        email=False, address=None
    )


def test_a_mail_that_cannot_be_sent_keeps_the_notice(c: FakeContainer) -> None:
    c.mailer.failing = True
    _tell(c, ANA.user_id)
    [notice] = notifications.list_for(c, ANA)
    assert notice.emailed is False


def test_a_notice_is_read_once_marked_and_only_by_its_recipient(c: FakeContainer) -> None:
    first = _tell(c, ANA.user_id)
    c.clock.at = c.clock.at.replace(minute=1)
    second = _tell(c, ANA.user_id)
    notifications.mark_read(c, ANA, first)
    assert [n.notification_id for n in notifications.list_for(c, ANA)] == [
        second,
        first,
    ]  # newest first
    assert [n.notification_id for n in notifications.list_for(c, ANA, unread=True)] == [second]
    with pytest.raises(NotFoundError):
        notifications.mark_read(
            c, Identity("globex", ANA.user_id), second
        )  # the same user, another org
    with pytest.raises(NotFoundError):
        notifications.mark_read(c, ANA, "n-unknown")


def test_the_center_and_the_mail_show_no_secret(c: FakeContainer) -> None:
    c.secrets.kept[("acme", "openai")] = "hunter2-very-secret"
    _tell(c, ANA.user_id, "key hunter2-very-secret", "it said hunter2-very-secret")
    [notice] = notifications.list_for(c, ANA)
    assert (notice.title, notice.body) == ("key [REDACTED:secret]", "it said [REDACTED:secret]")
    assert c.mailer.sent == [(ANA.user_id, "key [REDACTED:secret]", "it said [REDACTED:secret]")]
