"""Filters for showing trace content.

Everything returns plain text, so autoescape does the rest, except `markdown`: it is the one
filter that turns trace text into HTML, sanitized (sessions/markdown.py). It takes plain text,
so other text filters compose before it: `{{ body|clip|markdown }}`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django import template
from django.contrib.humanize.templatetags.humanize import naturaltime
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from privacy import masking
from sessions import selectors
from sessions.markdown import markdown_html

register = template.Library()


@register.filter
def is_live(session: Any) -> bool:
    """``{% if s|is_live %}``: data reached the session in the last minute."""
    return selectors.session_is_live(session)


@register.filter
def markdown(text: str | None) -> SafeString:
    """Trace text as sanitized Markdown HTML. Give it plain text (not already escaped)."""
    return mark_safe(markdown_html(str(text or "")))  # noqa: S308 - sanitized by nh3


@register.filter
def num(value: Any) -> str:
    """The one number format: thousands separated by commas, an en dash when missing."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "\u2013"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


@register.filter
def usd(value: Any, signed: bool = False) -> str:
    """Dollars with cents ("$12.34"), signed for a difference (a plus, or a minus sign), an
    en dash when missing: an unpriced model is never shown as $0.

    >>> usd(12.345), usd(0.5, True), usd(-1.2, True) == "\\u2212$1.20", usd(None) == "\\u2013"
    ('$12.35', '+$0.50', True, True)
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "\u2013"
    sign = "\u2212" if value < 0 else ("+" if signed and value > 0 else "")
    return f"{sign}${abs(value):,.2f}"


@register.filter
def tool_name(names: dict[str, str] | None, tool_use_id: str | None) -> str:
    """The name of the tool a tool_result answers, from the page's id -> name map."""
    if not names or not tool_use_id:
        return ""
    return names.get(str(tool_use_id), "")


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
def duration(seconds: float | None) -> str:
    """A span of time as a person says it: "under a second", "8 s", "3 min 20 s", "2 h 5 min"."""
    if not isinstance(seconds, int | float) or seconds < 1:
        return "under a second"
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, rest = divmod(whole // 60, 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"


@register.filter
def tokens(value: int | None) -> str:
    if not isinstance(value, int):
        return "\u2013"  # en dash: not reported
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return str(value)


@register.simple_tag
def sort_link(query: str, current: str, key: str) -> str:
    """The URL query for sorting by `key`: descending first, toggled when already sorted."""
    direction = key if current == f"-{key}" else f"-{key}"
    prefix = f"{query}&" if query else ""
    return f"?{prefix}sort={direction}"


@register.simple_tag
def sort_state(current: str, key: str) -> str:
    """aria-sort value for a column header."""
    if current == key:
        return "ascending"
    if current == f"-{key}":
        return "descending"
    return "none"


@register.filter
def percent(value: float | None, digits: int = 0) -> str:
    if not isinstance(value, int | float):
        return "\u2013"  # en dash: missing (unset, or not computed yet)
    return f"{100 * value:.{digits}f}%"


CLIP_CHARS = 1500


@register.filter
def clip(text: str, limit: int = CLIP_CHARS) -> str:
    """The start of a long text; the page offers the rest on demand."""
    return text if len(text) <= limit else text[:limit]


@register.filter
def is_clipped(text: str, limit: int = CLIP_CHARS) -> bool:
    return len(text) > limit


@register.filter
def block_text(block: dict[str, Any]) -> str:
    """The readable body of any block, for the full-text view."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_result":
        return result_text(block)
    if kind == "thinking":
        return str(block.get("thinking", ""))
    if kind == "compaction":
        return str(block.get("content", ""))
    if kind == "tool_use":
        return pretty_json(block.get("input", {}))
    return pretty_json(block)


# --- masking: the one place templates turn trace text into what a reader may see ----------


@register.filter
def masked(text: Any) -> str:
    """Trace text with every detected personal value masked (raw stays stored).

    Apply it first, before clipping or markdown: ``{{ body|masked|clip }}``. ``None`` is "".
    """
    if text is None:
        return ""
    return masking.text_mask(text if isinstance(text, str) else str(text))


@register.filter
def masked_in(text: Any, session_id: int) -> str:
    """``masked``, with the first names the text's own session found masked alone too, on a
    page of many sessions' texts: ``{{ a.title|masked_in:a.session_id }}``."""
    return masking.session_names_mask(masked(text), session_id=session_id)


@register.filter
def session_label(session: Any) -> str:
    """What a page calls a session: its title, else its external id, masked (both are the
    client's text: the first prompt, an id that may hold a customer's document), with the
    names its session found masked alone too."""
    masked_text = masking.text_mask(session.title or session.external_id)
    return masking.session_names_mask(masked_text, session_id=session.pk)


@register.inclusion_tag("sessions/_reveal.html", takes_context=True)
def reveal_controls(context: template.Context, kind: str, text: Any, *ids: Any) -> dict[str, Any]:
    """Beside a masked text: one reveal form per masked value, for privacy reviewers only.

    ``{% reveal_controls "message" raw m.session_id m.seq i %}`` names the target
    ``message:<session>:<seq>:<block>`` that ``privacy/reveal.py`` reads back.
    """
    if not context.get("can_reveal"):
        return {"can_reveal": False}
    found = masking.occurrences(text if isinstance(text, str) else str(text))
    return {
        "can_reveal": bool(found),
        "occurrences": found,
        "target": ":".join([kind, *(str(i) for i in ids)]),
        "csrf_token": context.get("csrf_token"),
    }


TIME_FORMATS = {
    "minutes": "%Y-%m-%d %H:%M",
    "seconds": "%Y-%m-%d %H:%M:%S",
    "clock": "%H:%M:%S",
    "date": "%Y-%m-%d",
}


@register.filter
def when(value: datetime | None, style: str = "minutes") -> str:
    """A moment as ``<time>``: readable without JavaScript in UTC with the zone said, and
    rewritten by static/js/times.js into the viewer's own zone and its abbreviation.

    ``style``: ``minutes`` (default), ``seconds``, ``clock`` (the time of day, for a list
    of one day's messages), ``date``, or ``ago`` ("3 hours ago", the
    exact moment in its title). Empty for no value, so ``|when|default:"never"`` works.
    """
    if not isinstance(value, datetime):
        return ""
    utc = value.astimezone(UTC) if timezone.is_aware(value) else value.replace(tzinfo=UTC)
    iso = utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    if style == "ago":
        exact = f"{utc:%Y-%m-%d %H:%M:%S} UTC"
        return format_html(
            '<time datetime="{}" data-local="ago" title="{}">{}</time>',
            iso,
            exact,
            naturaltime(value),
        )
    shown = f"{utc.strftime(TIME_FORMATS.get(style, TIME_FORMATS['minutes']))} UTC"
    if style == "date":
        shown = utc.strftime(TIME_FORMATS["date"])  # a day has no zone worth naming
    if style == "clock":  # the day is in the title
        exact = f"{utc:%Y-%m-%d %H:%M:%S} UTC"
        return format_html(
            '<time datetime="{}" data-local="clock" title="{}">{}</time>', iso, exact, shown
        )
    return format_html('<time datetime="{}" data-local="{}">{}</time>', iso, style, shown)


_FACT_KINDS = {"path": "file", "next_step": "next step"}
_NEEDED_HOW = {
    "reread": "read again",
    "reedit": "edited again",
    "rerun": "run again",
    "repeated_by_user": "the user said it again",
    "error_again": "the same error came back",
}


@register.filter
def fact_kind(kind: str) -> str:
    """A fact's kind as the API names it (``path`` is stored for a file)."""
    return _FACT_KINDS.get(kind, kind)


@register.filter
def said_at(table: dict[int, list[Any]] | None, seq: int) -> list[Any]:
    """``{{ said_here|said_at:m.seq }}``: the facts the message at ``seq`` said."""
    return table.get(seq, []) if table else []


@register.filter
def needed_how(how: str) -> str:
    """How a lost fact was needed again, in words."""
    return _NEEDED_HOW.get(how, how)
