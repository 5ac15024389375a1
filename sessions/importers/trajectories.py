"""OpenAI-style agent trajectories in: SWE-agent ``.traj``, mini-swe-agent, OpenHands.

Each file (or, for OpenHands evaluation output, each JSON line) is one session; external id
= the instance id where the file has one, else the file name without extension. Messages
keep their file order as seqs, so a re-import stores nothing new. OpenAI ``tool_calls``
become ``tool_use`` blocks and ``tool`` messages ``tool_result`` blocks, consecutive results
share one user message (as the Messages API wants them), and usage comes from the raw
``chat.completion`` where the file kept it (``prompt_tokens`` includes cached tokens, which
are split out as cache reads).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from compaction.engine import unpack
from sessions import wire
from sessions.errors import BadRequest
from sessions.importers import reading
from sessions.importers.otlp import chat_message
from sessions.importers.report import FileReport, ImportReport
from sessions.importers.writer import SessionWriter
from sessions.models import Project

FORMAT = "trajectory"


class TrajectoryError(ValueError):
    pass


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _is_carrier(message: Mapping[str, Any]) -> bool:
    content = message["content"]
    return (
        message["role"] == "user"
        and isinstance(content, list)
        and bool(content)
        and all(b.get("type") == "tool_result" for b in content)
    )


def merge_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if out and _is_carrier(message) and _is_carrier(out[-1]):
            out[-1]["content"] = out[-1]["content"] + message["content"]
        else:
            out.append(message)
    return out


def openai_usage(raw: Any) -> dict[str, int] | None:
    if not isinstance(raw, Mapping) or raw.get("prompt_tokens") is None:
        return None
    details = raw.get("prompt_tokens_details")
    cached = int((details or {}).get("cached_tokens") or 0) if isinstance(details, Mapping) else 0
    return {
        "input_tokens": max(int(raw["prompt_tokens"]) - cached, 0),
        "output_tokens": int(raw.get("completion_tokens") or 0),
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0,
    }


# --- SWE-agent and mini-swe-agent --------------------------------------------------------


def swe_agent_messages(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = []
    for i, raw in enumerate(data.get("history") or []):
        if not isinstance(raw, Mapping):
            raise TrajectoryError(f"history[{i}]: not an object")
        if raw.get("role") == "tool":
            ids = raw.get("tool_call_ids") or (
                [raw["tool_call_id"]] if raw.get("tool_call_id") else []
            )
            if ids:
                messages.append(
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": str(t),
                                "content": _text(raw.get("content")),
                            }
                            for t in ids
                        ],
                    }
                )
                continue
        messages.append(chat_message({**raw, "content": _text(raw.get("content"))}))
    return merge_results(messages)


def chat_messages(items: Sequence[Any]) -> list[dict[str, Any]]:
    return merge_results([chat_message(m) for m in items])


# --- OpenHands ------------------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _args(event: Mapping[str, Any]) -> Mapping[str, Any]:
    args = event.get("args")
    return args if isinstance(args, Mapping) else {}


def openhands_messages(history: Sequence[Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    messages: list[dict[str, Any]] = []
    ignored: dict[str, int] = {}
    responses: set[str] = set()
    for i, event in enumerate(history):
        if not isinstance(event, Mapping):
            raise TrajectoryError(f"history[{i}]: not an object")
        stamp = event.get("timestamp")
        metadata = event.get("tool_call_metadata")
        action, observation = event.get("action"), event.get("observation")
        if action == "system":
            text = _args(event).get("content") or event.get("message") or ""
            messages.append({"role": "system", "content": str(text)})
        elif action == "message" and event.get("source") == "user":
            text = _args(event).get("content") or event.get("message") or ""
            messages.append({"role": "user", "content": str(text), "timestamp": stamp})
        elif action and isinstance(metadata, Mapping):
            response = metadata.get("model_response")
            response = response if isinstance(response, Mapping) else {}
            rid = str(response.get("id") or f"event-{event.get('id')}")
            if rid in responses:
                continue  # one response, several tool calls: all in the first message
            responses.add(rid)
            choice = (response.get("choices") or [{}])[0]
            body = choice.get("message") if isinstance(choice, Mapping) else None
            if not isinstance(body, Mapping):
                body = {
                    "role": "assistant",
                    "content": _args(event).get("thought") or "",
                    "tool_calls": [
                        {
                            "id": metadata.get("tool_call_id"),
                            "function": {"name": metadata.get("function_name"), "arguments": {}},
                        }
                    ],
                }
            message = chat_message({**body, "role": "assistant"})
            message["timestamp"] = stamp
            usage = openai_usage(response.get("usage"))
            if usage is not None:
                message["usage"] = usage
            messages.append(message)
        elif action == "message" and event.get("source") == "agent":
            text = _args(event).get("content") or event.get("message") or ""
            messages.append({"role": "assistant", "content": str(text), "timestamp": stamp})
        elif observation and isinstance(metadata, Mapping) and metadata.get("tool_call_id"):
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": str(metadata["tool_call_id"]),
                            "content": _text(event.get("content")),
                            "is_error": observation == "error",
                        }
                    ],
                    "timestamp": stamp,
                }
            )
        else:
            kind = str(action or observation or "unknown")
            ignored[kind] = ignored.get(kind, 0) + 1
    return merge_results(messages), ignored


# --- files ------------------------------------------------------------------------------------


def _load(path: Path) -> Iterator[Any]:
    """One JSON document (read whole, within the record limit), else JSON lines (streamed)."""
    try:
        whole: bytes | None = reading.trace_read(path)
    except unpack.TooLarge:
        whole = None  # too large for one document: JSON lines, read one at a time
    if whole is not None:
        if not whole.strip():
            raise TrajectoryError("empty file")
        try:
            yield json.loads(whole)
            return
        except json.JSONDecodeError:
            pass
        except UnicodeDecodeError as exc:
            raise TrajectoryError(f"not UTF-8 ({exc.reason})") from None
        del whole
    with reading.trace_open(path) as fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise TrajectoryError(f"line {n}: not JSON ({exc.msg})") from None


def sessions_in(
    path: Path, data: Any
) -> Iterator[tuple[str, str, list[dict[str, Any]], dict[str, Any]]]:
    """(external id, agent, messages, metadata) for each session of a loaded document."""
    stem = path.name.split(".")[0]
    if (
        isinstance(data, Mapping)
        and ("trajectory" in data or "history" in data)
        and "instance_id" not in data
    ):
        if (
            data.get("history")
            and isinstance(data["history"][0], Mapping)
            and "source" in data["history"][0]
        ):
            messages, ignored = openhands_messages(data["history"])
            yield stem, "openhands", messages, {"ignored": ignored}
            return
        info = _mapping(data.get("info"))
        yield stem, "swe-agent", swe_agent_messages(data), {"model_stats": info.get("model_stats")}
        return
    if isinstance(data, Mapping) and isinstance(data.get("messages"), list):
        info = _mapping(data.get("info"))
        yield stem, "mini-swe-agent", chat_messages(data["messages"]), {"info": info}
        return
    if isinstance(data, Mapping) and isinstance(data.get("history"), list):
        messages, ignored = openhands_messages(data["history"])
        metrics = _mapping(data.get("metrics"))
        config = _mapping(_mapping(data.get("metadata")).get("llm_config"))
        yield (
            str(data.get("instance_id") or stem),
            "openhands",
            messages,
            {
                "ignored": ignored,
                "accumulated_token_usage": metrics.get("accumulated_token_usage"),
                "model": config.get("model"),
            },
        )
        return
    if isinstance(data, list) and data and all(isinstance(x, Mapping) for x in data):
        if "source" in data[0] and ("action" in data[0] or "observation" in data[0]):
            messages, ignored = openhands_messages(data)
            yield stem, "openhands", messages, {"ignored": ignored}
            return
        if "role" in data[0]:
            yield stem, "mini-swe-agent", chat_messages(data), {}
            return
    raise TrajectoryError("not a SWE-agent, mini-swe-agent or OpenHands trajectory")


def trajectories_import(
    *, project: Project, paths: Sequence[str | Path], report: ImportReport | None = None
) -> ImportReport:
    report = report or ImportReport()
    for raw in paths:
        path = Path(raw)
        file: FileReport = report.file(str(path), format=FORMAT)
        try:
            for data in _load(path):
                for external_id, agent, messages, metadata in sessions_in(path, data):
                    file.records += 1
                    file.kind = agent
                    for kind, count in (metadata.pop("ignored", None) or {}).items():
                        file.ignored[kind] += count
                    try:
                        wire.external_id_check(external_id, where="session id")
                    except BadRequest as exc:
                        # never cut: two trajectories would merge into one session
                        file.skip(None, exc.message)
                        continue
                    writer = SessionWriter(
                        project=project,
                        external_id=external_id,
                        session=report.session(external_id),
                        file=file,
                    )
                    for seq, message in enumerate(messages):
                        writer.add_message({**message, "seq": seq})
                    model = metadata.get("model")
                    fields: dict[str, Any] = {
                        "agent": agent,
                        "metadata": {"source": agent, "file": path.name}
                        | {k: v for k, v in metadata.items() if v},
                    }
                    if isinstance(model, str) and model:
                        fields["model"] = model
                    writer.flush(session=fields)
        except (OSError, UnicodeDecodeError, EOFError, TrajectoryError) as exc:
            file.error = str(exc)
    return report
