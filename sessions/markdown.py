"""Trace text rendered as Markdown, safely: the one place that turns text into HTML.

Trace content is hostile. markdown-it-py runs with raw HTML disabled (a `<script>` in a message
comes out as text), then nh3 (Ammonia) keeps only the tags and attributes below, so a bug in
either still cannot let markup through. Links get rel="noopener noreferrer nofollow"; images are
not rendered (a trace must not make the browser fetch anything).

    >>> markdown_html("**bold** <b>x</b>")
    '<p><strong>bold</strong> &lt;b&gt;x&lt;/b&gt;</p>\\n'
"""

from __future__ import annotations

import re
from functools import lru_cache

import nh3
from markdown_it import MarkdownIt

from privacy.detect import pii

TAGS = {
    "p", "br", "hr", "strong", "em", "del", "s", "code", "pre", "blockquote", "a",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}
URL_SCHEMES = {"http", "https", "mailto"}


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # "js-default": CommonMark plus tables and strikethrough, with html off and linkify off.
    return MarkdownIt("js-default", {"html": False, "breaks": True}).disable("image")


# A masked value (privacy/detect/pii.py: "[cpf ***.***.***-79]") is text, not emphasis.
_MASK = re.compile(r"\[(?:" + "|".join(pii.KINDS) + r") [^\]\n]*\]")


def mask_spans(text: str) -> list[tuple[int, int]]:
    """Where masked values are in ``text``, as [start, end) pairs: their stars are no markup.

    >>> mask_spans("CPF [cpf ***-79], **bold**")
    [(4, 16)]
    """
    return [m.span() for m in _MASK.finditer(text)]


def _protect_masks(text: str) -> str:
    r"""Backslash the markup characters inside masked values so they render as written.

    >>> print(_protect_masks("CPF [cpf ***-79], **bold**"))
    CPF [cpf \*\*\*-79], **bold**
    """
    return _MASK.sub(lambda m: re.sub(r"([*_`~\\])", r"\\\1", m.group(0)), text)


def markdown_html(text: str) -> str:
    """Sanitized HTML for a Markdown text; safe to mark safe."""
    if not text:
        return ""
    rendered = _parser().render(_protect_masks(text))
    return nh3.clean(
        rendered,
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )
