"""The triage pages: queue, filters, bulk acknowledge, alert page, nav count, settings."""

from __future__ import annotations

import pytest
from django.test import Client

from alerts.models import Alert, AlertSettings, AlertState, Webhook
from sessions.models import Role
from tests.alerts.test_alerts import THREE, analysed_session, compaction
from tests.factories import make_project, make_user

pytestmark = pytest.mark.django_db

PAYLOAD = "<script>window.__xss=1</script>"


@pytest.fixture
def project():
    return make_project(name="acme")


def login(client: Client, project, role: str = Role.ENGINEER) -> Client:
    client.force_login(make_user(project=project, role=role))
    return client


def test_the_queue_shows_open_alerts_with_links_to_their_evidence(client, project) -> None:
    session = analysed_session(project=project, compactions=THREE, external_id="run-1")
    alert = Alert.objects.get(session=session)
    login(client, project)
    html = client.get("/alerts/").content.decode()
    assert "Compacted 3 times in one session" in html
    assert f'href="/sessions/{session.pk}/?seq=4#seq-4"' in html
    assert f'href="/sessions/{session.pk}/compactions/4/"' in html
    assert f'href="/alerts/{alert.pk}/"' in html
    assert 'data-chart="alerts-per-day"' in html


def test_the_queue_opens_on_open_alerts_and_filters(client, project) -> None:
    first = Alert.objects.get(session=analysed_session(project=project, compactions=THREE))
    second = Alert.objects.get(session=analysed_session(project=project, compactions=THREE))
    first.state = AlertState.RESOLVED
    first.save()
    login(client, project)
    assert [a.pk for a, _ in client.get("/alerts/").context["rows"]] == [second.pk]
    assert len(client.get("/alerts/?state=").context["rows"]) == 2
    assert client.get("/alerts/?rule=overflow&state=").context["rows"] == []
    assert len(client.get("/alerts/?severity=warning&state=&age=1").context["rows"]) == 2
    response = client.get("/alerts/?state=closed")
    assert "state: expected one of open, acknowledged, resolved, muted, got &#x27;closed&#x27;" in (
        response.content.decode()
    )


def test_the_queue_has_a_fixed_number_of_queries(client, project, django_assert_num_queries):
    for _ in range(3):
        analysed_session(project=project, compactions=THREE)
    login(client, project)
    # session + user, the navigation's roles, count, the page, its span links, two chart
    # series, the project and assignee drop-downs, the settings links, the projects' found
    # surnames (privacy.masking.NameScope); the same however many alerts there are.
    with django_assert_num_queries(12):
        client.get("/alerts/")
    for _ in range(3):
        analysed_session(project=project, compactions=THREE)
    with django_assert_num_queries(12):
        client.get("/alerts/")


def test_trace_text_in_an_alert_is_escaped(client, project) -> None:
    session = analysed_session(
        project=project,
        compactions=[compaction(40, summary="Goal: migrate billing.")],
        probes=[{"seq": 8, "text": f"never run {PAYLOAD}"}],
    )
    alert = Alert.objects.get(session=session, rule="lost_constraint")
    login(client, project)
    for url in ("/alerts/", f"/alerts/{alert.pk}/"):
        html = client.get(url).content.decode()
        assert PAYLOAD not in html
        assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html


def test_another_projects_alert_is_404(client, project) -> None:
    alert = Alert.objects.get(session=analysed_session(compactions=THREE))
    login(client, project)
    assert client.get(f"/alerts/{alert.pk}/").status_code == 404
    assert client.post(f"/alerts/{alert.pk}/acknowledge/").status_code == 404


