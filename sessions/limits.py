"""Every size limit of what the product stores, in one place.

The wire schemas (``sessions/schemas.py``, ``compaction/schemas.py``), the OTLP and import
doors, the forms, the services and the models all read these constants, so what a door
accepts is exactly what a column holds: a value at its limit is stored and analysed, one past
it is refused with the field named, never stored and then failing, never cut.
``tests/hostile/test_limits.py`` walks every entry of ``TEXT_LIMITS`` at its limit and one
past it, so a new limit joins that test by being listed here.

Plain constants, no Django: the engine-free modules may read them too.
"""

from __future__ import annotations

# --- integers: what PostgreSQL's ``integer`` holds, with room for sums -----------------
# A count of tokens above the largest context window accepted is refused with the field
# named, so the analysis, which adds a call's input, cache read and cache write, never
# overflows either.
SEQ_MAX = 2_000_000_000
TOKENS_MAX = 100_000_000
DURATION_MS_MAX = 2_147_483_647
# the OFFSET sent to PostgreSQL (a bigint) never overflows
OFFSET_MAX = 1_000_000_000
# a row's id as a filter takes it: beyond it no row exists (SQLite refuses to compare past 2**63)
ROW_ID_MAX = 2**63 - 1

# --- a session and its trace -----------------------------------------------------------
EXTERNAL_ID_MAX = 200  # the client's handle of a session, a conversation id, a sessionId
AGENT_MAX = 200
SESSION_MODEL_MAX = 200
TITLE_MAX = 200  # a session's title, derived (compaction.engine.titles clips it shorter)
MESSAGE_MODEL_MAX = 100  # the model of one response, when not the session's
STRATEGY_MAX = 50  # an observed compaction's strategy; its span's stage holds as much
PROBE_TEXT_MAX = 10_000
PROBE_CHECK_MAX = 10_000

# --- projects, keys, people's words -----------------------------------------------------
PROJECT_NAME_MAX = 100
API_KEY_NAME_MAX = 100
DELETE_REASON_MAX = 500
SEARCH_QUERY_MAX = 200
EXPERIMENT_NAME_MAX = 200
RESOLVE_REASON_MAX = 2000  # an alert's resolution
ALERT_COMMENT_MAX = 4000  # a comment in an alert's history
COMMENT_MAX = 5000  # a comment on a session or a compaction
FILTER_NAME_MAX = 80  # a saved list filter
FEEDBACK_NOTE_MAX = 2000  # the note beside a right / wrong mark on a verdict
REVEAL_REASON_MAX = 2000  # why a privacy reviewer revealed a value (kept in the audit log)
REDACT_REASON_MAX = 2000  # why a finding was redacted
SUBJECT_IDENTIFIER_MAX = 200
SUBJECT_REASON_MAX = 500

# Every text limit, by the field a refusal names: what the limits test walks.
TEXT_LIMITS: dict[str, int] = {
    "external_id": EXTERNAL_ID_MAX,
    "session.agent": AGENT_MAX,
    "session.model": SESSION_MODEL_MAX,
    "messages[0].model": MESSAGE_MODEL_MAX,
    "compactions[0].strategy": STRATEGY_MAX,
    "probes[0].text": PROBE_TEXT_MAX,
    "probes[0].check": PROBE_CHECK_MAX,
    "project.name": PROJECT_NAME_MAX,
    "key.name": API_KEY_NAME_MAX,
    "delete.reason": DELETE_REASON_MAX,
    "search.q": SEARCH_QUERY_MAX,
    "experiment.name": EXPERIMENT_NAME_MAX,
    "alert.resolve.reason": RESOLVE_REASON_MAX,
    "alert.comment": ALERT_COMMENT_MAX,
    "comment.body": COMMENT_MAX,
    "filter.name": FILTER_NAME_MAX,
    "feedback.note": FEEDBACK_NOTE_MAX,
    "reveal.reason": REVEAL_REASON_MAX,
    "redact.reason": REDACT_REASON_MAX,
    "subject.identifier": SUBJECT_IDENTIFIER_MAX,
    "subject.reason": SUBJECT_REASON_MAX,
}


def text_check(value: str, *, limit: int, field: str) -> str:
    """``value`` when it holds at most ``limit`` characters; else a 400 naming ``field``.

    >>> text_check("resolved", limit=10, field="reason")
    'resolved'
    """
    # Imported here so this module stays a list of numbers that anything may import.
    from sessions.errors import BadRequest

    if len(value) > limit:
        raise BadRequest(f"{field}: {len(value)} characters, the limit is {limit}")
    return value
