"""The demo tells the story of issue 43: the storm and the loop example each raise their
alert (one per group of compactions, naming the calls and the cost so far), and none of the
five examples that came before raises either."""

from __future__ import annotations

import pytest
from django.db.models import Max

from alerts.models import ACTIVE_STATES, Alert
from compaction import pipeline, prices
from compaction.models import OutboxTask
from sessions import example_data, services
from sessions.models import AgentSession, Project
from sessions.schemas import EventBatch
from tests.factories import make_project

pytestmark = pytest.mark.django_db

EARLIER = [
    "example-billing-migration",
    "example-support-triage",
    "example-short-question",
    "example-failed-compaction",
    "example-hostile-content",
]
NEW_RULES = {"compaction_storm", "compaction_loop"}


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker) -> dict[str, set[str]]:  # type: ignore[no-untyped-def]
    """Every example uploaded batch by batch, analysed after each batch (as the worker does
    for a live session), and the rules of the alerts opened on each."""
    with django_db_blocker.unblock():
        project = make_project(name="demo-alerts")
        # committed outside any test's transaction: the outbox rows its uploads wrote (they
        # name no project) go with it, or later tests would find them
        outbox_before = OutboxTask.objects.aggregate(n=Max("pk"))["n"] or 0
        try:
            for example in example_data.example_sessions():
                for batch in example.batches:
                    services.events_ingest(
                        project=project,
                        external_id=example.external_id,
                        batch=EventBatch.model_validate(batch),
                    )
                    session = AgentSession.objects.get(
                        project=project, external_id=example.external_id
                    )
                    pipeline.session_analyse(session_id=session.pk)
            return {
                s.external_id: set(
                    Alert.objects.filter(session=s, state__in=ACTIVE_STATES).values_list(
                        "rule", flat=True
                    )
                )
                for s in AgentSession.objects.filter(project=project)
            }
        finally:
            Project.objects.filter(pk=project.pk).delete()
            OutboxTask.objects.filter(pk__gt=outbox_before).delete()


@pytest.mark.parametrize("external_id", EARLIER)
def test_the_earlier_examples_raise_no_storm_and_no_loop(
    demo: dict[str, set[str]], external_id: str
) -> None:
    assert not demo[external_id] & NEW_RULES, demo[external_id]


def test_the_storm_example_raises_one_storm_alert_for_its_compactions(demo) -> None:
    assert demo["example-compaction-storm"] & NEW_RULES == {"compaction_storm"}
    # thrash and repeated fired on the same compactions: folded into the storm
    assert not demo["example-compaction-storm"] & {"compaction_thrash", "repeated_compaction"}


def test_the_loop_example_raises_one_loop_alert_for_its_compactions(demo) -> None:
    assert demo["example-compaction-loop"] & NEW_RULES == {"compaction_loop"}
    assert not demo["example-compaction-loop"] & {"compaction_thrash", "repeated_compaction"}


def _uploaded(project: Project, external_id: str) -> AgentSession:
    for batch in example_data.example_session(external_id).batches:
        services.events_ingest(
            project=project, external_id=external_id, batch=EventBatch.model_validate(batch)
        )
    session = AgentSession.objects.get(project=project, external_id=external_id)
    pipeline.session_analyse(session_id=session.pk)
    return session


def test_the_storm_alert_names_the_calls_the_folded_rules_and_the_cost() -> None:
    session = _uploaded(make_project(), "example-compaction-storm")
    alert = Alert.objects.get(session=session, rule="compaction_storm")
    assert alert.title == "Compaction storm: 7 compactions within 60 minutes (6 in 16 min)"
    assert alert.evidence["calls"] == [29, 53, 77, 101, 125, 149, 173]
    assert alert.evidence["also"] == ["compaction_thrash", "repeated_compaction"]
    assert alert.evidence["items"][0] == "@29 +0.0 min: 52,345 -> 11,703 tokens"
    # the full price of its compactions, the same figure the compaction pages add up to
    total = prices.compaction_prices_total(prices.compaction_prices(session))
    assert total is not None
    assert total.priced == 7
    assert alert.evidence["numbers"]["compactions_price_usd"] == round(total.total_usd, 6)
    assert alert.evidence["items"][-1].startswith(
        f"cost so far: ${total.total_usd:,.2f} for 7 compactions (summary calls $"
    )
    assert alert.evidence["thresholds_source"] == "default"


def test_the_loop_alert_names_the_fixed_overhead() -> None:
    session = _uploaded(make_project(), "example-compaction-loop")
    alert = Alert.objects.get(session=session, rule="compaction_loop")
    assert alert.severity == "critical"
    assert alert.evidence["spans"] == [3, 5, 7, 9, 11, 13]
    assert alert.evidence["numbers"]["threshold_tokens"] == 28_450
    assert alert.evidence["items"][0].startswith("fixed overhead: ~28,456 tokens")
    assert "compaction_storm" not in alert.evidence.get("also", [])
