from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from config import secret
from privacy import findings
from sessions import example_data, services
from sessions.models import AgentSession, Membership, Project, Role
from sessions.schemas import EventBatch

# Printed by the README and by this command: never set outside the demo.
PUBLISHED_PASSWORD = "demo-sawtooth"  # noqa: S105 (the point: it is public)
NOT_A_DEMO_FLAG = "--i-know-this-is-not-a-demo"


def demo_refusals() -> list[str]:
    """Why this install is not the embedded demo ([] when it is). The demo runs on the embedded
    defaults: not production (DEBUG off with DATABASE_URL set, or SAWTOOTH_PRODUCTION=1) and
    no SECRET_KEY given (the demo generates its own under var/)."""
    reasons = []
    if settings.SAWTOOTH_PRODUCTION:
        reasons.append(
            "this is a production configuration (DEBUG off with DATABASE_URL set, or "
            "SAWTOOTH_PRODUCTION=1)"
        )
    if secret.configured_key():
        reasons.append("a SECRET_KEY of its own is set in the environment")
    return reasons


class Command(BaseCommand):
    help = (
        "Create the demo superuser and project and load the example traces (safe to re-run). "
        f"Only on the embedded demo configuration unless {NOT_A_DEMO_FLAG} is given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default=PUBLISHED_PASSWORD)
        parser.add_argument("--project", default="demo")
        parser.add_argument(
            "--url",
            default="http://127.0.0.1:8000/",
            help="Where the demo is served, for the login hint (make demo passes HOST and PORT).",
        )
        parser.add_argument(
            NOT_A_DEMO_FLAG,
            dest="not_a_demo",
            action="store_true",
            help="Run outside the demo configuration anyway (then --password is required).",
        )

    def handle(
        self,
        *args: Any,
        username: str,
        password: str,
        project: str,
        url: str,
        not_a_demo: bool,
        **opts: Any,
    ) -> None:
        # Checked before the database is touched: a superuser whose password the README prints
        # must never appear on a real install by accident.
        reasons = demo_refusals()
        if reasons and not not_a_demo:
            raise CommandError(
                "demo_setup refused: this is not the demo configuration: "
                + "; ".join(reasons)
                + ". It would create a superuser whose password is published. To load the "
                f"examples here anyway, pass {NOT_A_DEMO_FLAG} and a --password of your own."
            )
        if reasons and password == PUBLISHED_PASSWORD:
            raise CommandError(
                f"demo_setup refused: outside the demo, pass a --password of your own (the "
                f"default, {PUBLISHED_PASSWORD!r}, is published in the README)."
            )
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
