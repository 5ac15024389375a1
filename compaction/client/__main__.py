"""``python -m compaction.client upload PATH... --url URL --key KEY``

Uploads Claude Code transcripts (files or folders; a session's ``subagents/`` folder comes
along) to ``/api/v1/imports/claude-code`` as one multipart request per session, each file
gzipped, built in a temporary file so memory stays small. Retries with backoff and honours
Retry-After. Prints the server's import report; exits 1 when a file was refused.
"""

from __future__ import annotations

import argparse
import gzip
import json
import secrets
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from compaction.client.transport import Backoff, GiveUp, Reply, post_with_retries, send
from compaction.engine.claude_code_records import transcript_groups

IMPORT_PATH = "/api/v1/imports/claude-code"


def groups(paths: Sequence[str]) -> list[list[Path]]:
    """One group per main transcript: the file plus its subagents folder."""
    return transcript_groups(paths)


def multipart(files: Sequence[Path], out: IO[bytes]) -> str:
    """Write a multipart/form-data body with each file gzipped; return the content type."""
    boundary = f"sawtooth-{secrets.token_hex(12)}"
    for path in files:
        name = path.name if path.name.endswith(".gz") else f"{path.name}.gz"
        out.write(
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/gzip\r\n\r\n".encode()
        )
        with path.open("rb") as source:
            if path.name.endswith(".gz"):
                shutil.copyfileobj(source, out)
            else:
                with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as packed:
                    shutil.copyfileobj(source, packed)
        out.write(b"\r\n")
    out.write(f"--{boundary}--\r\n".encode())
    return f"multipart/form-data; boundary={boundary}"


def upload(files: Sequence[Path], *, url: str, key: str, backoff: Backoff) -> Any:
    with tempfile.TemporaryFile() as body:
        content_type = multipart(files, body)
        length = body.tell()

        def once() -> Reply:
            body.seek(0)
            return send(
                url.rstrip("/") + IMPORT_PATH,
                body,
                key=key,
                content_type=content_type,
                gzipped=False,
                length=length,
                timeout=600,
            )

        return post_with_retries(once, backoff=backoff).json()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compaction.client")
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("upload", help="upload Claude Code transcripts")
    up.add_argument("paths", nargs="+", metavar="PATH")
    up.add_argument("--url", required=True, help="Sawtooth base URL, e.g. http://localhost:8000")
    up.add_argument("--key", required=True, help="project key (st_...)")
    up.add_argument("--attempts", type=int, default=6)
    args = parser.parse_args(argv)

    status = 0
    for group in groups(args.paths):
        try:
            report = upload(
                group, url=args.url, key=args.key, backoff=Backoff(attempts=args.attempts)
            )
        except GiveUp as exc:
            detail = exc.reply.body.decode("utf-8", "replace") if exc.reply else ""
            print(f"{group[0]}: upload failed: {exc} {detail}".strip(), file=sys.stderr)
            status = 1
            continue
        print(json.dumps(report, indent=2))
        if any(f.get("error") for f in report.get("files", [])):
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
