from django.apps import AppConfig


class TeamConfig(AppConfig):
    name = "team"
    label = "team"
    verbose_name = "Team"
    default_auto_field = "django.db.models.BigAutoField"
