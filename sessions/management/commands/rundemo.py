import os
import signal
import socket
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = "Serve the web app and run one Celery worker (with beat) beside it; Ctrl-C stops both."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")

    def handle(self, *args: Any, addrport: str, **options: Any) -> None:
        # Ctrl-C and `kill` both stop the pair; a shell that started us in the background may
        # have left SIGINT ignored, so the default handler is put back.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _interrupt)
        host, _, port = addrport.rpartition(":")
        with socket.socket() as probe:
            try:
                probe.bind((host or "127.0.0.1", int(port)))
            except OSError:
                raise CommandError(
                    f"{addrport} is already in use: stop the other server, or pick another "
                    f"port (make demo PORT={int(port) + 1})"
                ) from None
        schedule = settings.VAR_DIR / "celerybeat-schedule"
        # No -Q: the worker consumes every queue (analysis, replays, webhooks, sawtooth).
        # The worker gets its own process group: Ctrl-C reaches the web server only, and the
        # worker is then stopped here, warm first, so that no task is cut in half needlessly.
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--beat",
                "--loglevel",
                "INFO",
                "--concurrency",
                "1",
                "--schedule",
                str(schedule),
            ],
            start_new_session=True,
        )
        self.stdout.write(f"Sawtooth on http://{host or '127.0.0.1'}:{port}/ (Ctrl-C stops it)")
        try:
            call_command("runserver", addrport, use_reloader=False)
        except KeyboardInterrupt:
            pass
        finally:
            self.stdout.write("Stopping the worker…")
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
            self.stdout.write("Stopped.")
