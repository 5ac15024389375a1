"""Search in trace content: message text, tool names, inputs and results, compaction summaries,
and session titles, ids, agents, models and metadata.

Search reads masked text only: ``search_text`` on messages, compaction events and sessions is
what a reader sees, with every personal value masked (``[cpf ***.***.***-79]``). The findings
step of the analysis pass writes it (it has just scanned those strings; ``*_search_text``
below), so a message is searchable once its session is analysed, and ``unsearchable_count``
says how many are not yet. A search can therefore never find, confirm or count a person by a
document, a phone, an e-mail or a name the detector knows, whoever asks, and its snippets show
masks only. A query that is itself such an identifier is refused, saying why
(``masking.query_refusal``): privacy reviewers find a person under Subject requests, audited.

On PostgreSQL: full-text search in the 'simple' configuration (no stemming, no stop words, so
``charge_customer`` and "não altere" match as written) over stored, generated tsvector columns
with GIN indexes (migration ``0009_search_masked``; ``search_sql.py`` holds the SQL and says
why), whose documents also hold the parts and suffixes of paths and dotted names, so ``api.py``
finds ``billing/api.py``. Snippets come from ``ts_headline``. On SQLite (the embedded demo):
``icontains`` and snippets cut in Python.

Snippets are hostile trace text. ``ts_headline`` is asked to mark hits with two private-use
characters (stripped from the text first); ``snippet_segments`` splits on them and
``snippet_html`` is the ONE place that turns segments into markup, escaping every piece. Wrap
that function (e.g. to mask personal data per segment) and every snippet follows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import BooleanField, F, Func, Q, QuerySet
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from privacy import masking
from privacy.detect import pii
from sessions import search_sql as sql
from sessions.models import AgentSession, CompactionEvent, Message

START, STOP = "\ue000", "\ue001"
# ts_headline drops what its parser takes for HTML tags; angle brackets are swapped for these
# on the way in and back on the way out, so a snippet shows the text as it was.
LT, GT = "\ue002", "\ue003"
_MARKERS = re.compile(f"[{START}{STOP}{LT}{GT}]")
HEADLINE_OPTIONS = (
    f"StartSel={START}, StopSel={STOP}, MaxWords=28, MinWords=10, MaxFragments=2, "
    'FragmentDelimiter=" … "'
)
WINDOW_BEFORE, WINDOW_AFTER = 300, 900
PLAIN_SNIPPET_CHARS = 220
_IDENTIFIER = re.compile(r"^\S*[./_:\\\-]\S*$")
_WORD = re.compile(r"[\w./:\\\-]+", re.UNICODE)

Segments = tuple[tuple[str, bool], ...]
Detect = Callable[[str], list[pii.Detection]]
# "charge_customer" is the phrase charge <-> customer: one mark, not two around the "_".
_JOINED_MARKS = re.compile(f"{STOP}((?:[^\\s\\w{START}{STOP}]|_){{1,3}}){START}")


@dataclass(frozen=True)
class SearchHit:
    """One place a query matched: a message, a compaction summary, or a session's own fields."""

    kind: str  # "message" | "summary" | "session"
    session: AgentSession
    seq: int | None
    role: str
    segments: Segments

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.segments)

    @property
    def highlights(self) -> list[tuple[int, int]]:
        """[start, end) offsets of the marked parts in ``text``."""
        spans, at = [], 0
        for text, marked in self.segments:
            if marked:
                spans.append((at, at + len(text)))
            at += len(text)
        return spans


COUNT_CAP = 1000


@dataclass(frozen=True)
class SearchPage:
    hits: list[SearchHit]
    count: int
    count_capped: bool = False  # at least ``count`` matches; counting stopped there


# --- rendering: the one function that makes snippet markup ----------------------------------


def snippet_segments(marked: str) -> Segments:
    """Split text carrying START/STOP markers into (text, is_hit) pieces.

    >>> snippet_segments(f"a {START}b{STOP} c")
    (('a ', False), ('b', True), (' c', False))
    """
    out: list[tuple[str, bool]] = []
    hit = False
    for piece in re.split(f"([{START}{STOP}])", marked):
        if piece == START:
            hit = True
        elif piece == STOP:
            hit = False
        elif piece:
            out.append((piece, hit))
    return tuple(out)


# A line break or tab written as an escape (``\n`` in a tool's JSON output) reads as the
# space a real one becomes in a snippet; an escaped backslash before the letter (``C:\\new``)
# stays. One character class after a fixed lookbehind: linear.
_ESCAPED_BREAK = re.compile(r"(?<!\\)\\[nrt]")


