"""The compaction page reads like a diff: each fact the summary kept is marked where the summary
says it, with its verdict in words; what it lost leads the page; the sizes say "tokens", never
"kept"; previous and next compaction are one click away."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from compaction import pipeline
from compaction.models import CompactionSpan
from tests.factories import (
    coding_session_messages,
    make_long_compacted_session,
    make_project,
    make_session,
    make_user,
)

pytestmark = pytest.mark.django_db

SUMMARY = (
    "Goal: migrate billing.\n"
    "Done:\n"
    "- edited billing/api.py <script>alert(1)</script>\n"
    "- the customer charge is renamed; callers updated"
)


def _fact(kind: str, text: str, verdict: str, evidence: str, seq: int = 3) -> dict[str, object]:
    return {
        "kind": kind,
        "text": text,
        "seq": seq,
        "kept": verdict != "lost",
        "method": "containment",
        "evidence": evidence,
        "verdict": verdict,
        "needed_again": None,
    }


@pytest.fixture
def project():
    return make_project()


@pytest.fixture
def viewer(client: Client, project) -> Client:
    client.force_login(make_user(project=project))
    return client


@pytest.fixture
def span(project) -> CompactionSpan:
    session = make_long_compacted_session(project, summary=SUMMARY)
    span = CompactionSpan.objects.get(session=session)
    span.retention = [
        _fact("path", "billing/api.py", "kept", "- edited billing/api.py <script>alert(1)…"),
        _fact(
            "identifier",
            "charge_customer",
            "paraphrased",
            "- the customer charge is renamed; callers updated",
        ),
        _fact("constraint", "do not change the public API", "lost", "no line has most of: x"),
    ]
    span.save(update_fields=["retention"])
    return span


def _numbers(body: str) -> dict[str, str]:
    """Each fact's text in the lists -> its number on the page."""
    return {
        text: n
        for n, text in re.findall(r'<li class="\w+" id="fact-(\d+)">.*?<q>([^<]*)</q>', body)
    }


def test_each_kept_fact_is_marked_where_the_summary_says_it_with_its_verdict_in_words(
    viewer: Client, span: CompactionSpan
):
    body = viewer.get(span.get_absolute_url()).content.decode()
    n = _numbers(body)
    kept, paraphrased = n["billing/api.py"], n["charge_customer"]
    assert (
        f'<mark class="fact kept" id="said-{kept}">billing/api.py</mark>'
        f'<a class="verdict-tag" href="#fact-{kept}">kept<span class="visually-hidden">'
    ) in body
    # a paraphrase has no words of the fact in common: the line the verdict quoted is marked
    assert (
        f'<mark class="fact paraphrased" id="said-{paraphrased}">the customer charge is '
        f"renamed; callers updated</mark>"
        f'<a class="verdict-tag" href="#fact-{paraphrased}">paraphrased'
    ) in body
    # and from the list back to the text
    assert f'<a class="said-link" href="#said-{kept}">where the summary says it</a>' in body


def test_the_marked_summary_escapes_the_trace(viewer: Client, span: CompactionSpan):
    body = viewer.get(span.get_absolute_url()).content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "billing/api.py</mark>" in body
    assert " &lt;script&gt;alert(1)&lt;/script&gt;</li>" in body


def test_a_fact_whose_text_is_markup_is_marked_as_text(viewer: Client, project):
    session = make_long_compacted_session(project, summary="Goal: keep <b>bold</b> as is.")
    span = CompactionSpan.objects.get(session=session)
    span.retention = [_fact("identifier", "<b>bold</b>", "kept", "Goal: keep <b>bold</b> as is.")]
    span.save(update_fields=["retention"])
    body = viewer.get(span.get_absolute_url()).content.decode()
    assert '">&lt;b&gt;bold&lt;/b&gt;</mark>' in body
    assert "<b>bold</b>" not in body


def test_lost_facts_lead_the_page_before_the_summary_each_with_its_message(
    viewer: Client, span: CompactionSpan
):
    body = viewer.get(span.get_absolute_url()).content.decode()
    lost_box = body.index('id="lost-h"')
    assert lost_box < body.index('id="summary-h"') < body.index('id="facts-h"')
    n = _numbers(body)["do not change the public API"]
    item = body[body.index(f'id="fact-{n}"') :]
    assert item.index('data-raw-seq="3"') < item.index("</li>")
    assert 'Facts the summary kept <span class="muted">2 of 3 checked</span>' in body


def test_sizes_are_tokens_and_kept_is_said_only_of_facts(viewer: Client, span: CompactionSpan):
    body = viewer.get(span.get_absolute_url()).content.decode()
    assert "<dt>Tokens before</dt>" in body
    assert "<dt>Tokens after</dt>" in body
    assert "of before)</span>" in body
    text = re.sub(r"<[^>]+>", " ", body)
    # every "kept" left on the page speaks of a fact: a verdict, its legend, or its list
    for at in (m.start() for m in re.finditer(r"\bkept\b", text, re.IGNORECASE)):
        around = text[max(0, at - 80) : at + 80]
        assert not re.search(r"token|context|%|verbatim", around), around


def test_previous_and_next_compaction_are_linked(viewer: Client, project):
    session = make_session(
        project,
        messages=coding_session_messages(turns=30, tool_chars=300),
        compactions=[
            {"seq": seq, "trigger": "auto", "strategy": "summarize", "summary": f"Goal: {seq}"}
            for seq in (40, 80, 100)
        ],
    )
    pipeline.session_analyse(session_id=session.pk)
    middle = viewer.get(f"/sessions/{session.pk}/compactions/80/").content.decode()
    assert f'href="/sessions/{session.pk}/compactions/40/" rel="prev"' in middle
    assert f'href="/sessions/{session.pk}/compactions/100/" rel="next"' in middle
    assert "2 of 3" in middle
    first = viewer.get(f"/sessions/{session.pk}/compactions/40/").content.decode()
    assert 'rel="prev"' not in first
    assert "First compaction" in first
    last = viewer.get(f"/sessions/{session.pk}/compactions/100/").content.decode()
    assert 'rel="next"' not in last
    assert "Last compaction" in last


def test_the_stars_of_a_masked_value_are_never_read_as_bold():
    from compaction.marked_summary import inline_runs

    line = (
        "Objetivo: atender [person_name C*** N*** F***] (cliente **cli_48049**), "
        "[email c***@***.com]"
    )
    assert inline_runs(line) == [
        ("Objetivo: atender [person_name C*** N*** F***] (cliente ", ""),
        ("cli_48049", "strong"),
        ("), [email c***@***.com]", ""),
    ]


def test_the_raw_message_that_said_a_fact_names_it_with_its_verdict(
    viewer: Client, span: CompactionSpan
):
    body = viewer.get(span.get_absolute_url()).content.decode()
    n = _numbers(body)
    message = body[body.index('id="raw-3"') :]
    message = message[: message.index("</li>")]
    assert "Said here:" in message
    for text, verdict in (
        ("billing/api.py", 'ok">kept'),
        ("charge_customer", 'warn">paraphrased'),
        ("do not change the public API", 'bad">lost'),
    ):
        link = f'<a class="said-fact" href="#fact-{n[text]}">'
        assert f'{link}<span class="badge {verdict}</span> {text}</a>' in message
