from typing import Any

from sessions.importers import cline
from sessions.management.commands._import_base import ImportCommand


class Command(ImportCommand):
    help = (
        "Import Cline tasks (the task folders under saoudrizwan.claude-dev/tasks/, each with "
        "ui_messages.json and api_conversation_history.json). A malformed task is refused "
        "whole. Safe to re-run."
    )

    def handle(self, *args: Any, paths: list[str], project: str, **options: Any) -> None:
        report = cline.cline_import(project=self.project(project), paths=paths)
        self.show(report, **options)
