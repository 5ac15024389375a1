"""Search in trace content: what matches, where a hit leads, snippets, scoping, the API."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test import Client
from django.utils import timezone

from compaction import pipeline
from compaction.models import SessionAnalysis
from sessions import search
from sessions.models import AgentSession, Message, Role
from tests.factories import (
    make_key,
    make_project,
    make_searchable_session,
    make_user,
    wire_message,
)

pytestmark = pytest.mark.django_db

PAYLOAD = '<script>alert("xss")</script><img src=x onerror=alert(1)>'


def _billing_run(project, external_id: str = "billing-run") -> AgentSession:
    return make_searchable_session(
        project,
        external_id=external_id,
        session={"metadata": {"git_branch": "feature/tarifa-nova"}},
        messages=[
            wire_message(0, content="Migrate billing to API v2. Não altere a API pública."),
            wire_message(
                1,
                "assistant",
                [
                    {"type": "text", "text": "Reading the module."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "read_file",
                        "input": {"path": "billing/api.py"},
                    },
                ],
            ),
            wire_message(
                2,
                content=[
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01",
                        "content": "def charge_customer(amount): raise QuotaExceededError",
                        "is_error": False,
                    }
                ],
            ),
        ],
        compactions=[
            {"seq": 3, "trigger": "auto", "summary": "Goal: migrate billing; kept the webhook."}
        ],
    )


def _hits(project, q: str, kind: str = "message") -> list[search.SearchHit]:
    sessions = AgentSession.objects.filter(project=project)
    finder = {
        "message": search.message_hits,
        "summary": search.summary_hits,
        "session": search.session_hits,
    }[kind]
    return finder(sessions=sessions, q=q).hits


@pytest.mark.parametrize(
    ("q", "seq"),
    [
        ("migrate billing", 0),  # words of a prompt
        ("não altere", 0),  # Portuguese, accents kept as written
        ("read_file", 1),  # a tool name
        ("billing/api.py", 1),  # a tool input, a path whole
        ("api.py", 1),  # part of a path (substring fallback)
        ("charge_customer", 2),  # an identifier in a tool result
        ("QuotaExceededError", 2),  # an error text, any case
        ('"raise quotaexceedederror"', 2),  # a quoted phrase
    ],
)
def test_search_finds_the_exact_message(q: str, seq: int) -> None:
    project = make_project()
    _billing_run(project)
    make_searchable_session(project, external_id="other-run")
    hits = _hits(project, q)
    assert [(h.session.external_id, h.seq) for h in hits] == [("billing-run", seq)]
    assert any(marked for _, marked in hits[0].segments), "the hit is highlighted"


def test_search_finds_summaries_and_session_metadata() -> None:
    project = make_project()
    _billing_run(project)
    [summary] = _hits(project, "webhook", kind="summary")
    assert (summary.seq, summary.kind) == (3, "summary")
    assert ("webhook", True) in summary.segments
    [session] = _hits(project, "tarifa", kind="session")
    assert session.session.external_id == "billing-run"


def test_search_does_not_match_words_that_are_absent() -> None:
    project = make_project()
    _billing_run(project)
    assert _hits(project, "refund") == []
    assert sorted(h.seq for h in _hits(project, "billing")) == [0, 1]  # a word, part of a path
    assert [h.seq for h in _hits(project, "billing -migrate")] == [1]  # a word excluded
    assert [h.seq for h in _hits(project, "billing -reading")] == [0]
    assert _hits(project, "billing/models.py") == []  # the path whole, not its first part


def test_snippet_marks_hits_and_escapes_hostile_text() -> None:
    project = make_project()
    make_searchable_session(
        project, messages=[wire_message(0, content=f"{PAYLOAD} needle {PAYLOAD}")]
    )
    [hit] = _hits(project, "needle")
    html = search.snippet_html(hit.segments)
    assert "<mark>needle</mark>" in html
    assert "<script>" not in html
    assert "<img" not in html
    assert "&lt;script&gt;" in html


def test_snippet_markers_inside_trace_text_cannot_forge_highlights() -> None:
    project = make_project()
    forged = f"{search.START}<b>fake</b>{search.STOP} then needle"
    make_searchable_session(project, messages=[wire_message(0, content=forged)])
    [hit] = _hits(project, "needle")
    assert [text for text, marked in hit.segments if marked] == ["needle"]
    assert "<b>" not in search.snippet_html(hit.segments)


def test_long_tool_result_gives_a_short_snippet_around_the_hit() -> None:
    project = make_project()
    text = "filler " * 20_000 + "the needle is here " + "filler " * 100
    make_searchable_session(project, messages=[wire_message(0, content=text)])
    [hit] = _hits(project, "needle")
    assert len(hit.text) < 600
    assert ("needle", True) in hit.segments


def test_a_long_block_is_indexed_by_its_head_tail_and_the_names_in_its_middle(
    client: Client,
) -> None:
    project = make_project()
    middle = "filler words " * 500 + "raised QuotaExceededError in billing/api.py, plainword "
    text = "opening " + middle + "filler " * 500 + " closing"
    session = make_searchable_session(
        project,
        messages=[wire_message(0, content=[{"type": "text", "text": text}])],
    )
    stored = Message.objects.get(session=session).search_text
    assert stored is not None
    assert len(stored) < search.BLOCK_HEAD_CHARS + search.BLOCK_TAIL_CHARS + 200 < len(text)
    for q in ("opening", "closing", "QuotaExceededError", "billing/api.py", "api.py"):
        assert len(_hits(project, q)) == 1, q
    assert _hits(project, "plainword") == []
    client.force_login(make_user(project=project))
    body = client.get("/search/", {"q": "plainword"}).content.decode()
    assert "A block longer than 4,000 characters (a long tool output) is searched in its " in body


def test_search_uses_the_gin_indexes() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")
    project = make_project()
    _billing_run(project)
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        plans = [
            search.Message.objects.filter(search._message_match(q)).order_by().explain()
            for q in ("charge_customer", "api.py")
        ]
        summary_plan = (
            search.CompactionEvent.objects.filter(search._summary_match("webhook"))
            .order_by()
            .explain()
        )
        cursor.execute("SET enable_seqscan = on")
    assert all("Bitmap Index Scan on message_search" in plan for plan in plans)
    assert "Bitmap Index Scan on compaction_summary_search" in summary_plan


def test_list_box_searches_content_and_combines_with_filters(client: Client) -> None:
    project = make_project()
    _billing_run(project)
    make_searchable_session(project, external_id="support-run", session={"agent": "support"})
    make_searchable_session(
        project,
        external_id="other-billing",
        session={"agent": "support"},
        messages=[wire_message(0, content="charge_customer fails again")],
    )
    client.force_login(make_user(project=project, role=Role.VIEWER))
    body = client.get("/?q=charge_customer").content.decode()
    assert "billing-run" in body
    assert "other-billing" in body
    assert "support-run" not in body
    body = client.get("/?q=charge_customer&agent=support").content.decode()
    assert "other-billing" in body
    assert "billing-run" not in body
    assert "2 sessions match" in client.get("/?q=charge_customer").content.decode()


def test_search_page_links_each_hit_to_its_message(client: Client) -> None:
    project = make_project()
    session = _billing_run(project)
    client.force_login(make_user(project=project, role=Role.VIEWER))
    body = client.get("/search/?q=charge_customer").content.decode()
    assert f'href="/sessions/{session.pk}/?seq=2#seq-2"' in body
    assert "<mark>charge_customer</mark>" in body
    body = client.get("/search/?q=webhook").content.decode()
    # a summary's hit opens its compaction: the summary beside the history it replaced
    assert f'href="/sessions/{session.pk}/compactions/3/">Summary at #3</a>' in body
    assert client.get(f"/sessions/{session.pk}/compactions/3/").status_code == 200


def test_search_page_is_scoped_to_the_users_projects(client: Client) -> None:
    mine, theirs = make_project(), make_project()
    my_run = f'href="/sessions/{_billing_run(mine, "my-run").pk}/'
    their_run = f'href="/sessions/{_billing_run(theirs, "their-run").pk}/'
    client.force_login(make_user(project=mine, role=Role.VIEWER))
    body = client.get("/search/?q=charge_customer").content.decode()
    assert my_run in body
    assert their_run not in body
    body = client.get(f"/search/?q=charge_customer&project={theirs.pk}").content.decode()
    assert my_run not in body
    assert their_run not in body


def test_search_page_shows_hostile_content_as_text(client: Client) -> None:
    project = make_project()
    make_searchable_session(project, messages=[wire_message(0, content=f"needle {PAYLOAD}")])
    client.force_login(make_user(project=project))
    body = client.get("/search/?q=needle").content.decode()
    assert "<mark>needle</mark>" in body
    assert PAYLOAD not in body
    assert "<img src=x" not in body


def test_search_api_is_scoped_to_the_key(client: Client) -> None:
    mine, theirs = make_project(), make_project()
    _billing_run(mine, "my-run")
    _billing_run(theirs, "their-run")
    key = make_key(mine)
    response = client.get(
        "/api/v1/search", {"q": "charge_customer"}, HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert response.status_code == 200
    data = response.json()
    assert data["count"] == 1
    [item] = data["items"]
    assert (item["session"], item["seq"], item["kind"]) == ("my-run", 2, "message")
    start, end = item["highlights"][0]
    assert item["snippet"][start:end] == "charge_customer"


def test_search_api_kinds_and_paging(client: Client) -> None:
    project = make_project()
    for n in range(3):
        make_searchable_session(project, messages=[wire_message(0, content=f"needle {n}")])
    key = make_key(project)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    page = client.get("/api/v1/search", {"q": "needle", "limit": 2}, **auth).json()
    assert (page["count"], len(page["items"])) == (3, 2)
    rest = client.get("/api/v1/search", {"q": "needle", "limit": 2, "offset": 2}, **auth).json()
    assert (rest["count"], len(rest["items"])) == (3, 1)
    _billing_run(project)
    summaries = client.get("/api/v1/search", {"q": "webhook", "kind": "summary"}, **auth).json()
    assert [i["seq"] for i in summaries["items"]] == [3]


def test_search_api_rejects_a_missing_query(client: Client) -> None:
    key = make_key(make_project())
    response = client.get("/api/v1/search", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 400
    assert "q" in json.loads(response.content)["error"]
    assert client.get("/api/v1/search", {"q": "x"}).status_code == 401


def test_counting_stops_at_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "COUNT_CAP", 3)
    project = make_project()
    for n in range(5):
        make_searchable_session(project, messages=[wire_message(0, content=f"needle {n}")])
    sessions = AgentSession.objects.filter(project=project)
    page = search.message_hits(sessions=sessions, q="needle", limit=2)
    assert (page.count, page.count_capped, len(page.hits)) == (3, True, 2)
    assert search.message_hits(sessions=sessions, q="needle", limit=5).count == 5
    newest = AgentSession.objects.filter(project=project).latest("pk")
    assert page.hits[0].session == newest  # the most recently stored first


ODD_QUERIES = ["\x00", "a\x00b", "!!!", "-", '"', "(", "&|!", "'; DROP TABLE x; --"]


@pytest.mark.parametrize("q", ODD_QUERIES)
def test_odd_queries_answer_without_an_error(client: Client, q: str) -> None:
    project = make_project()
    _billing_run(project)
    key = make_key(project)
    response = client.get("/api/v1/search", {"q": q}, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code in (200, 400)
    client.force_login(make_user(project=project))
    assert client.get("/search/", {"q": q}).status_code == 200
    assert client.get("/", {"q": q}).status_code == 200


# --- search reads masked text only ------------------------------------------------------

CPF = "530.582.439-79"
PERSON = f"Sou Camila Nogueira Figueiredo, CPF {CPF}, telefone (11) 98765-4321, erro 502."


def test_a_part_of_a_document_or_phone_finds_nothing_and_a_number_outside_one_still_does(
    client: Client,
) -> None:
    project = make_project()
    make_searchable_session(project, messages=[wire_message(0, content=PERSON)])
    sessions = AgentSession.objects.filter(project=project)
    for part in ("530", "582.439", "98765", "Nogueira", "camila nogueira"):
        page = search.message_hits(sessions=sessions, q=part)
        assert (page.count, page.hits) == (0, []), part
    [hit] = search.message_hits(sessions=sessions, q="502").hits
    assert CPF not in hit.text
    assert "[cpf ***.***.***-79]" in hit.text
    searched = Message.objects.get(session__project=project).search_text
    assert searched.startswith("Sou [person_name C*** N*** F***], CPF [cpf ***.***.***-79]")
    client.force_login(make_user(project=project, role=Role.ADMIN))
    body = client.get("/search/", {"q": "530"}).content.decode()
    assert "No message contains" in body


@pytest.mark.parametrize("q", [CPF, "53058243979", "camila.figueiredo98@gmail.com"])
def test_a_query_that_is_an_identifier_is_refused_for_every_role_and_key_saying_why(
    client: Client, q: str
) -> None:
    project = make_project()
    make_searchable_session(
        project, messages=[wire_message(0, content=f"{PERSON} camila.figueiredo98@gmail.com")]
    )
    for role in (Role.VIEWER, Role.PRIVACY_REVIEWER, Role.ADMIN):
        client.force_login(make_user(project=project, role=role))
        for page in ("/search/", "/"):
            body = client.get(page, {"q": q}).content.decode()
            assert "Not searched: it holds a" in body, (role, page)
            assert "Subject requests" in body
            assert q not in body, (role, page)  # not echoed in the box or in any link
    answer = client.get(
        "/api/v1/search", {"q": q}, HTTP_AUTHORIZATION=f"Bearer {make_key(project)}"
    ).json()
    assert (answer["count"], answer["items"], answer["q"]) == (0, [], "")
    assert answer["refused"].startswith("not searched: it holds a")


def test_a_message_is_searchable_once_analysed_and_the_page_says_how_many_are_not(
    client: Client,
) -> None:
    from tests.factories import make_session

    project = make_project()
    make_searchable_session(project, messages=[wire_message(0, content="needle one")])
    pending = make_session(project, messages=[wire_message(0, content="needle two")])
    client.force_login(make_user(project=project))
    now = timezone.now()
    SessionAnalysis.objects.filter(session=pending).update(queued_at=now - timedelta(seconds=75))
    with time_machine.travel(now, tick=False):
        body = client.get("/search/", {"q": "needle"}).content.decode()
    assert "Search is 1 min 15 s behind the uploads: 1 message of these sessions is not " in body
    assert "1 session waits for its analysis" in body
    assert 'Messages <span class="muted">1 match' in body  # the session's title is found

    pipeline.session_analyse(session_id=pending.pk)
    body = client.get("/search/", {"q": "needle"}).content.decode()
    assert "not searchable yet" not in body
    assert 'Messages <span class="muted">2 matches' in body


def test_a_session_is_found_by_its_own_fields_at_once_but_never_by_an_identifier_in_them() -> None:
    from tests.factories import make_session

    project = make_project()
    make_session(project, external_id=f"cliente-{CPF}", session={"agent": "suporte-pedidos"})
    sessions = AgentSession.objects.filter(project=project)
    [hit] = search.session_hits(sessions=sessions, q="suporte").hits
    assert CPF not in hit.text
    assert search.session_hits(sessions=sessions, q="582").hits == []
