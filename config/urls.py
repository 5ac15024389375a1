from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path, reverse_lazy
from django.views.generic import RedirectView

from config.api import api
from sessions import otlp_api
from sessions import views as session_views

handler404 = "config.api.not_found"

urlpatterns = [
    path("healthz", session_views.healthz, name="healthz"),
    path("v1/traces", otlp_api.traces, name="otlp-traces"),
    # The audit log's admin pages from before it moved to the privacy app (its label is in
    # the admin's paths): bookmarks still open them.
    re_path(
        r"^admin/traces/auditevent/(?P<rest>.*)$",
        RedirectView.as_view(url="/admin/privacy/auditevent/%(rest)s", query_string=True),
        name="admin-audit-moved",
    ),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The one-time link of `manage.py adduser`: the new user chooses a password and is in.
    path(
        "login/set-password/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            template_name="registration/set_password.html",
            post_reset_login=True,
            success_url=reverse_lazy("sessions:list"),
        ),
        name="password-set",
    ),
    path("", include("sessions.urls")),
    path("", include("compaction.urls")),
    path("", include("alerts.urls")),
    path("", include("team.urls")),
    path("", include("privacy.urls")),
]
