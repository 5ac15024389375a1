import json
from pathlib import Path
from typing import Any

from sessions.importers import otlp, reading
from sessions.importers.report import ImportReport
from sessions.management.commands._import_base import ImportCommand


class Command(ImportCommand):
    help = (
        "Import OpenTelemetry GenAI spans from files: OTLP/JSON exports, JSON lists of SDK "
        "span dumps, or flat attribute maps. Live exporters send to /v1/traces instead."
    )

    def handle(self, *args: Any, paths: list[str], project: str, **options: Any) -> None:
        found = self.project(project)
        report = ImportReport()
        for path in paths:
            try:
                data = json.loads(reading.trace_read(Path(path)))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                report.file(path, format=otlp.FORMAT).error = f"not readable JSON: {exc}"
                continue
            result = otlp.spans_ingest(
                project=found, spans=otlp.spans_from_file_data(data), source=path
            )
            report.files += result.report.files
            report.sessions.update(result.report.sessions)
        self.show(report, **options)
