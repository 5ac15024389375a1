"""import_traces and POST /api/v1/imports: each file's format found by its content."""

from __future__ import annotations

import gzip
import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from sessions.importers import detect
from sessions.models import AgentSession
from tests.engine.test_cline import TASK
from tests.engine.test_gemini import CHECKPOINT, LINES, SINGLE
from tests.factories import make_key, make_project
from tests.importers.corpus import CORPUS, SPOTTER
from tests.importers.jobs import imported, report_of

CODEX = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
ROLLOUT = (
    CODEX / "localpush" / "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"
)
TRAJ = CORPUS / "agent_trajectories"
OTEL = CORPUS / "otel_genai" / "openinference-genai" / "otel_genai_client_span_tool_calls.json"
LOGS = CORPUS / "anthropic_messages_api"

KNOWN = [
    (SPOTTER / "short.jsonl", "claude-code"),
    (SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz", "claude-code"),
    (ROLLOUT, "codex"),
    (CODEX / "agent-history" / "session-01.jsonl", "codex"),
    (SINGLE, "gemini-cli"),
    (LINES, "gemini-cli"),
    (CHECKPOINT, "gemini-cli"),
    (TASK / "ui_messages.json", "cline"),
    (OTEL, "otlp"),
    (LOGS / "openinference" / "thinking-multi-turn-1.json", "anthropic-log"),
    (LOGS / "anthropic-sdk-python" / "basic_response.txt", "anthropic-log"),
    (
        LOGS / "openinference" / "test_anthropic_instrumentation_multiple_tool_calling.yaml",
        "anthropic-log",
    ),
    (TRAJ / "swe-agent" / "function_calling_simple.traj", "trajectory"),
    (TRAJ / "mini-swe-agent" / "local.traj.json", "trajectory"),
    (TRAJ / "openhands" / "basic.json", "trajectory"),
    (TRAJ / "openhands" / "output.jsonl.gz", "trajectory"),
]


@pytest.mark.parametrize(("path", "expected"), KNOWN, ids=[p.name for p, _ in KNOWN])
def test_every_format_is_found_by_its_content(path: Path, expected: str) -> None:
    assert detect.sniff(path).format == expected


@pytest.mark.parametrize(
    ("content", "looked_like"),
    [
        (b"hello, world\n", "text starting 'hello, world'"),
        (b'{"name": "x", "version": 1}', "a JSON object with keys name, version"),
        (b"[1, 2, 3]", "a JSON list of values"),
        (b'{"a": 1}\n{"b": 2}\n', "JSON lines whose first record has keys a"),
        (b"{not json at all", "JSON that does not parse"),
        (b"\x00\x01\x02binary", "binary data"),
        (b"   \n", "an empty file"),
    ],
)
def test_an_unknown_file_says_what_it_looked_like(
    tmp_path: Path, content: bytes, looked_like: str
) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(content)
    found = detect.sniff(path)
    assert (found.format, found.looked_like) == (None, looked_like)


def test_a_renamed_file_is_still_found(tmp_path: Path) -> None:
    target = tmp_path / "whatever.txt"
    shutil.copy(SINGLE, target)
    assert detect.sniff(target).format == "gemini-cli"
    packed = tmp_path / "packed.bin"
    packed.write_bytes(gzip.compress(ROLLOUT.read_bytes()))
    assert detect.sniff(packed).format == "codex"


@pytest.mark.django_db
def test_import_traces_imports_a_mixed_folder_and_reports_the_rest(tmp_path: Path) -> None:
    shutil.copy(SPOTTER / "short.jsonl", tmp_path)
    shutil.copy(ROLLOUT, tmp_path)
    shutil.copy(SINGLE, tmp_path)
    shutil.copytree(TASK, tmp_path / "tasks" / TASK.name)
    shutil.copy(TRAJ / "swe-agent" / "function_calling_simple.traj", tmp_path)
    (tmp_path / "notes.txt").write_text("shopping list")
    project = make_project()
    out = StringIO()
    with pytest.raises(CommandError) as refused:
        call_command(
            "import_traces", str(tmp_path), "--project", project.name, "--json", stdout=out
        )
    assert refused.value.returncode == 1
    assert str(refused.value) == (
        f"1 file(s) refused:\n  {tmp_path / 'notes.txt'}: skipped: not a format Sawtooth "
        "reads (looked like text starting 'shopping list')"
    )
    report = json.loads(out.getvalue())
    by_format = {f["format"]: f for f in report["files"]}
    assert set(by_format) == {
        "claude-code",
        "codex",
        "gemini-cli",
        "cline",
        "trajectory",
        "unknown",
    }
    assert all(f["error"] is None for k, f in by_format.items() if k != "unknown")
    assert by_format["unknown"]["error"] == (
        "skipped: not a format Sawtooth reads (looked like text starting 'shopping list')"
    )
    agents = set(AgentSession.objects.filter(project=project).values_list("agent", flat=True))
    assert {"codex", "gemini-cli", "cline", "swe-agent"} <= agents
    (tmp_path / "notes.txt").unlink()
    again = StringIO()
    call_command("import_traces", str(tmp_path), "--project", project.name, "--json", stdout=again)
    assert json.loads(again.getvalue())["messages"] == 0  # and it exits 0: nothing refused


# --- the upload -------------------------------------------------------------------------------

URL = "/api/v1/imports"


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def key() -> str:
    return make_key(make_project(name="uploads"))


@pytest.mark.django_db
def test_upload_any_formats_together(client: Client, key: str) -> None:
    files = [
        SimpleUploadedFile(SINGLE.name, SINGLE.read_bytes()),
        SimpleUploadedFile(ROLLOUT.name + ".gz", gzip.compress(ROLLOUT.read_bytes())),
    ]
    task = [
        SimpleUploadedFile(name, (TASK / name).read_bytes())
        for name in ("ui_messages.json", "api_conversation_history.json")
    ]
    response = imported(client, URL, {"file": files, TASK.name: task}, auth(key))
    report = report_of(response)
    assert {s["external_id"] for s in report["sessions"]} == {
        json.loads(SINGLE.read_bytes())["sessionId"],
        "019c8a4c-ed82-79a1-aa28-7738fc5ab61a",
        TASK.name,
    }
    paths = {f["path"]: f for f in report["files"]}
    assert paths[TASK.name]["format"] == "cline"
    assert AgentSession.objects.get(external_id=TASK.name).metadata["reported_usd"] > 0


@pytest.mark.django_db
def test_upload_of_nothing_readable_is_a_422_naming_each_file(client: Client, key: str) -> None:
    files = [
        SimpleUploadedFile("a.json", b'{"name": "x"}'),
        SimpleUploadedFile(
            "session-b.json", b'{"sessionId": "s", "projectHash": "h", "messages": "no"}'
        ),
    ]
    response = client.post(URL, {"file": files}, headers=auth(key))
    assert response.status_code == 422
    assert response.json()["error"] == (
        "a.json: not a format Sawtooth reads (looked like a JSON object with keys name); "
        "session-b.json: messages: not a list; nothing of this upload was stored"
    )
    assert not AgentSession.objects.exists()


@pytest.mark.django_db
def test_upload_of_a_malformed_trace_is_a_422_and_stores_nothing(client: Client, key: str) -> None:
    bad = LINES.read_bytes().replace(b'"tokens": {"input": 8200', b'"tokens": "lots", "x": {"a": 1')
    files = [
        SimpleUploadedFile(SINGLE.name, SINGLE.read_bytes()),
        SimpleUploadedFile(LINES.name, bad),
    ]
    response = client.post(URL, {"file": files}, headers=auth(key))
    assert response.status_code == 422
    assert response.json()["error"] == (
        f"{LINES.name}: line 6: message.tokens: not an object; nothing of this upload was stored"
    )
    assert not AgentSession.objects.exists()


@pytest.mark.django_db
def test_upload_needs_multipart_files(client: Client, key: str) -> None:
    response = client.post(URL, b"{}", content_type="application/json", headers=auth(key))
    assert response.status_code == 400
    assert response.json()["error"] == "body: send the files as multipart/form-data parts"
    response = client.post(URL, {"x": "y"}, headers=auth(key))
    assert response.status_code == 400
    assert response.json()["error"] == "file: required, one or more trace files as multipart parts"


@pytest.mark.django_db
def test_a_loose_cline_file_is_refused_with_the_way_to_send_it(client: Client, key: str) -> None:
    files = [
        SimpleUploadedFile("ui_messages.json", (TASK / "ui_messages.json").read_bytes()),
        SimpleUploadedFile(SINGLE.name, SINGLE.read_bytes()),
    ]
    response = client.post(URL, {"file": files}, headers=auth(key))
    assert response.status_code == 422
    assert response.json()["error"] == (
        "ui_messages.json: a Cline task is a folder; send its files under a form field named by "
        "the task id, so the task keeps its id; nothing of this upload was stored"
    )
    assert not AgentSession.objects.exists()


@pytest.mark.django_db
def test_upload_names_cannot_leave_the_folder(client: Client, key: str) -> None:
    files = [SimpleUploadedFile("../../etc/../x/session-a.json", SINGLE.read_bytes())]
    response = imported(client, URL, {"../..": files}, auth(key))
    assert report_of(response)["files"][0]["path"] == "session-a.json"


@pytest.mark.django_db
def test_an_upload_over_the_limit_is_a_413_and_stores_nothing(
    client: Client, key: str, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.IMPORT_MAX_BYTES = 1000
    bomb = gzip.compress(b"\n" * 100_000)
    files = [
        SimpleUploadedFile(SINGLE.name, SINGLE.read_bytes()[:900]),
        SimpleUploadedFile("big.jsonl.gz", bomb),
    ]
    response = client.post(URL, {"file": files}, headers=auth(key))
    assert response.status_code == 413
    assert response.json()["error"] == (
        "file big.jsonl.gz: larger than the 1000-byte limit after decompression (gzip layer 1)"
    )
    assert not AgentSession.objects.exists()


@pytest.mark.django_db
def test_one_unreadable_file_refuses_the_whole_upload(client: Client, key: str) -> None:
    files = [
        SimpleUploadedFile(SINGLE.name, SINGLE.read_bytes()),
        SimpleUploadedFile(ROLLOUT.name, ROLLOUT.read_bytes()),
        SimpleUploadedFile("readme.md", b"# not a trace"),
    ]
    response = client.post(URL, {"file": files}, headers=auth(key))
    assert response.status_code == 422
    assert response.json()["error"] == (
        "readme.md: not a format Sawtooth reads (looked like text starting '# not a trace'); "
        "nothing of this upload was stored"
    )
    assert not AgentSession.objects.exists()


@pytest.mark.django_db
def test_unknown_record_types_are_counted_apart_from_ignored_and_shown(
    client: Client, key: str, tmp_path: Path
) -> None:
    lines = ROLLOUT.read_bytes().split(b"\n")
    extra = [
        b'{"timestamp":"2026-02-23T12:40:24Z","type":"world_state","payload":{"full":true}}',
        b'{"timestamp":"2026-02-23T12:40:24Z","type":"holodeck_state","payload":{}}',
    ]
    data = b"\n".join([lines[0], *extra, *lines[1:]])
    response = imported(client, URL, {"file": [SimpleUploadedFile(ROLLOUT.name, data)]}, auth(key))
    report = report_of(response)
    assert report["unknown_types"] == {"holodeck_state": 1}
    (file,) = report["files"]
    assert file["unknown_types"] == {"holodeck_state": 1}
    assert file["ignored"]["world_state"] == 1
    session = AgentSession.objects.get()
    assert session.metadata["unknown_types"] == {"holodeck_state": 1}
    assert session.metadata["calls"] == 81  # the rollout's count by hand, unchanged


@pytest.mark.django_db
def test_import_traces_imports_the_rest_and_exits_1_naming_an_unreadable_file(
    tmp_path: Path,
) -> None:
    shutil.copy(SINGLE, tmp_path)
    broken = tmp_path / ROLLOUT.name
    broken.write_bytes(ROLLOUT.read_bytes() + b"{not json\n")
    project = make_project()
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError) as refused:
        call_command(
            "import_traces", str(tmp_path), "--project", project.name, stdout=out, stderr=err
        )
    assert refused.value.returncode == 1
    assert str(refused.value).startswith(f"1 file(s) refused:\n  {broken}: line ")
    assert "nothing of this file was stored" in str(refused.value)
    agents = set(AgentSession.objects.filter(project=project).values_list("agent", flat=True))
    assert agents == {"gemini-cli"}  # the readable file was imported


@pytest.mark.django_db
def test_a_document_longer_than_the_first_look_is_still_found(client: Client, key: str) -> None:
    # Before: a 4.5 MB Gemini chat was "not a format Sawtooth reads (JSON that does not parse)".
    chat = json.loads(SINGLE.read_text())
    chat["messages"][0]["content"] = [{"text": "create 2 hello world files " + "x" * 4_700_000}]
    data = json.dumps(chat, indent=2).encode()
    assert len(data) > detect.SNIFF_BYTES
    response = imported(client, URL, {"file": SimpleUploadedFile(SINGLE.name, data)}, auth(key))
    assert report_of(response)["files"][0]["format"] == "gemini-cli"
    assert report_of(response)["messages"] > 0
