"""A detector change reaches sessions scanned before it: findings and subject index rescanned,
review decisions kept (privacy/rescan.py, findings.scan_stale)."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command

from compaction import pipeline
from compaction.models import SessionAnalysis
from config.settings import CELERY_BEAT_SCHEDULE, CELERY_TASK_ROUTES
from privacy import findings, rescan, services, subjects, tasks
from privacy.detect import pii
from privacy.models import Finding, FindingStatus, SubjectIndexMark, SubjectToken
from tests.factories import make_project, make_session, wire_message

pytestmark = pytest.mark.django_db

CPF = "530.582.439-79"
TIMESTAMP = "1234567890.0"  # what an older rule read as a phone number
EMAIL = "camila@gmail.com"


def older_detector(text: str) -> list[pii.Detection]:
    """Today's rules plus a false positive of an earlier version: a Unix time as a phone."""
    found = pii.scan(text)
    for match in re.finditer(re.escape(TIMESTAMP), text):
        found.append(
            pii.Detection("phone", match.start(), match.end(), TIMESTAMP, "1234567890", "high")
        )
    return found


def scanned_by_the_older_detector(project, external_id="old-1"):
    """A session analysed, then its messages' findings and index made by the older rules, as
    a session stored before the upgrade has them."""
    session = make_session(
        project,
        external_id=external_id,
        messages=[
            wire_message(0, "user", f"Meu CPF é {CPF}, e-mail {EMAIL}."),
            wire_message(1, "assistant", [{"type": "text", "text": f"started {TIMESTAMP}"}]),
            wire_message(2, "user", f"CPF {CPF} de novo, at {TIMESTAMP}"),
        ],
    )
    pipeline.session_analyse(session_id=session.pk)
    SessionAnalysis.objects.filter(session=session).update(pii_scanned_message_pk=0)
    Finding.objects.filter(session=session).delete()
    SubjectToken.objects.filter(session=session).delete()
    SubjectIndexMark.objects.filter(session=session).update(message_pk=0)
    findings.session_findings_scan(session_id=session.pk, scan=older_detector)
    analysis = SessionAnalysis.objects.get(session=session)
    subjects.subject_index_session(session=session, scan=older_detector)
    # What a version before this one recorded: another detector's digest.
    SessionAnalysis.objects.filter(pk=analysis.pk).update(pii_clean_detector="0123456789abcdef")
    return session


def kinds(session) -> list[tuple[int | None, str, str]]:
    rows = Finding.objects.filter(session=session, where="message").order_by("seq", "kind")
    return [(f.seq, f.kind, f.status) for f in rows]


@pytest.fixture
def project():
    return make_project(name="loja")


def test_a_rescan_drops_what_the_old_rules_found_and_keeps_review_decisions(project):
    session = scanned_by_the_older_detector(project)
    assert ("phone" in {k for _, k, _ in kinds(session)}) is True
    confirmed = Finding.objects.get(session=session, seq=0, kind="cpf")
    services.finding_review(finding=confirmed, status=FindingStatus.CONFIRMED, user=None)
    phone = Finding.objects.filter(session=session, kind="phone").first()
    services.finding_review(finding=phone, status=FindingStatus.FALSE_POSITIVE, user=None)
    email = Finding.objects.get(session=session, kind="email")
    services.finding_redact(finding=email, user=None, reason="LGPD request 12, redact")

    assert rescan.session_rescan(session_id=session.pk) is True

    assert kinds(session) == [
        (0, "cpf", FindingStatus.CONFIRMED),
        (0, "email", FindingStatus.REDACTED),
        (2, "cpf", FindingStatus.OPEN),
    ]
    analysis = SessionAnalysis.objects.get(session=session)
    assert analysis.pii_clean_detector == pii.DETECTOR_VERSION
    assert analysis.pii_scanned_message_pk == session.messages.order_by("pk").last().pk
    assert rescan.session_rescan(session_id=session.pk) is False


def test_a_rescan_rebuilds_the_subject_index_of_the_messages(project):
    session = scanned_by_the_older_detector(project)
    phones = SubjectToken.objects.filter(session=session, kind="phone")
    assert phones.count() == 2
    cpf_tokens = set(
        SubjectToken.objects.filter(session=session, kind="cpf").values_list("seq", "count")
    )
    rescan.session_rescan(session_id=session.pk)
    assert not phones.exists()
    assert (
        set(SubjectToken.objects.filter(session=session, kind="cpf").values_list("seq", "count"))
        == cpf_tokens
        == {(0, 1), (2, 1)}
    )


def test_the_next_analysis_pass_rescans_a_stale_session(project):
    session = scanned_by_the_older_detector(project)
    make_session(project, external_id="old-1", messages=[wire_message(3, "user", "ok")])
    pipeline.session_analyse(session_id=session.pk)
    assert "phone" not in {k for _, k, _ in kinds(session)}
    assert not SubjectToken.objects.filter(session=session, kind="phone").exists()
    assert SessionAnalysis.objects.get(session=session).pii_clean_detector == (pii.DETECTOR_VERSION)


def test_the_sweep_rescans_a_batch_newest_first_and_the_command_the_rest(project):
    old = [scanned_by_the_older_detector(project, external_id=f"old-{n}") for n in range(3)]
    current = make_session(
        project, external_id="current", messages=[wire_message(0, "user", TIMESTAMP)]
    )
    pipeline.session_analyse(session_id=current.pk)
    assert list(rescan.stale_sessions()) == [s.pk for s in reversed(old)]
    assert rescan.stale_sessions_rescan(limit=2) == 2
    assert list(rescan.stale_sessions()) == [old[0].pk]
    out = StringIO()
    call_command("scan_personal_data", "loja", stdout=out)
    expected = Finding.objects.count()
    assert out.getvalue() == (
        f"4 sessions scanned (1 again, by the current detector), {expected} findings stored.\n"
    )
    assert not Finding.objects.filter(kind="phone").exists()
    assert not list(rescan.stale_sessions())


def test_a_session_scanned_by_a_stand_in_is_not_stale(project):
    session = make_session(project, messages=[wire_message(0, "user", "oi")])
    findings.session_findings_scan(session_id=session.pk, scan=older_detector)
    analysis = SessionAnalysis.objects.get(session=session)
    assert analysis.pii_scanned_message_pk > 0
    assert findings.scan_stale(analysis) is True  # nothing recorded which rules made them
    assert findings.scan_stale(analysis, detector="") is False


def test_a_session_the_detector_fails_on_does_not_stop_the_sweep(project, monkeypatch, caplog):
    old = [scanned_by_the_older_detector(project, external_id=f"old-{n}") for n in range(2)]
    real = findings.session_findings_scan

    def failing(*, session_id, **kwargs):
        if session_id == old[1].pk:
            raise ValueError("detector bug")
        return real(session_id=session_id, **kwargs)

    monkeypatch.setattr(findings, "session_findings_scan", failing)
    assert rescan.stale_sessions_rescan() == 1
    assert list(rescan.stale_sessions()) == [old[1].pk]
    assert f"personal data rescan of session {old[1].pk} failed" in caplog.text


def test_beat_and_the_routes_find_the_rescan_by_the_name_it_had_before_the_move() -> None:
    assert tasks.stale_findings_rescan.name == "compaction.tasks.stale_findings_rescan"
    assert tasks.stale_findings_rescan.name in CELERY_TASK_ROUTES
    assert tasks.stale_findings_rescan.name in {e["task"] for e in CELERY_BEAT_SCHEDULE.values()}
