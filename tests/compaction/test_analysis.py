"""The per-session analysis pass, called as a service (the task is a thin wrapper)."""

from __future__ import annotations

import re
from collections import Counter
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from compaction import pipeline, services, tasks
from compaction.engine import evals
from compaction.models import AnalysisStatus, CompactionSpan, SessionAnalysis
from sessions import services as session_services
from sessions.schemas import EventBatch
from tests.factories import (
    coding_session_messages,
    make_project,
    make_session,
    wire_message,
)

pytestmark = pytest.mark.django_db


def analysed(session_id: int) -> SessionAnalysis:
    pipeline.session_analyse(session_id=session_id)
    return SessionAnalysis.objects.get(session_id=session_id)


def test_ingest_queues_the_analysis_on_commit(django_capture_on_commit_callbacks) -> None:
    with (
        mock.patch.object(tasks.session_analyse, "delay") as delay,
        django_capture_on_commit_callbacks(execute=True) as callbacks,
    ):
        session = make_session(messages=3)
    assert len(callbacks) == 1
    delay.assert_called_once_with(session.pk)
    assert SessionAnalysis.objects.get(session=session).requested_generation == 1


def test_resending_only_duplicates_queues_nothing(django_capture_on_commit_callbacks) -> None:
    project = make_project()
    session = make_session(project, external_id="r", messages=3)
    with django_capture_on_commit_callbacks() as callbacks:
        make_session(project, external_id="r", messages=3)
    assert callbacks == []
    assert SessionAnalysis.objects.get(session=session).requested_generation == 1


def test_curve_has_one_point_per_model_call_from_reported_usage() -> None:
    session = make_session(messages=coding_session_messages(turns=5))
    analysis = analysed(session.pk)
    assert analysis.status == AnalysisStatus.DONE
    assert analysis.call_count == 10
    assert analysis.estimated_calls == 0
    first = analysis.curve[0]
    assert first["seq"] == 1
    assert first["estimated"] is False
    assert first["context_tokens"] == session.messages.get(seq=1).context_tokens
    contexts = [p["context_tokens"] for p in analysis.curve]
    assert contexts == sorted(contexts)
    assert analysis.peak_context_tokens == contexts[-1]


def test_calls_without_usage_are_estimated_and_marked() -> None:
    session = make_session(messages=coding_session_messages(turns=3, with_usage=False))
    analysis = analysed(session.pk)
    assert analysis.call_count == 6
    assert analysis.estimated_calls == 6
    assert all(p["estimated"] for p in analysis.curve)
    assert analysis.curve[-1]["context_tokens"] > analysis.curve[0]["context_tokens"]


def test_analysis_lists_orphan_tool_pairs() -> None:
    session = make_session(
        messages=[
            wire_message(0, content="go"),
            wire_message(
                1, "assistant", [{"type": "tool_use", "id": "toolu_x", "name": "ls", "input": {}}]
            ),
            wire_message(2, content="never answered the tool"),
        ]
    )
    analysis = analysed(session.pk)
    assert [o["tool_use_id"] for o in analysis.orphans] == ["toolu_x"]


def summary_compaction(summary: str, **overrides: object) -> dict[str, object]:
    event: dict[str, object] = {
        "seq": 24,
        "trigger": "auto",
        "strategy": "summarize",
        "tokens_before": 13_681,  # the context of the last call before it (#23)
        "tokens_after": 3_000,
        "summary": summary,
        "replaced": {"from_seq": 0, "to_seq": 19},
    }
    event.update(overrides)
    return event


def test_observed_span_reports_the_turn_3_constraint_lost_when_the_summary_omits_it() -> None:
    session = make_session(
        messages=coding_session_messages(turns=8),
        compactions=[summary_compaction("Goal: migrate billing to API v2. Done: modules 0-4.")],
        probes=[{"seq": 8, "text": "do not change the public API"}],
    )
    analysed(session.pk)
    span = CompactionSpan.objects.get(session=session)
    lost = [item["text"] for item in span.retention if not item["kept"]]
    assert "do not change the public API" in lost
    assert span.retention_score is not None
    assert span.retention_score < 1.0
    assert SessionAnalysis.objects.get(session=session).lost_facts >= 1


def test_span_with_reported_error_is_a_failed_splice() -> None:
    session = make_session(
        messages=coding_session_messages(turns=8),
        compactions=[summary_compaction("", error="summarizer timed out after 30s")],
    )
    analysis = analysed(session.pk)
    span = CompactionSpan.objects.get(session=session)
    assert span.failed is True
    assert span.failure_reason == "reported error: summarizer timed out after 30s; empty summary"
    assert analysis.failed_splices == 1


def test_span_takes_unreported_token_counts_from_the_curve() -> None:
    session = make_session(
        messages=coding_session_messages(turns=8),
        compactions=[summary_compaction("Goal", tokens_before=None, tokens_after=None)],
    )
    analysis = analysed(session.pk)
    span = CompactionSpan.objects.get(session=session)
    by_seq = {p["seq"]: p["context_tokens"] for p in analysis.curve}
    assert span.tokens_before == by_seq[23]
    assert span.tokens_after == by_seq[25]
    assert span.tokens_estimated is False


