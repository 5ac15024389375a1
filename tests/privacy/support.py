"""The example Portuguese support chat, loaded as an agent uploads it, with the personal data
it holds in clear: what no viewer, engineer or ingest key may ever read back."""

from __future__ import annotations

from compaction import pipeline
from sessions import example_data, services
from sessions.models import AgentSession, Project
from sessions.schemas import EventBatch

SUPPORT = "example-support-triage"
CPF = "530.582.439-79"
EMAIL = "camila.figueiredo98@gmail.com"
NAME = "Camila Nogueira Figueiredo"
# Every form a raw value could leak in: as typed, digits only, and escaped for HTML or JSON.
RAW_FORMS = [CPF, "53058243979", EMAIL, EMAIL.replace("@", "&#64;"), "camila.figueiredo98@", NAME]


def support_session(project: Project) -> AgentSession:
    example = example_data.example_session(SUPPORT)
    session = None
    for batch in example.batches:
        session = services.events_ingest(
            project=project,
            external_id=example.external_id,
            batch=EventBatch.model_validate(batch),
        ).session
    assert session is not None
    pipeline.session_analyse(session_id=session.pk)
    return session


def leaks(body: str) -> list[str]:
    """The raw forms found in a response body (empty when nothing leaked)."""
    return [form for form in RAW_FORMS if form in body]
