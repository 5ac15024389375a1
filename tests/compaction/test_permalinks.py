"""Links to a compaction last: its address is the session (or replay) and the seq, a new
analysis keeps span ids (and what hangs on them), and the ids of spans gone redirect."""

from __future__ import annotations

import pytest
from django.test import Client

from compaction import pipeline
from compaction.models import CompactionSpan, RetiredSpan, SpanOrigin
from team.models import Comment
from tests.factories import make_project, make_session, make_user, wire_message

pytestmark = pytest.mark.django_db


def compaction(seq: int, summary: str = "Goal: ship the migration.") -> dict[str, object]:
    return {
        "seq": seq,
        "strategy": "summarize",
        "summary": summary,
        "tokens_before": 90_000,
        "tokens_after": 20_000,
        "replaced": {"from_seq": 1, "to_seq": seq - 2},
    }


def messages(first: int, last: int) -> list[dict[str, object]]:
    return [
        wire_message(seq, "user" if seq % 2 == 0 else "assistant", f"turn {seq}")
        for seq in range(first, last)
    ]


@pytest.fixture
def project():
    return make_project()


@pytest.fixture
def session(project):
    session = make_session(
        project,
        external_id="run-1",
        messages=messages(0, 24),
        compactions=[compaction(10), compaction(20)],
    )
    pipeline.session_analyse(session_id=session.pk)
    return session


@pytest.fixture
def viewer(client: Client, project) -> Client:
    client.force_login(make_user(project=project))
    return client


def observed(session) -> list[CompactionSpan]:
    return list(CompactionSpan.objects.filter(session=session, origin=SpanOrigin.OBSERVED))


def test_a_new_analysis_keeps_each_span_id_and_the_comments_on_it(project, session) -> None:
    before = {span.seq: span.pk for span in observed(session)}
    span = CompactionSpan.objects.get(session=session, seq=10)
    Comment.objects.create(session=session, span=span, body="the rule from turn 3 is gone")

    # the session grows: one more batch, one more compaction, and the pass runs again
    make_session(
        project, external_id="run-1", messages=messages(24, 34), compactions=[compaction(30)]
    )
    pipeline.session_analyse(session_id=session.pk)

    after = {span.seq: span.pk for span in observed(session)}
    assert {seq: after[seq] for seq in before} == before
    assert set(after) == {10, 20, 30}
    assert Comment.objects.get().span_id == before[10]
    assert not RetiredSpan.objects.exists()


def test_the_page_lives_at_the_session_and_the_seq(viewer: Client, session) -> None:
    page = viewer.get(f"/sessions/{session.pk}/compactions/20/")
    assert page.status_code == 200
    assert "Compaction at #20" in page.content.decode()
    assert viewer.get(f"/sessions/{session.pk}/compactions/21/").status_code == 404
    # the session page and the chart link to that address, not to a row id
    detail = viewer.get(f"/sessions/{session.pk}/").content.decode()
    assert f'href="/sessions/{session.pk}/compactions/10/"' in detail
    assert "/spans/" not in detail


def test_an_old_address_redirects_to_the_lasting_one(viewer: Client, session) -> None:
    span = CompactionSpan.objects.get(session=session, seq=10)
    moved = viewer.get(f"/sessions/{session.pk}/spans/{span.pk}/")
    assert moved.status_code == 301
    assert moved["Location"] == f"/sessions/{session.pk}/compactions/10/"
    middle = viewer.get(f"/sessions/{session.pk}/spans/{span.pk}/middle/")
    assert middle["Location"] == f"/sessions/{session.pk}/compactions/10/middle/"


def test_the_id_of_a_span_gone_is_remembered_and_redirects(viewer: Client, session) -> None:
    spans = sorted(observed(session), key=lambda s: s.index)
    first, second = spans
    # a pass whose trace no longer has the first compaction, and whose second moved up
    row = CompactionSpan(
        session_id=session.pk,
        origin=SpanOrigin.OBSERVED,
        event_id=second.event_id,
        index=0,
        seq=second.seq,
        stage="summarize",
    )
    kept = pipeline._observed_spans_store(session, [row])
    assert [s.pk for s in kept] == [second.pk]
    assert CompactionSpan.objects.get(pk=second.pk).index == 0
    assert RetiredSpan.objects.get().span_id == first.pk

    moved = viewer.get(f"/sessions/{session.pk}/spans/{first.pk}/")
    assert moved["Location"] == f"/sessions/{session.pk}/compactions/{first.seq}/"
    # an id this session never had is not found, and another project's id tells nothing
    assert viewer.get(f"/sessions/{session.pk}/spans/{first.pk + 1000}/").status_code == 404


def test_two_spans_trading_places_keep_their_ids(session) -> None:
    first, second = sorted(observed(session), key=lambda s: s.index)
    rows = [
        CompactionSpan(
            session_id=session.pk,
            origin=SpanOrigin.OBSERVED,
            event_id=span.event_id,
            index=index,
            seq=span.seq,
            stage="summarize",
        )
        for index, span in ((1, first), (0, second))
    ]
    stored = pipeline._observed_spans_store(session, rows)
    assert [(s.pk, s.index) for s in stored] == [(second.pk, 0), (first.pk, 1)]


def test_two_compactions_at_one_seq_are_both_on_its_page(viewer: Client, session) -> None:
    span = CompactionSpan.objects.get(session=session, seq=20)
    CompactionSpan.objects.create(
        session=session, origin=SpanOrigin.OBSERVED, index=9, seq=20, stage="clear_tool_results"
    )
    body = viewer.get(f"/sessions/{session.pk}/compactions/20/").content.decode()
    assert "2 compactions at #20" in body
    assert f"{span.stage} (this one)" in body
    second = viewer.get(f"/sessions/{session.pk}/compactions/20/?n=2").content.decode()
    assert "clear_tool_results (this one)" in second
    assert viewer.get(f"/sessions/{session.pk}/compactions/20/middle/?n=2").status_code == 200
    # a position past the last, or not a number, falls back to the first, never to an error
    for odd in ("²", "9" * 5000, "-1", "0"):
        assert viewer.get(f"/sessions/{session.pk}/compactions/20/?n={odd}").status_code == 200
    assert (
        "(this one)" in viewer.get(f"/sessions/{session.pk}/compactions/20/?n=9").content.decode()
    )


def test_a_replayed_compaction_lives_at_the_replay_and_the_seq(viewer: Client, session) -> None:
    from compaction import services

    run = services.replay_run_start(session=session, policy={"soft_limit": 30, "hard_limit": 60})
    pipeline.replay_run_execute(run_id=run.pk)
    replayed = CompactionSpan.objects.filter(replay=run).order_by("index").first()
    assert replayed is not None
    url = f"/replays/{run.pk}/compactions/{replayed.seq}/"
    assert replayed.get_absolute_url() == url
    assert viewer.get(url).status_code == 200
    assert url in viewer.get(f"/replays/{run.pk}/").content.decode()
    # another project's member reaches neither address
    viewer.force_login(make_user(project=make_project()))
    assert viewer.get(url).status_code == 404
    assert viewer.get(f"/sessions/{session.pk}/compactions/10/").status_code == 404