def snippet_text(text: str) -> str:
    r"""A snippet's text as a reader sees it: escaped line breaks read as spaces.

    >>> snippet_text(r'{"body": "## Pix\nRefund"}'), snippet_text(r"C:\\new")
    ('{"body": "## Pix Refund"}', 'C:\\\\new')
    """
    return _ESCAPED_BREAK.sub(" ", text)


def snippet_html(segments: Segments) -> SafeString:
    """Escaped snippet markup: hits in ``<mark>``, everything else as text; personal data
    masked in each piece (a search for a CPF highlights its mask, never the number)."""
    parts = [
        f"<mark>{escape(snippet_text(masking.text_mask(text)))}</mark>"
        if marked
        else str(escape(snippet_text(masking.text_mask(text))))
        for text, marked in segments
    ]
    return mark_safe("".join(parts))  # noqa: S308 - every piece above is escaped


# --- text of a message -------------------------------------------------------------------


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def message_search_text(content: Any, *, detect: Detect = pii.scan) -> str:
    """What search reads of a message: its readable words (:func:`content_text`), every
    string masked first. ``detect``: the pass's scan memo, so nothing is scanned twice."""
    return content_text(pii.mask_json(content, detect=detect))


def summary_search_text(summary: str, *, detect: Detect = pii.scan) -> str:
    return pii.mask(summary, detect(summary))


def session_search_text(session: AgentSession, *, detect: Detect = pii.scan) -> str:
    """A session's own fields as search reads them: title, external id, agent, model and the
    metadata's strings, masked."""
    fields = [session.title, session.external_id, session.agent, session.model]
    fields += [text for _, text in pii.json_strings(session.metadata)]
    return " · ".join(pii.mask(text, detect(text)) for text in fields if text)


def search_texts_store(
    *,
    session: AgentSession,
    messages: dict[int, str],
    events: Sequence[CompactionEvent],
    detect: Detect = pii.scan,
) -> None:
    """Write the search text of ``messages`` (pk: text), of ``events`` and of the session, where
    it changed. Idempotent: a concurrent pass writes the same texts."""
    _message_texts_write(messages)
    changed = []
    for event in events:
        text = summary_search_text(event.summary, detect=detect)
        if text != event.search_text:
            event.search_text = text
            changed.append(event)
    CompactionEvent.objects.bulk_update(changed, ["search_text"], batch_size=500)
    text = session_search_text(session, detect=detect)
    if text != session.search_text:
        session.search_text = text
        AgentSession.objects.filter(pk=session.pk).update(search_text=text)


def messages_search_refresh(pks: Iterable[int]) -> None:
    """After content was rewritten in place (a redaction, an erasure): search it as it is now."""
    rows = Message.objects.filter(pk__in=list(pks)).only("pk", "content")
    _message_texts_write({message.pk: message_search_text(message.content) for message in rows})


# Rows per UPDATE: a pass's messages go in a few statements, each well under a megabyte or two
# of text at the indexed sizes.
_WRITE_ROWS = 500


def _message_texts_write(texts: dict[int, str]) -> None:
    """Store messages' search texts (pk: text). On PostgreSQL one UPDATE joined to the two
    arrays per ``_WRITE_ROWS``: ``bulk_update``'s CASE of one branch per row cost more Python
    to build, and more text to send, than the database spent on the rows (the search
    documents included)."""
    pks = sorted(texts)
    if connection.vendor != "postgresql":
        rows = [Message(pk=pk, search_text=texts[pk]) for pk in pks]
        Message.objects.bulk_update(rows, ["search_text"], batch_size=_WRITE_ROWS)
        return
    table = connection.ops.quote_name(Message._meta.db_table)
    with connection.cursor() as cursor:
        for start in range(0, len(pks), _WRITE_ROWS):
            chunk = pks[start : start + _WRITE_ROWS]
            cursor.execute(
                f"UPDATE {table} AS m SET search_text = v.text"  # noqa: S608 (a model's table)
                " FROM unnest(%s::bigint[], %s::text[]) AS v(id, text) WHERE m.id = v.id",
                [chunk, [texts[pk] for pk in chunk]],
            )


def unsearchable_count(sessions: QuerySet[AgentSession]) -> int:
    """Messages of ``sessions`` that search cannot see yet (their analysis has not run)."""
    return Message.objects.filter(
        session__in=sessions.order_by().values("pk"), search_text__isnull=True
    ).count()


