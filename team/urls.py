from django.urls import path

from team import views

app_name = "team"

urlpatterns = [
    path("projects/<int:pk>/members/", views.member_list, name="members"),
    path(
        "projects/<int:pk>/members/<int:membership_pk>/remove/",
        views.member_remove,
        name="member-remove",
    ),
    path("sessions/<int:pk>/comments/", views.comment_create, name="comment-create"),
    path(
        "sessions/<int:pk>/comments/<int:comment_pk>/edit/",
        views.comment_edit,
        name="comment-edit",
    ),
    path("projects/<int:pk>/feedback/", views.feedback, name="feedback"),
    path("projects/<int:pk>/feedback.jsonl", views.feedback_export, name="feedback-export"),
    path(
        "feedback/sessions/<int:pk>/compactions/<int:seq>/",
        views.fact_mark,
        name="fact-mark",
    ),
    path("feedback/alerts/<int:pk>/", views.alert_mark, name="alert-mark"),
    path("filters/", views.saved_filter_save, name="filter-save"),
    path("filters/<int:filter_pk>/delete/", views.saved_filter_delete, name="filter-delete"),
]
