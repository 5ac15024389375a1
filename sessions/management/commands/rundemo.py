import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.management.commands import runserver


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


class _Server(runserver.Command):
    """Django's development server, with our lines for its banner: printed once the port is
    bound, so the login is the last thing the terminal shows before the request log."""

    banner: list[str] = []

    def on_bind(self, server_port: int) -> None:
        for line in self.banner:
            self.stdout.write(line)


def _worker(name: str, queues: list[str], log: Any, *extra: str) -> subprocess.Popen[bytes]:
    """One Celery worker process (a single slot) on ``queues``, in a process group of its own,
    writing to ``log``."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--hostname",
            f"{name}@%h",
            "--queues",
            ",".join(queues),
            "--loglevel",
            "INFO",
            "--concurrency",
            "1",
            *extra,
        ],
        start_new_session=True,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


class Command(BaseCommand):
    help = (
        "Serve the web app and run two Celery workers beside it (analyses and replays, with "
        "beat; webhooks and e-mail); Ctrl-C stops them all."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument(
            "--login", default="", help="A line printed last, once serving (make demo: the login)."
        )

    def handle(self, *args: Any, addrport: str, login: str, **options: Any) -> None:
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
        # Two workers, each in a process group of its own: Ctrl-C reaches the web server only,
        # and the workers are then stopped here, warm first, so no task is cut in half
        # needlessly. Webhooks and e-mail have a worker of their own, so a receiver that hangs
        # holds its slot, never the one analyses and replays use.
        analysis_queues = [
            settings.CELERY_ANALYSIS_QUEUE,
            settings.CELERY_REPLAYS_QUEUE,
            settings.CELERY_TASK_DEFAULT_QUEUE,
        ]
        worker_log_path = settings.VAR_DIR / "demo-workers.log"
        url = f"http://{host or '127.0.0.1'}:{port}/"
        server = _Server()
        server.banner = [
            f"Sawtooth on {url} with two workers (their log: {_shown(worker_log_path)}); "
            "Ctrl-C stops all three.",
            f"A login for a colleague: .venv/bin/python manage.py adduser NAME --url {url}",
            *([login] if login else []),
        ]
        with open(worker_log_path, "ab") as worker_log:
            workers = [
                _worker("work", analysis_queues, worker_log, "--beat", "--schedule", str(schedule)),
                _worker(
                    "announce",
                    [settings.CELERY_WEBHOOKS_QUEUE, settings.CELERY_IMPORTS_QUEUE],
                    worker_log,
                ),
            ]
            try:
                call_command(server, addrport, use_reloader=False, skip_checks=True)
            except KeyboardInterrupt:
                pass
            finally:
                self.stdout.write("Stopping the workers…")
                for worker in workers:
                    os.killpg(worker.pid, signal.SIGTERM)
                for worker in workers:
                    try:
                        worker.wait(timeout=15)
                    except subprocess.TimeoutExpired:
                        os.killpg(worker.pid, signal.SIGKILL)
                        worker.wait()
                self.stdout.write("Stopped.")


def _shown(path: Path) -> str:
    """A path as the person who typed `make demo` in the repository would type it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
