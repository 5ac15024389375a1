"""What the session list can be sorted and ranged by: shared by its form and its selector."""

from __future__ import annotations

from datetime import timedelta

# sort name in the URL -> field of AgentSession it orders by
SORTS: dict[str, str] = {
    "updated": "updated_at",
    "started": "started_at",
    "session": "external_id",
    "agent": "agent",
    "model": "model",
    "messages": "message_count",
    "compactions": "compaction_count",
    "peak": "analysis__peak_fill",
    "project": "project__name",
}

# relative time range in the URL (?period=7d) -> how far back "updated" reaches
PERIODS: dict[str, timedelta] = {
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}
PERIOD_LABELS: dict[str, str] = {"24h": "Last 24 h", "7d": "Last 7 days", "30d": "Last 30 days"}
