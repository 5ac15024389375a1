"""The PostgreSQL connection's planner setting: on by default, read from the environment with
a clear error, and really in force on the connections the product opens."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from config.env import env_float


@pytest.mark.django_db
def test_the_planner_prices_a_random_read_as_on_an_ssd() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL setting: the embedded SQLite has no planner costs")
    with connection.cursor() as cursor:
        cursor.execute("SHOW random_page_cost")
        assert cursor.fetchone() == ("1.1",)


@pytest.mark.parametrize(("raw", "expected"), [(None, 1.1), ("", None), ("4", 4.0), (" 1.5 ", 1.5)])
def test_env_float_reads_a_positive_number_or_nothing(
    monkeypatch: pytest.MonkeyPatch, raw: str | None, expected: float | None
) -> None:
    if raw is None:
        monkeypatch.delenv("SAWTOOTH_X", raising=False)
    else:
        monkeypatch.setenv("SAWTOOTH_X", raw)
    assert env_float("SAWTOOTH_X", 1.1) == expected


@pytest.mark.parametrize(("raw", "why"), [("fast", "is not a number"), ("0", "must be above 0")])
def test_env_float_names_a_bad_value(monkeypatch: pytest.MonkeyPatch, raw: str, why: str) -> None:
    monkeypatch.setenv("SAWTOOTH_X", raw)
    with pytest.raises(ImproperlyConfigured, match=f"SAWTOOTH_X='{raw}' {why}"):
        env_float("SAWTOOTH_X", 1.1)