def content_text(blocks: Any) -> str:
    """The searchable words of content blocks as a reader sees them: texts, thinking, tool names
    and input values, tool results, compaction summaries (block types and ids left out)."""
    if isinstance(blocks, str):
        return blocks
    parts: list[str] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_use":
            parts.append(f"{block.get('name', '')}({' '.join(_strings(block.get('input')))})")
        elif kind == "tool_result":
            parts.extend(_strings(block.get("content")))
        else:
            parts.extend(
                _strings({k: v for k, v in block.items() if k not in ("type", "id", "source")})
            )
    return " ".join(block_indexed(p) for p in parts if p)


# A block's text is indexed whole up to this; a longer one (a 20 KB tool output) keeps its
# head and tail and, from the middle, the names a reader searches for (paths, identifiers,
# error names), so it costs the parser what it is worth.
BLOCK_HEAD_CHARS, BLOCK_TAIL_CHARS = 3000, 1000
BLOCK_NAMES_MAX = 400
# Runs of word characters and path separators, then a name: a separator between two word
# characters (billing/api.py, charge_customer, foo.bar) or a lower-to-upper change
# (QuotaExceededError). Tokenised by one character class and plain words skipped by string
# methods: a pattern that looks for the separator itself backtracks at every position (2 ms
# for a 20 KB block, which each analysis pass pays per long tool output).
_RUN = re.compile(r"[\w./:\\\-]+")
_NAME = re.compile(r"\w[./_:\\\-]\w|[a-z][A-Z]")


def _middle_names(middle: str) -> list[str]:
    found: dict[str, None] = {}
    # Each distinct run once, in the order it first appears: a tool's output repeats its words.
    for run in dict.fromkeys(_RUN.findall(middle)):
        if run.isdigit() or (run.isalpha() and (run.islower() or run.istitle())):
            continue
        name = run.strip(".:-")
        if len(name) >= 3 and _NAME.search(name):
            found[name] = None
            if len(found) >= BLOCK_NAMES_MAX:
                break
    return list(found)


def block_indexed(text: str) -> str:
    """What search indexes of one block's text: all of it, or for a long one its head, the
    distinct names of its middle (in order, at most BLOCK_NAMES_MAX) and its tail."""
    limit = BLOCK_HEAD_CHARS + BLOCK_TAIL_CHARS
    if len(text) <= limit:
        return text
    names = _middle_names(text[BLOCK_HEAD_CHARS:-BLOCK_TAIL_CHARS])
    return " ".join((text[:BLOCK_HEAD_CHARS], " ".join(names), text[-BLOCK_TAIL_CHARS:]))


# --- matching ----------------------------------------------------------------------------


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


def looks_like_identifier(q: str) -> bool:
    """A path, dotted name or snake/kebab identifier: matched as a substring too.

    >>> looks_like_identifier("api.py"), looks_like_identifier("lost constraint")
    (True, False)
    """
    return len(q) >= 3 and bool(_IDENTIFIER.match(q))


_QUERY_PART = re.compile(r'(-?)"([^"]+)"|(-?)(\S+)')


def _like_all(field: str, q: str) -> Q:
    """The SQLite fallback: every word or "quoted phrase" as a substring, ``-word`` excluded."""
    match = Q(**{f"{field}__isnull": False})
    for neg_phrase, phrase, neg_word, word in _QUERY_PART.findall(q):
        part = Q(**{f"{field}__icontains": phrase or word})
        match &= ~part if neg_phrase or neg_word else part
    return match


class _Sql(Func):
    """A fixed SQL template over named columns (compiled with their aliases) and parameters."""

    def __init__(
        self, template: str, *, params: tuple[Any, ...] = (), output_field: Any = None, **cols: str
    ) -> None:
        self.sql_template, self.names, self.params = template, list(cols), params
        super().__init__(*[F(c) for c in cols.values()], output_field=output_field)

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:  # type: ignore[override]
        compiled, params = {}, []
        for name, expression in zip(self.names, self.get_source_expressions(), strict=True):
            sql_text, sql_params = compiler.compile(expression)
            compiled[name] = sql_text
            params.extend(sql_params)
        return self.sql_template.format(**compiled, q="%s"), [*params, *self.params]


