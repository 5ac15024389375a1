"""Plain builders for tests: make_x(**overrides) returns a saved object."""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser

from sessions import services
from sessions.models import AgentSession, Membership, Project, Role
from sessions.schemas import EventBatch

_counter = itertools.count(1)


def make_project(**overrides: Any) -> Project:
    fields: dict[str, Any] = {"name": f"project-{next(_counter)}"}
    fields.update(overrides)
    return Project.objects.create(**fields)


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


CONSTRAINT = "Do not change the public API of the billing module."


def coding_session_messages(
    turns: int = 12, *, tool_chars: int = 6000, with_usage: bool = True, start_tokens: int = 4000
) -> list[dict[str, Any]]:
    """A small coding run in wire format: each turn is a prompt, a read_file call, its
    result and an answer. The third prompt (turn index 2) states CONSTRAINT."""
    messages: list[dict[str, Any]] = []
    context = start_tokens
    for turn in range(turns):
        seq = len(messages)
        prompt = "Migrate billing to API v2." if turn == 0 else f"Continue with step {turn}."
        if turn == 2:
            prompt = f"{CONSTRAINT} Keep going."
        body = f"# billing/module_{turn}.py\n" + ("def charge(amount):\n    return amount\n" * 200)
        body = body[:tool_chars]
        context += len(prompt) // 4 + 50
        call: dict[str, Any] = {
            "seq": seq + 1,
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Reading module {turn}."},
                {
                    "type": "tool_use",
                    "id": f"toolu_{turn:04d}",
                    "name": "read_file",
                    "input": {"path": f"billing/module_{turn}.py"},
                },
            ],
        }
        answer: dict[str, Any] = {
            "seq": seq + 3,
            "role": "assistant",
            "content": [{"type": "text", "text": f"Module {turn} reviewed."}],
        }
        if with_usage:
            call["usage"] = {
                "input_tokens": 10,
                "output_tokens": 40,
                "cache_read_input_tokens": context - 10,
            }
            context += 40 + len(body) // 4
            answer["usage"] = {
                "input_tokens": 10,
                "output_tokens": 20,
                "cache_read_input_tokens": context - 10,
            }
            context += 20
        messages += [
            {"seq": seq, "role": "user", "content": prompt},
            call,
            {
                "seq": seq + 2,
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{turn:04d}", "content": body}
                ],
            },
            answer,
        ]
    return messages
