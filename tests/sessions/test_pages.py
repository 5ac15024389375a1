"""Session pages through the Django test client: access, scoping and escaping."""

from __future__ import annotations

import pytest
from django.test import Client

from compaction import pipeline
from sessions.models import Role
from tests.factories import make_project, make_session, make_user, wire_message

pytestmark = pytest.mark.django_db

PAYLOAD = '<script>alert("xss")</script><img src=x onerror=alert(1)>'


def test_pages_require_login(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/"


def test_login_page_renders(client: Client) -> None:
    response = client.get("/login/")
    assert response.status_code == 200
    assert b"<h1>Log in</h1>" in response.content


def test_session_list_shows_only_the_users_projects(client: Client) -> None:
    mine, theirs = make_project(name="mine"), make_project(name="theirs")
    make_session(mine, external_id="visible-run")
    make_session(theirs, external_id="hidden-run")
    client.force_login(make_user(project=mine, role=Role.VIEWER))
    body = client.get("/").content.decode()
    assert "visible-run" in body
    assert "hidden-run" not in body


def test_superuser_sees_every_project(client: Client) -> None:
    make_session(make_project(), external_id="any-run")
    client.force_login(make_user(is_superuser=True, is_staff=True))
    assert "any-run" in client.get("/").content.decode()


def test_session_list_has_a_fixed_number_of_queries(
    client: Client, django_assert_num_queries
) -> None:
    project = make_project()
    for _ in range(12):
        make_session(project)
    client.force_login(make_user(project=project))
    # session + user, the navigation's roles, count, the page (sessions joined with projects
    # and analyses), its cost (subagents, calls by model, iterations, summary calls, calls
    # without usage), the three filter drop-downs and the user's saved filters; the same
    # however many sessions there are.
    with django_assert_num_queries(14):
        client.get("/")
    for _ in range(40):
        make_session(project, session={"agent": "another-agent"})
    with django_assert_num_queries(14):
        client.get("/?sort=-peak&compacted=no")


def test_session_of_another_project_is_404(client: Client) -> None:
    session = make_session(make_project())
    client.force_login(make_user(project=make_project()))
    assert client.get(f"/sessions/{session.pk}/").status_code == 404


def test_session_page_shows_hostile_content_as_text(client: Client) -> None:
    project = make_project()
    hostile_blocks = [
        wire_message(0, content=PAYLOAD),
        wire_message(
            1,
            "assistant",
            [{"type": "tool_use", "id": PAYLOAD, "name": PAYLOAD, "input": {PAYLOAD: PAYLOAD}}],
        ),
        wire_message(
            2,
            content=[
                {
                    "type": "tool_result",
                    "tool_use_id": PAYLOAD,
                    "content": PAYLOAD,
                    "is_error": True,
                }
            ],
        ),
    ]
    # an id is one path segment (no "/"): the hostile id is the payload without its slashes
    session = make_session(
        project,
        external_id=PAYLOAD.replace("/", ""),
        messages=0,
        session={"agent": PAYLOAD, "model": PAYLOAD},
        compactions=[{"seq": 3, "summary": PAYLOAD, "error": PAYLOAD}],
    )
    make_session(project, external_id=PAYLOAD.replace("/", "|"), messages=hostile_blocks)
    client.force_login(make_user(project=project))
    for url in ("/", f"/sessions/{session.pk}/"):
        body = client.get(url).content.decode()
        assert "<script>alert" not in body
        assert "<img src=x" not in body
        assert "&lt;script&gt;alert" in body


def test_session_page_names_the_record_types_it_did_not_read(client: Client) -> None:
    project = make_project()
    session = make_session(
        project, session={"metadata": {"unknown_types": {"holodeck_state": 3, PAYLOAD: 1}}}
    )
    plain = make_session(project)
    client.force_login(make_user(project=project))
    body = client.get(f"/sessions/{session.pk}/").content.decode()
    assert "Records not read" in body
    assert 'holodeck_state <span class="muted">\u00d73</span>' in body
    assert "<script>alert" not in body
    assert "Records not read" not in client.get(f"/sessions/{plain.pk}/").content.decode()


def test_session_page_jumps_to_the_page_holding_a_seq(client: Client) -> None:
    project = make_project()
    session = make_session(project, messages=250)
    client.force_login(make_user(project=project))
    response = client.get(f"/sessions/{session.pk}/?seq=180")
    assert response.context["page"].number == 2
    assert 'id="seq-180"' in response.content.decode()


def test_healthz_answers_without_login_and_shows_no_backlog(client: Client) -> None:
    make_session(make_project())  # queued for analysis: a backlog of one
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}  # before: every project's backlog


