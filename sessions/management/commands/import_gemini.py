from typing import Any

from sessions.importers import gemini
from sessions.management.commands._import_base import ImportCommand


class Command(ImportCommand):
    help = (
        "Import Gemini CLI chats (~/.gemini/tmp/<project>/chats/session-*.json or .jsonl, and "
        "checkpoint-*.json; files or folders). A malformed file is refused whole. Safe to re-run."
    )

    def handle(self, *args: Any, paths: list[str], project: str, **options: Any) -> None:
        report = gemini.gemini_import(project=self.project(project), paths=paths)
        self.show(report, **options)
