# Joins two migrations written in parallel (audit log, masking at ingest); no schema change.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0002_audit"),
        ("traces", "0002_project_mask_at_ingest"),
    ]

    operations = []
