"""The cost of a compaction: Claude Code's summary call (``agent-acompact-*``) on
``/compactions``, in billed tokens, on the span page; matched by uuid or, without uuids, by time.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from compaction import pipeline, selectors
from compaction import services as compaction_services
from compaction.models import CompactionSpan
from sessions.importers.claude_code import claude_code_import
from sessions.models import AgentSession, CompactionEvent, Project
from tests.factories import (
    coding_session_messages,
    make_key,
    make_project,
    make_session,
    make_user,
)
from tests.importers.corpus import AUTO, MANUAL, SPOTTER, context, read_lines, records

pytestmark = pytest.mark.django_db


def _call_file(transcript: Path) -> Path:
    (found,) = (SPOTTER / transcript.name.removesuffix(".jsonl.gz") / "subagents").glob(
        "agent-acompact-*.jsonl"
    )
    return found


def _stamp(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _expected(transcript: Path) -> dict[str, Any]:
    """The summary call's figures, read straight from its file."""
    recs = records(_call_file(transcript))
    prompt = [r for r in recs if r["type"] == "user" and not r.get("isMeta")][-1]
    reply = [r for r in recs if r["type"] == "assistant"][-1]
    usage = reply["message"]["usage"]
    took = _stamp(reply["timestamp"]) - _stamp(prompt["timestamp"])
    return {
        "context_tokens": context(usage),
        "output_tokens": usage["output_tokens"],
        "duration_ms": round(took.total_seconds() * 1000),
    }


def _compactions(project: Project, external_id: str) -> list[dict[str, Any]]:
    client = Client()
    response = client.get(
        f"/api/v1/sessions/{external_id}/compactions",
        headers={"Authorization": f"Bearer {make_key(project)}"},
    )
    assert response.status_code == 200, response.content
    return list(response.json())


def _session_id(transcript: Path) -> str:
    return str(next(r["sessionId"] for r in records(transcript) if "sessionId" in r))


@pytest.mark.parametrize("path", [AUTO, MANUAL], ids=["auto", "manual"])
def test_compactions_carry_the_call_that_wrote_the_summary(path: Path) -> None:
    project = make_project()
    claude_code_import(project=project, paths=[path])

    (item,) = _compactions(project, _session_id(path))

    assert item["compaction_call"] == _expected(path)
    assert CompactionEvent.objects.get().kept["compaction_call"]["matched_by"] == "uuid"


@pytest.mark.parametrize("path", [AUTO, MANUAL], ids=["auto", "manual"])
def test_an_output_count_too_low_for_the_summary_is_called_out(path: Path) -> None:
    # Claude Code logged 6 and 8 output tokens for summaries of ~15,000 characters.
    project = make_project()
    claude_code_import(project=project, paths=[path])
    (item,) = _compactions(project, _session_id(path))

    assert item["compaction_call"]["output_tokens"] < len(item["summary"]) / 100
    note = item["compaction_call_note"]
    assert note.startswith("Logged output tokens are too low")
    assert f"{len(item['summary']):,} characters" in note


def test_compactions_of_a_trace_without_a_summary_call_say_null(tmp_path: Path) -> None:
    lone = Path(shutil.copy(AUTO, tmp_path / AUTO.name))  # without its subagents folder
    project = make_project()
    claude_code_import(project=project, paths=[lone])
    (item,) = _compactions(project, _session_id(AUTO))
    assert item["compaction_call"] is None
    assert item["compaction_call_note"] is None


def _unlinked_copy(tmp_path: Path, transcript: Path, *, call_shift: timedelta) -> Path:
    """The transcript and its summary call with the linking uuids gone (the boundary has no
    logicalParentUuid; the call's prompt points at a record absent from the transcript), and
    the call moved in time by ``call_shift``."""
    stem = transcript.name.removesuffix(".jsonl.gz")
    lines = []
    for line in read_lines(transcript):
        r = json.loads(line)
        if r.get("subtype") == "compact_boundary":
            r.pop("logicalParentUuid", None)
        lines.append(json.dumps(r) + "\n")
    target = tmp_path / f"{stem}.jsonl"
    target.write_text("".join(lines))
    subagents = tmp_path / stem / "subagents"
    subagents.mkdir(parents=True)
    call = _call_file(transcript)
    moved = []
    for r in records(call):
        if r["type"] == "user" and not r.get("isMeta"):
            r["parentUuid"] = "00000000-0000-0000-0000-000000000000"
        stamp = _stamp(r["timestamp"]) + call_shift
        r["timestamp"] = stamp.isoformat().replace("+00:00", "Z")
        moved.append(json.dumps(r) + "\n")
    (subagents / call.name).write_text("".join(moved))
    return target


