"""Verdict feedback: a member's right / wrong on each lost or kept fact of a compaction and on
each alert, one mark per member and verdict, living through a new analysis; the project's
precision per verdict kind (page and API) and the JSON Lines export, masked like the pages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db.models import F
from django.test import Client

from alerts.models import Alert, AlertRule
from compaction import pipeline
from compaction.models import CompactionSpan, SessionAnalysis
from privacy.models import Finding, FindingStatus
from sessions.errors import BadRequest, NotFound
from sessions.models import Role
from team import selectors, services
from team.models import VerdictMark
from tests.factories import make_billing_session, make_key, make_project, make_session, make_user

pytestmark = pytest.mark.django_db

CPF = "530.582.439-79"
PROBE = f"o CPF do cliente é {CPF}"
CONSTRAINT = "Do not change the public API of the billing module."
KEPT_TASK = "Migrate billing to API v2."


@pytest.fixture
def session(project):
    """The billing run: its compaction at #30 loses the probe (quoting a CPF) and the
    constraint, and keeps the task."""
    return make_billing_session(project, probes=[{"seq": 0, "text": PROBE}])


@pytest.fixture
def span(session) -> CompactionSpan:
    return CompactionSpan.objects.get(session=session)


@pytest.fixture
def engineer(project):
    return make_user(project=project, role=Role.ENGINEER)


def key(text: str) -> str:
    return selectors.fact_key(text)


def personal_session(project):
    """A session whose summary copies a customer's CPF: a personal_data alert and findings."""
    session = make_session(
        project,
        external_id="support-1",
        messages=[
            {"seq": n, "role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n}"}
            for n in range(12)
        ],
        compactions=[
            {
                "seq": 10,
                "strategy": "summarize",
                "summary": f"Cliente CPF {CPF}",
                "replaced": {"from_seq": 1, "to_seq": 8},
            }
        ],
    )
    pipeline.session_analyse(session_id=session.pk)
    return session


# --- services ---------------------------------------------------------------------------


def test_a_mark_is_set_changed_and_cleared_one_per_member(span, engineer):
    mark = services.fact_mark_set(
        span=span, fact_key=key(CONSTRAINT), author=engineer, mark="right"
    )
    assert (mark.kind, mark.fact, mark.fact_kind, mark.seq, mark.mark) == (
        "lost",
        CONSTRAINT,
        "constraint",
        30,
        "right",
    )
    again = services.fact_mark_set(
        span=span, fact_key=key(CONSTRAINT), author=engineer, mark="wrong", note="it is there"
    )
    assert again.pk == mark.pk
    assert VerdictMark.objects.get().mark == "wrong"
    # a click without a note keeps the note
    services.fact_mark_set(span=span, fact_key=key(CONSTRAINT), author=engineer, mark="right")
    assert (VerdictMark.objects.get().mark, VerdictMark.objects.get().note) == (
        "right",
        "it is there",
    )
    assert (
        services.fact_mark_set(span=span, fact_key=key(CONSTRAINT), author=engineer, mark="clear")
        is None
    )
    assert not VerdictMark.objects.exists()


def test_each_member_has_their_own_mark_and_the_counts_add_them_up(span, project, engineer):
    other = make_user(project=project, role=Role.PRIVACY_REVIEWER)
    services.fact_mark_set(span=span, fact_key=key(KEPT_TASK), author=engineer, mark="right")
    services.fact_mark_set(span=span, fact_key=key(KEPT_TASK), author=other, mark="wrong")
    services.fact_mark_set(span=span, fact_key=key(KEPT_TASK), author=other, mark="wrong")
    retention = [i for i in span.retention if i["text"] == KEPT_TASK]
    (vm,) = selectors.fact_marks_for(span=span, retention=retention, user=other, can_mark=True)
    assert (vm.verdict, vm.right, vm.wrong, vm.mine) == ("kept", 1, 1, "wrong")
    assert VerdictMark.objects.count() == 2


