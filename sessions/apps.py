from django.apps import AppConfig


class TracesConfig(AppConfig):
    # "sessions" would clash with django.contrib.sessions, so the app is labelled "traces".
    name = "sessions"
    label = "traces"
    verbose_name = "Agent sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core import checks

        from config import secret
        from sessions import login_throttle  # noqa: F401  (connects its signals)

        checks.register(secret.production_key_check, checks.Tags.security, deploy=True)
