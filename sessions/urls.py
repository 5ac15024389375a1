from django.urls import path

from sessions import export_views, views

app_name = "sessions"

urlpatterns = [
    path("", views.session_list, name="list"),
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
    path("sessions/<int:pk>/analysis-status/", views.analysis_status, name="analysis-status"),
    path(
        "sessions/<int:pk>/messages/<int:seq>/blocks/<int:index>/",
        views.message_block,
        name="block",
    ),
]
