"""Each role sees what it can use: the navigation, the projects page, and a refusal that
names the role it needs."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions.models import Role
from tests.factories import make_project, make_user

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("role", "sees_privacy"),
    [
        (Role.VIEWER, False),
        (Role.ENGINEER, False),
        (Role.PRIVACY_REVIEWER, True),
        (Role.ADMIN, True),
    ],
)
def test_the_navigation_offers_the_privacy_pages_only_to_who_may_open_them(
    client: Client, role: str, sees_privacy: bool
) -> None:
    client.force_login(make_user(project=make_project(), role=role))
    body = client.get("/").content.decode()
    assert ('href="/privacy/findings/"' in body) is sees_privacy
    assert ('href="/privacy/subjects/"' in body) is sees_privacy
    assert 'href="/projects/"' in body


def test_a_refusal_is_a_page_that_names_the_role_it_needs(client: Client, settings) -> None:
    settings.DEBUG = False
    client.force_login(make_user(project=make_project(), role=Role.VIEWER))
    response = client.get("/privacy/findings/")
    assert response.status_code == 403
    body = response.content.decode()
    assert '<h1 id="denied-h">Not allowed</h1>' in body
    assert "The review queue needs the privacy reviewer role in a project." in body
    assert 'href="/projects/"' in body  # where the user reads their role


def test_the_projects_page_lists_each_role_and_the_pages_it_opens(client: Client) -> None:
    mine, watched = make_project(name="loja"), make_project(name="suporte")
    user = make_user(project=mine, role=Role.ADMIN)
    from sessions.models import Membership

    Membership.objects.create(user=user, project=watched, role=Role.VIEWER)
    client.force_login(user)
    body = client.get("/projects/").content.decode()
    loja = body[body.index(">loja<") : body.index(">suporte<")]
    suporte = body[body.index(">suporte<") :]
    assert "Admin" in loja
    for page in ("members", "keys", "policy", "settings", "audit", "feedback"):
        assert f"/projects/{mine.pk}/{page}/" in loja
    assert "Viewer" in suporte
    # a viewer's only project page is the verdict feedback every member reads
    assert suporte.count(f"/projects/{watched.pk}/") == 1
    assert f'href="/projects/{watched.pk}/feedback/"' in suporte
    client.force_login(make_user())
    assert "not a member of any project yet" in client.get("/projects/").content.decode()
