"""Writes on who may do what in a project: members and their roles, ingest keys.

Each change writes its audit row in the same transaction, so the log cannot miss one. The
admin pages, the project pages and ``manage.py addmember`` all come through here.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.contrib.auth.tokens import default_token_generator
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from privacy import audit
from privacy.models import AuditAction
from sessions import limits, services
from sessions.errors import BadRequest, NotFound
from sessions.models import ApiKey, Membership, Project, Role

Actor = AbstractBaseUser | AnonymousUser | None


def _role(role: str) -> Role:
    try:
        return Role(role)
    except ValueError:
        names = ", ".join(r.value for r in Role)
        raise BadRequest(f"role: {role!r} is not one of {names}") from None


def user_password_link(*, user: Any) -> str:
    """The path of a page where ``user`` chooses a password. It works once: the token is
    derived from the current password hash and last login, so setting a password (or logging
    in) retires it, and it expires after ``PASSWORD_RESET_TIMEOUT``."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    return reverse("password-set", kwargs={"uidb64": uid, "token": token})


@transaction.atomic
def user_create(*, username: str, email: str = "") -> Any:
    """A login with no usable password yet: its owner sets one through
    :func:`user_password_link`, so no password travels in a chat or a terminal log."""
    username = username.strip()
    if not username:
        raise BadRequest("username: must not be empty")
    users = get_user_model()
    if users.objects.filter(username=username).exists():
        raise BadRequest(f"username: a user named {username!r} already exists")
    user = users(username=username, email=email.strip())
    user.set_unusable_password()
    user.full_clean(exclude=["password"])
    user.save()
    return user


@transaction.atomic
def membership_set(
    *, actor: Actor, project: Project, username: str, role: str, actor_name: str = ""
) -> Membership:
    """Add the user to the project with ``role``, or change their role; audited."""
    new_role = _role(role)
    user = get_user_model().objects.filter(username=username.strip()).first()
    if user is None:
        raise NotFound(f"username: no user named {username.strip()!r}")
    membership = Membership.objects.select_for_update().filter(project=project, user=user).first()
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
    limits.text_check(name, limit=limits.API_KEY_NAME_MAX, field="name")
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
