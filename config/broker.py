"""The embedded broker of ``make demo``: kombu's filesystem transport, made safe for a web
process and a worker that share one folder.

kombu writes a message by creating ``<time>_<uuid>.<queue>.msg`` and then writing into it, while
a worker lists the folder, moves each ``.msg`` file away and parses it. A worker that lists the
folder between the two steps reads an empty file, and the ``JSONDecodeError`` stops it for good
("Unrecoverable error"), with every later task left queued. Here a message is written under a
name the worker does not read, then renamed in one step, and a file that still does not parse
(left half-written by a process killed mid-write) is set aside with a warning instead of
stopping the worker. The redis and amqp brokers are untouched.
"""

from __future__ import annotations

import logging
import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

logger = logging.getLogger("sawtooth.broker")

# What a message is called while it is being written: not ".<queue>.msg", so no worker reads it.
WRITING_SUFFIX = ".writing"


class Channel(filesystem.Channel):
    # kombu's filesystem channel's own signature (its stubs differ from the base channel's)
    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        writing = final + WRITING_SUFFIX
        try:
            with open(writing, "wb") as out:
                out.write(str_to_bytes(dumps(payload)))
            os.replace(writing, final)  # atomic: a reader sees all of it or nothing
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        while True:
            try:
                return super()._get(queue)
            except ValueError as exc:  # json.JSONDecodeError: a file left half-written
                logger.warning("broker: skipped a %s message that does not parse (%s)", queue, exc)


class Transport(filesystem.Transport):
    Channel = Channel


def register() -> None:
    """Make ``filesystem://`` broker URLs use this transport (kombu resolves the alias)."""
    TRANSPORT_ALIASES["filesystem"] = f"{__name__}:Transport"
