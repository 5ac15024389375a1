"""Made-up text for the benchmarks that search: a vocabulary and Zipf-like prose drawn from it."""

from __future__ import annotations

import random


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    letters = "abcdefghijklmnoprstuvz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(size)]


def words(rng: random.Random, vocab: list[str], n: int) -> str:
    # Zipf-like: low indexes are far more frequent, as in real text.
    return " ".join(vocab[min(int(rng.paretovariate(1.1)) - 1, len(vocab) - 1)] for _ in range(n))
