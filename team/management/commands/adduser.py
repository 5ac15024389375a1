from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions.errors import ApiError
from team import services


class Command(BaseCommand):
    help = (
        "Create a login and print a one-time link where its owner chooses a password. "
        "Give it a project role with `addmember PROJECT USERNAME ROLE`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--email", default="", help="The user's e-mail address (optional).")
        parser.add_argument(
            "--reset",
            action="store_true",
            help="The user exists: print a new link to choose a password (the old one stops).",
        )
        parser.add_argument(
            "--url",
            default=settings.SITE_URL,
            help="Where Sawtooth is served, for the link (default: SITE_URL, %(default)s).",
        )

    def handle(
        self, *args: Any, username: str, email: str, reset: bool, url: str, **options: Any
    ) -> None:
        user: Any
        if reset:
            user = get_user_model().objects.filter(username=username.strip()).first()
            if user is None:
                raise CommandError(f"no user named {username.strip()!r}; leave out --reset")
            user.set_unusable_password()
            user.save(update_fields=["password"])
            said = f"{user.get_username()} must choose a new password."
        else:
            try:
                user = services.user_create(username=username, email=email)
            except ApiError as exc:
                raise CommandError(f"{exc.message} (--reset prints a new link)") from None
            except ValidationError as exc:
                raise CommandError("; ".join(exc.messages)) from None
            said = f"Created user {user.get_username()!r}."
        link = url.rstrip("/") + services.user_password_link(user=user)
        self.stdout.write(said)
        self.stdout.write(
            "Send them this link to choose a password; it works once and expires in "
            f"{settings.PASSWORD_RESET_TIMEOUT // 86400} days:"
        )
        self.stdout.write(link)
