"""Importers: traces users already have, turned into the canonical trace.

Each importer streams its input, builds EventBatch chunks and writes them through
``sessions.services.events_ingest`` (the one door for writes), so every chunk is atomic,
a re-import stores only what is new, and the analysis is queued. Each returns an
:class:`~sessions.importers.report.ImportReport`.
"""
