"""The SQL of content search on PostgreSQL, shared by the migrations that create the columns,
functions and indexes, and by the queries that use them.

Messages and compaction events carry a stored, generated ``search_document`` tsvector (not
modelled in Django: the database computes it on every write of ``search_text``). A stored
column, not an expression index: a common word makes PostgreSQL read most rows, and
recomputing a document from a large tool result for each of them is what made it slow.

The document is made from ``search_text``, the text a reader sees with personal data masked
(``sessions/search.py``), never from the raw content: the index holds no CPF, e-mail or name,
so no search can find, confirm or count one. It holds ``search_text`` as the 'simple' parser
splits it, where ``billing/api.py`` and ``FooBar.baz`` are single tokens, plus, for each such
token, its parts and every suffix after a separator (``billing``, ``api``, ``api.py``, ``py``),
so a file name finds its full path and a part finds the dotted name, with a plain index
lookup (no phrase recheck, no trigram scan).
"""

WORDS_FUNCTION = r"""
CREATE OR REPLACE FUNCTION sawtooth_search_words(doc tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT doc || to_tsvector('simple'::regconfig, coalesce((
    SELECT string_agg(word, ' ') FROM (
      SELECT substr(l.lexeme, g.i + 1) AS word
      FROM unnest(doc) AS l, generate_series(1, length(l.lexeme) - 1) AS g(i)
      WHERE l.lexeme ~ '[/.\\:]' AND substr(l.lexeme, g.i, 1) IN ('/', '.', '\', ':')
      UNION ALL
      SELECT regexp_split_to_table(l.lexeme, '[/.\\:]+')
      FROM unnest(doc) AS l WHERE l.lexeme ~ '[/.\\:]'
    ) AS words
  ), ''))
$$
"""

COLUMN = "search_document"
# What migration 0005 made the documents of (the raw text), kept for its reverse.
RAW_MESSAGE_DOCUMENT = (
    "sawtooth_search_words(jsonb_to_tsvector('simple'::regconfig, content, '[\"string\"]'::jsonb))"
)
RAW_SUMMARY_DOCUMENT = "sawtooth_search_words(to_tsvector('simple'::regconfig, summary))"
MASKED_DOCUMENT = (
    "sawtooth_search_words(to_tsvector('simple'::regconfig, coalesce(search_text, '')))"
)
QUERY = "websearch_to_tsquery('simple'::regconfig, {q})"
