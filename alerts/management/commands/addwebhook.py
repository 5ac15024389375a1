from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from alerts import webhooks
from sessions.errors import BadRequest
from sessions.models import Project


class Command(BaseCommand):
    help = "Add a webhook told of a project's new and reopened alerts (signed with SECRET)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="Project name")
        parser.add_argument("url", help="Where to POST, http:// or https://")
        parser.add_argument("--secret", required=True, help="HMAC-SHA256 key, 16+ characters")
        parser.add_argument("--format", default="json", choices=["json", "slack"])
        parser.add_argument("--rules", default="", help="Comma-separated rules; default all")

    def handle(
        self, *args: Any, project: str, url: str, secret: str, format: str, rules: str, **_: Any
    ) -> None:
        found = Project.objects.filter(name=project).first()
        if found is None:
            raise CommandError(f"project {project!r} not found; create it with createproject")
        wanted = [r.strip() for r in rules.split(",") if r.strip()]
        try:
            hook = webhooks.webhook_create(
                project=found,
                url=url,
                secret=secret,
                format=format,
                rules=wanted,
                actor_name="manage.py addwebhook",
            )
        except BadRequest as exc:
            raise CommandError(exc.message) from None
        scope = ", ".join(hook.rules) if hook.rules else "every rule"
        self.stdout.write(f"Added webhook {hook.pk} ({hook.format}, {scope}) to {found.name!r}.")
