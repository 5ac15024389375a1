"""Messages the analysis found clean are read without a second scan, and nothing else is:
what the read path trusts (privacy/known_clean.py) and every way the claim could go stale."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from compaction import pipeline
from compaction import services as compaction_services
from compaction.models import SessionAnalysis
from privacy import known_clean, masking, message_scan, services, subjects
from privacy.detect import pii
from privacy.known_clean import CleanRange
from privacy.models import Finding
from sessions.models import AgentSession, Message, Project
from tests.factories import make_key, make_project, make_session, wire_message

pytestmark = pytest.mark.django_db

CPF = "530.582.439-79"
MASKED_CPF = "[cpf ***.***.***-79]"


def _chat(project: Project, *, with_cpf_at: int = 3, n: int = 6) -> AgentSession:
    messages = [
        wire_message(seq, "user" if seq % 2 == 0 else "assistant", f"clean text number {seq}")
        for seq in range(n)
    ]
    messages[with_cpf_at]["content"] = f"o CPF do cliente é {CPF}"
    session = make_session(project, messages=messages)
    pipeline.session_analyse(session_id=session.pk)
    return session


@pytest.fixture
def scanned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the read path scans (without its memo, so that every scan is seen)."""
    texts: list[str] = []

    def counting(text: str) -> tuple[pii.Detection, ...]:
        texts.append(text)
        return tuple(sorted(pii.scan(text), key=lambda d: (d.start, d.end)))

    monkeypatch.setattr(masking, "_scan", counting)
    return texts


def _read(project: Project, session: AgentSession) -> list[dict[str, Any]]:
    response = Client().get(
        f"/api/v1/sessions/{session.external_id}/messages",
        HTTP_AUTHORIZATION=f"Bearer {make_key(project)}",
    )
    assert response.status_code == 200, response.content
    return json.loads(response.content)["messages"]


def _text(message: dict[str, Any]) -> str:
    return str(message["content"][0]["text"])


def test_clean_messages_are_not_scanned_again_and_the_one_with_a_value_is_masked(
    scanned: list[str],
) -> None:
    project = make_project()
    session = _chat(project)
    messages = _read(project, session)

    assert _text(messages[3]) == f"o CPF do cliente é {MASKED_CPF}"
    assert [_text(m) for m in messages[:3]] == [f"clean text number {n}" for n in range(3)]
    assert CPF not in json.dumps(messages)
    # Of the values, only the flagged message's were scanned; keys are always scanned.
    assert not [t for t in scanned if t.startswith("clean text")]
    assert f"o CPF do cliente é {CPF}" in scanned
    assert "text" in scanned


def test_a_message_stored_after_the_analysis_is_scanned_at_read(scanned: list[str]) -> None:
    project = make_project()
    session = _chat(project)
    make_session(
        project,
        external_id=session.external_id,
        messages=[wire_message(6, "user", f"e o CPF novo: {CPF}")],
    )
    messages = _read(project, session)
    assert _text(messages[6]) == f"e o CPF novo: {MASKED_CPF}"
    assert not [t for t in scanned if t.startswith("clean text")]


def test_a_range_recorded_by_another_detector_version_is_not_trusted(
    scanned: list[str],
) -> None:
    project = make_project()
    session = _chat(project)
    # As an older detector that missed the CPF would have left it: nothing flagged.
    SessionAnalysis.objects.filter(session=session).update(
        pii_clean_detector="0123456789abcdef", pii_flagged_message_pks=[]
    )
    messages = _read(project, session)
    assert _text(messages[3]) == f"o CPF do cliente é {MASKED_CPF}"
    assert [t for t in scanned if t.startswith("clean text")]


def test_the_read_trusts_the_range_of_the_current_detector() -> None:
    """The other side of the test above: the range, not a scan, decides what is shown."""
    project = make_project()
    session = _chat(project)
    SessionAnalysis.objects.filter(session=session).update(pii_flagged_message_pks=[])
    assert _text(_read(project, session)[3]) == f"o CPF do cliente é {CPF}"


def test_a_key_holding_a_value_is_masked_in_a_clean_message() -> None:
    project = make_project()
    call = {"type": "tool_use", "id": "t1", "name": "lookup", "input": {CPF: "ok"}}
    session = make_session(project, messages=[wire_message(0, "assistant", [call])])
    pipeline.session_analyse(session_id=session.pk)
    assert known_clean.clean_range(session).holds(Message.objects.get(session=session).pk)
    content = _read(project, session)[0]["content"]
    assert content[0]["input"] == {MASKED_CPF: "ok"}