class _DocumentMatch(_Sql):
    """``search_document @@ query``. The column is the database's own (generated, not
    modelled: see ``search_sql.py``), so it is addressed beside the text it is made from,
    under the same table alias."""

    def __init__(self, q: str, *, beside: str) -> None:
        super().__init__(
            f"{{document}} @@ {sql.QUERY}",
            params=(q,),
            output_field=BooleanField(),
            document=beside,
        )

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:  # type: ignore[override]
        text, params = super().as_sql(compiler, connection, **extra)
        column = compiler.compile(self.get_source_expressions()[0])[0]
        alias = column.rsplit(".", 1)[0]
        return text.replace(column, f'{alias}."{sql.COLUMN}"', 1), params


def _message_match(q: str) -> Q:
    if not is_postgres():
        return _like_all("search_text", q)
    return Q(_DocumentMatch(q, beside="search_text"))


def _summary_match(q: str) -> Q:
    if not is_postgres():
        return _like_all("search_text", q)
    return Q(_DocumentMatch(q, beside="search_text"))


def _session_match(q: str) -> Q:
    # Sessions are few beside messages and their own fields short: substrings are cheap to
    # scan, and catch words inside paths and branch names ("tarifa" in "feature/tarifa-nova").
    return Q(search_text__icontains=q)


def query_clean(q: str) -> str:
    """The query as searched: trimmed, without NUL (PostgreSQL text cannot hold it)."""
    return q.replace("\x00", "").strip()


def sessions_matching(sessions: QuerySet[AgentSession], q: str) -> QuerySet[AgentSession]:
    """Sessions whose id, agent, title, metadata, messages or summaries match ``q``."""
    q = query_clean(q)
    # Uncorrelated IN subqueries: each is one GIN index lookup, hashed, whatever the list's
    # other filters, where a correlated EXISTS could be re-run for every session.
    messages = Message.objects.filter(_message_match(q)).order_by().values("session_id")
    summaries = CompactionEvent.objects.filter(_summary_match(q)).order_by().values("session_id")
    return sessions.filter(_session_match(q) | Q(pk__in=messages) | Q(pk__in=summaries))


# --- snippets ----------------------------------------------------------------------------


def _terms(q: str) -> list[str]:
    words = [w.strip("\"'-") for w in _WORD.findall(q.lower())]
    return [w for w in words if w and w not in ("or", "and")]


def _window(text: str, q: str) -> str:
    """A bounded stretch of ``text`` around the first hit, so long tool results stay cheap."""
    lowered = text.lower()
    found = [i for i in (lowered.find(t) for t in [q.lower(), *_terms(q)]) if i >= 0]
    at = min(found) if found else 0
    start = max(0, at - WINDOW_BEFORE)
    cut = text[start : at + WINDOW_AFTER]
    return ("…" if start else "") + cut + ("…" if at + WINDOW_AFTER < len(text) else "")


def _plain_marks(text: str, q: str) -> str:
    """Mark every case-insensitive occurrence of the query (or of its words) in a short clip."""
    needles = [q] if looks_like_identifier(q) or not _terms(q) else _terms(q)
    pattern = re.compile("|".join(re.escape(n) for n in needles if n), re.IGNORECASE)
    first = pattern.search(text)
    at = first.start() if first else 0
    start = max(0, at - PLAIN_SNIPPET_CHARS // 3)
    clip = text[start : start + PLAIN_SNIPPET_CHARS]
    marked = pattern.sub(lambda m: f"{START}{m.group(0)}{STOP}", clip)
    return (
        ("…" if start else "") + marked + ("…" if start + PLAIN_SNIPPET_CHARS < len(text) else "")
    )


def headlines(texts: list[str], q: str) -> list[Segments]:
    """Snippets for each text, with the query's hits marked (``ts_headline`` on PostgreSQL)."""
    clean = [_MARKERS.sub("", t) for t in texts]
    windows = [_window(t, q) for t in clean]
    if not texts:
        return []
    if not is_postgres():
        return [snippet_segments(_plain_marks(w, q)) for w in windows]
    shielded = [w.replace("<", LT).replace(">", GT) for w in windows]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ts_headline('simple'::regconfig, t, websearch_to_tsquery('simple', %s), %s) "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS x(t, n) ORDER BY n",
            [q, HEADLINE_OPTIONS, shielded],
        )
        marked = [
            _JOINED_MARKS.sub(r"\1", row[0]).replace(LT, "<").replace(GT, ">")
            for row in cursor.fetchall()
        ]
    out = []
    for window, headline in zip(windows, marked, strict=True):
        if START not in headline:
            # Matched as a substring (or only on a block type): mark it in Python.
            headline = _plain_marks(window, q)
        out.append(snippet_segments(headline))
    return out


