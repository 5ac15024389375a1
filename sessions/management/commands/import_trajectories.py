from typing import Any

from sessions.importers import trajectories
from sessions.management.commands._import_base import ImportCommand


class Command(ImportCommand):
    help = (
        "Import OpenAI-style agent trajectories: SWE-agent .traj, mini-swe-agent .traj.json, "
        "OpenHands event lists and evaluation output (.jsonl, .jsonl.gz)."
    )

    def handle(self, *args: Any, paths: list[str], project: str, **options: Any) -> None:
        report = trajectories.trajectories_import(project=self.project(project), paths=paths)
        self.show(report, **options)
