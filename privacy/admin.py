from django.contrib import admin
from django.http import HttpRequest

from privacy.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin[AuditEvent]):
    """Read-only: the audit log is append-only, here as everywhere."""

    list_display = ["created_at", "actor_name", "action", "project_name", "target", "reason"]
    list_filter = ["action", "project"]
    search_fields = ["actor_name", "target", "reason"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False
