"""What find_subject and erase_subject share: the project by name and the parsed identifier."""

from __future__ import annotations

import getpass
import os

from django.core.management.base import CommandError

from privacy import subjects
from sessions.errors import BadRequest
from sessions.models import Project


def project_and_subject(project: str, identifier: str) -> tuple[Project, subjects.Subject]:
    found = Project.objects.filter(name=project).first()
    if found is None:
        raise CommandError(f"project {project!r} not found")
    try:
        return found, subjects.subject_parse(identifier=identifier)
    except BadRequest as exc:
        raise CommandError(exc.message) from None


def operator_default() -> str:
    """The login running the command (``SUDO_USER`` first: the person behind ``sudo``), so a
    command-line request is audited with its operator, not as "system"."""
    name = os.environ.get("SUDO_USER") or ""
    if not name:
        try:
            name = getpass.getuser()
        except (KeyError, OSError):
            name = "unknown"
    return name[:100]
