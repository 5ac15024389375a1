"""Times in the viewer's zone: the `when` filter (UTC, said, without JavaScript) and the mute
form that reads the viewer's wall-clock time in the zone the browser sent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.test import Client

from alerts.forms import MuteForm, local_to_utc
from alerts.models import Alert, AlertState
from sessions.models import Role
from sessions.templatetags.traces import when
from tests.alerts.test_alerts import THREE, analysed_session
from tests.factories import make_project, make_user

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_when_renders_utc_with_the_zone_said_and_the_moment_for_scripts() -> None:
    moment = datetime(2026, 11, 20, 9, 5, 7, tzinfo=ZoneInfo("America/Sao_Paulo"))
    assert when(moment) == (
        '<time datetime="2026-11-20T12:05:07Z" data-local="minutes">2026-11-20 12:05 UTC</time>'
    )
    assert when(moment, "seconds").endswith(">2026-11-20 12:05:07 UTC</time>")
    # A message's time of day: the day is in its title, the zone is still said.
    assert when(moment, "clock") == (
        '<time datetime="2026-11-20T12:05:07Z" data-local="clock" '
        'title="2026-11-20 12:05:07 UTC">12:05:07 UTC</time>'
    )
    assert when(None) == ""


@time_machine.travel(NOW, tick=False)
def test_when_ago_keeps_the_exact_moment_in_its_title() -> None:
    assert when(NOW - timedelta(hours=3), "ago") == (
        '<time datetime="2026-11-20T09:00:00Z" data-local="ago" '
        'title="2026-11-20 09:00:00 UTC">3\xa0hours ago</time>'
    )


@pytest.mark.parametrize(
    ("typed", "zone", "utc"),
    [
        ("2026-11-20T18:00", "America/Sao_Paulo", datetime(2026, 11, 20, 21, 0, tzinfo=UTC)),
        ("2026-07-01T18:00", "Europe/Berlin", datetime(2026, 7, 1, 16, 0, tzinfo=UTC)),
        ("2026-12-01T18:00", "Europe/Berlin", datetime(2026, 12, 1, 17, 0, tzinfo=UTC)),
        ("2026-11-20T18:00", "", datetime(2026, 11, 20, 18, 0, tzinfo=UTC)),
    ],
)
def test_the_mute_form_reads_the_time_in_the_viewers_zone(typed, zone, utc) -> None:
    form = MuteForm({"until": typed, "tz": zone})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["until"] == utc
    assert form.cleaned_data["until"].utcoffset() == timedelta(0)


def test_an_unknown_zone_is_refused_by_name() -> None:
    form = MuteForm({"until": "2026-11-20T18:00", "tz": "Mars/Olympus"})
    assert not form.is_valid()
    assert form.errors["tz"] == ["tz: unknown time zone 'Mars/Olympus'"]


def test_a_time_skipped_by_a_clock_change_lands_after_the_gap() -> None:
    # 2026-03-29 02:30 does not exist in Berlin (clocks go from 02:00 to 03:00).
    moved = local_to_utc(datetime(2026, 3, 29, 2, 30), ZoneInfo("Europe/Berlin"))
    assert moved == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)  # 03:30 CEST


@pytest.mark.django_db
@time_machine.travel(NOW, tick=False)
def test_muting_from_the_page_stores_the_viewers_time_in_utc(client: Client) -> None:
    project = make_project(name="acme")
    alert = Alert.objects.get(session=analysed_session(project=project, compactions=THREE))
    client.force_login(make_user(project=project, role=Role.ENGINEER))
    page = client.get(f"/alerts/{alert.pk}/").content.decode()
    assert "Mute until <span data-tz-label>(UTC)</span>" in page
    assert 'name="tz"' in page
    client.post(
        f"/alerts/{alert.pk}/mute/", {"until": "2026-11-20T18:00", "tz": "America/Sao_Paulo"}
    )
    alert.refresh_from_db()
    assert alert.state == AlertState.MUTED
    assert alert.muted_until == datetime(2026, 11, 20, 21, 0, tzinfo=UTC)
    response = client.post(
        f"/alerts/{alert.pk}/mute/",
        {"until": "2026-11-20T18:00", "tz": "Nowhere/Else"},
        follow=True,
    )
    assert "tz: unknown time zone &#x27;Nowhere/Else&#x27;" in response.content.decode()


@pytest.mark.django_db
@time_machine.travel(NOW, tick=False)
@pytest.mark.parametrize(
    ("preset", "words", "later"),
    [
        ("1h", "1 h", timedelta(hours=1)),
        ("8h", "8 h", timedelta(hours=8)),
        ("1d", "1 day", timedelta(days=1)),
        ("1w", "1 week", timedelta(weeks=1)),
    ],
)
def test_muting_for_a_preset_time_needs_no_date(
    client: Client, preset: str, words: str, later: timedelta
) -> None:
    project = make_project(name="acme")
    alert = Alert.objects.get(session=analysed_session(project=project, compactions=THREE))
    client.force_login(make_user(project=project, role=Role.ENGINEER))
    page = client.get(f"/alerts/{alert.pk}/").content.decode()
    assert (
        f'<button type="submit" name="duration" value="{preset}" class="small">{words}</button>'
        in (page)
    )
    client.post(f"/alerts/{alert.pk}/mute/", {"duration": preset, "until": "", "tz": "UTC"})
    alert.refresh_from_db()
    assert (alert.state, alert.muted_until) == (AlertState.MUTED, NOW + later)


@pytest.mark.django_db
def test_a_mute_with_neither_a_preset_nor_a_time_says_what_is_missing(client: Client) -> None:
    project = make_project(name="acme")
    alert = Alert.objects.get(session=analysed_session(project=project, compactions=THREE))
    client.force_login(make_user(project=project, role=Role.ENGINEER))
    for data, said in (
        ({"until": ""}, "until: give a date and time, or pick how long"),
        ({"duration": "1y"}, "duration: one of 1h, 8h, 1d, 1w"),
    ):
        page = client.post(f"/alerts/{alert.pk}/mute/", data, follow=True).content.decode()
        assert said in page
    alert.refresh_from_db()
    assert alert.state != AlertState.MUTED
