"""Sessions are named (title beside the id) and subagents sit under their parent."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from compaction import pipeline
from sessions.importers.claude_code import claude_code_import
from sessions.importers.writer import session_parent_set
from sessions.models import AgentSession, Role
from tests.factories import make_project, make_session, make_user, wire_message
from tests.importers.corpus import CLAUDE_CODE, SPOTTER

pytestmark = pytest.mark.django_db

LOG_SAMPLE = (
    CLAUDE_CODE
    / "claude-code-log"
    / "-Users-dain-workspace-claude-code-log-sample"
    / "937c6e6b-27e7-4edd-86f1-ad28f9731841.jsonl"
)


def test_ingest_names_the_session_after_its_first_prompt() -> None:
    session = make_session(
        messages=[
            wire_message(0, content="<command-name>/clear</command-name>"),
            wire_message(1, content="Migrate billing to API v2"),
            wire_message(2, "assistant", "On it."),
        ]
    )
    assert session.title == "Migrate billing to API v2"


def test_metadata_title_names_the_session() -> None:
    session = make_session(session={"metadata": {"title": "Billing migration"}})
    assert AgentSession.objects.get(pk=session.pk).title == "Billing migration"


def test_analysis_corrects_a_title_when_an_earlier_prompt_arrives_later() -> None:
    project = make_project()
    make_session(project, external_id="late", messages=[wire_message(4, content="Second ask")])
    session = make_session(project, external_id="late", messages=[wire_message(0, content="First")])
    assert session.title == "Second ask"  # set at ingest from what it had
    pipeline.session_analyse(session_id=session.pk)
    assert AgentSession.objects.get(pk=session.pk).title == "First"


def test_claude_code_session_is_named_by_what_the_user_typed_not_by_commands() -> None:
    project = make_project()
    claude_code_import(project=project, paths=[LOG_SAMPLE])
    session = AgentSession.objects.get(external_id=LOG_SAMPLE.stem)
    assert session.title == "Please fix these lint errors"


def _family(project):  # type: ignore[no-untyped-def]
    parent = make_session(
        project, external_id="parent-run", messages=[wire_message(0, content="Plan the work")]
    )
    for name in ("explore", "review"):
        make_session(
            project,
            external_id=f"parent-run:{name}",
            messages=[wire_message(0, content=f"Subtask {name}")],
        )
        session_parent_set(
            project=project, external_id=f"parent-run:{name}", parent_external_id="parent-run"
        )
    make_session(
        project,
        external_id="parent-run:review:deep",
        messages=[wire_message(0, content="Deeper still")],
    )
    session_parent_set(
        project=project,
        external_id="parent-run:review:deep",
        parent_external_id="parent-run:review",
    )
    return AgentSession.objects.get(pk=parent.pk)


def test_session_page_lists_subagents_as_a_tree(client: Client) -> None:
    project = make_project()
    parent = _family(project)
    client.force_login(make_user(project=project, role=Role.VIEWER))
    body = client.get(f"/sessions/{parent.pk}/").content.decode()
    explore = AgentSession.objects.get(external_id="parent-run:explore")
    deep = AgentSession.objects.get(external_id="parent-run:review:deep")
    assert f'<li class="depth-1"><a href="/sessions/{explore.pk}/">Subtask explore</a>' in body
    assert f'<li class="depth-2"><a href="/sessions/{deep.pk}/">Deeper still</a>' in body
    # depth first: the grandchild comes right after its own parent
    assert body.index("Subtask review") < body.index("Deeper still")
    child_page = client.get(f"/sessions/{deep.pk}/").content.decode()
    assert "Subagents" not in child_page
    assert "Parent session" in child_page


def test_list_hides_subagents_until_asked_and_counts_them_on_the_parent(client: Client) -> None:
    project = make_project()
    parent = _family(project)
    client.force_login(make_user(project=project, role=Role.VIEWER))
    body = client.get("/").content.decode()
    assert "1 session in your projects" in body
    assert "Subtask explore" not in body
    assert f'href="/sessions/{parent.pk}/#subagents-h">2 subagents</a>' in body
    shown = client.get("/?subagents=on").content.decode()
    assert "4 sessions in your projects" in shown
    assert "Subtask explore" in shown
    assert "Deeper still" in shown
    # a search looks everywhere, subagents included
    assert "Deeper still" in client.get("/?q=deeper").content.decode()


def test_title_is_shown_beside_the_id_on_list_and_session_pages(client: Client) -> None:
    project = make_project()
    session = make_session(
        project, external_id="run-7f3a", messages=[wire_message(0, content="Fix the login bug")]
    )
    client.force_login(make_user(project=project, role=Role.VIEWER))
    body = client.get("/").content.decode()
    assert ">Fix the login bug</a>" in body
    assert '<span class="sid">run-7f3a</span>' in body
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert '<h1 class="session-title">Fix the login bug</h1>' in page  # wraps, never truncates
    assert '<p class="session-id muted">run-7f3a</p>' in page


def test_imported_claude_code_subagents_appear_under_their_parent(client: Client) -> None:
    project = make_project()
    folder = SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d"
    claude_code_import(project=project, paths=[Path(f"{folder}.jsonl.gz"), folder])
    parent = AgentSession.objects.get(external_id=folder.name)
    client.force_login(make_user(project=project, role=Role.VIEWER))
    body = client.get(f"/sessions/{parent.pk}/").content.decode()
    [child] = AgentSession.objects.filter(parent=parent)
    assert f'href="/sessions/{child.pk}/"' in body
