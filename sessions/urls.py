from django.urls import path

from sessions import views

app_name = "sessions"

urlpatterns = [
    path("", views.session_list, name="list"),
    path("sessions/<int:pk>/", views.session_detail, name="detail"),
    path("sessions/<int:pk>/delete/", views.session_delete, name="delete"),
    path("sessions/<int:pk>/analysis-status/", views.analysis_status, name="analysis-status"),
    path(
        "sessions/<int:pk>/messages/<int:seq>/blocks/<int:index>/",
        views.message_block,
        name="block",
    ),
]
