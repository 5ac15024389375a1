"""Reading trace files within limits: every gzip layer undone, every layer's bytes counted.

One home for decompression, used by every door that reads a trace (the upload API and form,
the import commands, the watcher): a gzip inside a gzip is undone too (up to ``MAX_LAYERS``
deep), and each layer's output is counted against the limit as it streams, in steps of
``STEP`` bytes, so a bomb stops at the limit with the limit named, never after inflating.
``max_line`` bounds the bytes between two newlines, which is what a line-by-line reader holds
in memory at once. No Django.

>>> import gzip
>>> b"".join(unpacked_chunks([gzip.compress(gzip.compress(b"a\\n"))], max_bytes=100))
b'a\\n'
"""

from __future__ import annotations

import io
import itertools
import os
import zlib
from collections.abc import Iterable, Iterator
from typing import BinaryIO, cast

GZIP_MAGIC = b"\x1f\x8b"
MAX_LAYERS = 3
STEP = 64 * 1024
# What a caller with no settings of its own gets (the server passes its settings).
DEFAULT_MAX_BYTES = 100 * 1024 * 1024
DEFAULT_MAX_LINE = 32 * 1024 * 1024
_READ = 1024 * 1024


class TooLarge(OSError):
    """More bytes (after decompression) or a longer line than a limit allows; the message
    names the file, the limit and the layer. An ``OSError``, so every reader that reports
    "cannot read" reports this too."""

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit

    def __str__(self) -> str:
        return str(self.args[0])


class BadCompression(OSError):
    """A gzip stream that is corrupt or truncated, or nested deeper than ``MAX_LAYERS``."""

    def __str__(self) -> str:
        return str(self.args[0])


def _gunzip(chunks: Iterator[bytes], *, max_bytes: int, where: str, layer: int) -> Iterator[bytes]:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    total = 0
    for chunk in chunks:
        data = chunk
        while True:
            try:
                out = inflater.decompress(data, STEP)
            except zlib.error as exc:
                raise BadCompression(f"{where}: not valid gzip at layer {layer} ({exc})") from None
            data = inflater.unconsumed_tail
            if inflater.eof and (inflater.unused_data or data):  # a further gzip member
                data = inflater.unused_data + data
                inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            total += len(out)
            if total > max_bytes:
                raise TooLarge(
                    f"{where}: larger than the {max_bytes}-byte limit after decompression "
                    f"(gzip layer {layer})",
                    limit=max_bytes,
                )
            if out:
                yield out
            # A full step may leave output inside the inflater even when no input is left.
            if not data and len(out) < STEP:
                break
    if not inflater.eof:
        raise BadCompression(f"{where}: truncated gzip stream at layer {layer}")


def _peek(stream: Iterator[bytes], n: int) -> tuple[bytes, Iterator[bytes]]:
    head = b""
    taken: list[bytes] = []
    for chunk in stream:
        taken.append(chunk)
        head += chunk[: n - len(head)]
        if len(head) >= n:
            break
    return head, itertools.chain(taken, stream)


def unpacked_chunks(
    chunks: Iterable[bytes],
    *,
    max_bytes: int,
    max_line: int | None = None,
    where: str = "body",
) -> Iterator[bytes]:
    """The bytes of a stream with every gzip layer undone, never more than ``max_bytes`` at any
    layer, and (with ``max_line``) no line longer than ``max_line`` bytes.

    >>> list(unpacked_chunks([b"abc"], max_bytes=2))
    Traceback (most recent call last):
    compaction.engine.unpack.TooLarge: body: larger than the 2-byte limit
    """
    stream = iter(chunks)
    layers = 0
    while True:
        head, stream = _peek(stream, len(GZIP_MAGIC))
        if not head.startswith(GZIP_MAGIC):
            break
        layers += 1
        if layers > MAX_LAYERS:
            raise BadCompression(f"{where}: gzip nested more than {MAX_LAYERS} layers deep")
        stream = _gunzip(stream, max_bytes=max_bytes, where=where, layer=layers)
    total = run = 0
    for chunk in stream:
        total += len(chunk)
        if total > max_bytes:
            after = " after decompression" if layers else ""
            raise TooLarge(
                f"{where}: larger than the {max_bytes}-byte limit{after}", limit=max_bytes
            )
        if max_line is not None:
            first = chunk.find(b"\n")
            if first < 0:
                run += len(chunk)
            elif run + first > max_line:
                run = max_line + 1
            else:
                run = len(chunk) - chunk.rfind(b"\n") - 1
            if run > max_line:
                raise TooLarge(
                    f"{where}: a line longer than the {max_line}-byte line limit", limit=max_line
                )
        if chunk:
            yield chunk


class _ChunkReader(io.RawIOBase):
    def __init__(self, chunks: Iterator[bytes], source: BinaryIO) -> None:
        self._chunks = chunks
        self._source = source
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = memoryview(chunk)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        if not self.closed:
            self._source.close()
        super().close()


def file_chunks(source: BinaryIO) -> Iterator[bytes]:
    while chunk := source.read(_READ):
        yield chunk


def open_unpacked(
    path: str | os.PathLike[str],
    *,
    max_bytes: int,
    max_line: int | None = None,
    where: str | None = None,
) -> BinaryIO:
    """A file opened for reading bytes as a stream, gzip layers undone within the limits."""
    source = open(path, "rb")  # noqa: SIM115 (closed by the reader)
    label = where or f"file {os.path.basename(path)}"
    chunks = unpacked_chunks(
        file_chunks(source), max_bytes=max_bytes, max_line=max_line, where=label
    )
    return cast(BinaryIO, io.BufferedReader(_ChunkReader(chunks, source), _READ))


def read_unpacked(
    path: str | os.PathLike[str], *, max_bytes: int, where: str | None = None
) -> bytes:
    """A whole (small) document's bytes, gzip layers undone, at most ``max_bytes`` of them."""
    with open(path, "rb") as source:
        label = where or f"file {os.path.basename(path)}"
        return b"".join(unpacked_chunks(file_chunks(source), max_bytes=max_bytes, where=label))


def unpacked_check(
    path: str | os.PathLike[str],
    *,
    max_bytes: int,
    max_line: int | None = None,
    where: str | None = None,
) -> None:
    """Read a file through to its end within the limits, keeping nothing: raises ``TooLarge``
    or ``BadCompression`` before an importer stores any of it."""
    with open(path, "rb") as source:
        label = where or f"file {os.path.basename(path)}"
        for _ in unpacked_chunks(
            file_chunks(source), max_bytes=max_bytes, max_line=max_line, where=label
        ):
            pass
