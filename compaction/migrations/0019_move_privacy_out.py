"""Findings and the subject index moved to the privacy app (privacy/migrations/0001_initial):
removed here from the state only, their tables stay. Their content types follow them, so
permissions granted on them keep their meaning."""

from typing import Any

from django.db import migrations

MOVED = ["finding", "subjecttoken", "subjectindexmark", "subjectrequest"]


def _content_types_relabel(old: str, new: str) -> Any:
    def relabel(apps: Any, schema_editor: Any) -> None:
        content_type = apps.get_model("contenttypes", "ContentType")
        taken = set(content_type.objects.filter(app_label=new, model__in=MOVED).values_list("model", flat=True))
        content_type.objects.filter(app_label=old, model__in=sorted(set(MOVED) - taken)).update(
            app_label=new
        )

    return relabel


class Migration(migrations.Migration):

    dependencies = [
        ('compaction', '0018_move_alerts_out'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('privacy', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='Finding'),
                migrations.DeleteModel(name='SubjectToken'),
                migrations.DeleteModel(name='SubjectIndexMark'),
                migrations.DeleteModel(name='SubjectRequest'),
            ],
            database_operations=[],
        ),
        migrations.RunPython(
            _content_types_relabel("compaction", "privacy"),
            _content_types_relabel("privacy", "compaction"),
        ),
    ]
