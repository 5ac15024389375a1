"""The session list flags every verdict colour: lost rules, lost files (amber), personal data
(a count, never a value), failed splices and overflow; each is explained and filterable."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.test import Client

from compaction import pipeline
from compaction.models import SessionAnalysis
from sessions.models import Role
from tests.alerts.test_alerts import THREE, analysed_session
from tests.factories import make_project, make_session, make_user, wire_message

pytestmark = pytest.mark.django_db

CPF = "530.582.439-79"


@pytest.fixture
def project():
    return make_project(name="flags")


def ids(client: Client, query: str) -> list[str]:
    return [row.session.external_id for row in client.get(f"/?{query}").context["rows"]]


def test_a_compaction_that_lost_only_files_shows_an_amber_flag(client, project) -> None:
    amber = analysed_session(project=project, external_id="amber", compactions=THREE[:1])
    assert (amber.analysis.lost_files_only, amber.analysis.lost_facts) == (1, 0)
    make_session(project, external_id="calm")
    client.force_login(make_user(project=project, role=Role.VIEWER))
    html = client.get("/").content.decode()
    assert (
        '<span class="badge warn" title="1 compaction lost only files or identifiers '
        '(no rule): amber">1 lost files</span>'
    ) in html
    assert ids(client, "problems=lost_files") == ["amber"]


def test_personal_data_is_flagged_by_count_only(client, project) -> None:
    customer = make_session(
        project,
        external_id="customer",
        messages=[wire_message(0, content=f"Meu CPF é {CPF}, e o outro é 111.444.777-35.")],
    )
    pipeline.session_analyse(session_id=customer.pk)
    make_session(project, external_id="calm")
    client.force_login(make_user(project=project, role=Role.VIEWER))
    html = client.get("/").content.decode()
    assert ">2 personal data</span>" in html
    assert CPF not in html
    assert "111.444.777-35" not in html
    assert ids(client, "problems=pii_open") == ["customer"]


def test_an_overflow_is_flagged_and_links_to_its_alert(client, project) -> None:
    over = make_session(
        project,
        external_id="over",
        session={"context_window": 1000},
        messages=[
            wire_message(0, content="go"),
            wire_message(1, "assistant", "ok", usage={"input_tokens": 1500, "output_tokens": 5}),
        ],
    )
    pipeline.session_analyse(session_id=over.pk)
    make_session(project, external_id="calm")
    client.force_login(make_user(project=project, role=Role.VIEWER))
    html = client.get("/").content.decode()
    assert f'href="/alerts/?sid={over.pk}&amp;rule=overflow&amp;state="' in html
    assert ids(client, "problems=overflow") == ["over"]


def test_the_flags_keep_the_list_at_a_fixed_number_of_queries(
    client, project, django_assert_num_queries
) -> None:
    analysed_session(project=project, compactions=THREE[:1])
    client.force_login(make_user(project=project))
    # The list's 14 (tests/sessions/test_pages.py), and the project's found surnames, read
    # once a shown text has a capitalised word (privacy.masking.NameScope).
    with django_assert_num_queries(15):
        client.get("/")
    for n in range(5):
        customer = make_session(project, messages=[wire_message(0, content=f"CPF {CPF} {n}")])
        pipeline.session_analyse(session_id=customer.pk)
        analysed_session(project=project, compactions=THREE[:1])
    with django_assert_num_queries(15):
        client.get("/")
    with django_assert_num_queries(15):
        client.get("/?problems=pii_open")


def test_the_migration_counts_lost_files_for_analyses_stored_before(project) -> None:
    amber = analysed_session(project=project, compactions=THREE[:1])
    SessionAnalysis.objects.filter(session=amber).update(lost_files_only=0)
    migration = importlib.import_module("compaction.migrations.0021_analysis_lost_files_only")
    migration.count_existing(apps, None)
    assert SessionAnalysis.objects.get(session=amber).lost_files_only == 1
