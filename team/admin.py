"""The admin's door to memberships: every role change and removal made here is audited, as
on the members page. The model is sessions' (see team/__init__.py); its admin is team's,
beside the services it calls."""

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from privacy import audit
from sessions.models import Membership
from team import services


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin[Membership]):
    list_display = ["user", "project", "role"]
    list_filter = ["role", "project"]
    autocomplete_fields = ["user", "project"]

    def save_model(self, request: HttpRequest, obj: Membership, form: Any, change: bool) -> None:
        before = Membership.objects.filter(pk=obj.pk).values_list("role", flat=True).first()
        super().save_model(request, obj, form, change)
        if before != obj.role:
            audit.audit_record(
                actor=request.user,
                action="role_change",
                project=obj.project,
                target=f"member:{obj.user.get_username()}",
                detail={"from": before, "to": obj.role, "via": "admin"},
            )

    def delete_model(self, request: HttpRequest, obj: Membership) -> None:
        services.membership_remove(actor=request.user, membership=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Membership]) -> None:
        for membership in queryset.select_related("user", "project"):
            services.membership_remove(actor=request.user, membership=membership)
