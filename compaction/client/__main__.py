"""``python -m compaction.client upload PATH... --url URL --key KEY`` and
``python -m compaction.client watch [PATH ...] --url URL --key KEY`` (see ``watch.py``: Claude
Code, Codex and Gemini CLI sessions followed as they grow).

``upload`` uploads Claude Code transcripts (files or folders; a session's ``subagents/``
folder comes along) to ``/api/v1/imports/claude-code`` as one multipart request per session,
each file gzipped, built in a temporary file so memory stays small. Retries with backoff and honours
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
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from compaction.client import watch
from compaction.client.transport import (
    Backoff,
    GiveUp,
    Reply,
    job_wait,
    post_with_retries,
    send,
)
from compaction.engine.claude_code import transcript_groups

IMPORT_PATH = "/api/v1/imports/claude-code"
ANY_IMPORT_PATH = "/api/v1/imports"  # any format, recognised by the server per file


def groups(paths: Sequence[str]) -> list[list[Path]]:
    """One group per main transcript: the file plus its subagents folder."""
    return transcript_groups(paths)


def multipart(
    files: Sequence[Path],
    out: IO[bytes],
    *,
    lengths: Sequence[int | None] = (),
    own_names: bool = False,
) -> str:
    """Write a multipart/form-data body with each file gzipped, cut at ``lengths[i]`` bytes
    where given (a growing transcript, up to its last complete line); return the content type.

    ``own_names`` sends each file under its own name (the server inflates gzip by its magic
    bytes), so what the import records of a file (a compaction call's ``file``) is what a
    local import of the same folder records."""
    boundary = f"sawtooth-{secrets.token_hex(12)}"
    for i, path in enumerate(files):
        length = lengths[i] if i < len(lengths) else None
        own = own_names or path.name.endswith(".gz")
        name = path.name if own else f"{path.name}.gz"
        out.write(
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/gzip\r\n\r\n".encode()
        )
        with path.open("rb") as source:
            if path.name.endswith(".gz"):
                shutil.copyfileobj(source, out)
            else:
                with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as packed:
                    if length is None:
                        shutil.copyfileobj(source, packed)
                    else:
                        _copy_prefix(source, packed, length)
        out.write(b"\r\n")
    out.write(f"--{boundary}--\r\n".encode())
    return f"multipart/form-data; boundary={boundary}"


def _copy_prefix(source: IO[bytes], target: gzip.GzipFile, length: int) -> None:
    while length > 0 and (chunk := source.read(min(length, 1024 * 1024))):
        target.write(chunk)
        length -= len(chunk)


def upload(
    files: Sequence[Path],
    *,
    url: str,
    key: str,
    backoff: Backoff,
    lengths: Sequence[int | None] = (),
    own_names: bool = False,
    path: str = IMPORT_PATH,
) -> Any:
    with tempfile.TemporaryFile() as body:
        content_type = multipart(files, body, lengths=lengths, own_names=own_names)
        length = body.tell()

        def once() -> Reply:
            body.seek(0)
            return send(
                url.rstrip("/") + path,
                body,
                key=key,
                content_type=content_type,
                gzipped=False,
                length=length,
                timeout=600,
            )

        answer = post_with_retries(once, backoff=backoff).json()
    if path == ANY_IMPORT_PATH and isinstance(answer, dict) and "job_id" in answer:
        # imported in the background: wait for its report (GET ...?wait=30)
        return job_wait(url, str(answer["job_id"]), key=key, backoff=backoff)
    return answer


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compaction.client")
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("upload", help="upload Claude Code transcripts")
    up.add_argument("paths", nargs="+", metavar="PATH")
    up.add_argument("--url", required=True, help="Sawtooth base URL, e.g. http://localhost:8000")
    up.add_argument("--key", required=True, help="project key (st_...)")
    up.add_argument("--attempts", type=int, default=6)
    watch_arguments(commands)
    args = parser.parse_args(argv)
    if args.command == "watch":
        return watch_main(args)

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


def watch_arguments(commands: Any) -> None:
    w = commands.add_parser(
        "watch",
        help="follow Claude Code, Codex and Gemini CLI sessions as they grow and upload what "
        "is new",
    )
    w.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="folders or files to follow (default: those of "
        + ", ".join(watch.DEFAULT_ROOTS.values())
        + " that exist)",
    )
    w.add_argument("--url", required=True, help="Sawtooth base URL, e.g. http://localhost:8000")
    w.add_argument("--key", required=True, help="project key (st_...)")
    w.add_argument("--state", help=f"offsets file (default: {watch.DEFAULT_STATE})")
    w.add_argument("--interval", type=float, default=1.0, help="seconds between polls")
    w.add_argument(
        "--rescan", type=float, default=2.0, help="seconds between searches for new files"
    )
    w.add_argument("--once", action="store_true", help="send what is new, then exit")
    w.add_argument(
        "--hook",
        action="store_true",
        help="read a Claude Code hook's JSON on stdin and flush its transcript (implies --once)",
    )
    w.add_argument("--attempts", type=int, default=6, help="tries per upload before waiting")
    w.add_argument("--parallel", type=int, default=4, help="sessions uploaded at once")


def watch_main(args: argparse.Namespace) -> int:
    paths = list(args.paths)
    once = args.once or args.hook
    if args.hook:
        paths = [watch.hook_transcript(sys.stdin)]
    backoff = Backoff(attempts=args.attempts)
    # One try per upload: the watcher itself waits and retries, so other sessions carry on.
    per_upload = Backoff(base=backoff.base, cap=backoff.cap, attempts=1)

    def send(files: Sequence[tuple[Path, int]], harness: str) -> Any:
        return upload(
            [p for p, _ in files],
            url=args.url,
            key=args.key,
            backoff=per_upload,
            lengths=[n for _, n in files],
            own_names=True,
            path=IMPORT_PATH if harness == watch.CLAUDE_CODE else ANY_IMPORT_PATH,
        )

    state_path = Path(args.state).expanduser() if args.state else watch.default_state()
    watcher = watch.Watcher(
        paths or watch.default_roots(),
        upload=send,
        state=watch.State.load(state_path, args.url),
        backoff=backoff,
        rescan=args.rescan,
        parallel=max(1, args.parallel),
    )
    try:
        return watcher.run(interval=args.interval, once=once, sleep=time.sleep)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
