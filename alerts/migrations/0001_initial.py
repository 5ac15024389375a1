# The alert models move from the compaction app to the alerts app. Their tables keep their
# names (compaction_alert, ...), so this migration only tells Django's state about them: it
# emits no SQL, and a database made before the move migrates in place. The compaction app's
# 0018_move_alerts_out then drops them from that app's state.

import django.core.validators
import django.db.models.deletion
import django.utils.timezone
import uuid
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
            state_operations=[
                migrations.CreateModel(
                    name='Alert',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('rule', models.CharField(choices=[('repeated_compaction', 'Repeated compaction'), ('compaction_thrash', 'Compaction thrash'), ('failed_splice', 'Failed splice'), ('near_overflow', 'Near overflow'), ('overflow', 'Overflow'), ('lost_constraint', 'Lost constraint'), ('orphan_pairs', 'Orphan tool pairs'), ('personal_data', 'Personal data in a summary')], max_length=30)),
                        ('severity', models.CharField(choices=[('info', 'Info'), ('warning', 'Warning'), ('critical', 'Critical')], max_length=10)),
                        ('state', models.CharField(choices=[('open', 'Open'), ('acknowledged', 'Acknowledged'), ('resolved', 'Resolved'), ('muted', 'Muted')], default='open', max_length=15)),
                        ('title', models.CharField(max_length=300)),
                        ('evidence', models.JSONField(default=dict)),
                        ('muted_until', models.DateTimeField(blank=True, null=True)),
                        ('resolution', models.TextField(blank=True)),
                        ('opened_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('assignee', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='assigned_alerts', to=settings.AUTH_USER_MODEL)),
                        ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='alerts', to='traces.project')),
                        ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='alerts', to='traces.agentsession')),
                    ],
                    options={
                        'db_table': 'compaction_alert',
                        'ordering': ['-opened_at', '-pk'],
                    },
                ),
                migrations.CreateModel(
                    name='AlertEvent',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('opened', 'Opened'), ('updated', 'New evidence'), ('reopened', 'Reopened'), ('acknowledged', 'Acknowledged'), ('resolved', 'Resolved'), ('muted', 'Muted'), ('unmuted', 'Mute expired'), ('assigned', 'Assigned'), ('commented', 'Commented')], max_length=15)),
                        ('from_state', models.CharField(blank=True, max_length=15)),
                        ('to_state', models.CharField(blank=True, max_length=15)),
                        ('comment', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('actor', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ('alert', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='events', to='alerts.alert')),
                    ],
                    options={
                        'db_table': 'compaction_alertevent',
                        'ordering': ['created_at', 'pk'],
                    },
                ),
                migrations.CreateModel(
                    name='AlertSettings',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('repeated_compaction_count', models.PositiveIntegerField(default=3, help_text='N: alert when a session compacts this many times.', validators=[django.core.validators.MinValueValidator(1)])),
                        ('thrash_compactions', models.PositiveIntegerField(default=2, help_text='K: alert when this many compactions come...', validators=[django.core.validators.MinValueValidator(2)])),
                        ('thrash_window_calls', models.PositiveIntegerField(default=20, help_text='...within W model calls of each other.', validators=[django.core.validators.MinValueValidator(1)])),
                        ('near_overflow_percent', models.PositiveIntegerField(default=95, help_text='A call at or above this share of the window.', validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(100)])),
                        ('disabled_rules', models.JSONField(blank=True, default=list)),
                        ('email_recipients', models.TextField(blank=True, help_text='Comma-separated addresses told of new and reopened alerts.')),
                        ('project', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='alert_settings', to='traces.project')),
                    ],
                    options={
                        'verbose_name_plural': 'alert settings',
                        'db_table': 'compaction_alertsettings',
                    },
                ),
                migrations.CreateModel(
                    name='Webhook',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('url', models.URLField(max_length=500)),
                        ('secret_encrypted', models.TextField(help_text='webhook_secrets.secret_seal(secret)')),
                        ('format', models.CharField(choices=[('json', 'JSON'), ('slack', 'Slack')], default='json', max_length=10)),
                        ('rules', models.JSONField(blank=True, default=list, help_text='Empty means every rule.')),
                        ('active', models.BooleanField(default=True)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='webhooks', to='traces.project')),
                    ],
                    options={
                        'db_table': 'compaction_webhook',
                        'ordering': ['pk'],
                    },
                ),
                migrations.CreateModel(
                    name='WebhookDelivery',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('event', models.CharField(max_length=15)),
                        ('delivery_id', models.UUIDField(default=uuid.uuid4, unique=True)),
                        ('body', models.TextField()),
                        ('status', models.CharField(choices=[('pending', 'Pending'), ('delivered', 'Delivered'), ('failed', 'Failed')], default='pending', max_length=10)),
                        ('attempts', models.PositiveIntegerField(default=0)),
                        ('log', models.JSONField(blank=True, default=list)),
                        ('last_status_code', models.PositiveIntegerField(blank=True, null=True)),
                        ('last_error', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('alert', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='deliveries', to='alerts.alert')),
                        ('webhook', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='alerts.webhook')),
                    ],
                    options={
                        'verbose_name_plural': 'webhook deliveries',
                        'db_table': 'compaction_webhookdelivery',
                        'ordering': ['-created_at', '-pk'],
                    },
                ),
                migrations.AddIndex(
                    model_name='alert',
                    index=models.Index(fields=['project', 'state', 'opened_at'], name='alert_queue'),
                ),
                migrations.AddConstraint(
                    model_name='alert',
                    constraint=models.UniqueConstraint(fields=('session', 'rule'), name='alert_one_per_rule'),
                ),
            ],
            database_operations=[],
        ),
    ]
