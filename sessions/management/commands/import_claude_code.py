from typing import Any

from sessions.importers import claude_code
from sessions.management.commands._import_base import ImportCommand


class Command(ImportCommand):
    help = (
        "Import Claude Code transcripts (files or folders; .jsonl or .jsonl.gz). A session's "
        "subagents/ folder comes along. Safe to re-run: only what is new is stored."
    )

    def handle(self, *args: Any, paths: list[str], project: str, **options: Any) -> None:
        report = claude_code.claude_code_import(project=self.project(project), paths=paths)
        self.show(report, **options)
