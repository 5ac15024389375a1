from typing import Any

from sessions.importers import detect
from sessions.management.commands._import_base import ImportCommand


class Command(ImportCommand):
    help = (
        "Import agent traces of any format the product reads (Claude Code, Codex, Gemini CLI, "
        "Cline, OTLP JSON, Anthropic logs, SWE-agent/OpenHands trajectories): each file or "
        "folder's format is found by its content. Files of no known format are reported as "
        "skipped. Safe to re-run."
    )

    def handle(self, *args: Any, paths: list[str], project: str, **options: Any) -> None:
        report = detect.traces_import(project=self.project(project), paths=paths)
        self.show(report, **options)
