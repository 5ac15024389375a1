from django.urls import path

from sessions import views

app_name = "sessions"

urlpatterns = [
    path("", views.session_list, name="list"),
    path("sessions/<int:pk>/", views.session_detail, name="detail"),
]
