"""``{{ hit.segments|snippet }}``: a search snippet with its hits marked, escaped."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from sessions import search

register = template.Library()


@register.filter
def snippet(segments: search.Segments) -> SafeString:
    return search.snippet_html(segments)
