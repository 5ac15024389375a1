"""The importers' running state of a conversation moves out of the session metadata (the
client's, shown, searched and scanned for personal data) into a column of its own."""

from typing import Any

from django.db import migrations, models

STATE_KEY = "calls"  # sessions/importers/calls.py


def state_out_of_metadata(apps: Any, schema_editor: Any) -> None:
    sessions = apps.get_model("traces", "AgentSession")
    moved = []
    for session in sessions.objects.filter(metadata__has_key=STATE_KEY).iterator(chunk_size=500):
        session.import_state = {STATE_KEY: session.metadata.pop(STATE_KEY)}
        moved.append(session)
        if len(moved) >= 500:
            sessions.objects.bulk_update(moved, ["metadata", "import_state"])
            moved = []
    sessions.objects.bulk_update(moved, ["metadata", "import_state"])


def state_back_into_metadata(apps: Any, schema_editor: Any) -> None:
    sessions = apps.get_model("traces", "AgentSession")
    for session in sessions.objects.filter(import_state__has_key=STATE_KEY).iterator():
        session.metadata[STATE_KEY] = session.import_state[STATE_KEY]
        session.save(update_fields=["metadata"])


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0006_project_judge_retention"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentsession",
            name="import_state",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(state_out_of_metadata, state_back_into_metadata),
    ]
