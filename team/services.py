"""Team's writes: comments (with edit history), saved list filters, right / wrong marks on
the product's verdicts, and who belongs to a project with which role (new logins and their
one-time password link, role changes, removals).

Services take keyword arguments and raise BadRequest (or NotFound) with the field's name.
Comment bodies are trace-adjacent text written by people: templates escape them. Each
membership change writes its audit row in the same transaction, so the log cannot miss one;
the members page, the admin and ``manage.py addmember`` all come through here.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from alerts.models import Alert, AlertRule
from compaction import selectors as compaction_selectors
from compaction.models import CompactionSpan, SpanOrigin
from privacy import audit, masking
from privacy.models import AuditAction
from sessions import limits
from sessions.errors import BadRequest, NotFound
from sessions.models import AgentSession, Membership, Project, Role
from team import selectors
from team.models import (
    Comment,
    CommentRevision,
    FactVerdict,
    Mark,
    SavedFilter,
    VerdictKind,
    VerdictMark,
)

# ---- comments ---------------------------------------------------------------------------


def _body(text: str) -> str:
    body = text.strip()
    if not body:
        raise BadRequest("body: write something")
    return limits.text_check(body, limit=limits.COMMENT_MAX, field="body")


def comment_create(
    *, session: AgentSession, author: Any, body: str, span: CompactionSpan | None = None
) -> Comment:
    if span is not None and span.session_id != session.pk:
        raise BadRequest("span: not a span of this session")
    return Comment.objects.create(session=session, span=span, author=author, body=_body(body))


@transaction.atomic
def comment_edit(*, comment_id: int, editor: Any, body: str) -> Comment:
    """Replace a comment's text, keeping the old text as a revision. Only its author edits."""
    comment = Comment.objects.select_for_update().get(pk=comment_id)
    if comment.author_id != getattr(editor, "pk", None):
        raise BadRequest("author: only the author can edit a comment")
    new_body = _body(body)
    if new_body == comment.body:
        return comment
    now = timezone.now()
    CommentRevision.objects.create(comment=comment, body=comment.body, replaced_at=now)
    comment.body = new_body
    comment.edited_at = now
    comment.save(update_fields=["body", "edited_at"])
    return comment


# ---- verdict feedback ------------------------------------------------------------------

CLEAR = "clear"  # the third answer of a mark's buttons: take my mark back


def _mark(mark: str) -> str:
    if mark not in (Mark.RIGHT, Mark.WRONG, CLEAR):
        raise BadRequest(f"mark: {mark!r} is not one of right, wrong, clear")
    return mark


def _note(note: str | None) -> str | None:
    if note is None:
        return None
    return limits.text_check(note.strip(), limit=limits.FEEDBACK_NOTE_MAX, field="note")


def _should_be(should_be: str | None, *, mark: str, verdict: str) -> str | None:
    """The verdict a wrong mark says is right: one of the five, not the one marked wrong, and
    only on a wrong mark ("" takes it back; None keeps what the mark has)."""
    if should_be is None:
        return "" if mark != Mark.WRONG else None
    if should_be == "":
        return ""
    if should_be not in FactVerdict.values:
        raise BadRequest(f"should_be: {should_be!r} is not one of {', '.join(FactVerdict.values)}")
    if mark != Mark.WRONG:
        raise BadRequest("should_be: only a wrong mark says what the verdict should have been")
    if should_be == verdict:
        raise BadRequest(f"should_be: the verdict marked wrong is already {str(verdict)!r}")
    return should_be


@transaction.atomic
def _mark_store(
    *,
    where: dict[str, Any],
    fields: dict[str, Any],
    mark: str,
    note: str | None,
    should_be: str | None = None,
) -> VerdictMark | None:
    """Set, change or clear the one mark ``where`` names (its author among the keys)."""
    if mark == CLEAR:
        VerdictMark.objects.filter(**where).delete()
        return None
    values = {**fields, "mark": mark, "updated_at": timezone.now()}
    if note is not None:
        values["note"] = note
    if should_be is not None:
        values["should_be"] = should_be
    existing = VerdictMark.objects.select_for_update().filter(**where).first()
    if existing is None:
        try:
            with transaction.atomic():  # a savepoint: the other click of a double-click won
                return VerdictMark.objects.create(**where, **values)
        except IntegrityError:
            existing = VerdictMark.objects.select_for_update().get(**where)
    for name, value in values.items():
        setattr(existing, name, value)
    existing.save(update_fields=list(values))
    return existing