def test_without_the_linking_uuids_the_call_just_before_the_boundary_is_matched(
    tmp_path: Path,
) -> None:
    # As on a real session: no uuid links them, the call ends 0.4 s before the boundary.
    path = _unlinked_copy(tmp_path, MANUAL, call_shift=timedelta(0))
    boundary = next(r for r in records(path) if r.get("subtype") == "compact_boundary")
    reply = [r for r in records(_call_file(MANUAL)) if r["type"] == "assistant"][-1]
    gap = _stamp(boundary["timestamp"]) - _stamp(reply["timestamp"])
    assert timedelta(0) < gap < timedelta(seconds=1)
    project = make_project()
    claude_code_import(project=project, paths=[path])

    (item,) = _compactions(project, _session_id(MANUAL))

    assert item["compaction_call"] == _expected(MANUAL)
    assert CompactionEvent.objects.get().kept["compaction_call"]["matched_by"] == "time"


def test_a_call_long_before_the_boundary_is_not_matched_by_time(tmp_path: Path) -> None:
    path = _unlinked_copy(tmp_path, MANUAL, call_shift=timedelta(minutes=-10))
    project = make_project()
    claude_code_import(project=project, paths=[path])
    (item,) = _compactions(project, _session_id(MANUAL))
    assert item["compaction_call"] is None


def test_billed_tokens_count_the_summary_call_and_the_context_series_does_not(
    client: Client,
) -> None:
    project = make_project()
    claude_code_import(project=project, paths=[AUTO])
    session = AgentSession.objects.get(project=project, parent__isnull=True)
    pipeline.session_analyse(session_id=session.pk)
    summary = _expected(AUTO)

    curve = client.get(
        f"/api/v1/sessions/{session.external_id}/curve",
        headers={"Authorization": f"Bearer {make_key(project)}"},
    ).json()

    calls = sum(p["billed_tokens"] for p in curve["points"])
    summary_billed = summary["context_tokens"] + summary["output_tokens"]
    assert curve["compaction_calls_billed_tokens"] == summary_billed
    assert curve["billed_tokens_total"] == calls + summary_billed
    main_calls = {
        r["message"]["id"]
        for r in records(AUTO)
        if r.get("type") == "assistant" and not r.get("isSidechain")
    }
    assert len(curve["points"]) == len(main_calls)  # no point for the summary call
    assert summary["context_tokens"] not in [p["context_tokens"] for p in curve["points"]]

    client.force_login(make_user(project=project))
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert f"{calls + summary_billed:,}" in page
    assert f"incl. {summary_billed:,} writing summaries" in page


def test_the_span_page_shows_the_summary_call_and_its_doubtful_output(client: Client) -> None:
    project = make_project()
    claude_code_import(project=project, paths=[MANUAL])
    session = AgentSession.objects.get(project=project, parent__isnull=True)
    pipeline.session_analyse(session_id=session.pk)
    span = CompactionSpan.objects.get(session=session, origin="observed")
    summary = _expected(MANUAL)
    client.force_login(make_user(project=project))

    page = client.get(span.get_absolute_url()).content.decode()

    seconds = f"{summary['duration_ms'] / 1000:.1f}"
    assert (
        f"Summary call: {summary['context_tokens']:,} context tokens, "
        f"{summary['output_tokens']:,} output tokens, {seconds} s"
    ) in page
    assert "Logged output tokens are too low" in page


def test_the_replay_comparison_counts_the_observed_summary_call(client: Client) -> None:
    project = make_project()
    claude_code_import(project=project, paths=[MANUAL])
    session = AgentSession.objects.get(project=project, parent__isnull=True)
    pipeline.session_analyse(session_id=session.pk)
    run = compaction_services.replay_run_start(session=session, policy={})
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    summary = _expected(MANUAL)
    client.force_login(make_user(project=project))

    rows = {row["label"]: row for row in client.get(f"/replays/{run.pk}/").context["comparison"]}

    calls_billed = run.evals["observed"]["billed_tokens"]
    summary_billed = summary["context_tokens"] + summary["output_tokens"]
    assert rows["Billed tokens"]["observed"] == calls_billed + summary_billed
    assert rows["Summarizer cost (input tokens)"]["observed"] == summary["context_tokens"]


def _price(model: str) -> dict[str, float]:
    from django.conf import settings

    from compaction.engine import pricing

    found = pricing.price_for(model, pricing.price_table(settings.MODEL_PRICES))
    assert found is not None, model
    return {
        "input": found.input,
        "output": found.output,
        "cache_read": found.cache_read,
        "cache_write": found.cache_write,
    }


