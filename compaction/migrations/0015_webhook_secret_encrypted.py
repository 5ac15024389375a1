# Webhook secrets leave the database in clear: each existing one is sealed under a key derived
# from SECRET_KEY (alerts/webhook_secrets.py) and the clear column is dropped.

from typing import Any

from django.db import migrations, models

from alerts import webhook_secrets


def seal_existing(apps: Any, schema_editor: Any) -> None:
    Webhook = apps.get_model("compaction", "Webhook")
    for hook in Webhook.objects.all().only("pk", "secret"):
        Webhook.objects.filter(pk=hook.pk).update(
            secret_encrypted=webhook_secrets.secret_seal(hook.secret)
        )


def open_existing(apps: Any, schema_editor: Any) -> None:
    Webhook = apps.get_model("compaction", "Webhook")
    for hook in Webhook.objects.all().only("pk", "secret_encrypted"):
        Webhook.objects.filter(pk=hook.pk).update(
            secret=webhook_secrets.secret_open(hook.secret_encrypted)
        )


class Migration(migrations.Migration):

    dependencies = [
        ('compaction', '0014_fair_turns'),
    ]

    operations = [
        migrations.AddField(
            model_name='webhook',
            name='secret_encrypted',
            field=models.TextField(default='', help_text='webhook_secrets.secret_seal(secret)'),
            preserve_default=False,
        ),
        migrations.RunPython(seal_existing, open_existing),
        # A default only so that going back can add the column again before refilling it.
        migrations.AlterField(
            model_name='webhook',
            name='secret',
            field=models.CharField(default='', max_length=200),
        ),
        migrations.RemoveField(
            model_name='webhook',
            name='secret',
        ),
    ]
