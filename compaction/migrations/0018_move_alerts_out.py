# The alert models now belong to the alerts app (alerts/migrations/0001_initial.py), which
# took over their tables as they are. Here they leave this app's state only: no table is
# dropped, and no model left in this app has a foreign key to them.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('compaction', '0017_move_team_out'),
        ('alerts', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='WebhookDelivery'),
                migrations.DeleteModel(name='Webhook'),
                migrations.DeleteModel(name='AlertEvent'),
                migrations.DeleteModel(name='Alert'),
                migrations.DeleteModel(name='AlertSettings'),
            ],
            database_operations=[],
        ),
    ]