def test_rework_after_a_compaction_is_attached_to_its_span() -> None:
    messages = coding_session_messages(turns=8)
    # Turn 7 re-reads the file turn 1 read, after the compaction at seq 24.
    messages[29]["content"][1]["input"] = {"path": "billing/module_1.py"}
    session = make_session(messages=messages, compactions=[summary_compaction("Goal")])
    analysed(session.pk)
    span = CompactionSpan.objects.get(session=session)
    assert {"kind": "reread", "path": "billing/module_1.py"}.items() <= span.rework[0].items()


def test_analysis_is_idempotent_and_skips_when_current() -> None:
    session = make_session(
        messages=coding_session_messages(turns=8), compactions=[summary_compaction("Goal")]
    )
    first = pipeline.session_analyse(session_id=session.pk)
    assert first is not None
    assert pipeline.session_analyse(session_id=session.pk) is None
    assert CompactionSpan.objects.filter(session=session).count() == 1


def test_a_pass_reads_the_session_its_events_and_messages_once_for_all_its_steps() -> None:
    # The store, the subject index, the personal data scan and the alert rules share what the
    # pass read and wrote; each query is paid by every session a busy install analyses.
    session = make_session(
        messages=coding_session_messages(turns=8),
        compactions=[summary_compaction("Goal")],
        probes=[{"seq": 8, "text": "do not change the public API"}],
    )
    with CaptureQueriesContext(connection) as queries:
        pipeline.session_analyse(session_id=session.pk)
    reads: Counter[str] = Counter()
    for query in queries.captured_queries:
        table = re.match(r'SELECT .*? FROM "(\w+)"', query["sql"])
        if table and not query["sql"].startswith('SELECT 1 AS "a"'):
            reads[table.group(1)] += 1
    assert reads["traces_agentsession"] == 1
    assert reads["traces_project"] == 0  # read with the session
    assert reads["traces_compactionevent"] == 1
    assert reads["traces_probe"] == 1
    # the rows once; the budget's size (a sum of stored sizes, no content fetched); the times of
    # the messages up to the last compaction, for the storm rule (one query, not one each)
    assert reads["traces_message"] == 3
    content = [
        q["sql"] for q in queries.captured_queries if '"traces_message"."content"' in q["sql"]
    ]
    assert len([sql for sql in content if not sql.startswith("SELECT SUM(")]) == 1
    # the retention stored by the last pass, and the delete of its spans
    assert reads["compaction_compactionspan"] == 2
    assert CompactionSpan.objects.filter(session=session).count() == 1


def test_a_new_batch_makes_the_analysis_run_again() -> None:
    project = make_project()
    session = make_session(project, external_id="grow", messages=coding_session_messages(4))
    assert analysed(session.pk).call_count == 8
    more = coding_session_messages(6)[16:]
    session_services.events_ingest(
        project=project, external_id="grow", batch=EventBatch.model_validate({"messages": more})
    )
    analysis = analysed(session.pk)
    assert analysis.call_count == 12
    assert analysis.is_current


def test_a_batch_after_a_compaction_reuses_its_stored_retention(monkeypatch) -> None:
    project = make_project()
    messages = coding_session_messages(10)
    session = make_session(
        project,
        external_id="live",
        messages=messages[:30],
        compactions=[summary_compaction("Goal: migrate billing.")],
    )
    analysed(session.pk)
    stored = CompactionSpan.objects.get(session=session)
    checked: list[int] = []
    real_retention = evals.retention

    def counting(before, after, **options):
        checked.append(len(before))
        return real_retention(before, after, **options)

    monkeypatch.setattr(evals, "retention", counting)
    session_services.events_ingest(
        project=project,
        external_id="live",
        batch=EventBatch.model_validate({"messages": messages[30:]}),
    )
    analysed(session.pk)
    again = CompactionSpan.objects.get(session=session)
    assert checked == []  # the span's inputs did not change: nothing was checked again
    assert again.retention == stored.retention
    assert again.details["inputs_key"] == stored.details["inputs_key"]


def test_a_barely_shrinking_span_is_stored_failed_with_its_splice_details() -> None:
    """The rule itself is specified in tests/engine/test_analysis.py; this checks the row."""
    session = make_session(
        messages=coding_session_messages(turns=8),
        compactions=[summary_compaction("Goal: ...", tokens_before=13_681, tokens_after=13_600)],
    )
    analysis = analysed(session.pk)
    span = CompactionSpan.objects.get(session=session)
    assert span.failed is True
    assert "barely change" in span.failure_reason
    assert span.details["splice"]["ratio"] == pytest.approx(13_600 / 13_681, abs=1e-4)
    assert span.details["reported"] == {"tokens_before": 13_681, "tokens_after": 13_600}
    assert analysis.failed_splices == 1


@pytest.mark.parametrize(
    ("allow_external", "judge", "key", "built"),
    [
        (False, False, "k", False),  # offline is the default
        (False, True, "k", False),  # the judge sends content out: the external switch rules
        (True, False, "k", False),
        (True, True, "", False),  # no key, no judge
        (True, True, "k", True),
    ],
)
def test_the_llm_judge_runs_only_when_the_project_allows_it(
    settings, allow_external, judge, key, built
):
    from compaction.engine.anthropic import AnthropicJudge
    from sessions.models import Project

    settings.ANTHROPIC_API_KEY = key
    project = Project(name="p", allow_external_models=allow_external, judge_retention=judge)
    made = services.retention_judge(project=project)
    assert isinstance(made, AnthropicJudge) if built else made is None
