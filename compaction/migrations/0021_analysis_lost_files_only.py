from typing import Any

from django.db import migrations, models

from compaction.engine.evals import span_verdict


def count_existing(apps: Any, schema_editor: Any) -> None:
    """Fill the count for analyses stored before it existed, from their observed spans'
    stored verdict inputs (the same rule CompactionSpan.verdict applies)."""
    analyses = apps.get_model("compaction", "SessionAnalysis")
    spans = apps.get_model("compaction", "CompactionSpan")
    counts: dict[int, int] = {}
    for session_id, failed, reason, retention in spans.objects.filter(
        origin="observed"
    ).values_list("session_id", "failed", "failure_reason", "retention"):
        lost = [str(item.get("kind")) for item in retention or [] if not item.get("kept")]
        if span_verdict(reason if failed else "", lost).status == "warn":
            counts[session_id] = counts.get(session_id, 0) + 1
    for session_id, n in counts.items():
        analyses.objects.filter(session_id=session_id).update(lost_files_only=n)


class Migration(migrations.Migration):
    dependencies = [
        ("compaction", "0020_retired_spans"),
    ]

    operations = [
        migrations.AddField(
            model_name="sessionanalysis",
            name="lost_files_only",
            field=models.PositiveIntegerField(
                default=0,
                help_text="Observed compactions that lost only files or identifiers (amber verdict).",
            ),
        ),
        migrations.RunPython(count_existing, migrations.RunPython.noop),
    ]
