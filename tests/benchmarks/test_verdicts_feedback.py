"""The verdict feedback export is one more source of labels for ``benchmarks/verdicts.py``:
each fact mark becomes a label in the five words (the verdict when marked right, what the
member said it should be when marked wrong) on the case of the compaction it names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compaction.engine.claude_code import parse_transcript
from tests.benchmarks import benchmark_module
from tests.importers.corpus import AUTO

verdicts = benchmark_module("verdicts")


@pytest.mark.parametrize(
    ("mark", "label"),
    [
        ({"kind": "lost", "mark": "right"}, "lost"),
        ({"kind": "paraphrased", "mark": "right"}, "paraphrased"),
        ({"kind": "lost", "mark": "wrong", "should_be": "reloaded"}, "reloaded"),
        ({"kind": "lost", "mark": "wrong", "should_be": None}, "mentioned"),
        ({"kind": "kept", "mark": "wrong", "should_be": "lost"}, "lost"),
        ({"kind": "kept", "mark": "wrong", "should_be": None}, None),
    ],
)
def test_a_mark_reads_as_a_label_in_the_five_words(mark, label):
    assert verdicts.feedback_label(mark) == label


def test_marks_join_the_case_of_their_compaction(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(verdicts, "REALTRACES", AUTO.parent)
    transcript = parse_transcript(AUTO)
    session, seq = transcript.session_id, transcript.compactions[0].seq
    case = {
        "transcript": AUTO.name,
        "compaction": 0,
        "facts": [{"kind": "file", "text": "src/known.py", "label": "kept"}],
    }
    marks = [
        {
            "kind": "lost",
            "session": session,
            "seq": seq,
            "fact": "src/a.py",
            "verdict": "lost file",
            "mark": "wrong",
            "note": "named",
            "should_be": "kept",
        },
        {
            "kind": "lost",
            "session": session,
            "seq": seq,
            "fact": "src/known.py",
            "verdict": "lost file",
            "mark": "right",
            "note": "",
            "should_be": None,
        },
        {
            "kind": "lost",
            "session": "another",
            "seq": seq,
            "fact": "x",
            "verdict": "lost file",
            "mark": "right",
            "note": "",
            "should_be": None,
        },
        {
            "kind": "kept",
            "session": session,
            "seq": seq,
            "fact": "y",
            "verdict": "kept task",
            "mark": "wrong",
            "note": "",
            "should_be": None,
        },
        {
            "kind": "alert",
            "session": session,
            "seq": seq,
            "fact": "t",
            "verdict": "lost_constraint",
            "mark": "right",
            "note": "",
            "should_be": None,
        },
    ]
    path = tmp_path / "feedback.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in marks))
    counts = verdicts.feedback_join([case], [path])
    assert counts == {"joined": 1, "known": 1, "unjoined": 1, "unknown": 1}
    added = case["facts"][-1]
    assert (added["kind"], added["text"], added["label"], added["source"]) == (
        "file",
        "src/a.py",
        "kept",
        "feedback",
    )
