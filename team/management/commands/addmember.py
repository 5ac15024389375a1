from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions.errors import ApiError
from sessions.models import Project, Role
from team import services


class Command(BaseCommand):
    help = "Add a user to a project with a role, or change their role (audited)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="Project name")
        parser.add_argument("username")
        parser.add_argument("role", choices=[r.value for r in Role])

    def handle(self, *args: Any, project: str, username: str, role: str, **options: Any) -> None:
        found = Project.objects.filter(name=project).first()
        if found is None:
            raise CommandError(f"project {project!r} not found; create it with createproject")
        try:
            membership = services.membership_set(
                actor=None,
                actor_name="manage.py addmember",
                project=found,
                username=username,
                role=role,
            )
        except ApiError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"{username} is {membership.get_role_display().lower()} in project {found.name!r}."
        )
