"""What the session list can be sorted by: shared by its form and its selector."""

from __future__ import annotations

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
