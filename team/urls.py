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
    path("filters/", views.saved_filter_save, name="filter-save"),
    path("filters/<int:filter_pk>/delete/", views.saved_filter_delete, name="filter-delete"),
]
