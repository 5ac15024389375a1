from django.apps import AppConfig


class PrivacyConfig(AppConfig):
    name = "privacy"
    label = "privacy"
    verbose_name = "Privacy"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from privacy import log_safety

        log_safety.install()
