"""The alert page says which rule fired, what it saw and the threshold in force when it fired."""

from __future__ import annotations

import pytest
from django.test import Client

from alerts import selectors
from alerts.models import Alert, AlertSettings
from compaction.engine import alerts as engine
from sessions.models import Role
from tests.alerts.test_alerts import THREE, analysed_session
from tests.factories import make_project, make_user

pytestmark = pytest.mark.django_db


def test_an_alert_records_the_project_threshold_it_fired_under() -> None:
    project = make_project(name="acme")
    AlertSettings.objects.create(project=project, repeated_compaction_count=2)
    alert = Alert.objects.get(session=analysed_session(project=project, compactions=THREE))
    assert alert.evidence["thresholds"] == {"repeated_compaction_count": 2}
    assert alert.evidence["thresholds_source"] == "project"
    # A later change of the setting does not rewrite why it fired.
    AlertSettings.objects.filter(project=project).update(repeated_compaction_count=9)
    line = selectors.alert_rule_line(alert)
    assert str(line) == (
        "Repeated compaction: 3 compactions in the session, threshold 2 (project setting)"
    )


def test_without_project_settings_the_default_is_named() -> None:
    alert = Alert.objects.get(session=analysed_session(compactions=THREE))
    assert alert.evidence["thresholds_source"] == "default"
    assert str(selectors.alert_rule_line(alert)) == (
        "Repeated compaction: 3 compactions in the session, threshold 3 (default)"
    )


def test_an_alert_stored_before_thresholds_were_recorded_shows_the_current_one() -> None:
    project = make_project(name="acme")
    alert = Alert.objects.get(session=analysed_session(project=project, compactions=THREE))
    evidence = dict(alert.evidence)
    evidence.pop("thresholds")
    evidence.pop("thresholds_source")
    Alert.objects.filter(pk=alert.pk).update(evidence=evidence)
    AlertSettings.objects.create(project=project, repeated_compaction_count=3)
    alert.refresh_from_db()
    assert str(selectors.alert_rule_line(alert)) == (
        "Repeated compaction: 3 compactions in the session, threshold 3 "
        "(current project setting, not recorded when it fired)"
    )


def test_a_rule_without_a_setting_says_what_fires_it() -> None:
    observed, threshold = engine.rule_statement("failed_splice", {"failed": 2}, {})
    assert (observed, threshold) == ("2 failed compaction(s)", "fires on any failed splice")
    assert engine.rule_statement(
        "compaction_thrash",
        {"compactions": 2, "calls_between": 4},
        {"thrash_compactions": 2, "thrash_window_calls": 20},
    ) == ("2 compactions within 4 calls", "threshold 2 compactions within 20 calls")


def test_the_alert_page_states_rule_observed_value_and_threshold(client: Client) -> None:
    project = make_project(name="acme")
    AlertSettings.objects.create(project=project, repeated_compaction_count=2)
    alert = Alert.objects.get(session=analysed_session(project=project, compactions=THREE))
    client.force_login(make_user(project=project, role=Role.VIEWER))
    html = client.get(f"/alerts/{alert.pk}/").content.decode()
    assert (
        "<strong>Repeated compaction</strong>: 3 compactions in the session, threshold 2 "
        '<span class="muted">(project setting)</span>'
    ) in html
