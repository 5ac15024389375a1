"""Deleting sessions and everything derived from them, many at a time, in set-based SQL.

Django's own cascade loads every row it deletes when that row has dependents (each message,
for its findings and subject-index rows), one session after another: a retention purge of a
day of sessions took a minute. Here the cascade is worked out once from the models (every
model a session's delete reaches, each with the foreign-key paths that tie its rows to a
session) and carried out as one DELETE per model and path for a whole batch, children first,
inside the caller's transaction. Its result is the cascade Django's ``delete()`` makes: the
same rows deleted, ``SET_NULL`` references cleared, and the count per model in the same form.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import cache
from graphlib import TopologicalSorter

from django.db import models
from django.db.models import Q

from sessions.models import AgentSession


@dataclass(frozen=True)
class _Step:
    model: type[models.Model]
    # Lookups from this model to a session's id: a row reached by any of them is deleted.
    paths: tuple[str, ...]
    # (model, field) pairs whose reference to a deleted row is set to NULL first.
    nulls: tuple[tuple[type[models.Model], str], ...]


def _reverse_relations(model: type[models.Model]) -> list[models.ForeignObjectRel]:
    return [
        f
        for f in model._meta.get_fields(include_hidden=True)
        if isinstance(f, models.ForeignObjectRel) and (f.one_to_many or f.one_to_one)
    ]


@cache
def _plan() -> tuple[_Step, ...]:
    """Every model below a session, each before the models it refers to, the session last.
    A session's own children (``parent``) are found before the plan runs, so the
    self-reference is left out here."""
    paths: dict[type[models.Model], list[str]] = {AgentSession: ["pk"]}
    referrers: dict[type[models.Model], set[type[models.Model]]] = {AgentSession: set()}

    def visit(model: type[models.Model], trail: tuple[type[models.Model], ...]) -> None:
        for rel in _reverse_relations(model):
            child = rel.related_model
            assert isinstance(child, type)
            if rel.on_delete is not models.CASCADE or child is AgentSession:
                continue
            if child in trail:
                raise ValueError(f"cascade cycle through {child._meta.label}")
            referrers[model].add(child)
            referrers.setdefault(child, set())
            found = paths.setdefault(child, [])
            for parent_path in paths[model]:
                path = rel.field.name if parent_path == "pk" else f"{rel.field.name}__{parent_path}"
                if path not in found:
                    found.append(path)
            visit(child, (*trail, child))

    visit(AgentSession, (AgentSession,))
    steps = []
    # A model's referrers are its predecessors: their rows go first.
    for model in TopologicalSorter(referrers).static_order():
        nulls = tuple(
            (rel.related_model, rel.field.name)
            for rel in _reverse_relations(model)
            if rel.on_delete is models.SET_NULL and isinstance(rel.related_model, type)
        )
        # The direct path first: it takes nearly every row, the joins after it find what is left.
        ordered = tuple(sorted(paths[model], key=lambda path: path.count("__")))
        steps.append(_Step(model=model, paths=ordered, nulls=nulls))
    return tuple(steps)


def with_descendants(session_ids: Collection[int]) -> list[int]:
    """The sessions and, level by level, the subagent sessions under them (``parent`` cascades)."""
    found = set(session_ids)
    level = set(session_ids)
    while level:
        level = set(
            AgentSession.objects.filter(parent_id__in=level)
            .exclude(pk__in=found)
            .values_list("pk", flat=True)
        )
        found |= level
    return sorted(found)


def sessions_erase(session_ids: Collection[int]) -> dict[str, int]:
    """Delete the sessions, their subagent sessions and every row derived from them; returns
    rows deleted per model (``app.Model`` labels, as ``QuerySet.delete()`` counts them). The
    caller holds the transaction."""
    ids = with_descendants(session_ids)
    rows: dict[str, int] = {}
    if not ids:
        return rows
    for step in _plan():
        for path in step.paths:
            doomed = step.model._default_manager.filter(**{f"{path}__in": ids})
            for referrer, field in step.nulls:
                referrer._default_manager.filter(Q(**{f"{field}__in": doomed.values("pk")})).update(
                    **{field: None}
                )
            # The set-based DELETE Django's own collector uses for rows with no dependents left.
            count = doomed._raw_delete(doomed.db)
            if count:
                label = step.model._meta.label
                rows[label] = rows.get(label, 0) + count
    return rows
