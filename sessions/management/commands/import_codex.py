from typing import Any

from sessions.importers import codex
from sessions.management.commands._import_base import ImportCommand


class Command(ImportCommand):
    help = (
        "Import Codex rollouts (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl; files or "
        "folders). A file with a malformed line is refused whole. Safe to re-run."
    )

    def handle(self, *args: Any, paths: list[str], project: str, **options: Any) -> None:
        report = codex.codex_import(project=self.project(project), paths=paths)
        self.show(report, **options)