def test_healthz_shows_a_member_the_backlog_of_their_projects_only(client: Client) -> None:
    mine, theirs = make_project(), make_project()
    make_session(theirs)
    client.force_login(make_user(project=mine))
    assert client.get("/healthz").json() == {
        "status": "ok",
        "analysis_lag_seconds": 0.0,
        "search_lag_seconds": 0.0,
        "sessions_waiting": 0,
    }
    make_session(mine)
    assert client.get("/healthz").json()["sessions_waiting"] == 1


def test_session_list_filters_and_sorts(client: Client) -> None:

    project = make_project()
    quiet = make_session(project, external_id="quiet", session={"agent": "tutor"})
    busy = make_session(
        project,
        external_id="busy",
        session={"agent": "coder", "context_window": 1000},
        messages=[
            wire_message(0, content="go"),
            wire_message(1, "assistant", "ok", usage={"input_tokens": 950, "output_tokens": 5}),
        ],
        compactions=[{"seq": 2, "summary": "", "error": "timed out"}],
    )
    for session in (quiet, busy):
        pipeline.session_analyse(session_id=session.pk)
    client.force_login(make_user(project=project))

    def ids(query: str) -> list[str]:
        rows = client.get(f"/?{query}").context["rows"]
        return [row.session.external_id for row in rows]

    assert ids("agent=coder") == ["busy"]
    assert ids("q=qui") == ["quiet"]
    assert ids("compacted=yes") == ["busy"]
    assert ids("compacted=no") == ["quiet"]
    assert ids("min_fill=90") == ["busy"]
    assert ids("problems=failed") == ["busy"]
    assert ids("sort=session") == ["busy", "quiet"]
    assert ids("sort=-session") == ["quiet", "busy"]
    assert ids("sort=bogus&q=") == ["busy", "quiet"]  # unknown sort falls back to newest first
    body = client.get("/?min_fill=90").content.decode()
    assert "failed splice" in body
    assert "95%" in body


def test_session_list_reports_bad_filter_values(client: Client) -> None:
    client.force_login(make_user(project=make_project()))
    response = client.get("/?min_fill=lots")
    assert response.status_code == 200
    assert "min_fill: Enter a whole number." in response.content.decode()


def test_session_list_filters_by_project_across_the_users_projects(client: Client) -> None:
    first, second = make_project(name="first"), make_project(name="second")
    make_session(first, external_id="in-first")
    make_session(second, external_id="in-second")
    user = make_user(project=first)
    from sessions.models import Membership

    Membership.objects.create(user=user, project=second, role=Role.VIEWER)
    client.force_login(user)
    everything = [r.session.external_id for r in client.get("/").context["rows"]]
    assert sorted(everything) == ["in-first", "in-second"]
    only = client.get(f"/?project={second.pk}")
    assert [r.session.external_id for r in only.context["rows"]] == ["in-second"]
    assert f'<option value="{second.pk}" selected>second</option>' in only.content.decode()


def test_session_page_draws_the_limits_the_agent_declares(client: Client) -> None:
    project = make_project()
    session = make_session(
        project,
        session={"metadata": {"compaction_policy": {"soft_limit": 90000, "hard_limit": 150000}}},
    )
    client.force_login(make_user(project=project))
    layout = client.get(f"/sessions/{session.pk}/").context["figure"]["layout"]
    # A few tiny messages: the axis is scaled to them, and the limits far above are named.
    assert layout["shapes"] == []
    assert [note["text"] for note in layout["annotations"]] == [
        "off scale: window 200,000, hard limit 150,000, soft limit 90,000"
    ]
    messages = [
        wire_message(seq, "assistant", "step", usage={"input_tokens": 40_000 + 20_000 * seq})
        for seq in range(6)
    ]
    near = make_session(
        project,
        messages=messages,
        session={"metadata": {"compaction_policy": {"soft_limit": 90000, "hard_limit": 150000}}},
    )

    pipeline.session_analyse(session_id=near.pk)
    layout = client.get(f"/sessions/{near.pk}/").context["figure"]["layout"]
    assert sorted(shape["y0"] for shape in layout["shapes"]) == [90000, 150000, 200000]


def test_a_summary_written_into_the_trace_is_labelled_as_such(client: Client) -> None:

    project = make_project()
    session = make_session(
        project,
        messages=[
            wire_message(0, content="go"),
            wire_message(1, "assistant", "working"),
            wire_message(2, content="This session is being continued. Summary: ..."),
            wire_message(3, "assistant", "resuming"),
        ],
        compactions=[{"seq": 2, "trigger": "auto", "summary_seq": 2, "summary": "Summary: ..."}],
    )
    pipeline.session_analyse(session_id=session.pk)
    client.force_login(make_user(project=project))
    entries = client.get(f"/sessions/{session.pk}/").context["entries"]
    assert [(e.message.seq, e.is_prompt, e.is_summary) for e in entries] == [
        (0, True, False),
        (1, False, False),
        (2, False, True),
        (3, False, False),
    ]
