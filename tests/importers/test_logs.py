"""Anthropic request/response logs, OpenAI-style trajectories, and the whole corpus."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from compaction import pipeline
from compaction import services as compaction_services
from compaction.engine.messages import check_pairs
from sessions.importers import otlp
from sessions.importers.anthropic_logs import anthropic_logs_import
from sessions.importers.claude_code import claude_code_import
from sessions.importers.report import ImportReport
from sessions.importers.trajectories import trajectories_import
from sessions.models import AgentSession, CompactionEvent, Message
from tests.factories import make_key, make_project
from tests.importers.corpus import CORPUS

pytestmark = pytest.mark.django_db

SDK = CORPUS / "anthropic_messages_api" / "anthropic-sdk-python"
TRAJ = CORPUS / "agent_trajectories"


def messages_of(external_id: str) -> list[Message]:
    return list(Message.objects.filter(session__external_id=external_id).order_by("seq"))


def test_a_tool_loop_log_stores_the_history_once_with_each_calls_usage() -> None:
    path = SDK / "10e53c1d-51be-4c64-b5bf-99adb3fa4719.json"
    exchanges = json.loads(path.read_text())
    report = anthropic_logs_import(project=make_project(), paths=[path])
    stored = messages_of(path.stem)
    last_request = exchanges[-1]["request"]["body"]["messages"]
    assert report.messages == len(last_request) + 1
    assert [m.role for m in stored] == [m["role"] for m in last_request] + ["assistant"]
    result = stored[2].content[0]
    assert result["type"] == "tool_result"
    assert result["is_error"] is True
    for exchange, answer in zip(exchanges, [stored[1], stored[-1]], strict=True):
        usage = exchange["response"]["body"]["usage"]
        assert answer.input_tokens == usage["input_tokens"]
        assert answer.output_tokens == usage["output_tokens"]
    assert check_pairs(compaction_services.engine_messages(stored[0].session)) == []


def test_a_streamed_response_is_rebuilt_from_its_deltas() -> None:
    path = SDK / "555fb399-a54c-455b-9ac5-2c9673f18e12.json"
    exchanges = json.loads(path.read_text())
    anthropic_logs_import(project=make_project(), paths=[path])
    stored = messages_of(path.stem)
    # the next request sends the streamed answer back: it must match what was rebuilt
    sent_back = exchanges[1]["request"]["body"]["messages"][1]["content"]
    tool_use = next(b for b in stored[1].content if b["type"] == "tool_use")
    expected = next(b for b in sent_back if b["type"] == "tool_use")
    assert (tool_use["id"], tool_use["input"]) == (expected["id"], expected["input"])
    assert len(stored) == len(exchanges[1]["request"]["body"]["messages"]) + 1


def _sse_compaction_text(path: Path) -> str:
    text = ""
    for line in path.read_text().splitlines():
        if line.startswith("data:"):
            event = json.loads(line[5:])
            delta = event.get("delta", {})
            if delta.get("type") == "compaction_delta":
                text += delta.get("content") or ""
    return text


def test_a_compaction_block_is_an_observed_server_compaction() -> None:
    path = SDK / "compaction_response.txt"
    anthropic_logs_import(project=make_project(), paths=[path])
    (answer,) = messages_of(path.stem)
    event = CompactionEvent.objects.get()
    assert (event.seq, event.summary_seq) == (answer.seq, answer.seq)
    assert event.strategy == "server_compaction"
    assert event.summary == _sse_compaction_text(path) != ""
    assert answer.content[0]["type"] == "compaction"


def _log(tmp_path: Path, response: dict[str, Any]) -> Path:
    path = tmp_path / "run.json"
    request = {"model": "claude-opus-4-6", "messages": [{"role": "user", "content": "go"}]}
    path.write_text(json.dumps([{"request": {"body": request}, "response": {"body": response}}]))
    return path


def test_iterations_give_the_context_before_and_after_a_server_compaction(tmp_path) -> None:
    response = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "compaction", "content": "Goal: go."}, {"type": "text", "text": "ok"}],
        "usage": {
            "input_tokens": 12,
            "output_tokens": 9,
            "iterations": [
                {"type": "compaction", "input_tokens": 150_000, "output_tokens": 2_000},
                {"type": "message", "input_tokens": 2_500, "output_tokens": 9},
            ],
        },
    }
    anthropic_logs_import(project=make_project(), paths=[_log(tmp_path, response)])
    event = CompactionEvent.objects.get()
    assert (event.tokens_before, event.tokens_after) == (150_000, 2_500)
    answer = Message.objects.get(role="assistant")
    assert [it["type"] for it in answer.iterations] == ["compaction", "message"]


def test_the_compaction_iteration_is_the_summary_call_and_is_billed_once(tmp_path, client) -> None:
    response = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "compaction", "content": "Goal: go."}, {"type": "text", "text": "ok"}],
        "usage": {
            "input_tokens": 12,
            "output_tokens": 9,
            "iterations": [
                {"type": "compaction", "input_tokens": 150_000, "output_tokens": 2_000},
                {"type": "message", "input_tokens": 2_500, "output_tokens": 9},
            ],
        },
    }
    project = make_project()
    anthropic_logs_import(project=project, paths=[_log(tmp_path, response)])
    session = AgentSession.objects.get()
    pipeline.session_analyse(session_id=session.pk)
    auth = {"Authorization": f"Bearer {make_key(project)}"}
    base = f"/api/v1/sessions/{session.external_id}"

    (item,) = client.get(f"{base}/compactions", headers=auth).json()
    curve = client.get(f"{base}/curve", headers=auth).json()

    assert item["compaction_call"] == {
        "context_tokens": 150_000,
        "output_tokens": 2_000,
        "duration_ms": None,
    }
    (point,) = curve["points"]
    assert point["context_tokens"] == 2_500
    assert point["billed_tokens"] == 12 + 9 + 150_000 + 2_000  # the iteration, in the call
    assert curve["compaction_calls_billed_tokens"] == 0  # so not a second time
    assert curve["billed_tokens_total"] == point["billed_tokens"]


def test_applied_context_edits_are_recorded(tmp_path) -> None:
    response = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 40_000, "output_tokens": 5},
        "context_management": {
            "applied_edits": [
                {
                    "type": "clear_tool_uses_20250919",
                    "cleared_tool_uses": 8,
                    "cleared_input_tokens": 50_000,
                }
            ]
        },
    }
    anthropic_logs_import(project=make_project(), paths=[_log(tmp_path, response)])
    event = CompactionEvent.objects.get()
    assert event.strategy == "clear_tool_uses_20250919"
    assert (event.tokens_before, event.tokens_after) == (90_000, 40_000)
    assert event.kept == {"cleared_tool_uses": 8, "cleared_input_tokens": 50_000}


def test_a_file_that_is_not_a_log_is_reported(tmp_path) -> None:
    path = tmp_path / "notes.json"
    path.write_text('{"hello": "world"}')
    report = anthropic_logs_import(project=make_project(), paths=[path])
    assert report.files[0].error == "not an Anthropic log: not an Anthropic request/response log"
    assert not AgentSession.objects.exists()


def test_swe_agent_function_calls_pair_up() -> None:
    path = TRAJ / "swe-agent" / "marshmallow-code__marshmallow-1867.traj"
    history = json.loads(path.read_text())["history"]
    calls = [c["id"] for m in history for c in m.get("tool_calls") or []]
    trajectories_import(project=make_project(), paths=[path])
    stored = messages_of(path.stem)
    uses = [b["id"] for m in stored for b in m.content if b["type"] == "tool_use"]
    assert uses == calls
    assert check_pairs(compaction_services.engine_messages(stored[0].session)) == []


def test_openhands_eval_output_is_one_session_per_run_with_usage() -> None:
    path = TRAJ / "openhands" / "output.jsonl.gz"
    with gzip.open(path, "rt") as fh:
        runs = [json.loads(line) for line in fh]
    trajectories_import(project=make_project(), paths=[path])
    assert sorted(AgentSession.objects.values_list("external_id", flat=True)) == sorted(
        r["instance_id"] for r in runs
    )
    run = runs[0]
    first = next(e for e in run["history"] if e.get("tool_call_metadata"))
    usage = first["tool_call_metadata"]["model_response"]["usage"]
    answer = next(m for m in messages_of(run["instance_id"]) if m.role == "assistant")
    assert answer.context_tokens == usage["prompt_tokens"]
    assert answer.output_tokens == usage["completion_tokens"]


def test_mini_swe_agent_keeps_every_message() -> None:
    path = TRAJ / "mini-swe-agent" / "github_issue.traj.json"
    data = json.loads(path.read_text())
    items = data if isinstance(data, list) else data["messages"]
    report = trajectories_import(project=make_project(), paths=[path])
    assert report.messages == len(items)
    again = trajectories_import(project=AgentSession.objects.get().project, paths=[path])
    assert (again.messages, again.duplicates) == (0, len(items))


# --- the whole corpus -------------------------------------------------------------------------

NOT_SESSIONS = {
    # documentation, schemas and summaries, not traces
    "semantic-conventions",
    "capture-results.json",
    # an execute_tool span: a tool run, not a model call
    "otel_genai_tool_execution_span.json",
}


def _data_files() -> list[Path]:
    out = []
    for path in sorted(CORPUS.rglob("*")):
        if not path.is_file() or path.name.startswith(("LICENSE", "README", "SOURCES", "MANIFEST")):
            continue
        if any(part in NOT_SESSIONS for part in path.relative_to(CORPUS).parts):
            continue
        if "acompact" in path.name:
            continue  # the cost of a compaction, imported with its session (tested there)
        out.append(path)
    return out


def _import(path: Path) -> ImportReport:
    project = make_project()
    top = path.relative_to(CORPUS).parts[0]
    if top == "claude_code":
        return claude_code_import(project=project, paths=[path])
    if top == "agent_trajectories":
        return trajectories_import(project=project, paths=[path])
    if top == "anthropic_messages_api":
        return anthropic_logs_import(project=project, paths=[path])
    result = otlp.spans_ingest(
        project=project, spans=otlp.spans_from_file_data(json.loads(path.read_text()))
    )
    assert result.rejected == 0
    return result.report


@pytest.mark.parametrize("path", _data_files(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_corpus_file_that_holds_a_session_imports(path: Path) -> None:
    report = _import(path)
    assert [f.error for f in report.files] == [None] * len(report.files)
    assert report.sessions
    assert report.messages > 0
    assert all(f.skipped_count == 0 for f in report.files)
