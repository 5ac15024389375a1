"""How every importer opens a trace file: gzip layers undone, the import limits applied.

The limits are the settings ``IMPORT_MAX_BYTES`` (the whole file, counted after each gzip
layer) and ``IMPORT_MAX_RECORD_BYTES`` (one line, or one whole JSON document: what a reader
holds at once); the work is ``compaction.engine.unpack``'s. Both errors are ``OSError``s, so an
importer's "cannot read" path reports them with the limit named.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from django.conf import settings

from compaction.engine import unpack


def trace_open(path: Path) -> BinaryIO:
    """A JSON Lines file as a stream of bytes, no line past the record limit."""
    return unpack.open_unpacked(
        path, max_bytes=settings.IMPORT_MAX_BYTES, max_line=settings.IMPORT_MAX_RECORD_BYTES
    )


def trace_read(path: Path) -> bytes:
    """A whole JSON document's bytes (read at once, so within the record limit)."""
    return unpack.read_unpacked(path, max_bytes=settings.IMPORT_MAX_RECORD_BYTES)


def trace_check(path: Path, *, document: bool = False) -> str | None:
    """Why ``path`` is refused before any of it is stored (too large at some layer, a line or
    document past the record limit, broken gzip), or None. Reads it through, keeps nothing."""
    record = settings.IMPORT_MAX_RECORD_BYTES
    try:
        unpack.unpacked_check(
            path,
            max_bytes=record if document else settings.IMPORT_MAX_BYTES,
            max_line=None if document else record,
        )
    except FileNotFoundError:
        return None  # the importer says "no such file" in its own words
    except (unpack.TooLarge, unpack.BadCompression) as exc:
        return f"refused: {exc}; nothing of this file was stored"
    except OSError as exc:
        return f"cannot read ({exc})"
    return None
