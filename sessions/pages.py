"""What every app's pages share about sessions."""

from __future__ import annotations

from django.http import Http404, HttpRequest

from privacy import masking
from sessions import selectors
from sessions.errors import NotFound
from sessions.models import AgentSession


def session_or_404(request: HttpRequest, pk: int) -> AgentSession:
    """The session `pk` if it is in one of the user's projects; 404 otherwise, the same answer
    whether it exists elsewhere or not at all."""
    try:
        session = selectors.session_get(projects=selectors.projects_for_user(request.user), pk=pk)
    except NotFound:
        raise Http404("No such session in your projects") from None
    # The page shows this session's texts: its first names found are masked alone too.
    masking.names_scope_enter(project_id=session.project_id, session_id=session.pk)
    return session
