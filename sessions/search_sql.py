"""The SQL of content search on PostgreSQL, shared by the migration that creates the columns,
functions and indexes, and by the queries that use them.

Messages carry a stored, generated ``search_document`` tsvector (not modelled in Django: the
database computes it on every insert or update of ``content``). A stored column, not an
expression index, because phrase queries and common words make PostgreSQL recheck rows, and
recomputing a document from a large tool result on every recheck is what made them slow.

The document holds every string value of the content blocks twice: as the 'simple' parser
splits it (``billing/api.py`` one token, ``charge_customer`` two) and again with path and
dotted-name separators turned into spaces (``billing api py``), so part of a path or dotted
name is found as a phrase (``api.py`` -> ``'api' <-> 'py'``), without a trigram scan.
"""

# Characters that join the parts of a path or a dotted name.
PATH_SEPARATORS = r"[/.\\:]+"

DOCUMENT_FUNCTION = r"""
CREATE OR REPLACE FUNCTION sawtooth_search_document(content jsonb) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT jsonb_to_tsvector('simple'::regconfig, content, '["string"]'::jsonb)
      || to_tsvector('simple'::regconfig, regexp_replace(coalesce((
           SELECT string_agg(v #>> '{}', ' ')
           FROM jsonb_path_query(content, 'strict $.** ? (@.type() == "string")') AS v
         ), ''), '[/.\\:]+', ' ', 'g'))
$$
"""
# A query, and the same words with path separators as spaces, quoted as a phrase.
QUERY_FUNCTION = r"""
CREATE OR REPLACE FUNCTION sawtooth_search_query(q text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN q ~ '[/.\\:]'
    THEN websearch_to_tsquery('simple'::regconfig, q)
         || websearch_to_tsquery('simple'::regconfig,
              '"' || regexp_replace(replace(q, '"', ' '), '[/.\\:]+', ' ', 'g') || '"')
    ELSE websearch_to_tsquery('simple'::regconfig, q) END
$$
"""

MESSAGE_COLUMN = "search_document"
MESSAGE_DOCUMENT = "sawtooth_search_document({content})"
SUMMARY_DOCUMENT = "to_tsvector('simple'::regconfig, {summary})"
QUERY = "sawtooth_search_query({q})"
