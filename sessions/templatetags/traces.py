"""Filters for showing trace content. Everything returns plain text; autoescape does the rest."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@register.filter
def result_text(block: dict[str, Any]) -> str:
    """The body of a tool_result, whether sent as a string or as a list of blocks."""
    body = block.get("content", "")
    if isinstance(body, str):
        return body
    parts = []
    for item in body:
        if isinstance(item, dict) and item.get("type") == "text":
            parts.append(str(item.get("text", "")))
        else:
            parts.append(json.dumps(item, ensure_ascii=False))
    return "\n".join(parts)


@register.filter
def char_size(text: str) -> str:
    n = len(text)
    if n < 1000:
        return f"{n} chars"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k chars"
    return f"{n / 1_000_000:.1f}M chars"


@register.filter
def tokens(value: int | None) -> str:
    if value is None:
        return "\u2013"  # en dash
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return str(value)
