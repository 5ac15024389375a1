"""Scan stored sessions for personal data now: `manage.py scan_personal_data [PROJECT]`.

The analysis pass scans every session as it arrives; this is for sessions stored before the
scan existed, or scanned by an earlier detector (beat rescans those too, a few per minute:
privacy/rescan.py). Raw messages the current detector scanned already are not scanned
again; summaries and metadata are, keeping review decisions.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from privacy import findings, rescan
from privacy.models import Finding
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
        count = sessions.count()
        total = rescanned = 0
        for number, session_id in enumerate(sessions.values_list("pk", flat=True).iterator(), 1):
            if rescan.session_rescan(session_id=session_id):  # messages, summaries, metadata
                rescanned += 1
                total += Finding.objects.filter(session_id=session_id).count()
            else:  # the new messages, the summaries and the metadata
                total += findings.session_findings_scan(session_id=session_id)
            if number % 500 == 0:
                self.stdout.write(f"{number}/{count} sessions scanned", ending="\n")
        again = f" ({rescanned} again, by the current detector)" if rescanned else ""
        self.stdout.write(f"{count} sessions scanned{again}, {total} findings stored.")
