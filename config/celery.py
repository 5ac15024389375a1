import os

from celery import Celery
from celery.signals import worker_init, worker_process_init
from django.db import InterfaceError, OperationalError

from config import broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
broker.register()  # filesystem:// (the embedded default) writes each message atomically

app = Celery("sawtooth")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# A database moment (a restart, a lost connection) that a task's retry with backoff outlives;
# every app's tasks name it in autoretry_for.
TRANSIENT_DB_ERRORS = (OperationalError, InterfaceError)


def _ensure_filesystem_broker_folders() -> None:
    from pathlib import Path

    from django.conf import settings

    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get(key)
        if folder:
            Path(str(folder)).mkdir(parents=True, exist_ok=True)


@worker_init.connect
def _refuse_production_without_key(**kwargs: object) -> None:
    # Celery logs and ignores an Exception raised by a signal handler; SystemExit stops it.
    from django.core.exceptions import ImproperlyConfigured

    from config.secret import production_key_require

    try:
        production_key_require()
    except ImproperlyConfigured as exc:
        raise SystemExit(str(exc)) from None


@worker_init.connect
@worker_process_init.connect
def _liveness_enable(**kwargs: object) -> None:
    # worker_init runs in the main process: solo and thread pools run tasks there, and forked
    # pool children inherit it. worker_process_init runs in each pool child, forked or not.
    from compaction import liveness

    liveness.enable()


@worker_init.connect
def _analysis_slots_record(sender: object = None, **kwargs: object) -> None:
    # The worker's concurrency, which its pool's children inherit: with two slots or more one
    # project runs at most all but one (compaction/fair.py).
    from compaction import fair

    slots = getattr(sender, "concurrency", 0)
    fair.worker_slots_set(slots if isinstance(slots, int) else 0)


@app.on_configure.connect
def _on_configure(sender: Celery, **kwargs: object) -> None:
    _ensure_filesystem_broker_folders()
