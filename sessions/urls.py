from django.urls import path

from sessions import import_views, search_views, views

app_name = "sessions"

urlpatterns = [
    path("", views.session_list, name="list"),
    path("search/", search_views.search_page, name="search"),
    path("imports/claude-code/", import_views.transcript_upload, name="import-upload"),
    path("sessions/<int:pk>/", views.session_detail, name="detail"),
    path("sessions/<int:pk>/analysis-status/", views.analysis_status, name="analysis-status"),
    path(
        "sessions/<int:pk>/messages/<int:seq>/blocks/<int:index>/",
        views.message_block,
        name="block",
    ),
]
