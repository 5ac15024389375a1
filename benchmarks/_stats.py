"""What the real-trace benchmarks report beside a proportion: its 90 % Wilson interval."""

from __future__ import annotations

import math

Z90 = 1.6449


def wilson(hits: int, n: int) -> tuple[float, float] | None:
    """The 90 % Wilson interval of hits / n (None when n is 0).

    >>> wilson(9, 10)
    (0.652, 0.977)
    """
    if n == 0:
        return None
    p = hits / n
    centre = p + Z90**2 / (2 * n)
    spread = Z90 * math.sqrt(p * (1 - p) / n + Z90**2 / (4 * n * n))
    scale = 1 + Z90**2 / n
    return (round((centre - spread) / scale, 3), round((centre + spread) / scale, 3))
