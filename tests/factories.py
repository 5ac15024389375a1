"""Plain builders for tests: make_x(**overrides) returns a saved object."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.utils import timezone

from alerts import webhook_secrets
from alerts.models import Webhook
from compaction import liveness, pipeline
from compaction.models import SweepMark
from sessions import services
from sessions.models import AgentSession, Membership, Project, Role
from sessions.schemas import EventBatch
from tests.engine.builders import CONSTRAINT as CONSTRAINT  # re-exported for the DB tests
from tests.engine.builders import coding_session_messages as coding_session_messages

_counter = itertools.count(1)


def make_sweeps_steady() -> SweepMark:
    """As if the sweep for abandoned work had just run, and every few seconds for an hour
    before, the database up throughout: silence counts from the last beat alone."""
    mark, _ = SweepMark.objects.update_or_create(
        pk=liveness.SWEEP_MARK,
        defaults={
            "swept_at": timezone.now(),
            "reachable_since": timezone.now() - timedelta(hours=1),
        },
    )
    return mark


def make_project(**overrides: Any) -> Project:
    fields: dict[str, Any] = {"name": f"project-{next(_counter)}"}
    fields.update(overrides)
    return Project.objects.create(**fields)


def make_webhook(project: Project, *, secret: str = "s" * 20, **overrides: Any) -> Webhook:
    """A webhook stored as webhook_create stores one, without its destination check (for tests
    that never deliver)."""
    fields = {"url": "http://127.0.0.1:9/hook", **overrides}
    return Webhook.objects.create(
        project=project, secret_encrypted=webhook_secrets.secret_seal(secret), **fields
    )


def make_key(project: Project | None = None) -> str:
    return services.api_key_create(project=project or make_project()).raw_key


def make_user(
    *, project: Project | None = None, role: str = Role.ENGINEER, **overrides: Any
) -> AbstractUser:
    fields: dict[str, Any] = {"username": f"user-{next(_counter)}"}
    fields.update(overrides)
    user = get_user_model().objects.create_user(password="correct-horse-battery", **fields)
    if project is not None:
        Membership.objects.create(user=user, project=project, role=role)
    return user


def wire_message(seq: int, role: str = "user", content: Any = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"seq": seq, "role": role, "content": content or f"message {seq}"}
    message.update(extra)
    return message


def conversation(n: int, *, start: int = 0) -> list[dict[str, Any]]:
    """n messages alternating user/assistant, starting at seq `start`."""
    return [
        wire_message(seq, "user" if seq % 2 == 0 else "assistant")
        for seq in range(start, start + n)
    ]


def make_session(
    project: Project | None = None,
    *,
    external_id: str | None = None,
    messages: int | list[dict[str, Any]] = 4,
    **batch: Any,
) -> AgentSession:
    """Ingest a batch: `messages` is a count of plain messages or a list of wire messages."""
    body: dict[str, Any] = {
        "messages": conversation(messages) if isinstance(messages, int) else messages
    }
    body.update(batch)
    result = services.events_ingest(
        project=project or make_project(),
        external_id=external_id or f"session-{next(_counter)}",
        batch=EventBatch.model_validate(body),
    )
    return result.session


def make_searchable_session(project: Project | None = None, **kwargs: Any) -> AgentSession:
    """``make_session``, then analysed as the worker does after an upload: search reads the
    masked text the analysis pass writes (sessions/search.py)."""
    session = make_session(project, **kwargs)
    pipeline.session_analyse(session_id=session.pk)
    session.refresh_from_db()
    return session


def make_long_compacted_session(
    project: Project, *, summary: str, external_id: str | None = None, **batch: Any
) -> AgentSession:
    """A 30-turn coding session whose compaction at seq 100 replaced 4-95 with ``summary``,
    analysed: the span the page tests read. ``batch``: more of the batch (probes...)."""
    session = make_session(
        project,
        external_id=external_id,
        messages=coding_session_messages(turns=30, tool_chars=3000),
        compactions=[
            {
                "seq": 100,
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": 25_616,  # the context of the last call before it (#99)
                "tokens_after": 3_000,
                "summary": summary,
                "replaced": {"from_seq": 4, "to_seq": 95},
            }
        ],
        **batch,
    )
    pipeline.session_analyse(session_id=session.pk)
    return session


def make_billing_session(
    project: Project, *, error: str | None = None, **batch: Any
) -> AgentSession:
    """The 20-turn "billing-run" session with one compaction at seq 30 (replacing 2-25),
    analysed. ``error``: the compaction's reported error; ``batch``: more of the batch."""
    compaction: dict[str, Any] = {
        "seq": 30,
        "trigger": "auto",
        "strategy": "summarize",
        "tokens_before": 15_371,  # the context of the last call before it (#29)
        "tokens_after": 3_000,
        "summary": "Goal: migrate billing.",
        "replaced": {"from_seq": 2, "to_seq": 25},
    }
    if error is not None:
        compaction["error"] = error
    session = make_session(
        project,
        external_id="billing-run",
        messages=coding_session_messages(turns=20),
        compactions=[compaction],
        **batch,
    )
    pipeline.session_analyse(session_id=session.pk)
    return session