def test_bad_marks_and_long_notes_and_unknown_facts_are_refused(span, engineer):
    with pytest.raises(BadRequest, match="mark: 'maybe' is not one of right, wrong, clear"):
        services.fact_mark_set(span=span, fact_key=key(CONSTRAINT), author=engineer, mark="maybe")
    with pytest.raises(BadRequest, match="note"):
        services.fact_mark_set(
            span=span, fact_key=key(CONSTRAINT), author=engineer, mark="right", note="x" * 2001
        )
    with pytest.raises(NotFound, match="fact: no such fact in this compaction"):
        services.fact_mark_set(span=span, fact_key=key("not a fact"), author=engineer, mark="right")
    assert not VerdictMark.objects.exists()


def test_a_wrong_mark_says_what_the_verdict_should_have_been(span, engineer):
    """The five verdicts reach feedback: a wrong mark names the right one, so each mark is a
    label in the benchmark's words; a right mark drops it, and nonsense is refused."""
    lost = services.fact_mark_set(
        span=span,
        fact_key=key(CONSTRAINT),
        author=engineer,
        mark="wrong",
        should_be="paraphrased",
    )
    assert (lost.kind, lost.mark, lost.should_be) == ("lost", "wrong", "paraphrased")
    # a second click without should_be (the buttons) keeps it; the note form may change it
    services.fact_mark_set(span=span, fact_key=key(CONSTRAINT), author=engineer, mark="wrong")
    assert VerdictMark.objects.get().should_be == "paraphrased"
    services.fact_mark_set(
        span=span, fact_key=key(CONSTRAINT), author=engineer, mark="wrong", should_be="mentioned"
    )
    assert VerdictMark.objects.get().should_be == "mentioned"
    services.fact_mark_set(span=span, fact_key=key(CONSTRAINT), author=engineer, mark="right")
    assert VerdictMark.objects.get().should_be == ""
    for should_be, problem in (
        ("maybe", "should_be: 'maybe' is not one of kept, paraphrased, lost, mentioned"),
        ("lost", "should_be: the verdict marked wrong is already 'lost'"),
    ):
        with pytest.raises(BadRequest, match=problem):
            services.fact_mark_set(
                span=span,
                fact_key=key(CONSTRAINT),
                author=engineer,
                mark="wrong",
                should_be=should_be,
            )
    with pytest.raises(BadRequest, match="only a wrong mark"):
        services.fact_mark_set(
            span=span, fact_key=key(CONSTRAINT), author=engineer, mark="right", should_be="kept"
        )
    assert VerdictMark.objects.get().mark == "right"  # nothing stored by a refused mark


def test_marks_on_the_other_verdicts_are_counted_apart(client: Client, span, project, engineer):
    """A fact the analysis called "mentioned" is marked as such, and the summary counts it on
    its own row, not as kept or lost."""
    retention = list(span.retention)
    item = next(i for i in retention if i["text"] == KEPT_TASK)
    item.update(verdict="mentioned", kept=True)
    CompactionSpan.objects.filter(pk=span.pk).update(retention=retention)
    span.refresh_from_db()
    mark = services.fact_mark_set(
        span=span, fact_key=key(KEPT_TASK), author=engineer, mark="wrong", should_be="lost"
    )
    assert (mark.kind, mark.should_be) == ("mentioned", "lost")
    (vm,) = selectors.fact_marks_for(span=span, retention=[item], user=engineer, can_mark=True)
    assert (vm.verdict, vm.wrong, vm.should_be) == ("mentioned", 1, "lost")
    assert "mentioned" not in [v for v, _ in vm.should_be_choices]
    items = client.get(
        "/api/v1/feedback/summary", HTTP_AUTHORIZATION=f"Bearer {make_key(project)}"
    ).json()["items"]
    by_kind = {i["kind"]: i for i in items}
    assert by_kind["mentioned"] == {
        "kind": "mentioned",
        "marked": 1,
        "right": 0,
        "wrong": 1,
        "precision": 0.0,
    }
    assert by_kind["kept"]["marked"] == 0
    (line,) = list(selectors.feedback_records(project=project))
    assert (line["kind"], line["verdict"], line["should_be"]) == (
        "mentioned",
        "mentioned task",
        "lost",
    )


