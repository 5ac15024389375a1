"""The span reader, replay prefill, replay comparison and the trace text filters, server side."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.template import Context, Template
from django.test import Client

from compaction import pipeline, selectors, services
from compaction.models import CompactionSpan, ReplayRun
from sessions import selectors as session_selectors
from tests.factories import (
    CONSTRAINT,
    coding_session_messages,
    make_long_compacted_session,
    make_project,
    make_session,
    make_user,
)

pytestmark = pytest.mark.django_db

HOSTILE = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def render(source: str, **context: Any) -> str:
    return Template("{% load traces %}" + source).render(Context(context))


@pytest.fixture
def project():
    return make_project()


@pytest.fixture
def session(project):
    return make_long_compacted_session(
        project, summary="Goal: migrate **billing**.\nDone:\n- modules `0-20`"
    )


@pytest.fixture
def viewer(client: Client, project) -> Client:
    client.force_login(make_user(project=project))
    return client


def finished_replay(session, **policy: Any) -> ReplayRun:
    run = services.replay_run_start(session=session, policy=policy)
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "done", run.error
    return run


# --- filters ----------------------------------------------------------------------------------


def test_markdown_renders_emphasis_code_and_lists():
    html = render("{{ t|markdown }}", t="**bold** and `code`\n\n- one\n- two")
    assert "<strong>bold</strong>" in html
    assert "<code>code</code>" in html
    assert "<li>one</li>" in html


def test_markdown_leaves_hostile_html_inert():
    html = render("{{ t|markdown }}", t=HOSTILE + " [x](javascript:alert(1)) ![p](http://e/p.png)")
    assert "<script" not in html
    assert "<img" not in html
    assert "&lt;script&gt;" in html
    assert "javascript:" not in html.replace("[x](javascript:alert(1))", "")
    assert 'href="javascript' not in html


def test_markdown_composes_after_another_text_filter():
    # Masking (another filter) runs on the plain text first, then markdown renders it.
    html = render("{{ t|upper|markdown }}", t="**secret**")
    assert html.strip() == "<p><strong>SECRET</strong></p>"


def test_num_is_the_one_number_format():
    assert render("{{ n|num }}", n=148000) == "148,000"
    assert render("{{ n|num }}", n=None) == "\u2013"
    assert render("{{ n|num }}", n=12) == "12"


def test_tool_names_finds_the_call_on_an_earlier_page(session):
    # seq 2 is read_file's result; its call is seq 1, not among the messages asked about.
    message = session.messages.get(seq=2)
    names = session_selectors.tool_names(session_id=session.pk, messages=[message])
    assert names == {"toolu_0000": "read_file"}


# --- span page --------------------------------------------------------------------------------


def test_span_page_links_facts_to_raw_messages_on_the_same_page(viewer: Client, session):
    span = CompactionSpan.objects.get(session=session)
    body = viewer.get(span.get_absolute_url()).content.decode()
    constraint = next(i for i in span.retention if i["text"] == CONSTRAINT)
    seq = constraint["seq"]
    assert f'href="#raw-{seq}" data-raw-seq="{seq}"' in body
    assert f'id="raw-{seq}"' in body
    assert "<strong>billing</strong>" in body  # the summary is rendered as markdown
    assert "<code>0-20</code>" in body


def test_span_page_names_the_tool_of_each_result(viewer: Client, session):
    span = CompactionSpan.objects.get(session=session)
    body = viewer.get(span.get_absolute_url()).content.decode()
    assert '<code class="tool-name">read_file</code> <span class="muted">toolu_0000' in body


def test_hidden_middle_names_tools_and_formats_numbers(viewer: Client, session):
    span = CompactionSpan.objects.get(session=session)
    body = viewer.get(span.url(middle=True)).content.decode()
    assert '<code class="tool-name">read_file</code>' in body
    tokens = session.messages.get(seq=45).context_tokens
    assert tokens > 1000
    assert f"context {tokens:,}" in body


def test_replay_this_prefills_the_policy_from_the_span(viewer: Client, session):
    span = CompactionSpan.objects.get(session=session)
    body = viewer.get(span.get_absolute_url()).content.decode()
    # The tail #96-#99 is one turn (a prompt, a call, its result, an answer).
    query = "hard_limit=25616&amp;soft_limit=19212&amp;unit=turn&amp;keep_last=1"
    assert f'href="/sessions/{session.pk}/replay/?{query}"' in body
    form = viewer.get(f"/sessions/{session.pk}/replay/?{query.replace('&amp;', '&')}")
    initial = {name: form.context["form"][name].value() for name in ("hard_limit", "soft_limit")}
    assert initial == {"hard_limit": 25616, "soft_limit": 19212}
    assert form.context["form"]["keep_last"].value() == 1


def test_replay_form_ignores_junk_in_the_prefill(viewer: Client, session):
    form = viewer.get(f"/sessions/{session.pk}/replay/?hard_limit=-5&keep_last=x&unit=<b>")
    assert form.status_code == 200
    assert form.context["form"]["keep_last"].value() == 6
    assert form.context["form"]["unit"].value() == "turn"


# --- replays ----------------------------------------------------------------------------------


def test_replay_label_names_every_knob_so_two_replays_differ(session):
    a = services.replay_run_start(session=session, policy={"hard_limit": 9000, "soft_limit": 6000})
    b = services.replay_run_start(session=session, policy={"hard_limit": 9000, "soft_limit": 7000})
    assert a.policy_label != b.policy_label
    for part in ("at 6k/9k", "keep 6 turns", "summarize", "extractive"):
        assert part in a.policy_label


def test_replay_page_shows_the_observed_summary_beside_the_replayed_one(viewer: Client, session):
    # summarizing only: clearing first (with the step fallback) keeps this run under the limit
    run = finished_replay(session, hard_limit=9000, soft_limit=6000, stages=["summarize"])
    response = viewer.get(f"/replays/{run.pk}/")
    body = response.content.decode()
    pairs = response.context["summary_pairs"]
    assert pairs, "the replay summarized at least once"
    observed = CompactionSpan.objects.get(session=session, origin="observed")
    assert {o.pk for o, _ in pairs} == {observed.pk}
    assert body.count('class="md observed-summary"') == len(pairs)
    assert body.count('class="md replayed-summary"') == len(pairs)
    assert "<strong>billing</strong>" in body
    assert run.policy_label in body


def test_compare_page_overlays_two_replays_and_lines_up_their_totals(viewer: Client, session):
    first = finished_replay(session, hard_limit=9000, soft_limit=6000)
    second = finished_replay(session, hard_limit=20000, soft_limit=15000, keep_last=2)
    response = viewer.get(f"/sessions/{session.pk}/replays/compare/?a={first.pk}&b={second.pk}")
    assert response.status_code == 200
    names = [t["name"] for t in response.context["figure"]["data"]]
    assert f"Replay {first.pk}" in names
    assert f"Replay {second.pk}" in names
    rows = {row["label"]: row for row in response.context["rows"]}
    compactions = rows["Compactions (summaries)"]
    assert compactions["first"] == first.totals["compactions"]
    assert compactions["second"] == second.totals["compactions"]
    assert compactions["delta"] == second.totals["compactions"] - first.totals["compactions"]
    body = response.content.decode()
    assert first.policy_label in body
    assert second.policy_label in body
    assert json.loads(
        body.split('id="pair-curve" type="application/json">')[1].split("</script>")[0]
    )


def test_compare_page_refuses_a_replay_of_another_session(viewer: Client, session, project):
    other = make_session(project, messages=coding_session_messages(turns=10))
    mine = finished_replay(session, hard_limit=9000, soft_limit=6000)
    theirs = finished_replay(other, hard_limit=9000, soft_limit=6000)
    response = viewer.get(f"/sessions/{session.pk}/replays/compare/?a={mine.pk}&b={theirs.pk}")
    assert response.status_code == 200
    assert "figure" not in response.context
    assert "Pick two finished replays of this session" in response.content.decode()


def test_compare_page_of_another_project_is_404(client: Client, session):
    client.force_login(make_user(project=make_project()))
    assert client.get(f"/sessions/{session.pk}/replays/compare/").status_code == 404


# --- session page -----------------------------------------------------------------------------


def test_session_page_names_tools_and_renders_markdown(viewer: Client, session):
    body = viewer.get(f"/sessions/{session.pk}/").content.decode()
    assert '<code class="tool-name">read_file</code>' in body
    assert "js/reader.js" in body


def test_a_replayed_summary_pairs_with_the_observed_one_of_the_same_stretch():
    def span(seq: int, start: int, end: int, stage: str = "summarize") -> CompactionSpan:
        return CompactionSpan(seq=seq, replaced_from_seq=start, replaced_to_seq=end, stage=stage)

    early, late = span(50, 4, 45), span(120, 50, 110)
    clear = span(118, 60, 117, stage="clear_tool_results")
    replayed = [span(60, 2, 40), span(80, 46, 95)]
    pairs = selectors.summary_pairs([early, clear, late], replayed)
    # #80 is nearer to #50 (and to the clear at #118), but replaced the stretch #120 summarized.
    assert [(o, r) for o, r in pairs] == [(early, replayed[0]), (late, replayed[1])]
    assert selectors.summary_pairs([], replayed) == [(None, replayed[0]), (None, replayed[1])]


def test_a_facts_evidence_is_shown_as_text_beside_its_raw_link(viewer: Client, session):
    span = CompactionSpan.objects.get(session=session)
    span.retention = [
        {"kind": "constraint", "text": CONSTRAINT, "seq": 8, "kept": False, "evidence": HOSTILE}
    ]
    span.save(update_fields=["retention"])
    body = viewer.get(span.get_absolute_url()).content.decode()
    assert 'href="#raw-8" data-raw-seq="8"' in body
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in body
    assert HOSTILE not in body


def test_replay_page_puts_observed_retention_beside_the_replayed_one(viewer: Client, session):
    run = finished_replay(session, hard_limit=9000, soft_limit=6000, stages=["summarize"])
    response = viewer.get(f"/replays/{run.pk}/")
    observed = CompactionSpan.objects.get(session=session, origin="observed")
    assert observed.retention_score is not None
    assert response.context["health"].observed_retention == observed.retention_score
    row = response.content.decode().split("Retention (worst span)")[1].split("</tr>")[0]
    assert f'<td class="num">{round(100 * observed.retention_score)}%</td>' in row