def make_reread_session(project: Project, *, external_id: str = "run-reread", prompt: str = ""):
    """A coding run of 8 turns compacted at seq 24 into a summary naming module_0 only; after
    the boundary the agent reads module_1 again (seq 29): a lost file needed again. ``prompt``
    replaces the first prompt."""
    messages = coding_session_messages(turns=8)
    if prompt:
        messages[0]["content"] = prompt
    messages[29]["content"][1]["input"] = {"path": "billing/module_1.py"}
    return make_session(
        project,
        external_id=external_id,
        messages=messages,
        compactions=[
            {
                "seq": 24,
                "trigger": "auto",
                "summary": "Goal: migrate billing to API v2. Files: billing/module_0.py",
                "replaced": {"from_seq": 0, "to_seq": 19},
            }
        ],
    )


PRICED_MODEL = "claude-sonnet-4-5-20250929"
PRICED_BEFORE, PRICED_AFTER = 40_000, 8_000
# (input, output, cache read, cache write, of which 1-hour) of the calls around the boundary
PRICED_LAST_BEFORE = (10, 20, PRICED_BEFORE - 10, 0, 0)  # #23: the context it fired at
PRICED_FIRST_AFTER = (10, 40, 3_000, 9_000, 6_000)  # #25: writes the new prefix (> AFTER)
PRICED_REREAD = (10, 40, 12_000, 500, 0)  # #29: reads billing/module_1.py again
PRICED_OTHER = (10, 20, 12_500, 0, 0)  # #27 and #31
PRICED_SUMMARY_CALL = (38_000, 1_200, 0, 0, 0)


def _priced_usage(counts: tuple[int, int, int, int, int]) -> dict[str, Any]:
    i, o, r, w, h = counts
    usage: dict[str, Any] = {
        "input_tokens": i,
        "output_tokens": o,
        "cache_read_input_tokens": r,
        "cache_creation_input_tokens": w,
    }
    if h:
        usage["cache_creation"] = {
            "ephemeral_5m_input_tokens": w - h,
            "ephemeral_1h_input_tokens": h,
        }
    return usage


def make_priced_session(project: Project, *, external_id: str = "priced") -> AgentSession:
    """make_reread_session's run (compacted at seq 24, module_1 read again at 29), every call
    of Sonnet, the calls around the boundary with the usage above, the call that wrote the
    summary logged; analysed. The price of its compaction is computed by hand in
    tests/compaction/test_compaction_price.py."""
    messages = coding_session_messages(turns=8)
    messages[29]["content"][1]["input"] = {"path": "billing/module_1.py"}
    for m in messages:
        m["timestamp"] = "2026-03-02T10:00:00Z"
        if m["role"] == "assistant":
            m["model"] = PRICED_MODEL
    for seq, counts in {
        23: PRICED_LAST_BEFORE,
        25: PRICED_FIRST_AFTER,
        27: PRICED_OTHER,
        29: PRICED_REREAD,
        31: PRICED_OTHER,
    }.items():
        messages[seq]["usage"] = _priced_usage(counts)
    call = {
        "usage": _priced_usage(PRICED_SUMMARY_CALL),
        "model": PRICED_MODEL,
        "finished_at": "2026-03-02T10:00:00Z",
    }
    session = make_session(
        project,
        external_id=external_id,
        session={"model": PRICED_MODEL},
        messages=messages,
        compactions=[
            {
                "seq": 24,
                "trigger": "auto",
                "tokens_before": PRICED_BEFORE,
                "tokens_after": PRICED_AFTER,
                "summary": "Goal: migrate billing to API v2. Files: billing/module_0.py",
                "replaced": {"from_seq": 0, "to_seq": 19},
                "kept": {"compaction_call": call},
            }
        ],
    )
    pipeline.session_analyse(session_id=session.pk)
    return session
