"""Reveal one masked value: a privacy reviewer, one occurrence at a time, with a reason.

A target names where the text lives, in the same words the pages use to render it, so the
n-th masked value on the page is the n-th value found here:

- ``message:<session id>:<seq>:<block index>``: one content block of a raw message;
- ``summary:<span id>``: the summary text of a compaction span;
- ``metadata:<session id>``: the session's free metadata, as the page prints it.

Every reveal writes an audit row (who, which occurrence, what kind, why); the row never holds
the value.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db import transaction

from compaction.models import CompactionSpan
from privacy import audit, masking
from privacy.models import AuditAction
from sessions import access, limits, selectors
from sessions.errors import BadRequest, NotFound
from sessions.models import AgentSession, Project, Role
from sessions.templatetags.traces import block_text, pretty_json

REASON_MIN_CHARS = 10


@dataclass(frozen=True)
class Revealed:
    kind: str
    value: str


def _session(user: AbstractBaseUser | AnonymousUser, pk: str) -> AgentSession:
    return selectors.session_get(projects=selectors.projects_for_user(user), pk=int(pk))


def target_text(*, user: AbstractBaseUser | AnonymousUser, target: str) -> tuple[Project, str]:
    """The project and the raw text a target names, among the user's projects; NotFound else."""
    kind, _, rest = target.partition(":")
    parts = rest.split(":")
    if not all(part.isdigit() for part in parts):
        raise BadRequest(
            "target: expected message:<id>:<seq>:<block>, summary:<id> or metadata:<id>"
        )
    if kind == "message" and len(parts) == 3:
        session = _session(user, parts[0])
        message = session.messages.filter(seq=int(parts[1])).first()
        index = int(parts[2])
        if message is None or not 0 <= index < len(message.content):
            raise NotFound("target: no such message block")
        return session.project, block_text(message.content[index])
    if kind == "summary" and len(parts) == 1:
        span = (
            CompactionSpan.objects.filter(
                pk=int(parts[0]), session__project__in=selectors.projects_for_user(user)
            )
            .select_related("session__project")
            .first()
        )
        if span is None:
            raise NotFound("target: no such compaction in your projects")
        return span.session.project, span.summary
    if kind == "metadata" and len(parts) == 1:
        session = _session(user, parts[0])
        return session.project, pretty_json(session.metadata)
    raise BadRequest("target: expected message:<id>:<seq>:<block>, summary:<id> or metadata:<id>")


@transaction.atomic
def value_reveal(
    *, user: AbstractBaseUser | AnonymousUser, target: str, index: int, reason: str
) -> Revealed:
    """The raw value of one masked occurrence, for a privacy reviewer; audited."""
    reason = reason.strip()
    project, text = target_text(user=user, target=target)
    if not access.has_role(user, project, Role.PRIVACY_REVIEWER):
        raise PermissionDenied("Revealing a value needs the privacy reviewer role in the project.")
    if len(reason) < REASON_MIN_CHARS:
        raise BadRequest(f"reason: required, at least {REASON_MIN_CHARS} characters")
    limits.text_check(reason, limit=limits.REVEAL_REASON_MAX, field="reason")
    found = masking.occurrence_value(text, index)
    if found is None:
        raise NotFound("index: no such masked value in this text")
    kind, value = found
    if kind in masking.NEVER_REVEALED:
        raise PermissionDenied(
            "A secret is never revealed, to any role: its finding shows its prefix, length and "
            "fingerprint; erase it by its finding or with its session."
        )
    audit.audit_record(
        actor=user,
        action=AuditAction.REVEAL,
        project=project,
        target=f"{target}#{index}",
        reason=reason,
        detail={"kind": kind},
    )
    return Revealed(kind=kind, value=value)
