import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from compaction.management.commands._subject_base import operator_default, project_and_subject
from privacy import subjects
from sessions.errors import BadRequest


class Command(BaseCommand):
    help = (
        "Erase an identifier from a project, following lineage into summaries, spans, "
        "replays and findings: anonymize it (default) or delete every session holding it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="Project name")
        parser.add_argument("identifier", help="CPF, CNPJ, e-mail or phone, in any format")
        parser.add_argument(
            "--operator",
            default=operator_default(),
            help="Who runs it, recorded in the audit log (default: the login running it)",
        )
        parser.add_argument("--reason", required=True, help="Why (recorded with the request)")
        parser.add_argument(
            "--delete-sessions",
            action="store_true",
            help="Delete each session that holds the identifier instead of anonymizing it",
        )

    def handle(
        self,
        *args: Any,
        project: str,
        identifier: str,
        reason: str,
        delete_sessions: bool,
        operator: str,
        **opts: Any,
    ) -> None:
        found, subject = project_and_subject(project, identifier)
        try:
            request = subjects.subject_erase(
                project=found,
                subject=subject,
                by=None,
                by_name=f"cli:{operator}",
                reason=reason,
                delete_sessions=delete_sessions,
            )
        except BadRequest as exc:
            raise CommandError(exc.message) from None
        out = {"request": request.pk, "action": request.action, "masked": request.masked}
        self.stdout.write(json.dumps({**out, **request.result}, ensure_ascii=False))
