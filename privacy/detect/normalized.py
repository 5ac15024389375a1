"""A normalized copy of a text (NFKC, zero-width characters dropped) with the map from its
positions back to the original: what every detector of ``pii.scan`` reads.

    >>> norm = Normalized("CPF \uff15\uff12\uff19")  # full-width digits
    >>> norm.text, norm.span(4, 7)
    ('CPF 529', (4, 7))
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e")
_NEEDS_WORK = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e]")


class Normalized:
    """A normalized copy of a text plus the map from its positions back to the original.

    The copy is built from pieces: a run of characters kept as they are (identity), or one
    original character replaced by its NFKC form (possibly empty for zero-width characters).
    """

    def __init__(self, text: str) -> None:
        self.original = text
        if text.isascii() or (
            unicodedata.is_normalized("NFKC", text) and not _NEEDS_WORK.search(text)
        ):
            self.text = text
            self._norm_starts: list[int] = [0]
            self._orig_starts: list[int] = [0]
            self._identity: list[bool] = [True]
            return
        parts: list[str] = []
        norm_starts: list[int] = []
        orig_starts: list[int] = []
        identity: list[bool] = []
        norm_pos = 0
        run_start = 0
        for index, char in enumerate(text):
            if char.isascii():
                continue
            replacement = "" if char in _ZERO_WIDTH else unicodedata.normalize("NFKC", char)
            if replacement == char:
                continue
            if run_start < index:
                parts.append(text[run_start:index])
                norm_starts.append(norm_pos)
                orig_starts.append(run_start)
                identity.append(True)
                norm_pos += index - run_start
            parts.append(replacement)
            norm_starts.append(norm_pos)
            orig_starts.append(index)
            identity.append(False)
            norm_pos += len(replacement)
            run_start = index + 1
        if run_start < len(text) or not parts:
            parts.append(text[run_start:])
            norm_starts.append(norm_pos)
            orig_starts.append(run_start)
            identity.append(True)
        self.text = "".join(parts)
        self._norm_starts = norm_starts
        self._orig_starts = orig_starts
        self._identity = identity

    def _piece(self, pos: int) -> int:
        index = bisect_right(self._norm_starts, pos) - 1
        # Skip empty pieces (zero-width characters) that share a start with the next one.
        while index + 1 < len(self._norm_starts) and self._norm_starts[index + 1] == pos:
            index += 1
        return max(index, 0)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Original (start, end) of the normalized slice [start, end)."""
        first = self._piece(start)
        if self._identity[first]:
            orig_start = self._orig_starts[first] + (start - self._norm_starts[first])
        else:
            orig_start = self._orig_starts[first]
        last = self._piece(end - 1)
        if self._identity[last]:
            orig_end = self._orig_starts[last] + (end - 1 - self._norm_starts[last]) + 1
        else:
            orig_end = self._orig_starts[last] + 1
        return orig_start, orig_end
