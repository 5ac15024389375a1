"""A search snippet reads as text: a tool's JSON output shows its escaped line breaks as the
spaces real ones become, never as a literal backslash-n."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from tests.factories import make_project, make_searchable_session, make_user, wire_message

pytestmark = pytest.mark.django_db

ARTICLE = {"titulo": "Estorno", "conteudo": "## Cartão\nO estorno sai em 2 dias.\n\n## Pix"}


def test_a_snippet_of_json_output_shows_no_escaped_line_break(client: Client):
    project = make_project()
    body = json.dumps([ARTICLE], ensure_ascii=False)
    assert "\\n" in body  # the tool answered JSON: its line breaks are escapes
    make_searchable_session(
        project,
        messages=[
            wire_message(0, "user", "Quanto tempo leva o estorno?"),
            wire_message(
                1,
                "assistant",
                [{"type": "tool_use", "id": "t1", "name": "kb_search", "input": {"q": "x"}}],
            ),
            wire_message(
                2,
                "user",
                [{"type": "tool_result", "tool_use_id": "t1", "content": body}],
            ),
        ],
    )
    client.force_login(make_user(project=project))
    page = client.get("/search/?q=dias").content.decode()
    snippets = re.findall(r'<p class="snippet">(.*?)</p>', page, re.DOTALL)
    [hit] = [s for s in snippets if "<mark>dias</mark>" in s]
    assert "\\n" not in hit
    assert "## Cartão O estorno sai em 2 <mark>dias</mark>" in hit


def test_an_escaped_backslash_before_the_letter_stays():
    from sessions.search import snippet_html

    assert str(snippet_html(((r"C:\\new", False),))) == r"C:\\new"
