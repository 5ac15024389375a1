"""Agent-side client: a background recorder and a transcript uploader. No Django.

``from compaction.client import Recorder``; ``python -m compaction.client upload PATH
--url URL --key KEY`` uploads Claude Code transcripts.
"""

from compaction.client.recorder import Recorder, Rejected
from compaction.client.transport import Backoff, GiveUp

__all__ = ["Backoff", "GiveUp", "Recorder", "Rejected"]
