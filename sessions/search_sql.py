"""The SQL of content search on PostgreSQL, shared by the migration that indexes it and the
queries that use the indexes (an expression index is used only for an identical expression).

Placeholders are column references, filled in by ``sessions/search.py`` with the compiled
(aliased) columns and by the migration with bare column names.
"""

# Every string value inside a message's content blocks (text, tool names, inputs, results).
MESSAGE_DOCUMENT = "jsonb_to_tsvector('simple'::regconfig, {content}, '[\"string\"]'::jsonb)"
# The content as JSON text: the trigram index behind substring matches of identifiers/paths.
MESSAGE_TEXT = "(({content})::text)"
SUMMARY_DOCUMENT = "to_tsvector('simple'::regconfig, {summary})"
SESSION_DOCUMENT = (
    "(to_tsvector('simple'::regconfig, {title} || ' ' || {external_id} || ' ' || {agent}) "
    "|| jsonb_to_tsvector('simple'::regconfig, {metadata}, '[\"string\"]'::jsonb))"
)
QUERY = "websearch_to_tsquery('simple'::regconfig, {q})"
