import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions.importers import claude_code
from sessions.models import Project


class Command(BaseCommand):
    help = (
        "Import Claude Code transcripts (files or folders; .jsonl or .jsonl.gz). A session's "
        "subagents/ folder comes along. Safe to re-run: only what is new is stored."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument("--project", required=True, help="Project name")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON")

    def handle(self, *args: Any, paths: list[str], project: str, **options: Any) -> None:
        found = Project.objects.filter(name=project).first()
        if found is None:
            raise CommandError(f"project {project!r} not found; create it with createproject")
        report = claude_code.claude_code_import(project=found, paths=paths)
        if options["json"]:
            self.stdout.write(json.dumps(report.to_dict(), indent=2))
        else:
            self.stdout.write(report.render())
