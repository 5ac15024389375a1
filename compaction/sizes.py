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
class TokensBefore:
    """The context before (or after) a compaction as the span page shows it, where it comes
    from, and why the harness's figure was not used when it was not."""

    tokens: int | None
    source: Literal["sent", "reported", "computed"] | None
    note: str | None = None


def compaction_tokens_before(event: CompactionEvent, span: CompactionSpan | None) -> TokensBefore:
    """What the client sent (the ingest API) or an importer read from the trace, unless the
    analysis found it disagrees with the session's own calls (then the computed size and its
    note); else what the analysis measured from the curve."""
    details = span.details if span is not None and isinstance(span.details, dict) else {}
    if span is not None and details.get("tokens_before_source") == "computed":
        note = details.get("tokens_before_note")
        return TokensBefore(span.tokens_before, "computed", note if isinstance(note, str) else None)
    if event.tokens_before is not None:
        return TokensBefore(event.tokens_before, "sent" if event.source == "api" else "reported")
    if span is not None and span.tokens_before is not None:
        return TokensBefore(span.tokens_before, "computed")
    return TokensBefore(None, None)


def compaction_tokens_after(event: CompactionEvent, span: CompactionSpan | None) -> TokensBefore:
    """The context after a compaction as the span page shows it: the harness's or client's
    figure unless it fell far below the first call after (then the computed size and its
    note, ``checked_after``); else what the analysis measured from the curve."""
    details = span.details if span is not None and isinstance(span.details, dict) else {}
    if span is not None and details.get("tokens_after_source") == "computed":
        note = details.get("tokens_after_note")
        return TokensBefore(span.tokens_after, "computed", note if isinstance(note, str) else None)
    if event.tokens_after is not None:
        return TokensBefore(event.tokens_after, "sent" if event.source == "api" else "reported")
    if span is not None and span.tokens_after is not None:
        return TokensBefore(span.tokens_after, "computed")
    return TokensBefore(None, None)
