from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions import services
from sessions.errors import BadRequest
from sessions.models import Project


class Command(BaseCommand):
    help = "Create a project. Prints the project; add a key with `createapikey NAME`."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument(
            "--allow-external-models",
            action="store_true",
            help="Allow sending this project's trace content to an external model.",
        )

    def handle(self, *args: Any, name: str, allow_external_models: bool, **options: Any) -> None:
        if Project.objects.filter(name=name).exists():
            raise CommandError(f"project {name!r} already exists")
        try:
            project = services.project_create(
                name=name, allow_external_models=allow_external_models
            )
        except BadRequest as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"Created project {project.name!r} (id {project.pk})")