def test_an_erasure_flags_every_message_it_rewrote(monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project()
    session = _chat(project)
    # The bare digits, which the detector does not report without a cue: clean, yet erased.
    bare = Message.objects.get(session=session, seq=1)
    bare.content = [{"type": "text", "text": "ref 53058243979"}]
    bare.save(update_fields=["content"])
    monkeypatch.setattr(compaction_services, "analysis_request", lambda **_: None)
    request = subjects.subject_erase(
        project=project,
        subject=subjects.subject_parse(identifier=CPF),
        by=None,
        reason="titular pediu",
    )
    assert request.result["rows"]["traces.Message"] == 2
    clean = known_clean.clean_range(session)
    for seq in (1, 3):
        assert not clean.holds(Message.objects.get(session=session, seq=seq).pk)
    assert clean.holds(Message.objects.get(session=session, seq=0).pk)
    assert not Finding.objects.filter(session=session, kind="cpf").exists()


def test_a_redaction_flags_the_message_it_rewrote() -> None:
    project = make_project()
    session = _chat(project)
    finding = Finding.objects.get(session=session, where="message")
    SessionAnalysis.objects.filter(session=session).update(pii_flagged_message_pks=[])
    services.finding_redact(finding=finding, user=None, reason="LGPD request 12, redact")
    assert not known_clean.clean_range(session).holds(finding.message_id or 0)


def test_a_message_in_the_range_that_the_scan_did_not_read_is_flagged() -> None:
    project = make_project()
    session = make_session(project, messages=3)
    pks = list(Message.objects.filter(session=session).order_by("pk").values_list("pk", flat=True))
    analysis, _ = SessionAnalysis.objects.get_or_create(session=session)
    known_clean.clean_range_record(
        analysis,
        detector=pii.DETECTOR_VERSION,
        after_pk=0,
        through_pk=pks[-1],
        scanned=[pks[0], pks[2]],  # pks[1] stored between two chunked reads
        flagged=[],
        one_read=False,
    )
    clean = known_clean.clean_range(session)
    assert [clean.holds(pk) for pk in pks] == [True, False, True]


def test_ranges_join_only_when_the_detector_is_the_same_and_they_touch() -> None:
    first = CleanRange("v1", 0, 10, frozenset({4}))
    assert first.extended(detector="v1", after_pk=10, through_pk=20, flagged=[15]) == CleanRange(
        "v1", 0, 20, frozenset({4, 15})
    )
    # A concurrent pass that scanned part of the same messages: still one range.
    assert first.extended(detector="v1", after_pk=5, through_pk=12, flagged=[]) == CleanRange(
        "v1", 0, 12, frozenset({4})
    )
    # A gap, or another detector: the new scan's range only.
    assert first.extended(detector="v1", after_pk=11, through_pk=20, flagged=[]) == CleanRange(
        "v1", 11, 20, frozenset()
    )
    assert first.extended(detector="v2", after_pk=10, through_pk=20, flagged=[12]) == CleanRange(
        "v2", 10, 20, frozenset({12})
    )


def test_nothing_is_known_clean_without_a_detector_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert not CleanRange().holds(1)
    assert not CleanRange("", 0, 10).holds(5)
    monkeypatch.setattr(pii, "DETECTOR_VERSION", "")
    assert not CleanRange("", 0, 10).holds(5)


def test_only_the_engines_own_scan_records_a_detector_version() -> None:
    assert known_clean.detector_of(pii.scan) == pii.DETECTOR_VERSION
    assert known_clean.detector_of(pii.ScanMemo().scan) == pii.DETECTOR_VERSION
    assert known_clean.detector_of(lambda text: []) == ""


def test_the_detector_version_changes_with_the_detectors_source(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    edited = tmp_path / "pii.py"
    edited.write_bytes(Path(pii.__file__).read_bytes() + b"\n# a new rule\n")
    monkeypatch.setattr(pii, "__file__", str(edited))
    assert pii._detector_version() not in ("", pii.DETECTOR_VERSION)
    monkeypatch.setattr(pii, "__file__", str(tmp_path / "missing.py"))
    assert pii._detector_version() == ""


def test_a_scan_counts_its_queries_so_a_chunked_one_is_checked_for_unread_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = make_session(make_project(), messages=5)
    assert message_scan.messages_scan(session, after_pk=0).reads == 1
    monkeypatch.setattr(message_scan, "_CHUNK", 2)
    assert message_scan.messages_scan(session, after_pk=0).reads == 3
    _, found = message_scan.messages_read(session, scan_after=0, scan=pii.scan)
    assert found.reads == 3
    assert len(found.pks) == 5
