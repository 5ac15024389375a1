"""The sizes of an observed compaction as every page and the API show them: the harness's or
the client's figures unless the analysis found they disagree with the session's own calls
(``compaction.engine.analysis.checked_before`` / ``checked_after``), then the computed ones
with their notes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from compaction.models import CompactionSpan
from sessions.models import CompactionEvent


@dataclass(frozen=True)
class ShownSize:
    """The context before (or after) a compaction as the span page shows it, where it comes
    from, and why the harness's figure was not used when it was not."""

    tokens: int | None
    source: Literal["sent", "reported", "computed"] | None
    note: str | None = None


def _shown(
    side: Literal["before", "after"], event: CompactionEvent, span: CompactionSpan | None
) -> ShownSize:
    field = f"tokens_{side}"
    details = span.details if span is not None and isinstance(span.details, dict) else {}
    measured: int | None = getattr(span, field) if span is not None else None
    if details.get(f"{field}_source") == "computed":
        note = details.get(f"{field}_note")
        return ShownSize(measured, "computed", note if isinstance(note, str) else None)
    given: int | None = getattr(event, field)
    if given is not None:
        return ShownSize(given, "sent" if event.source == "api" else "reported")
    if measured is not None:
        return ShownSize(measured, "computed")
    return ShownSize(None, None)


def compaction_tokens_before(event: CompactionEvent, span: CompactionSpan | None) -> ShownSize:
    """What the client sent (the ingest API) or an importer read from the trace, unless the
    analysis found it disagrees with the session's own calls (``checked_before``: then the
    computed size and its note); else what the analysis measured from the curve."""
    return _shown("before", event, span)


def compaction_tokens_after(event: CompactionEvent, span: CompactionSpan | None) -> ShownSize:
    """The same for the size after: the harness's or client's figure unless it fell far below
    the first call after (``checked_after``)."""
    return _shown("after", event, span)
