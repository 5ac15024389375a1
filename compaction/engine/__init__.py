"""Pure-Python compaction engine: messages, turns, tokens, strategies, replay, evals.

Importing this package must never import Django: an agent harness can use it on its own.
"""