def test_a_mark_lives_through_a_new_analysis(client: Client, session, span, engineer):
    services.fact_mark_set(span=span, fact_key=key(CONSTRAINT), author=engineer, mark="wrong")
    # a new analysis that writes the compaction's span afresh, under a new row id
    CompactionSpan.objects.filter(session=session).delete()
    SessionAnalysis.objects.filter(session=session).update(
        requested_generation=F("requested_generation") + 1
    )
    pipeline.session_analyse(session_id=session.pk)
    assert CompactionSpan.objects.get(session=session).pk != span.pk
    client.force_login(engineer)
    page = client.get(f"/sessions/{session.pk}/compactions/30/").content.decode()
    anchor = f'id="fact-{key(CONSTRAINT)[:16]}"'
    box = page[page.index(anchor) : page.index("</div>", page.index(anchor))]
    assert 'value="clear" class="small mark wrong" aria-pressed="true"' in box


def test_a_personal_data_alert_takes_no_second_mark(session, engineer):
    alert = Alert.objects.filter(session=session).first()
    Alert.objects.filter(pk=alert.pk).update(rule=AlertRule.PERSONAL_DATA)
    alert.refresh_from_db()
    with pytest.raises(BadRequest, match="privacy review"):
        services.alert_mark_set(alert=alert, author=engineer, mark="right")


# --- pages ------------------------------------------------------------------------------