def _usd(usage: dict[str, Any], price: dict[str, float]) -> float:
    return (
        usage["input_tokens"] * price["input"]
        + usage["output_tokens"] * price["output"]
        + usage.get("cache_read_input_tokens", 0) * price["cache_read"]
        + usage.get("cache_creation_input_tokens", 0) * price["cache_write"]
    ) / 1e6


def test_the_session_and_span_pages_show_the_cost_in_money(client: Client) -> None:
    project = make_project()
    claude_code_import(project=project, paths=[MANUAL])
    session = AgentSession.objects.get(project=project, parent__isnull=True)
    pipeline.session_analyse(session_id=session.pk)
    assert session.model == "claude-opus-4-6"
    # Priced by hand from the transcript: each response (its last line's usage) at the model
    # that wrote it, and the summary call at its own.
    last: dict[str, tuple[str, dict[str, Any]]] = {}
    for r in records(MANUAL):
        main = r.get("type") == "assistant" and not r.get("isSidechain")
        if main and r["message"].get("model") != "<synthetic>":
            last[r["message"]["id"]] = (r["message"]["model"], r["message"]["usage"])
    by_model: dict[str, float] = {}
    calls: dict[str, int] = {}
    for model, usage in last.values():
        by_model[model] = by_model.get(model, 0.0) + _usd(usage, _price(model))
        calls[model] = calls.get(model, 0) + 1
    reply = [r for r in records(_call_file(MANUAL)) if r["type"] == "assistant"][-1]
    summary_usd = _usd(reply["message"]["usage"], _price(reply["message"]["model"]))
    by_model[reply["message"]["model"]] += summary_usd
    expected = sum(by_model.values())
    assert len(by_model) == 2, "the session calls two models"
    client.force_login(make_user(project=project))

    page = client.get(f"/sessions/{session.pk}/").content.decode()
    span = CompactionSpan.objects.get(session=session, origin="observed")
    span_page = client.get(span.get_absolute_url()).content.decode()

    assert f'<dd class="cost">${expected:.2f} <span class="muted">' in page
    for model, usd in by_model.items():
        shown = calls[model] + (reply["message"]["model"] == model)
        assert f"{shown} calls of {model} ${usd:.2f}" in page
    assert f"compaction ${summary_usd:.2f} of it" in page
    seconds = _expected(MANUAL)["duration_ms"] / 1000
    assert f"output tokens, {seconds:.1f} s, ${summary_usd:.2f}" in span_page


def test_a_model_without_a_price_has_no_cost_and_says_why(client: Client, settings) -> None:
    settings.MODEL_PRICES = {}
    project = make_project()
    claude_code_import(project=project, paths=[MANUAL])
    session = AgentSession.objects.get(project=project, parent__isnull=True)
    client.force_login(make_user(project=project))
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    reason = page[page.index("(no price for ") :].split(" in MODEL_PRICES)")[0]
    assert "&#x27;claude-opus-4-6&#x27;" in reason
    assert "&#x27;claude-haiku-4-5-20251001&#x27;" in reason


def test_a_summary_call_imported_after_its_transcript_is_recorded_then(tmp_path: Path) -> None:
    lone = Path(shutil.copy(AUTO, tmp_path / AUTO.name))
    project = make_project()
    claude_code_import(project=project, paths=[lone])
    session_id = _session_id(AUTO)
    assert _compactions(project, session_id)[0]["compaction_call"] is None
    subagents = tmp_path / AUTO.name.removesuffix(".jsonl.gz") / "subagents"
    subagents.mkdir(parents=True)
    shutil.copy(_call_file(AUTO), subagents)

    again = claude_code_import(project=project, paths=[lone])

    (item,) = _compactions(project, session_id)
    assert item["compaction_call"] == _expected(AUTO)
    report = again.sessions[session_id]
    assert report.kept_stored == []
    assert report.messages == 0
    (note,) = report.replaced
    assert "gains the summary call" in note
    assert AgentSession.objects.get(project=project, external_id=session_id).compaction_count == 1


