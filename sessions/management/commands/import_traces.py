from typing import Any

from django.core.management.base import CommandError

from sessions.importers import detect
from sessions.management.commands._import_base import ImportCommand


class Command(ImportCommand):
    help = (
        "Import agent traces of any format the product reads (Claude Code, Codex, Gemini CLI, "
        "Cline, OTLP JSON, Anthropic logs, SWE-agent/OpenHands trajectories): each file or "
        "folder's format is found by its content. Imports every file it can read, then exits "
        "non-zero listing each file it refused (no known format, or unreadable). Safe to re-run."
    )

    def handle(self, *args: Any, paths: list[str], project: str, **options: Any) -> None:
        report = detect.traces_import(project=self.project(project), paths=paths)
        self.show(report, **options)
        refused = [f for f in report.files if f.error]
        if refused:
            listed = "\n".join(f"  {f.path}: {f.error}" for f in refused)
            raise CommandError(f"{len(refused)} file(s) refused:\n{listed}", returncode=1)