def test_a_click_without_js_redirects_to_the_fact_and_with_htmx_answers_its_box(
    client: Client, session, engineer
):
    client.force_login(engineer)
    url = f"/feedback/sessions/{session.pk}/compactions/30/"
    response = client.post(url, {"fact": key(CONSTRAINT), "mark": "right"})
    assert response.status_code == 302
    assert (
        response["Location"]
        == f"/sessions/{session.pk}/compactions/30/#fact-{key(CONSTRAINT)[:16]}"
    )
    response = client.post(url, {"fact": key(CONSTRAINT), "mark": "wrong"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    box = response.content.decode().strip()
    assert box.startswith(f'<div class="verdict-marks" id="fact-{key(CONSTRAINT)[:16]}"')
    assert 'aria-pressed="true"' in box
    assert "Wrong" in box
    assert 'name="note"' in box  # the note opens once marked
    assert VerdictMark.objects.get().mark == "wrong"


def test_the_span_page_puts_marks_on_every_fact_and_no_fact_text_in_the_forms(
    client: Client, session, span, engineer
):
    client.force_login(engineer)
    page = client.get(f"/sessions/{session.pk}/compactions/30/").content.decode()
    assert page.count('class="mark-form"') == len(span.retention)
    assert CPF not in page  # masked in the text, and the form carries the fact's key only
    assert f'name="fact" value="{key(PROBE)}"' in page


def test_a_viewer_sees_the_counts_but_cannot_mark(client: Client, session, span, project, engineer):
    services.fact_mark_set(span=span, fact_key=key(CONSTRAINT), author=engineer, mark="right")
    viewer = make_user(project=project, role=Role.VIEWER)
    client.force_login(viewer)
    page = client.get(f"/sessions/{session.pk}/compactions/30/").content.decode()
    assert 'class="mark-form"' not in page
    assert "Marked right 1 · wrong 0" in page
    response = client.post(
        f"/feedback/sessions/{session.pk}/compactions/30/",
        {"fact": key(CONSTRAINT), "mark": "wrong"},
    )
    assert response.status_code == 403
    assert VerdictMark.objects.get().mark == "right"


def test_another_projects_compaction_and_alert_answer_404(client: Client, session):
    outsider = make_user(project=make_project(), role=Role.ADMIN)
    client.force_login(outsider)
    alert = Alert.objects.filter(session=session).first()
    assert (
        client.post(
            f"/feedback/sessions/{session.pk}/compactions/30/",
            {"fact": key(CONSTRAINT), "mark": "right"},
        ).status_code
        == 404
    )
    assert client.post(f"/feedback/alerts/{alert.pk}/", {"mark": "right"}).status_code == 404
    assert client.get(f"/projects/{session.project_id}/feedback/").status_code == 404
    assert client.get(f"/projects/{session.project_id}/feedback.jsonl").status_code == 404
    assert not VerdictMark.objects.exists()


def test_an_unknown_fact_answers_404(client: Client, session, engineer):
    client.force_login(engineer)
    url = f"/feedback/sessions/{session.pk}/compactions/30/"
    assert client.post(url, {"fact": "0" * 64, "mark": "right"}).status_code == 404
    url = f"/feedback/sessions/{session.pk}/compactions/31/"
    assert client.post(url, {"fact": key(CONSTRAINT), "mark": "right"}).status_code == 404


def test_marking_an_alert_on_its_page(client: Client, session, engineer):
    alert = Alert.objects.filter(session=session, rule=AlertRule.LOST_CONSTRAINT).get()
    client.force_login(engineer)
    response = client.post(f"/feedback/alerts/{alert.pk}/", {"mark": "wrong"}, follow=True)
    assert response.redirect_chain[-1][0] == f"/alerts/{alert.pk}/#alert-marks"
    page = response.content.decode()
    assert 'id="alert-marks"' in page
    assert 'aria-pressed="true"' in page
    assert VerdictMark.objects.get(alert=alert).kind == "alert"


def test_a_personal_data_alert_shows_the_privacy_review_instead_of_buttons(
    client: Client, project, engineer
):
    session = personal_session(project)
    alert = Alert.objects.get(session=session, rule=AlertRule.PERSONAL_DATA)
    Finding.objects.filter(session=session, where="summary").update(
        status=FindingStatus.FALSE_POSITIVE
    )
    client.force_login(engineer)
    page = client.get(f"/alerts/{alert.pk}/").content.decode()
    assert "Marked by the privacy review" in page
    assert "1 false positive" in page
    assert 'class="mark-form"' not in page


def test_the_feedback_page_shows_precision_and_links_each_mark_masked(
    client: Client, session, span, project, engineer
):
    services.fact_mark_set(
        span=span, fact_key=key(PROBE), author=engineer, mark="right", note=f"CPF {CPF} gone"
    )
    services.fact_mark_set(span=span, fact_key=key(CONSTRAINT), author=engineer, mark="wrong")
    viewer = make_user(project=project, role=Role.VIEWER)
    client.force_login(viewer)
    page = client.get(f"/projects/{project.pk}/feedback/").content.decode()
    assert CPF not in page
    assert "***.***.***-79" in page
    assert f'href="/sessions/{session.pk}/compactions/30/#fact-{key(PROBE)[:16]}"' in page
    assert "50%" in page  # lost: one right of two
    assert f'href="/projects/{project.pk}/feedback.jsonl"' in page


# --- export and API ---------------------------------------------------------------------


def _lines(content: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in content.decode().splitlines()]


def test_the_export_has_exactly_the_design_keys_and_is_masked_for_every_reader(
    client: Client, session, span, project, engineer
):
    services.fact_mark_set(
        span=span, fact_key=key(PROBE), author=engineer, mark="right", note=f"CPF {CPF} gone"
    )
    services.fact_mark_set(span=span, fact_key=key(KEPT_TASK), author=engineer, mark="wrong")
    alert = Alert.objects.get(session=session, rule=AlertRule.LOST_CONSTRAINT)
    services.alert_mark_set(alert=alert, author=engineer, mark="right")
    client.force_login(make_user(project=project, role=Role.VIEWER))
    response = client.get(f"/projects/{project.pk}/feedback.jsonl")
    assert response["Content-Type"] == "application/x-ndjson"
    page_lines = _lines(response.content)
    api = client.get("/api/v1/feedback/export", HTTP_AUTHORIZATION=f"Bearer {make_key(project)}")
    assert api.status_code == 200
    assert api["Content-Type"] == "application/x-ndjson"
    assert _lines(api.content) == page_lines
    assert [set(line) for line in page_lines] == [
        {"kind", "session", "seq", "fact", "verdict", "mark", "note", "should_be"}
    ] * 3
    probe, task, on_alert = page_lines
    assert probe == {
        "kind": "lost",
        "session": "billing-run",
        "seq": 30,
        "fact": "o CPF do cliente é [cpf ***.***.***-79]",
        "verdict": "lost probe",
        "mark": "right",
        "note": "CPF [cpf ***.***.***-79] gone",
        "should_be": None,
    }
    assert (task["kind"], task["verdict"], task["mark"], task["fact"]) == (
        "kept",
        "kept task",
        "wrong",
        KEPT_TASK,
    )
    assert (on_alert["kind"], on_alert["verdict"], on_alert["seq"]) == (
        "alert",
        "lost_constraint",
        30,
    )
    assert CPF not in json.dumps(page_lines, ensure_ascii=False)


def test_the_summary_api_gives_precision_per_verdict_kind(client: Client, span, project, engineer):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {make_key(project)}"}
    empty = client.get("/api/v1/feedback/summary", **headers).json()
    assert empty == {
        "items": [
            {"kind": k, "marked": 0, "right": 0, "wrong": 0, "precision": None}
            for k in (
                "lost",
                "kept",
                "alert",
                "personal_data",
                "paraphrased",
                "mentioned",
                "reloaded",
            )
        ]
    }
    other = make_user(project=project, role=Role.ENGINEER)
    services.fact_mark_set(span=span, fact_key=key(PROBE), author=engineer, mark="right")
    services.fact_mark_set(span=span, fact_key=key(CONSTRAINT), author=engineer, mark="right")
    services.fact_mark_set(span=span, fact_key=key(CONSTRAINT), author=other, mark="wrong")
    services.fact_mark_set(span=span, fact_key=key(KEPT_TASK), author=other, mark="right")
    items = client.get("/api/v1/feedback/summary", **headers).json()["items"]
    assert items[0] == {"kind": "lost", "marked": 3, "right": 2, "wrong": 1, "precision": 0.6667}
    assert items[1] == {"kind": "kept", "marked": 1, "right": 1, "wrong": 0, "precision": 1.0}
    assert items[2]["precision"] is None
    # the privacy review's decisions, one per place however often the value repeats there
    found = Finding.objects.filter(session=personal_session(project), level="finding")
    assert found.exists()
    found.update(status=FindingStatus.CONFIRMED)
    items = client.get("/api/v1/feedback/summary", **headers).json()["items"]
    places = {(f.where, f.message_id, f.event_id, f.kind, f.value_hash) for f in found}
    assert items[3] == {
        "kind": "personal_data",
        "marked": len(places),
        "right": len(places),
        "wrong": 0,
        "precision": 1.0,
    }


def test_the_feedback_api_needs_the_projects_key(client: Client, span, engineer):
    services.fact_mark_set(span=span, fact_key=key(PROBE), author=engineer, mark="right")
    for path in ("/api/v1/feedback/summary", "/api/v1/feedback/export"):
        assert client.get(path).status_code == 401
        other = client.get(path, HTTP_AUTHORIZATION=f"Bearer {make_key(make_project())}")
        assert other.status_code == 200
    # another project's key reads its own (empty) feedback
    assert (
        client.get(
            "/api/v1/feedback/summary", HTTP_AUTHORIZATION=f"Bearer {make_key(make_project())}"
        ).json()["items"][0]["marked"]
        == 0
    )
    other = client.get(
        "/api/v1/feedback/export", HTTP_AUTHORIZATION=f"Bearer {make_key(make_project())}"
    )
    assert other.content == b""


def test_the_openapi_schema_documents_the_feedback_endpoints(client: Client) -> None:
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    summary = paths["/api/v1/feedback/summary"]["get"]["responses"]["200"]
    assert summary["content"]["application/json"]["schema"]["$ref"].endswith("FeedbackSummary")
    export = paths["/api/v1/feedback/export"]["get"]["responses"]["200"]
    assert "application/x-ndjson" in export["content"]
    assert '"mark": "right"|"wrong"' in export["description"]
