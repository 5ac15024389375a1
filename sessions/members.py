"""Writes on who may do what in a project: members and their roles, ingest keys.

Each change writes its audit row in the same transaction, so the log cannot miss one. The
admin pages, the project pages and ``manage.py addmember`` all come through here.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.utils import timezone

from sessions import audit, services
from sessions.errors import BadRequest, NotFound
from sessions.models import ApiKey, AuditAction, Membership, Project, Role

Actor = AbstractBaseUser | AnonymousUser | None


def _role(role: str) -> Role:
    try:
        return Role(role)
    except ValueError:
        names = ", ".join(r.value for r in Role)
        raise BadRequest(f"role: {role!r} is not one of {names}") from None


@transaction.atomic
def membership_set(
    *, actor: Actor, project: Project, username: str, role: str, actor_name: str = ""
) -> Membership:
    """Add the user to the project with ``role``, or change their role; audited."""
    new_role = _role(role)
    user = get_user_model().objects.filter(username=username.strip()).first()
    if user is None:
        raise NotFound(f"username: no user named {username.strip()!r}")
    membership = (
        Membership.objects.select_for_update().filter(project=project, user=user).first()
    )
    before = membership.role if membership else None
    if membership is None:
        membership = Membership.objects.create(project=project, user=user, role=new_role)
    elif membership.role != new_role:
        membership.role = new_role
        membership.save(update_fields=["role"])
    if before != new_role:
        audit.audit_record(
            actor=actor,
            actor_name=actor_name,
            action=AuditAction.ROLE_CHANGE,
            project=project,
            target=f"member:{user.get_username()}",
            detail={"from": before, "to": new_role.value},
        )
    return membership


@transaction.atomic
def membership_remove(*, actor: Actor, membership: Membership) -> None:
    audit.audit_record(
        actor=actor,
        action=AuditAction.ROLE_CHANGE,
        project=membership.project,
        target=f"member:{membership.user.get_username()}",
        detail={"from": membership.role, "to": None},
    )
    membership.delete()


@transaction.atomic
def project_key_create(*, actor: Actor, project: Project, name: str) -> services.IssuedKey:
    name = name.strip()
    if not name:
        raise BadRequest("name: required, a label for the key")
    if len(name) > 100:
        raise BadRequest("name: at most 100 characters")
    issued = services.api_key_create(project=project, name=name)
    audit.audit_record(
        actor=actor,
        action=AuditAction.KEY_CHANGE,
        project=project,
        target=f"key:{issued.api_key.prefix}",
        detail={"change": "created", "name": name},
    )
    return issued


@transaction.atomic
def project_key_revoke(*, actor: Actor, api_key: ApiKey) -> None:
    revoked = ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    if revoked:
        audit.audit_record(
            actor=actor,
            action=AuditAction.KEY_CHANGE,
            project=api_key.project,
            target=f"key:{api_key.prefix}",
            detail={"change": "revoked", "name": api_key.name},
        )
