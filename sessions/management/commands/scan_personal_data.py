"""Scan stored sessions for personal data now: `manage.py scan_personal_data [PROJECT]`.

The analysis pass scans every session as it arrives; this is for sessions stored before the
scan existed (or after its rules changed for summaries and metadata). Raw messages already
scanned are not scanned again; summaries and metadata are, keeping review decisions.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from compaction import findings
from sessions.models import AgentSession, Project


class Command(BaseCommand):
    help = "Scan stored sessions (of one project, or all) for personal data."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", nargs="?", help="Project name (default: every project).")

    def handle(self, *args: Any, project: str | None, **opts: Any) -> None:
        sessions = AgentSession.objects.order_by("pk")
        if project is not None:
            found = Project.objects.filter(name=project).first()
            if found is None:
                raise CommandError(f"project: no project named {project!r}")
            sessions = sessions.filter(project=found)
        total = 0
        for session_id in sessions.values_list("pk", flat=True).iterator():
            total += findings.session_findings_scan(session_id=session_id)
        self.stdout.write(f"{sessions.count()} sessions scanned, {total} findings stored.")
