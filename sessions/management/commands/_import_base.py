"""Shared plumbing of the import_* commands: find the project, print the report."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions.importers.report import ImportReport
from sessions.models import Project


class ImportCommand(BaseCommand):
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument("--project", required=True, help="Project name")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON")

    def project(self, name: str) -> Project:
        found = Project.objects.filter(name=name).first()
        if found is None:
            raise CommandError(f"project {name!r} not found; create it with createproject")
        return found

    def show(self, report: ImportReport, **options: Any) -> None:
        if options.get("json"):
            self.stdout.write(json.dumps(report.to_dict(), indent=2))
        else:
            self.stdout.write(report.render())
