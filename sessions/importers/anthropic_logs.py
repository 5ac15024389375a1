"""Anthropic Messages API logs in: what a harness records around ``messages.create``.

Accepted shapes (one session per file, external id = the file name without extension, or
``--session``):

* a JSON list (or JSON lines) of exchanges ``{"request": {"body": ...}, "response": {"body":
  ...}}``, bodies as objects or JSON strings, a response body may be an SSE stream;
* a VCR cassette (YAML or JSON) with ``interactions[].request.body`` and
  ``interactions[].response.body.string``;
* a recorded response alone: ``{"status", "headers", "body"}``, a Message object, or an SSE
  stream (``event: message_start`` ...).

Each request carries the whole history, so ``sessions.importers.calls`` stores only what is
new per call. A ``compaction`` block in a response is a server-side compaction at that
answer (its ``usage.iterations`` give the context before and after), and
``context_management.applied_edits`` (context editing) are recorded there too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from compaction.engine.messages import WireError, content_from_wire
from compaction.engine.otlp import Call
from sessions import wire
from sessions.errors import BadRequest
from sessions.importers import reading
from sessions.importers.calls import context_tokens, conversation_ingest
from sessions.importers.report import FileReport, ImportReport
from sessions.models import Project

FORMAT = "anthropic-log"


class LogError(ValueError):
    pass


# --- SSE ---------------------------------------------------------------------------------


def message_from_sse(text: str) -> dict[str, Any]:
    """Rebuild the Message object a streamed response adds up to."""
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial_json: dict[int, str] = {}
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line.startswith("data:"):
            continue
        try:
            event = json.loads(line[5:].strip())
        except json.JSONDecodeError:
            continue
        kind = event.get("type")
        if kind == "message_start":
            message = dict(event.get("message") or {})
        elif kind == "content_block_start":
            blocks[event["index"]] = dict(event.get("content_block") or {})
        elif kind == "content_block_delta":
            block = blocks.setdefault(event["index"], {})
            delta = event.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
            elif dtype == "input_json_delta":
                partial_json[event["index"]] = partial_json.get(event["index"], "") + delta.get(
                    "partial_json", ""
                )
            elif dtype == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
            elif dtype == "signature_delta":
                block["signature"] = delta.get("signature")
            elif dtype == "compaction_delta":
                for key in ("content", "encrypted_content"):
                    if delta.get(key) is not None:
                        block[key] = (block.get(key) or "") + delta[key]
        elif kind == "message_delta":
            for key, value in (event.get("delta") or {}).items():
                message[key] = value
            usage = dict(message.get("usage") or {})
            usage.update(event.get("usage") or {})
            message["usage"] = usage
            if event.get("context_management") is not None:
                message["context_management"] = event["context_management"]
    for index, text_json in partial_json.items():
        try:
            blocks[index]["input"] = json.loads(text_json) if text_json else {}
        except json.JSONDecodeError:
            blocks[index]["input"] = {"partial_json": text_json}
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


# --- reading exchanges ---------------------------------------------------------------------


def _body(value: Any) -> Any:
    if isinstance(value, Mapping) and "string" in value and len(value) <= 2:
        value = value["string"]  # VCR: body: {string: ...}
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        stripped = value.lstrip()
        if stripped.startswith(("event:", "data:")):
            return message_from_sse(value)
        try:
            return json.loads(value) if stripped else None
        except json.JSONDecodeError as exc:
            raise LogError(f"body is neither JSON nor an SSE stream ({exc.msg})") from None
    return value


def exchanges(data: Any) -> Iterator[tuple[Any, Any]]:
    """(request body, response body) pairs of a loaded log; either may be None."""
    if isinstance(data, Mapping) and isinstance(data.get("interactions"), list):
        data = data["interactions"]
    if isinstance(data, Mapping) and "request" not in data and "response" not in data:
        if "body" in data:  # a recorded response: {status, headers, body}
            yield None, _body(data["body"])
            return
        if data.get("type") == "message":
            yield None, data
            return
        raise LogError("not an Anthropic request/response log")
    items = data if isinstance(data, list) else [data]
    for item in items:
        if not isinstance(item, Mapping):
            raise LogError("an exchange is not an object")
        request = item.get("request") or {}
        response = item.get("response") or {}
        yield (
            _body(request.get("body")) if isinstance(request, Mapping) else None,
            _body(response.get("body")) if isinstance(response, Mapping) else None,
        )


def load(path: Path) -> Any:
    text = reading.trace_read(path).decode("utf-8")
    stripped = text.lstrip()
    if stripped.startswith(("event:", "data:")):
        return {"body": text}
    if path.suffix in (".yaml", ".yml"):
        import yaml

        return yaml.safe_load(text)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        return lines


# --- exchanges to calls --------------------------------------------------------------------


def _blocks(content: Any) -> list[dict[str, Any]] | str:
    if isinstance(content, str):
        return content
    try:
        return [b.to_wire() for b in content_from_wire(content)]
    except WireError as exc:
        raise LogError(str(exc)) from None


def _usage(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, Mapping):
        return None
    usage: dict[str, Any] = {
        "input_tokens": int(raw.get("input_tokens") or 0),
        "output_tokens": int(raw.get("output_tokens") or 0),
        "cache_read_input_tokens": int(raw.get("cache_read_input_tokens") or 0),
        "cache_creation_input_tokens": int(raw.get("cache_creation_input_tokens") or 0),
    }
    if isinstance(raw.get("iterations"), list):
        usage["iterations"] = [
            {
                "type": str(it.get("type", "message")),
                **{k: int(it.get(k) or 0) for k in usage if k != "iterations"},
            }
            for it in raw["iterations"]
            if isinstance(it, Mapping)
        ]
    return usage


def _reported_compactions(
    response: Mapping[str, Any], usage: dict[str, Any] | None
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    iterations = (usage or {}).get("iterations") or []
    compaction_its = [it for it in iterations if it["type"] == "compaction"]
    message_its = [it for it in iterations if it["type"] == "message"]
    for block in response.get("content") or []:
        if isinstance(block, Mapping) and block.get("type") == "compaction":
            content = block.get("content")
            events.append(
                {
                    "trigger": "threshold",
                    "strategy": "server_compaction",
                    "summary": content or "",
                    "tokens_before": context_tokens(compaction_its[0]) if compaction_its else None,
                    "tokens_after": context_tokens(message_its[-1]) if message_its else None,
                    "error": None if content is not None else "compaction returned no content",
                    "summary_seq": "answer",
                    # the compaction iteration is the call that wrote the summary; the
                    # answer's billed tokens already count it (in_curve)
                    "kept": (
                        {"compaction_call": {"usage": compaction_its[0], "in_curve": True}}
                        if compaction_its
                        else {}
                    ),
                }
            )
    management = response.get("context_management")
    edits = management.get("applied_edits") if isinstance(management, Mapping) else None
    context = context_tokens(usage)
    for edit in edits or []:
        if not isinstance(edit, Mapping):
            continue
        cleared = int(edit.get("cleared_input_tokens") or 0)
        events.append(
            {
                "trigger": "threshold",
                "strategy": str(edit.get("type") or "context_edit"),
                "tokens_before": context + cleared if context is not None else None,
                "tokens_after": context,
                "kept": {k: v for k, v in edit.items() if k != "type"},
            }
        )
    return events


def call_from_exchange(index: int, request: Any, response: Any) -> Call:
    inputs: list[dict[str, Any]] = []
    model = None
    if isinstance(request, Mapping):
        model = request.get("model")
        system = request.get("system")
        if system:
            inputs.append({"role": "system", "content": _blocks(system)})
        for i, message in enumerate(request.get("messages") or []):
            if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
                raise LogError(f"request.messages[{i}]: needs role user or assistant")
            inputs.append({"role": message["role"], "content": _blocks(message.get("content"))})
    outputs: list[dict[str, Any]] = []
    usage = None
    compactions: list[dict[str, Any]] = []
    if isinstance(response, Mapping) and response.get("type") != "error":
        model = response.get("model") or model
        usage = _usage(response.get("usage"))
        outputs.append({"role": "assistant", "content": _blocks(response.get("content") or [])})
        compactions = _reported_compactions(response, usage)
    return Call(
        key=str(response.get("id") or index) if isinstance(response, Mapping) else str(index),
        inputs=inputs,
        outputs=outputs,
        usage=usage,
        model=str(model) if model else None,
        compactions=compactions,
    )


def anthropic_logs_import(
    *,
    project: Project,
    paths: Sequence[str | Path],
    session: str | None = None,
    report: ImportReport | None = None,
) -> ImportReport:
    report = report or ImportReport()
    for raw in paths:
        path = Path(raw)
        file: FileReport = report.file(str(path), format=FORMAT)
        try:
            calls = [
                call_from_exchange(i, request, response)
                for i, (request, response) in enumerate(exchanges(load(path)))
            ]
        except (OSError, UnicodeDecodeError, ValueError, LogError) as exc:
            file.error = f"not an Anthropic log: {exc}"
            continue
        except Exception as exc:  # YAML errors and other parser failures
            file.error = f"not an Anthropic log: {type(exc).__name__}: {exc}"
            continue
        file.records = len(calls)
        if not any(c.inputs or c.outputs for c in calls):
            file.error = "no request or response with messages"
            continue
        external_id = session or path.name.split(".")[0]
        try:
            wire.external_id_check(external_id, where="session id")
        except BadRequest as exc:
            file.error = exc.message  # never cut: two logs would merge into one session
            continue
        conversation_ingest(
            project=project,
            external_id=external_id,
            calls=calls,
            file=file,
            report=report,
            source=FORMAT,
            session={"agent": "anthropic-messages"},
            ordered=True,
        )
    return report
