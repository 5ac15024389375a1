"""Memoizing a function of one text by the text's digest, not the text.

``functools.lru_cache`` keeps every argument it has seen as a key: a cache of 4,096 trace texts
holds 4,096 tool results, each up to megabytes, for the life of a web or worker process. Here
a text longer than ``SHORT`` characters is keyed by a 16-byte BLAKE2b digest (as
``pii.ScanMemo`` keys a pass's scans), so a full cache holds at most ``SHORT`` characters per
entry besides its results. A shorter text is its own key: Python keeps a string's hash, so
calling again with the same string costs no rehash, where a digest is computed per call.

Thread-safe: gunicorn's threaded workers call these from several threads.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import wraps
from typing import TypeVar

R = TypeVar("R")
SHORT = 4096


def text_digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def digest_lru(maxsize: int) -> Callable[[Callable[[str], R]], Callable[[str], R]]:
    """Like ``lru_cache(maxsize)`` for a function of one ``str``, keyed by the text's digest.

    >>> calls = []
    >>> @digest_lru(2)
    ... def shout(text: str) -> str:
    ...     calls.append(text)
    ...     return text.upper()
    >>> shout("a"), shout("b"), shout("a"), shout("c"), shout("b")
    ('A', 'B', 'A', 'C', 'B')
    >>> calls  # "b" was the least recently used when "c" came in
    ['a', 'b', 'c', 'b']
    """

    def decorate(function: Callable[[str], R]) -> Callable[[str], R]:
        results: OrderedDict[str | bytes, R] = OrderedDict()
        lock = threading.Lock()

        @wraps(function)
        def memoized(text: str) -> R:
            key = text if len(text) <= SHORT else text_digest(text)
            with lock:
                if key in results:
                    results.move_to_end(key)
                    return results[key]
            result = function(text)  # outside the lock: two threads may compute the same once
            with lock:
                results[key] = result
                if len(results) > maxsize:
                    results.popitem(last=False)
            return result

        return memoized

    return decorate
