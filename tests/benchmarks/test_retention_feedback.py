"""Labels from daily use grow the real-trace benchmark: a verdict feedback file exported by the
product (``GET /api/v1/feedback/export``) is read by ``benchmarks/retention.py --feedback``,
its marks scored as the product's verdicts and joined to the set's case of that compaction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from compaction import pipeline
from compaction.models import CompactionSpan
from sessions.importers.claude_code import claude_code_import
from sessions.models import AgentSession, Role
from team import selectors, services
from tests.benchmarks import benchmark_module
from tests.factories import make_key, make_project, make_user
from tests.importers.corpus import AUTO

pytestmark = pytest.mark.django_db

retention = benchmark_module("retention")


def _run(capsys: pytest.CaptureFixture[str], *argv: Path | str) -> dict[str, Any]:
    assert retention.main([str(a) for a in argv]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.fixture
def exported(client: Client, tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The spotter transcript imported and analysed; every fact of its compaction marked by
    an engineer (lost: right, kept: wrong on every third); the project's export on disk."""
    project = make_project()
    claude_code_import(project=project, paths=[AUTO])
    session = AgentSession.objects.get(project=project, parent__isnull=True)
    pipeline.session_analyse(session_id=session.pk)
    span = CompactionSpan.objects.filter(session=session, replay=None).order_by("seq").first()
    assert span is not None
    assert span.retention
    engineer = make_user(project=project, role=Role.ENGINEER)
    for n, item in enumerate(span.retention):
        mark = "right" if not item["kept"] or n % 3 else "wrong"
        services.fact_mark_set(
            span=span, fact_key=selectors.fact_key(item["text"]), author=engineer, mark=mark
        )
    response = client.get(
        "/api/v1/feedback/export", HTTP_AUTHORIZATION=f"Bearer {make_key(project)}"
    )
    assert response.status_code == 200
    path = tmp_path / "feedback.jsonl"
    path.write_bytes(response.content)
    return path, [json.loads(line) for line in response.content.decode().splitlines()]


def _case(tmp_path: Path, *, facts: list[dict[str, Any]] | None = None) -> Path:
    """The set's case of this compaction, with its labels, or none (``facts=[]``)."""
    cases = retention.load(retention.DATA)
    (case,) = [c for c in cases if c.get("transcript", "").endswith(AUTO.name)]
    if facts is not None:
        case = {**case, "facts": facts}
    path = tmp_path / "case.jsonl"
    path.write_text(json.dumps(case) + "\n")
    return path


def test_an_exported_file_is_read_as_labels_of_that_compaction(
    exported: tuple[Path, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, lines = exported
    lost = [line for line in lines if line["kind"] == "lost"]
    result = _run(capsys, "--data", _case(tmp_path, facts=[]), "--feedback", path)
    assert result["feedback_marks"] == len(lines)
    assert result["feedback_joined"] == len(lines)
    assert result["feedback_unjoined"] == 0
    # every mark became a label of the case, and the engine's report is scored on them
    assert result["facts_labelled"] == len(lines)
    assert result["unlabelled"] == 0
    right_lost = sum(1 for line in lost if line["mark"] == "right")
    assert result["precision_lost_feedback"] == (round(right_lost / len(lost), 4) if lost else None)
    assert result["missed_lost_feedback"] == sum(
        1 for line in lines if line["kind"] == "kept" and line["mark"] == "wrong"
    )
    # the engine of today says what the product said when it was marked: the labels the
    # marks give ("lost" for lost-right and kept-wrong) are what it is scored against
    truly_lost = sum(1 for line in lines if retention.feedback_label(line) == "lost")
    assert result["lost_labelled"] == truly_lost
    assert result["true_lost"] == right_lost


def test_the_sets_own_labels_win_over_a_mark_on_the_same_fact(
    exported: tuple[Path, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, lines = exported
    without = _run(capsys, "--data", _case(tmp_path))
    result = _run(capsys, "--data", _case(tmp_path), "--feedback", path)
    assert result["feedback_known"] + result["feedback_joined"] == len(lines)
    assert result["facts_labelled"] == without["facts_labelled"] + result["feedback_joined"]


def test_a_mark_on_another_session_is_counted_but_joins_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "feedback.jsonl"
    marks = [
        {
            "kind": "lost",
            "session": "elsewhere",
            "seq": 3,
            "fact": "x",
            "verdict": "lost path",
            "mark": "wrong",
            "note": "",
        },
        {
            "kind": "alert",
            "session": "elsewhere",
            "seq": 3,
            "fact": "t",
            "verdict": "overflow",
            "mark": "right",
            "note": "",
        },
    ]
    path.write_text("".join(json.dumps(m) + "\n" for m in marks))
    result = _run(capsys, "--data", _case(tmp_path), "--feedback", path)
    assert (result["feedback_marks"], result["feedback_unjoined"]) == (1, 1)
    assert result["precision_lost_feedback"] == 0.0
