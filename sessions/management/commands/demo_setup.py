from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from compaction import findings
from sessions import example_data, services
from sessions.models import AgentSession, Membership, Project, Role
from sessions.schemas import EventBatch


class Command(BaseCommand):
    help = "Create the demo user and project and load the example traces (safe to re-run)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo-sawtooth")
        parser.add_argument("--project", default="demo")
        parser.add_argument(
            "--url",
            default="http://127.0.0.1:8000/",
            help="Where the demo is served, for the login hint (make demo passes HOST and PORT).",
        )

    def handle(
        self, *args: Any, username: str, password: str, project: str, url: str, **opts: Any
    ) -> None:
        with transaction.atomic():
            demo_project, _ = Project.objects.get_or_create(name=project)
            user_model = get_user_model()
            user = user_model.objects.filter(username=username).first()
            if user is None:
                user = user_model.objects.create_superuser(username=username, password=password)
            else:
                user.set_password(password)
                user.save(update_fields=["password"])
            Membership.objects.update_or_create(
                user=user, project=demo_project, defaults={"role": Role.ADMIN}
            )

        received = duplicates = 0
        for example in example_data.example_sessions():
            for batch in example.batches:
                result = services.events_ingest(
                    project=demo_project,
                    external_id=example.external_id,
                    batch=EventBatch.model_validate(batch),
                )
                received += result.received
                duplicates += result.duplicates
        # Personal data findings of examples stored before the scan existed (the analysis pass
        # scans new ones; this is idempotent).
        for session in AgentSession.objects.filter(project=demo_project):
            findings.session_findings_scan(session_id=session.pk)
        self.stdout.write(
            f"Example traces: {received} messages stored, {duplicates} already there, "
            f"in project {demo_project.name!r}."
        )
        self.stdout.write(f"Log in at {url} as {username} / {password}")
