# Comment, CommentRevision and SavedFilter now belong to the team app (team/migrations/
# 0001_initial.py), with the same tables. Here they leave compaction's state only: no SQL, no
# row moves. No other compaction model points at them, so no foreign key needs repointing.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('compaction', '0016_limits_one_place'),
        ('team', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name='CommentRevision'),
                migrations.DeleteModel(name='Comment'),
                migrations.DeleteModel(name='SavedFilter'),
            ],
        ),
    ]
