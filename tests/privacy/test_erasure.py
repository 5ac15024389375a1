"""An erasure is complete: seeded in every place a value can live, including sessions no index
knows (analysis failed, never analysed) and copies outside any session's lineage (webhook
bodies, the audit log, saved filters, experiment names), a person's CPF, phone and e-mail are
erased and a dump of the whole database holds no copy, even after queued work has run and a
pass that read the history before the erasure tried to store what it derived."""

from __future__ import annotations

import json

import pytest

from alerts.models import Alert, Webhook, WebhookDelivery
from compaction import pipeline
from compaction import services as compaction_services
from compaction.engine import analysis as engine_analysis
from compaction.models import AnalysisStatus, ReplayRun, SessionAnalysis
from privacy import subjects
from privacy.models import AuditAction, AuditEvent
from sessions import services
from sessions.models import AgentSession
from sessions.schemas import EventBatch
from tests.dump import cells_holding
from tests.privacy.doors import CPF, EMAIL, PHONE, RAW_FORMS, Door, labelled_project

pytestmark = pytest.mark.django_db(transaction=True)

ERASED_FORMS = RAW_FORMS["cpf"] + RAW_FORMS["phone"] + RAW_FORMS["email"]
WORDS = f"Sou Camila, CPF {CPF}, telefone {PHONE}, e-mail {EMAIL}."


def _ingest(door: Door, external_id: str) -> AgentSession:
    batch = {
        "messages": [
            {"seq": 0, "role": "user", "content": WORDS},
            {"seq": 1, "role": "assistant", "content": f"Anotado: {CPF}."},
        ]
    }
    return services.events_ingest(
        project=door.project, external_id=external_id, batch=EventBatch.model_validate(batch)
    ).session


def seeded() -> tuple[Door, dict[str, AgentSession]]:
    """The labelled project, plus the copies no index knows of."""
    door = labelled_project()
    never = _ingest(door, "ingested-while-the-worker-was-down")
    failed = _ingest(door, "analysis-failed")
    SessionAnalysis.objects.filter(session=failed).update(
        status=AnalysisStatus.FAILED, error="RuntimeError: boom"
    )
    hook = Webhook.objects.filter(project=door.project).first()
    assert hook is not None
    # Rows written raw before deliveries, alerts and the audit log were masked at write.
    WebhookDelivery.objects.create(
        webhook=hook, alert=None, event="opened", body=json.dumps({"title": WORDS})
    )
    AuditEvent.objects.create(
        action=AuditAction.REVEAL, project=door.project, target="message:1:0:0", reason=WORDS
    )
    Alert.objects.filter(session=door.session).update(title=f"lost: {WORDS}")
    return door, {"never": never, "failed": failed}


def erase_all(door: Door) -> list[subjects.SubjectRequest]:
    return [
        subjects.subject_erase(
            project=door.project,
            subject=subjects.subject_parse(identifier=identifier),
            by=door.users["privacy_reviewer"],
            reason="pedido da titular (LGPD art. 18, VI)",
        )
        for identifier in (CPF, PHONE, EMAIL)
    ]


def run_queued_work(door: Door) -> None:
    """What the worker does after an erasure: every session analysed, every replay rebuilt."""
    for session in AgentSession.objects.filter(project=door.project):
        pipeline.session_analyse(session_id=session.pk)
    for run in ReplayRun.objects.filter(session__project=door.project, status="queued"):
        pipeline.replay_run_execute(run_id=run.pk)


def test_the_dump_holds_copies_everywhere_before_the_erasure() -> None:
    # The check below is only worth something if it can fail: before, copies are everywhere.
    seeded()
    tables = {hit.split(".")[0] for hit in cells_holding(ERASED_FORMS)}
    assert {
        "traces_message",
        "traces_agentsession",
        "traces_compactionevent",
        "traces_probe",
        "compaction_webhookdelivery",
        "traces_auditevent",
        "compaction_savedfilter",
        "compaction_experiment",
        "compaction_alert",
        "compaction_comment",
        "team_verdictmark",
    } <= tables


def test_an_erasure_leaves_no_copy_in_any_table_even_outside_the_index() -> None:
    door, unindexed = seeded()
    requests = erase_all(door)
    cpf_request = requests[0]
    assert cpf_request.result["rows"]["sessions_found_outside_the_index"] == 2
    assert {s.pk for s in unindexed.values()} <= set(cpf_request.result["sessions"])
    assert cells_holding(ERASED_FORMS) == []
    run_queued_work(door)
    assert cells_holding(ERASED_FORMS) == []
    # The raw history kept everything else, the erased values replaced where they were.
    message = unindexed["never"].messages.get(seq=0)
    assert message.content == [
        {
            "type": "text",
            "text": "Sou Camila, CPF [cpf erased], telefone [phone erased], e-mail [email erased].",
        }
    ]


def test_a_pass_that_read_before_the_erasure_stores_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    door = labelled_project()
    session = door.session
    compaction_services.analysis_request(session_id=session.pk)
    real = engine_analysis.analyse

    def erased_meanwhile(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = real(*args, **kwargs)
        erase_all(door)  # the erasure commits while this pass holds the old history
        return result

    monkeypatch.setattr(engine_analysis, "analyse", erased_meanwhile)
    assert pipeline.session_analyse(session_id=session.pk) is None
    monkeypatch.setattr(engine_analysis, "analyse", real)
    assert cells_holding(ERASED_FORMS) == []
    run_queued_work(door)
    assert cells_holding(ERASED_FORMS) == []
    analysis = SessionAnalysis.objects.get(session=session)
    assert analysis.status == AnalysisStatus.DONE
    assert analysis.analysed_generation == analysis.requested_generation
