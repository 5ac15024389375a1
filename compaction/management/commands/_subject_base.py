"""What find_subject and erase_subject share: the project by name and the parsed identifier."""

from __future__ import annotations

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
