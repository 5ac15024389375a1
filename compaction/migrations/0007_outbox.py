import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("compaction", "0006_subjects"),
    ]

    operations = [
        migrations.CreateModel(
            name="OutboxTask",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("kind", models.CharField(max_length=40)),
                ("args", models.JSONField(default=list)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("sent_at", models.DateTimeField(blank=True, null=True)),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("last_error", models.CharField(blank=True, max_length=300)),
            ],
            options={
                "indexes": [
                    models.Index(
                        condition=models.Q(("sent_at__isnull", True)),
                        fields=["created_at"],
                        name="outbox_unsent",
                    )
                ],
            },
        ),
    ]
