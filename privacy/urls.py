from django.urls import path

from privacy import views

app_name = "privacy"

urlpatterns = [
    path("privacy/findings/", views.finding_queue, name="findings"),
    path("privacy/findings/<int:pk>/<slug:action>/", views.finding_action, name="finding-action"),
    path("privacy/subjects/", views.subject_requests, name="subjects"),
]
