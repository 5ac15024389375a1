from django.urls import path

from sessions import export_views, import_views, policy_views, project_views, search_views, views

app_name = "sessions"

urlpatterns = [
    path("", views.session_list, name="list"),
    path("search/", search_views.search_page, name="search"),
    path("imports/claude-code/", import_views.transcript_upload, name="import-upload"),
    path("imports/<uuid:job_id>/", import_views.import_job_page, name="import-job"),
    path("imports/<uuid:job_id>/status/", import_views.import_job_status, name="import-job-status"),
    # ---- exports (sessions/export_views.py) ----
    path("sessions/export.<str:fmt>", export_views.session_list_export, name="list-export"),
    path(
        "sessions/<int:pk>/curve.<str:fmt>",
        export_views.session_curve_export,
        name="curve-export",
    ),
    path(
        "sessions/<int:pk>/spans.<str:fmt>",
        export_views.session_spans_export,
        name="spans-export",
    ),
    path("sessions/<int:pk>/", views.session_detail, name="detail"),
    path("sessions/<int:pk>/delete/", views.session_delete, name="delete"),
    path("sessions/<int:pk>/analysis-status/", views.analysis_status, name="analysis-status"),
    path(
        "sessions/<int:pk>/messages/<int:seq>/blocks/<int:index>/",
        views.message_block,
        name="block",
    ),
    path("reveal/", project_views.value_reveal, name="reveal"),
    path("projects/", project_views.project_list, name="projects"),
    path("projects/<int:pk>/policy/", policy_views.project_policy, name="policy"),
    path("projects/<int:pk>/keys/", project_views.key_list, name="keys"),
    path(
        "projects/<int:pk>/keys/<int:key_pk>/revoke/", project_views.key_revoke, name="key-revoke"
    ),
    path("projects/<int:pk>/audit/", project_views.audit_list, name="audit"),
    path("projects/<int:pk>/audit.csv", project_views.audit_export, name="audit-export"),
]