def test_bulk_acknowledge_needs_the_engineer_role(client, project) -> None:
    alerts = [Alert.objects.get(session=analysed_session(project=project, compactions=THREE))]
    login(client, project, role=Role.VIEWER)
    response = client.post("/alerts/acknowledge/", {"alert": [a.pk for a in alerts]}, follow=True)
    assert "Acknowledging needs the engineer role in the project." in response.content.decode()
    assert Alert.objects.get(pk=alerts[0].pk).state == AlertState.OPEN
    login(client, project, role=Role.ENGINEER)
    response = client.post(
        "/alerts/acknowledge/", {"alert": [alerts[0].pk], "next": "/alerts/?state="}
    )
    assert response.status_code == 302
    assert response["Location"] == "/alerts/?state="
    assert Alert.objects.get(pk=alerts[0].pk).state == AlertState.ACKNOWLEDGED


def test_alert_page_actions_record_history(client, project) -> None:
    alert = Alert.objects.get(session=analysed_session(project=project, compactions=THREE))
    login(client, project)
    client.post(f"/alerts/{alert.pk}/acknowledge/")
    client.post(f"/alerts/{alert.pk}/comment/", {"text": "the harness thrashes"})
    response = client.post(f"/alerts/{alert.pk}/resolve/", {"reason": ""}, follow=True)
    assert "reason: required; say why the alert is resolved" in response.content.decode()
    client.post(f"/alerts/{alert.pk}/resolve/", {"reason": "raised the soft limit"})
    alert.refresh_from_db()
    assert alert.state == AlertState.RESOLVED
    html = client.get(f"/alerts/{alert.pk}/").content.decode()
    assert "raised the soft limit" in html
    assert "the harness thrashes" in html
    assert [e.kind for e in alert.events.all()] == [
        "opened",
        "acknowledged",
        "commented",
        "resolved",
    ]


def test_a_viewer_cannot_change_an_alert(client, project) -> None:
    alert = Alert.objects.get(session=analysed_session(project=project, compactions=THREE))
    login(client, project, role=Role.VIEWER)
    assert client.post(f"/alerts/{alert.pk}/acknowledge/").status_code == 403
    assert "Triage needs the engineer role" in client.get(f"/alerts/{alert.pk}/").content.decode()


def test_nav_count_fragment_counts_open_alerts(client, project) -> None:
    analysed_session(project=project, compactions=THREE)
    analysed_session(compactions=THREE)  # not the user's project
    login(client, project)
    html = client.get("/alerts/count/").content.decode()
    assert 'aria-label="1 open alert"' in html
    assert 'hx-get="/alerts/count/"' in client.get("/").content.decode()


def test_sessions_list_filters_on_open_alerts_and_colours_the_badge(client, project) -> None:
    alerted = analysed_session(project=project, compactions=THREE, external_id="alerted")
    analysed_session(project=project, compactions=THREE[:1], external_id="calm")
    login(client, project)
    rows = client.get("/?problems=alerts").context["rows"]
    assert [r.session.external_id for r in rows] == ["alerted"]
    html = client.get("/").content.decode()
    hot = '<span class="badge sev-warning" title="Worst open alert: warning">3\u00d7</span>'
    assert hot in html
    assert '<span class="badge">1\u00d7</span>' in html
    assert alerted.alerts.count() == 1


def test_settings_page_is_not_for_viewers(client, project) -> None:
    login(client, project, role=Role.VIEWER)
    assert client.get(f"/projects/{project.pk}/settings/").status_code == 403


def test_engineers_change_thresholds_but_not_webhooks_or_recipients(client, project) -> None:
    login(client, project, role=Role.ENGINEER)
    url = f"/projects/{project.pk}/settings/"
    page = client.get(url).content.decode()
    assert "Save thresholds" in page
    assert "Add webhook" not in page
    assert "Delivery log" not in page
    assert 'name="email_recipients"' not in page
    client.post(url, {"form": "thresholds", "storm_compactions": 3, "storm_window_minutes": 20,
                      "repeated_compaction_count": 4, "thrash_compactions": 2,
                      "thrash_window_calls": 20, "near_overflow_percent": 95,
                      "email_recipients": "me@example.com"})  # fmt: skip
    saved = AlertSettings.objects.get(project=project)
    assert (saved.storm_compactions, saved.storm_window_minutes) == (3, 20)
    assert saved.email_recipients == ""  # not theirs to set
    hook = {"form": "webhook", "url": "https://hooks.example.com/a", "secret": "s" * 20,
            "format": "json"}  # fmt: skip
    assert client.post(url, hook).status_code == 403
    assert not project.webhooks.exists()