def fact_mark_set(
    *,
    span: CompactionSpan,
    fact_key: str,
    author: Any,
    mark: str,
    note: str | None = None,
    should_be: str | None = None,
) -> VerdictMark | None:
    """The author's mark on the verdict (one of the five) of one fact of an observed
    compaction.

    ``fact_key`` is the fact's keyed hash (``selectors.fact_key``), so no fact text travels in
    a form. ``mark`` is right, wrong, or clear (removes the mark); ``note`` None keeps the
    note the mark has. ``should_be``, on a wrong mark, names the verdict the author says is
    right (None keeps it; a right mark drops it). The verdict recorded is the one the
    compaction gives now.
    """
    if span.origin != SpanOrigin.OBSERVED:
        raise BadRequest("span: only an observed compaction's verdicts take marks")
    mark, note = _mark(mark), _note(note)
    item = next(
        (
            i
            for i in compaction_selectors.span_retention(span)
            if selectors.fact_key(str(i["text"])) == fact_key
        ),
        None,
    )
    if item is None:
        raise NotFound("fact: no such fact in this compaction")
    verdict = selectors.item_verdict(item)
    return _mark_store(
        where={
            "author": author,
            "session_id": span.session_id,
            "seq": span.seq,
            "fact_hash": fact_key,
            "alert": None,
        },
        fields={
            "kind": verdict,
            "fact": str(item["text"]),
            "fact_kind": str(item["kind"])[:20],
        },
        mark=mark,
        note=note,
        should_be=_should_be(should_be, mark=mark, verdict=verdict) if mark != CLEAR else None,
    )


def alert_mark_set(
    *, alert: Alert, author: Any, mark: str, note: str | None = None
) -> VerdictMark | None:
    """The author's mark on an alert. A personal-data alert takes none: the privacy review's
    confirm / false positive on its findings is its mark, not a second control."""
    if alert.rule == AlertRule.PERSONAL_DATA:
        raise BadRequest(
            "alert: a personal-data alert is marked by the privacy review's confirm / false "
            "positive on its findings"
        )
    mark, note = _mark(mark), _note(note)
    return _mark_store(
        where={"author": author, "alert": alert},
        fields={"kind": VerdictKind.ALERT, "session_id": alert.session_id},
        mark=mark,
        note=note,
    )


# ---- saved filters ----------------------------------------------------------------------


def saved_filter_save(*, user: Any, name: str, query: str) -> SavedFilter:
    """Save (or overwrite) the user's filter of this name."""
    name = name.strip()
    if not name:
        raise BadRequest("name: give the filter a name")
    limits.text_check(name, limit=limits.FILTER_NAME_MAX, field="name")
    if masking.holds_personal_data(name):
        raise BadRequest("name: holds personal data; a filter's name is kept as typed")
    cleaned = selectors.filter_query_clean(query)
    if not cleaned:
        raise BadRequest("query: choose at least one filter before saving")
    try:
        saved, _ = SavedFilter.objects.update_or_create(
            user=user, name=name, defaults={"query": cleaned}
        )
    except IntegrityError:  # two saves of the same name at once: the other one won
        saved = SavedFilter.objects.get(user=user, name=name)
    return saved


def saved_filter_delete(*, user: Any, filter_id: int) -> bool:
    deleted, _ = SavedFilter.objects.filter(user=user, pk=filter_id).delete()
    return bool(deleted)


# ---- members ----------------------------------------------------------------------------


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
    *, actor: audit.Actor, project: Project, username: str, role: str, actor_name: str = ""
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
def membership_remove(*, actor: audit.Actor, membership: Membership) -> None:
    audit.audit_record(
        actor=actor,
        action=AuditAction.ROLE_CHANGE,
        project=membership.project,
        target=f"member:{membership.user.get_username()}",
        detail={"from": membership.role, "to": None},
    )
    membership.delete()
