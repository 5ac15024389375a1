import json
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from privacy import masking
from sessions import services
from sessions.models import AgentSession, ApiKey, Membership, Project


class MembershipInline(admin.TabularInline[Membership, Project]):
    """Shown, not edited here: roles change on Memberships (team/admin.py, audited) or the
    members page."""

    model = Membership
    extra = 0
    readonly_fields = ["user", "role"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin[Project]):
    list_display = [
        "name",
        "allow_external_models",
        "mask_at_ingest",
        "retention_days",
        "created_at",
    ]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin[ApiKey]):
    """Keys are created with `manage.py createapikey`, which shows the secret once."""

    list_display = ["prefix", "name", "project", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["project"]
    readonly_fields = ["prefix", "hashed_key", "created_at", "last_used_at"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: ApiKey | None = None) -> bool:
        return False  # revoke instead: a revocation is audited and keeps the key's history

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for api_key in queryset.filter(revoked_at__isnull=True).select_related("project"):
            services.project_key_revoke(actor=request.user, api_key=api_key)


ADMIN_DELETE_REASON = "deleted in the Django admin"


@admin.register(AgentSession)
class AgentSessionAdmin(admin.ModelAdmin[AgentSession]):
    """Masked like every page, and read-only: the admin shows no value a trace holds in clear
    (a privacy reviewer reveals one on the session page, with a reason, audited), offers no
    search by one, and a delete here is recorded in the audit log as on the delete page.
    Sessions come in through the ingest doors only."""

    SHOWN = ("shown_id", "project", "shown_agent", "shown_model", "message_count", "updated_at")
    list_display = SHOWN
    list_filter = ["project"]
    fields = readonly_fields = (
        *SHOWN,
        "shown_title",
        "shown_metadata",
        "compaction_count",
        "created_at",
    )

    @admin.display(description="session")
    def shown_id(self, obj: AgentSession) -> str:
        return masking.text_mask(obj.external_id)

    @admin.display(description="agent")
    def shown_agent(self, obj: AgentSession) -> str:
        return masking.text_mask(obj.agent)

    @admin.display(description="model")
    def shown_model(self, obj: AgentSession) -> str:
        return masking.text_mask(obj.model)

    @admin.display(description="title")
    def shown_title(self, obj: AgentSession) -> str:
        return masking.text_mask(obj.title)

    @admin.display(description="metadata")
    def shown_metadata(self, obj: AgentSession) -> str:
        return json.dumps(masking.json_mask(obj.metadata), ensure_ascii=False, indent=2)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: AgentSession) -> None:
        services.session_delete(session=obj, by=request.user, reason=ADMIN_DELETE_REASON)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[AgentSession]) -> None:
        for session in queryset.select_related("project"):
            services.session_delete(session=session, by=request.user, reason=ADMIN_DELETE_REASON)
