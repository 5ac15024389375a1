"""The audit log moved to the privacy app (privacy/migrations/0001_initial): removed here from
the state only, its table traces_auditevent stays. Its content type follows it, so
permissions granted on it keep their meaning."""

from typing import Any

from django.db import migrations, models


def _content_type_relabel(old: str, new: str) -> Any:
    def relabel(apps: Any, schema_editor: Any) -> None:
        content_type = apps.get_model("contenttypes", "ContentType")
        if not content_type.objects.filter(app_label=new, model="auditevent").exists():
            content_type.objects.filter(app_label=old, model="auditevent").update(app_label=new)

    return relabel


class Migration(migrations.Migration):

    dependencies = [
        ('traces', '0011_message_model'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('privacy', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='project',
            name='mask_at_ingest',
            field=models.BooleanField(default=False, help_text='Store trace text with personal data already masked (privacy/detect/pii.py): the raw values are never kept. Applies to what is ingested after it is turned on.'),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='AuditEvent')],
            database_operations=[],
        ),
        migrations.RunPython(
            _content_type_relabel("traces", "privacy"),
            _content_type_relabel("privacy", "traces"),
        ),
    ]