def test_calls_without_usage_are_left_out_of_the_cost_and_said_so() -> None:
    messages = coding_session_messages(turns=3)
    calls = [m for m in messages if m["role"] == "assistant"]
    del calls[-1]["usage"]
    session = make_session(
        make_project(), messages=messages, session={"model": "claude-sonnet-4-5-20250929"}
    )

    cost = selectors.session_cost(session)

    counted = [c["usage"] for c in calls[:-1]]
    expected = (
        sum(
            u["input_tokens"] * 3 + u["output_tokens"] * 15 + u["cache_read_input_tokens"] * 0.3
            for u in counted
        )
        / 1e6
    )
    assert cost.usd == pytest.approx(expected)
    [(model, priced)] = [(m.model, m.calls) for m in cost.breakdown.by_model]
    assert (model, priced) == ("claude-sonnet-4-5-20250929", len(counted))
    assert cost.calls_without_usage == 1


def test_a_subagents_own_summary_call_is_the_subagents_cost(tmp_path: Path) -> None:
    """A subagent that compacted: its summary call (beside the session's transcript, like every
    agent-acompact file) belongs to the subagent, and the session's with-subagents cost has it."""
    everything = records(AUTO)
    session_id = _session_id(AUTO)
    messages = [r for r in everything if r.get("type") in ("user", "assistant")]
    # the main session: its first few messages, no compaction of its own
    (tmp_path / "main.jsonl").write_text("".join(json.dumps(r) + "\n" for r in messages[:6]))
    subagents = tmp_path / "main" / "subagents"
    subagents.mkdir(parents=True)
    # the subagent: the whole compacting run, as a sidechain of that session
    lines = [json.dumps({**r, "isSidechain": True, "agentId": "sub1"}) + "\n" for r in everything]
    (subagents / "agent-sub1.jsonl").write_text("".join(lines))
    shutil.copy(_call_file(AUTO), subagents)

    project = make_project()
    claude_code_import(project=project, paths=[tmp_path / "main.jsonl"])
    main = AgentSession.objects.get(project=project, external_id=session_id)
    sub = AgentSession.objects.get(project=project, parent=main)
    event = CompactionEvent.objects.get(session=sub)
    assert event.kept["compaction_call"]["matched_by"] == "uuid"
    assert not CompactionEvent.objects.filter(session=main).exists()
    call_usd = selectors.summary_call_cost(event).usd
    assert call_usd is not None
    assert call_usd > 0
    costs = selectors.session_costs([main, sub])
    assert costs[sub.pk].breakdown.compaction_usd == pytest.approx(call_usd, abs=1e-6)
    assert costs[main.pk].with_subagents_usd == pytest.approx(
        (costs[main.pk].usd or 0) + (costs[sub.pk].usd or 0), abs=1e-6
    )


def test_the_main_session_never_takes_a_subagents_summary_call_by_time(tmp_path: Path) -> None:
    """The main session compacts too, its boundary linked to no call and stamped seconds after
    a subagent's summary call finished. That call summarised the subagent (its prompt follows
    the subagent's last record), so the main session, imported first, does not take it by
    time: the subagent keeps its own call, and the main compaction has none."""
    everything = records(AUTO)
    session_id = _session_id(AUTO)
    messages = [r for r in everything if r.get("type") in ("user", "assistant")][:6]
    index = next(i for i, r in enumerate(everything) if r.get("subtype") == "compact_boundary")
    boundary, summary = dict(everything[index]), dict(everything[index + 1])
    finished = [r for r in records(_call_file(AUTO)) if r["type"] == "assistant"][-1]
    stamp = (_stamp(finished["timestamp"]) + timedelta(seconds=5)).isoformat()
    boundary.update(
        uuid="11111111-1111-1111-1111-111111111111",
        logicalParentUuid=messages[-1]["uuid"],
        timestamp=stamp.replace("+00:00", "Z"),
    )
    summary.update(parentUuid=boundary["uuid"], uuid="22222222-2222-2222-2222-222222222222")
    main_lines = [*messages, boundary, summary]
    (tmp_path / "main.jsonl").write_text("".join(json.dumps(r) + "\n" for r in main_lines))
    subagents = tmp_path / "main" / "subagents"
    subagents.mkdir(parents=True)
    lines = [json.dumps({**r, "isSidechain": True, "agentId": "sub1"}) + "\n" for r in everything]
    (subagents / "agent-sub1.jsonl").write_text("".join(lines))
    shutil.copy(_call_file(AUTO), subagents)

    project = make_project()
    claude_code_import(project=project, paths=[tmp_path / "main.jsonl"])

    main = AgentSession.objects.get(project=project, external_id=session_id)
    sub = AgentSession.objects.get(project=project, parent=main)
    assert "compaction_call" not in CompactionEvent.objects.get(session=main).kept
    own = CompactionEvent.objects.get(session=sub).kept["compaction_call"]
    assert own["matched_by"] == "uuid"
