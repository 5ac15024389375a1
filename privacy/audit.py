"""The audit log: the one door that writes it, the reads that show it, its CSV export.

Every reveal, export, erasure, subject find, review decision, role, key, policy, webhook and
alert settings change calls ``audit_record``. Rows are only ever inserted: nothing in the app
deletes them, the admin registers the model read-only, and no page offers an edit; the one
rewrite is an erasure masking a data subject's identifier in a row's text (the row stays).
Other parts of the app call ``audit.audit_record(...)`` in the same transaction as the change
they record.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from privacy import masking
from privacy.models import AuditAction, AuditEvent
from sessions.models import Project

Actor = AbstractBaseUser | AnonymousUser | None


def audit_record(
    *,
    actor: Actor,
    action: AuditAction | str,
    project: Project | None,
    target: str,
    reason: str = "",
    detail: dict[str, Any] | None = None,
    actor_name: str = "",
) -> AuditEvent:
    """Append one row. ``actor`` None (a command, a periodic task) needs an ``actor_name``.

    ``detail`` must never hold a revealed value or an identifier in clear: say where and what
    kind, not what. What a person typed (a reason, a target named by its text) is stored
    masked, so the log that records a reveal is never a copy of what was revealed.
    """
    user = actor if actor is not None and actor.is_authenticated else None
    name = actor_name or (user.get_username() if user is not None else "system")
    return AuditEvent.objects.create(
        actor=user,  # type: ignore[misc]  # AUTH_USER_MODEL is configurable
        actor_name=name[:150],
        action=AuditAction(action),
        project=project,
        project_name=project.name if project is not None else "",
        target=masking.text_mask(target)[:300],
        reason=masking.text_mask(reason),
        detail=masking.json_mask(detail or {}),
    )


def audit_events(*, project: Project) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(project=project).select_related("actor")


# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "|", "%")

CSV_HEADER = ["when", "who", "action", "project", "target", "reason", "detail"]


def csv_cell(value: object) -> str:
    """A cell that a spreadsheet shows as text, never evaluates.

    >>> csv_cell("=HYPERLINK(\\"http://x\\")")
    '\\'=HYPERLINK("http://x")'
    """
    text = "" if value is None else str(value)
    return f"'{text}" if text.startswith(_FORMULA_START) else text


def audit_csv(events: Iterable[AuditEvent]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_HEADER)
    for event in events:
        writer.writerow(
            [
                csv_cell(value)
                for value in (
                    event.created_at.isoformat(),
                    event.actor_name,
                    event.action,
                    event.project_name,
                    event.target,
                    event.reason,
                    json.dumps(event.detail, ensure_ascii=False, sort_keys=True)
                    if event.detail
                    else "",
                )
            ]
        )
    return out.getvalue()
