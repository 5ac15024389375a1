from django.urls import path

from compaction import alert_views

app_name = "alerts"

urlpatterns = [
    path("alerts/", alert_views.alert_list, name="list"),
    path("alerts/count/", alert_views.alert_count, name="count"),
    path("alerts/acknowledge/", alert_views.alerts_acknowledge, name="acknowledge"),
    path("alerts/<int:pk>/", alert_views.alert_detail, name="detail"),
    path(
        "alerts/<int:pk>/<slug:action>/",
        alert_views.alert_action,
        name="action",
    ),
    path("projects/<int:pk>/settings/", alert_views.project_settings, name="project-settings"),
    path(
        "projects/<int:pk>/webhooks/<int:hook_pk>/delete/",
        alert_views.webhook_delete,
        name="webhook-delete",
    ),
]
