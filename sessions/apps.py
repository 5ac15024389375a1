from django.apps import AppConfig


class TracesConfig(AppConfig):
    # "sessions" would clash with django.contrib.sessions, so the app is labelled "traces".
    name = "sessions"
    label = "traces"
    verbose_name = "Agent sessions"
    default_auto_field = "django.db.models.BigAutoField"
