"""``manage.py reanalyze PROJECT [--session ID] [--since DATE] [--until DATE] [--background]``:
run the analysis of a project's sessions again (the curve, spans, verdicts and alert rules),
one line of progress per session."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import QuerySet
from django.db.models.functions import Coalesce

from compaction import pipeline, services
from privacy import masking
from sessions.models import AgentSession, Project


def _moment(raw: str, *, end: bool) -> datetime:
    """A date (the whole day: its start, or for ``end`` the next day's start) or an ISO time."""
    try:
        day = date.fromisoformat(raw)
    except ValueError:
        pass
    else:
        start = datetime.combine(day, time.min, tzinfo=UTC)
        return start + timedelta(days=1) if end else start
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        hint = "give a date (2026-11-02) or a time (2026-11-02T10:00Z)"
        raise CommandError(f"{raw!r}: {hint}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = (
        "Run the analysis of a project's sessions again: all of them, one (--session, its "
        "external id) or those started in a range (--since, --until; dates are whole days). "
        "Runs the passes here, printing progress; --background queues them for the workers."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="Project name")
        parser.add_argument("--session", help="One session, by its external id")
        parser.add_argument("--since", help="Sessions started on or after this date or time")
        parser.add_argument("--until", help="Sessions started before the end of this date")
        parser.add_argument(
            "--background", action="store_true", help="Queue the passes for the workers"
        )

    def handle(self, *args: Any, project: str, **options: Any) -> None:
        found = Project.objects.filter(name=project).first()
        if found is None:
            raise CommandError(f"project {project!r} not found")
        sessions = self._sessions(found, options)
        ids = list(sessions.values_list("pk", "external_id"))
        if options["session"] and not ids:
            raise CommandError(f"session {options['session']!r} not found in project {project!r}")
        total = len(ids)
        self.stdout.write(f"Re-analysing {total} session{'' if total == 1 else 's'} of {project!r}")
        failed = 0
        for n, (pk, external_id) in enumerate(ids, start=1):
            services.analysis_rerun(session_id=pk)
            name = masking.text_mask(external_id)
            if options["background"]:
                self.stdout.write(f"[{n}/{total}] {name}: queued")
                continue
            row = pipeline.session_analyse(session_id=pk)
            status = row.status if row is not None else "current already"
            failed += status == "failed"
            self.stdout.write(f"[{n}/{total}] {name}: {status}")
        verb = "queued" if options["background"] else "done"
        self.stdout.write(f"{verb}: {total}, failed: {failed}")
        if failed:
            raise CommandError(f"{failed} of {total} analyses failed; their pages say why")

    def _sessions(self, project: Project, options: dict[str, Any]) -> QuerySet[AgentSession]:
        sessions = AgentSession.objects.filter(project=project).annotate(
            began=Coalesce("started_at", "created_at")
        )
        if options["session"]:
            sessions = sessions.filter(external_id=options["session"])
        if options["since"]:
            sessions = sessions.filter(began__gte=_moment(options["since"], end=False))
        if options["until"]:
            sessions = sessions.filter(began__lt=_moment(options["until"], end=True))
        return sessions.order_by("began", "pk")