def _names_masked(texts: list[tuple[AgentSession, str | None]]) -> list[str]:
    """Each hit's stored text with the names its session's scope knows masked alone (a found
    person's surname in the project, first name in the session): the index was masked when
    its message was scanned, before a later message may have found the person."""
    scopes = masking.name_scopes({session.pk: session for session, _ in texts}.values())
    return [masking.names_mask(text or "", scopes[session.pk]) for session, text in texts]


# --- the three kinds of hit ---------------------------------------------------------------


def message_hits(
    *, sessions: QuerySet[AgentSession], q: str, offset: int = 0, limit: int = 50
) -> SearchPage:
    """Matching messages, the most recently stored first.

    Newest-first by primary key lets PostgreSQL walk the key index backwards and stop at the
    page's last hit when a word is everywhere, or take the GIN index when it is rare."""
    q = query_clean(q)
    matches = Message.objects.filter(
        _message_match(q), session__in=sessions.order_by().values("pk")
    ).order_by()
    # One read gives the page and the count: the ids up to the count's cap (a rare word's
    # few hundred from the GIN index, a common word's first thousand walking the key index).
    cap = max(COUNT_CAP, offset + limit)
    found = list(matches.order_by("-pk").values_list("pk", flat=True)[: cap + 1])
    ids = found[offset : offset + limit]
    rows = {
        m.pk: m
        for m in Message.objects.filter(pk__in=ids)
        .select_related("session")
        .only("pk", "seq", "role", "search_text", "session")
    }
    ordered = [rows[pk] for pk in ids]
    snippets = headlines(_names_masked([(m.session, m.search_text) for m in ordered]), q)
    hits = [
        SearchHit("message", m.session, m.seq, m.role, segments)
        for m, segments in zip(ordered, snippets, strict=True)
    ]
    return SearchPage(hits=hits, count=min(len(found), cap), count_capped=len(found) > cap)


def summary_hits(
    *, sessions: QuerySet[AgentSession], q: str, offset: int = 0, limit: int = 20
) -> SearchPage:
    q = query_clean(q)
    matches = CompactionEvent.objects.filter(
        _summary_match(q), session__in=sessions.order_by().values("pk")
    ).order_by()
    events = list(matches.select_related("session").order_by("-pk")[offset : offset + limit])
    snippets = headlines(_names_masked([(e.session, e.search_text) for e in events]), q)
    hits = [
        SearchHit("summary", e.session, e.seq, "summary", segments)
        for e, segments in zip(events, snippets, strict=True)
    ]
    count, capped = _count(hits, offset, limit, matches)
    return SearchPage(hits=hits, count=count, count_capped=capped)


def _count(
    hits: list[SearchHit], offset: int, limit: int, matches: QuerySet[Any]
) -> tuple[int, bool]:
    """How many matches, counted up to COUNT_CAP (a common word must not count every row)."""
    if len(hits) < limit and (hits or not offset):
        return offset + len(hits), False  # a short page ends the results
    counted = matches.order_by()[: max(COUNT_CAP, offset + limit) + 1].count()
    cap = max(COUNT_CAP, offset + limit)
    return min(counted, cap), counted > cap


def session_hits(
    *, sessions: QuerySet[AgentSession], q: str, offset: int = 0, limit: int = 20
) -> SearchPage:
    """Sessions whose own fields match, most recently updated first. Their fields are matched
    by a scan, so the ids (up to the count's cap) come from that one scan and count too."""
    q = query_clean(q)
    cap = max(COUNT_CAP, offset + limit)
    ids = list(
        sessions.filter(_session_match(q))
        .order_by("-updated_at", "-pk")
        .values_list("pk", flat=True)[: cap + 1]
    )
    page_ids = ids[offset : offset + limit]
    rows = {s.pk: s for s in AgentSession.objects.filter(pk__in=page_ids).select_related("project")}
    found = [rows[pk] for pk in page_ids]
    snippets = headlines(_names_masked([(s, s.search_text) for s in found]), q)
    hits = [
        SearchHit("session", s, None, "session", segments)
        for s, segments in zip(found, snippets, strict=True)
    ]
    return SearchPage(hits=hits, count=min(len(ids), cap), count_capped=len(ids) > cap)
