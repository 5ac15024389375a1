"""Every decompression bounded: each gzip layer's bytes counted, at every door (the upload API,
the upload form, ``import_traces``, the watcher), the limit named in the refusal."""

from __future__ import annotations

import gzip
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

from compaction.client import watch
from compaction.engine import unpack
from sessions.models import AgentSession, Role
from tests.factories import make_key, make_project, make_user
from tests.importers.corpus import SPOTTER, refused_file

SHORT = SPOTTER / "short.jsonl"
LIMIT = 20_000


def _padded() -> bytes:
    """A valid transcript grown past ``LIMIT`` by blank lines (which the reader skips)."""
    return SHORT.read_bytes() + b"\n" * (LIMIT * 5)


def _nested(data: bytes, layers: int) -> bytes:
    for _ in range(layers):
        data = gzip.compress(data)
    return data


# --- the engine's reader --------------------------------------------------------------------


def test_every_gzip_layer_is_undone_and_counted() -> None:
    data = SHORT.read_bytes()
    assert b"".join(unpack.unpacked_chunks([_nested(data, 3)], max_bytes=len(data))) == data
    with pytest.raises(unpack.TooLarge) as caught:
        b"".join(unpack.unpacked_chunks([_nested(data, 2)], max_bytes=len(data) - 1))
    assert str(caught.value) == (
        f"body: larger than the {len(data) - 1}-byte limit after decompression (gzip layer 2)"
    )


def test_a_bomb_inside_a_gzip_stops_at_the_limit_without_inflating() -> None:
    inner = gzip.compress(b"0" * 50_000_000)  # 50 MB of zeros in about 50 KB
    chunks = unpack.unpacked_chunks([gzip.compress(inner)], max_bytes=1_000_000)
    seen: list[int] = []

    def drain() -> None:
        for chunk in chunks:
            seen.append(len(chunk))

    with pytest.raises(unpack.TooLarge, match="1000000-byte limit after decompression"):
        drain()
    assert max(seen) <= unpack.STEP
    assert sum(seen) <= 1_000_000


def test_gzip_nested_deeper_than_allowed_is_refused() -> None:
    with pytest.raises(unpack.BadCompression, match="more than 3 layers deep"):
        b"".join(unpack.unpacked_chunks([_nested(b"x\n", 4)], max_bytes=100))


def test_a_line_past_the_line_limit_is_refused_as_it_streams() -> None:
    ok = b"a" * 10 + b"\n" + b"b" * 10 + b"\n"
    assert b"".join(unpack.unpacked_chunks([ok], max_bytes=100, max_line=10)) == ok
    with pytest.raises(unpack.TooLarge, match="a line longer than the 10-byte line limit"):
        b"".join(unpack.unpacked_chunks([b"a" * 5, b"a" * 6], max_bytes=100, max_line=10))
    with pytest.raises(unpack.TooLarge, match="line limit"):
        b"".join(unpack.unpacked_chunks([b"a" * 5, b"a" * 6 + b"\nb"], max_bytes=100, max_line=10))


def test_two_gzip_members_are_one_stream() -> None:
    both = gzip.compress(b"a\n") + gzip.compress(b"b\n")
    assert b"".join(unpack.unpacked_chunks([both[:5], both[5:]], max_bytes=10)) == b"a\nb\n"


# --- the doors ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_api_refuses_a_gzip_inside_a_gzip_past_the_limit(client: Client, settings) -> None:
    settings.IMPORT_MAX_BYTES = LIMIT
    key = make_key(make_project(name="bombs"))
    upload = SimpleUploadedFile("t.jsonl.gz", _nested(_padded(), 2))
    response = client.post(
        "/api/v1/imports", {"file": upload}, headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 413
    assert response.json()["error"] == (
        f"file t.jsonl.gz: larger than the {LIMIT}-byte limit after decompression (gzip layer 2)"
    )
    assert not AgentSession.objects.exists()


@pytest.mark.django_db
def test_api_refuses_a_line_past_the_record_limit(client: Client, settings) -> None:
    settings.IMPORT_MAX_RECORD_BYTES = 1000
    key = make_key(make_project(name="lines"))
    upload = SimpleUploadedFile("t.jsonl", SHORT.read_bytes() + b"x" * 2000)
    response = client.post(
        "/api/v1/imports", {"file": upload}, headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 413
    assert response.json()["error"] == "file t.jsonl: a line longer than the 1000-byte line limit"
    assert not AgentSession.objects.exists()


@pytest.mark.django_db
def test_upload_form_refuses_a_gzip_inside_a_gzip_past_the_limit(client: Client, settings) -> None:
    settings.IMPORT_MAX_BYTES = LIMIT
    project = make_project()
    client.force_login(make_user(project=project, role=Role.ENGINEER))
    upload = SimpleUploadedFile("t.jsonl.gz", _nested(_padded(), 2))
    response = client.post("/imports/claude-code/", {"project": project.pk, "file": upload})
    assert response.status_code == 413
    assert f"larger than the {LIMIT}-byte limit after decompression" in response.content.decode()
    assert not AgentSession.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("layers", [1, 2])
def test_import_traces_refuses_a_file_past_the_limit_at_any_layer(
    tmp_path: Path, settings, layers: int
) -> None:
    settings.IMPORT_MAX_BYTES = LIMIT
    (tmp_path / "t.jsonl.gz").write_bytes(_nested(_padded(), layers))
    file = refused_file(tmp_path, make_project().name)
    assert file["error"] == (
        f"refused: file t.jsonl.gz: larger than the {LIMIT}-byte limit after decompression "
        f"(gzip layer {layers}); nothing of this file was stored"
    )
    assert not AgentSession.objects.exists()


@pytest.mark.django_db
def test_import_traces_still_reads_a_gzip_inside_a_gzip_within_the_limit(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl.gz").write_bytes(_nested(SHORT.read_bytes(), 2))
    project = make_project()
    out = StringIO()
    call_command("import_traces", str(tmp_path), "--project", project.name, "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["files"][0]["error"] is None
    assert report["messages"] > 0


def test_the_watcher_does_not_inflate_a_bomb_looking_for_its_first_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(unpack, "DEFAULT_MAX_LINE", 1000)
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(_nested(b"x" * 10_000_000, 2))
    with pytest.raises(unpack.TooLarge, match="a line longer than the 1000-byte line limit"):
        watch.first_line(bomb)
    assert watch.harness_of(bomb) == ""  # never a session, so not read again every scan


@pytest.mark.django_db
def test_import_otel_refuses_a_document_past_the_record_limit(tmp_path: Path, settings) -> None:
    settings.IMPORT_MAX_RECORD_BYTES = LIMIT
    (tmp_path / "spans.json.gz").write_bytes(_nested(b'{"resourceSpans": []}' + b" " * LIMIT, 2))
    out = StringIO()
    project = make_project()
    call_command(
        "import_otel",
        str(tmp_path / "spans.json.gz"),
        "--project",
        project.name,
        "--json",
        stdout=out,
    )
    (file,) = json.loads(out.getvalue())["files"]
    assert f"larger than the {LIMIT}-byte limit after decompression" in file["error"]
