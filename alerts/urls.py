from django.urls import path

from alerts import views

app_name = "alerts"

urlpatterns = [
    path("alerts/", views.alert_list, name="list"),
    path("alerts/count/", views.alert_count, name="count"),
    path("alerts/acknowledge/", views.alerts_acknowledge, name="acknowledge"),
    path("alerts/<int:pk>/", views.alert_detail, name="detail"),
    path(
        "alerts/<int:pk>/<slug:action>/",
        views.alert_action,
        name="action",
    ),
    path("projects/<int:pk>/settings/", views.project_settings, name="project-settings"),
    path(
        "projects/<int:pk>/webhooks/<int:hook_pk>/delete/",
        views.webhook_delete,
        name="webhook-delete",
    ),
    path(
        "projects/<int:pk>/webhooks/<int:hook_pk>/edit/",
        views.webhook_edit,
        name="webhook-edit",
    ),
    path(
        "projects/<int:pk>/webhooks/<int:hook_pk>/test/",
        views.webhook_test,
        name="webhook-test",
    ),
]