def test_settings_page_saves_thresholds_and_adds_a_webhook(client, project) -> None:
    login(client, project, role=Role.ADMIN)
    url = f"/projects/{project.pk}/settings/"
    assert client.get(url).status_code == 200
    bad = client.post(url, {"form": "thresholds", "storm_compactions": 6,
                            "storm_window_minutes": 60, "repeated_compaction_count": 0,
                            "thrash_compactions": 2, "thrash_window_calls": 20,
                            "near_overflow_percent": 95})  # fmt: skip
    assert "Ensure this value is greater than or equal to 1." in bad.content.decode()
    client.post(url, {"form": "thresholds", "storm_compactions": 4,
                      "storm_window_minutes": 30, "repeated_compaction_count": 5,
                      "thrash_compactions": 3, "thrash_window_calls": 10,
                      "near_overflow_percent": 90, "disabled_rules": ["near_overflow"],
                      "email_recipients": "a@example.com , b@example.com"})  # fmt: skip
    saved = AlertSettings.objects.get(project=project)
    assert saved.thresholds().repeated_compaction_count == 5
    storm = (saved.thresholds().storm_compactions, saved.thresholds().storm_window_minutes)
    assert storm == (4, 30)
    assert saved.thresholds().near_overflow_fill == 0.9
    assert saved.disabled_rules == ["near_overflow"]
    assert saved.email_list == ["a@example.com", "b@example.com"]
    client.post(url, {"form": "webhook", "url": "https://hooks.example.com/a",
                      "secret": "s" * 20, "format": "slack", "rules": ["overflow"]})  # fmt: skip
    hook = Webhook.objects.get(project=project)
    assert (hook.format, hook.rules) == ("slack", ["overflow"])
    assert "https://hooks.example.com/a" in client.get(url).content.decode()


def test_alerts_page_links_settings_for_engineers_and_admins(client, project) -> None:
    login(client, project, role=Role.VIEWER)
    assert f"/projects/{project.pk}/settings/" not in client.get("/alerts/").content.decode()
    login(client, project, role=Role.ENGINEER)
    assert f"/projects/{project.pk}/settings/" in client.get("/alerts/").content.decode()
    login(client, project, role=Role.ADMIN)
    assert f"/projects/{project.pk}/settings/" in client.get("/alerts/").content.decode()


def test_the_queue_opens_most_severe_first_and_the_api_newest_first(client, project) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from tests.factories import make_key, make_session

    session = make_session(project, external_id="run-sev")
    now = timezone.now()
    for title, rule, severity, age in (
        ("an old critical", "overflow", "critical", 3),
        ("a new warning", "near_overflow", "warning", 0),
        ("a middle info", "repeated_compaction", "info", 1),
    ):
        Alert.objects.create(
            project=project,
            session=session,
            rule=rule,
            severity=severity,
            title=title,
            opened_at=now - timedelta(hours=age),
        )
    login(client, project)
    html = client.get("/alerts/").content.decode()
    order = [html.index(t) for t in ("an old critical", "a new warning", "a middle info")]
    assert order == sorted(order)
    assert '<option value="severity" selected>' in html
    newest = client.get("/alerts/?sort=newest").content.decode()
    assert newest.index("a new warning") < newest.index("an old critical")
    # the API's order is unchanged: newest first
    key = make_key(project)
    items = client.get("/api/v1/alerts", HTTP_AUTHORIZATION=f"Bearer {key}").json()["items"]
    assert [i["title"] for i in items] == ["a new warning", "a middle info", "an old critical"]
