import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from compaction.management.commands._subject_base import operator_default, project_and_subject
from privacy import subjects


class Command(BaseCommand):
    help = (
        "Find every session, message, summary, span and replay of a project that holds an "
        "identifier (CPF, CNPJ, e-mail, phone); prints JSON with masked excerpts. "
        "Recorded as an export request."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="Project name")
        parser.add_argument("identifier", help="CPF, CNPJ, e-mail or phone, in any format")
        parser.add_argument(
            "--operator",
            default=operator_default(),
            help="Who runs it, recorded in the audit log (default: the login running it)",
        )
        parser.add_argument("--reason", default="find_subject command", help="Why (recorded)")

    def handle(
        self, *args: Any, project: str, identifier: str, reason: str, operator: str, **opts: Any
    ) -> None:
        found, subject = project_and_subject(project, identifier)
        report = subjects.subject_export(
            project=found, subject=subject, by=None, by_name=f"cli:{operator}", reason=reason
        )
        self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False))
