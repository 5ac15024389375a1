# The team app takes over three models the compaction app created (0008_team), keeping their
# tables: this migration changes Django's state only and runs no SQL. compaction's
# 0017_move_team_out removes them from compaction's state.

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('compaction', '0016_limits_one_place'),
        ('traces', '0011_message_model'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='Comment',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('body', models.TextField(max_length=5000)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('edited_at', models.DateTimeField(blank=True, null=True)),
                        ('author', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='comments', to='traces.agentsession')),
                        ('span', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='comments', to='compaction.compactionspan')),
                    ],
                    options={
                        'db_table': 'compaction_comment',
                        'ordering': ['created_at', 'pk'],
                        'indexes': [models.Index(fields=['session', 'span', 'created_at'], name='compaction__session_3cc8fe_idx')],
                    },
                ),
                migrations.CreateModel(
                    name='CommentRevision',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('body', models.TextField()),
                        ('replaced_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('comment', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='revisions', to='team.comment')),
                    ],
                    options={
                        'db_table': 'compaction_commentrevision',
                        'ordering': ['replaced_at', 'pk'],
                    },
                ),
                migrations.CreateModel(
                    name='SavedFilter',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=80)),
                        ('query', models.TextField(help_text="The list's query string, without page.")),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='saved_filters', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'compaction_savedfilter',
                        'ordering': ['name'],
                        'constraints': [models.UniqueConstraint(fields=('user', 'name'), name='saved_filter_unique_name')],
                    },
                ),
            ],
        ),
    ]
