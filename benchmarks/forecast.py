"""Forecast accuracy: how many calls off the next-compaction forecast was, 10 calls (or as many
as the climb had) before each real compaction of the Claude Code sessions in
benchmarks/data/realtraces.

Imports every transcript into a scratch SQLite database (one project, as a team would have
them), analyses it, and reads the product's own past-forecast checks
(``compaction.forecasts.session_forecast``): each compaction's forecast aimed at what was known
before it (basis ``observed``: where that session, else this agent in the project, compacted
before; else the harness default). For comparison it also scores the forecast aimed at the
harness default alone. Prints one line per compaction and a final JSON line, e.g.
{"compactions": 12, "median_error_calls": 3.0, "median_error_calls_harness_default": 7.5}.

    .venv/bin/python benchmarks/forecast.py [--transcripts manifest|unused|all]

The default is the manifest's transcripts (the ones the forecast was built with); ``unused``
takes the ones added later, for the verdicts, which it never saw (benchmarks/money.py's lists).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from statistics import median

from _scratch import django_on_scratch_sqlite
from money import transcripts

ROOT = Path(__file__).resolve().parent.parent
REALTRACES = ROOT / "benchmarks/data/realtraces"


def main() -> None:
    which = "manifest"
    if "--transcripts" in sys.argv:
        which = sys.argv[sys.argv.index("--transcripts") + 1]
    if which not in ("all", "manifest", "unused"):
        sys.exit("--transcripts takes manifest, unused or all")
    django_on_scratch_sqlite("sawtooth-forecast-")
    from compaction import forecasts, pipeline, selectors
    from compaction.engine import forecast as engine
    from sessions.importers import claude_code
    from sessions.models import AgentSession, CompactionEvent, Project

    paths = transcripts(which)
    project = Project.objects.create(name="forecast")
    claude_code.claude_code_import(project=project, paths=paths)
    sessions = list(AgentSession.objects.filter(project=project).order_by("pk"))
    for session in sessions:
        pipeline.session_analyse(session_id=session.pk)
    errors: list[int] = []
    default_errors: list[int] = []
    unforecast = 0
    for session in sessions:
        if not CompactionEvent.objects.filter(session=session).exists():
            continue
        analysis = selectors.analysis_for(session)
        found = forecasts.session_forecast(session, analysis)
        points = [
            engine.ForecastPoint(p["seq"], p["context_tokens"])
            for p in selectors.analysis_curve(analysis)
        ]
        seqs = list(CompactionEvent.objects.filter(session=session).values_list("seq", flat=True))
        default = engine.threshold_for(
            metadata=None, agent=session.agent or "claude-code", window=200_000
        )
        baseline = {
            c.seq: c
            for c in engine.forecast_checks(points, threshold=default, compaction_seqs=seqs)
        }
        for check in found.checks:
            other = baseline.get(check.seq)
            if check.predicted_calls is None:
                unforecast += 1
            else:
                errors.append(abs(check.predicted_calls - check.actual_calls))
            if other is not None and other.predicted_calls is not None:
                default_errors.append(abs(other.predicted_calls - other.actual_calls))
            print(
                f"{session.external_id[:40]} #{check.seq}: predicted {check.predicted_calls}, "
                f"actual {check.actual_calls}; harness default alone "
                f"{other.predicted_calls if other else None}",
                file=sys.stderr,
            )
    print(
        json.dumps(
            {
                "compactions": len(errors) + unforecast,
                "compactions_without_forecast": unforecast,
                "median_error_calls": float(median(errors)) if errors else None,
                "median_error_calls_harness_default": (
                    float(median(default_errors)) if default_errors else None
                ),
                "project_median_error_calls_shown": forecasts.session_forecast(
                    sessions[0], selectors.analysis_for(sessions[0])
                ).project_median_error_calls,
            }
        )
    )


if __name__ == "__main__":
    main()
