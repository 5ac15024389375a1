from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions import services
from sessions.models import Project


class Command(BaseCommand):
    help = "Create an ingest key for a project. The key is printed once, alone on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="Project name")
        parser.add_argument("--name", default="default", help="A label for the key")

    def handle(self, *args: Any, project: str, name: str, **options: Any) -> None:
        found = Project.objects.filter(name=project).first()
        if found is None:
            raise CommandError(f"project {project!r} not found; create it with createproject")
        issued = services.api_key_create(project=found, name=name)
        self.stdout.write(
            f"Created key {issued.api_key.prefix}… ({name!r}) for project {found.name!r}. "
            "Store it now: it is not shown again."
        )
        self.stdout.write(issued.raw_key)
