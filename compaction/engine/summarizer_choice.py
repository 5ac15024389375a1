"""The summarizer a policy names, built: the offline one here, the two that call the Anthropic
API from :mod:`compaction.engine.anthropic`, imported only when a policy names one, so the
offline engine never loads the SDK. (Apart from both, so neither imports the other back.)
"""

from __future__ import annotations

from typing import Any

from compaction.engine.summarizers import ExtractiveSummarizer, Summarizer


def summarizer_from_name(name: str, **options: Any) -> Summarizer:
    """The summarizer a policy names: ``extractive``, ``anthropic`` or ``server_compaction``.

    >>> summarizer_from_name("extractive").name
    'extractive'
    """
    if name == "extractive":
        return ExtractiveSummarizer(**options)
    if name in ("anthropic", "server_compaction"):
        # the only door to the network; imported here so the offline engine never loads it
        from compaction.engine import anthropic

        if name == "anthropic":
            return anthropic.AnthropicSummarizer(**options)
        return anthropic.ServerCompactionSummarizer(**options)
    raise ValueError(f"policy.summarizer: unknown summarizer {name!r}")
