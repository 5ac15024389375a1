import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions import services
from sessions.errors import BadRequest
from sessions.models import AgentSession


class Command(BaseCommand):
    help = "Delete a session and everything derived from it (analysis, spans, replays, ...)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="Project name")
        parser.add_argument("external_id", help="The session's external id")
        parser.add_argument("--reason", default="delete_session command", help="Why (recorded)")

    def handle(self, *args: Any, project: str, external_id: str, reason: str, **opts: Any) -> None:
        session = AgentSession.objects.filter(
            project__name=project, external_id=external_id
        ).first()
        if session is None:
            raise CommandError(f"session {external_id!r} not found in project {project!r}")
        try:
            deleted = services.session_delete(session=session, by=None, reason=reason)
        except BadRequest as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(json.dumps({"deleted": deleted.external_id, "rows": deleted.rows}))
