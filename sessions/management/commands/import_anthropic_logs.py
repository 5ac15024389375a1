from typing import Any

from django.core.management.base import CommandParser

from sessions.importers import anthropic_logs
from sessions.management.commands._import_base import ImportCommand


class Command(ImportCommand):
    help = (
        "Import Anthropic Messages API request/response logs (JSON exchanges, VCR cassettes, "
        "SSE streams). One session per file unless --session is given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--session", help="External id for all the given files")

    def handle(self, *args: Any, paths: list[str], project: str, **options: Any) -> None:
        report = anthropic_logs.anthropic_logs_import(
            project=self.project(project), paths=paths, session=options.get("session")
        )
        self.show(report, **options)
