"""What the navigation shows a signed-in user: only what they can use."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from sessions import access
from sessions.models import Membership, Role


def navigation(request: HttpRequest) -> dict[str, Any]:
    """``nav_reviews``: the user reviews personal data in some project (the Privacy and
    Subject requests pages are theirs). One query per page, only for signed-in users."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    if getattr(user, "is_superuser", False):
        return {"nav_reviews": True}
    roles = set(Membership.objects.filter(user__pk=user.pk).values_list("role", flat=True))
    reviewer = access.RANK[Role.PRIVACY_REVIEWER]
    return {"nav_reviews": any(access.RANK.get(role, -1) >= reviewer for role in roles)}
