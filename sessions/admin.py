from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from sessions.models import AgentSession, ApiKey, Membership, Project


class MembershipInline(admin.TabularInline[Membership, Project]):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


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


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin[Membership]):
    list_display = ["user", "project", "role"]
    list_filter = ["role", "project"]
    autocomplete_fields = ["user", "project"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin[ApiKey]):
    """Keys are created with `manage.py createapikey`, which shows the secret once."""

    list_display = ["prefix", "name", "project", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["project"]
    readonly_fields = ["prefix", "hashed_key", "created_at", "last_used_at"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


@admin.register(AgentSession)
class AgentSessionAdmin(admin.ModelAdmin[AgentSession]):
    list_display = ["external_id", "project", "agent", "model", "message_count", "updated_at"]
    list_filter = ["project"]
    search_fields = ["external_id", "agent"]
    readonly_fields = ["message_count", "compaction_count", "created_at", "updated_at"]
