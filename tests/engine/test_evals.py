from compaction.engine.evals import (
    BARELY_CHANGED_WARNING,
    Probe,
    extract_facts,
    pair_validity,
    retention,
    rework_signals,
    splice_effectiveness,
)
from compaction.engine.messages import Message, TextBlock
from compaction.engine.strategies import Policy, summarize
from compaction.engine.summarizers import Summary
from tests.engine.builders import History

SEED_PROBE = {
    "task": "Migrate the billing module to the new API",
    "constraint_turn": 3,
    "constraint": "do not change the public API",
    "check": "no public signature changed",
}


def seed_session():
    """Turn 3 agrees the constraint; many turns of reading follow."""
    h = History().system("You are a coding agent.")
    h.user("Migrate the billing module to the new API.").assistant("Plan ready.")
    h.user("Start with the client.").assistant("Done.")
    h.user("Before you go on: do not change the public API of the billing module.").assistant(
        "Understood."
    )
    for i in range(8):
        h.user(f"Continue with part {i}.").tool(
            "read_file", "x" * 3000, path=f"billing/p{i}.py"
        ).assistant(f"Part {i} done.")
    return h.messages


def spliced(messages, summary: Summary, keep_from: int):
    """The context a harness would send after splicing ``summary`` in front of the tail."""
    tail = messages[keep_from:]
    first = Message(tail[0].seq, "user", (TextBlock(summary.to_text()), *tail[0].content))
    return [messages[0], messages[1], first, *tail[1:]]


def test_retention_reports_the_turn_3_constraint_lost_when_the_summary_omits_it():
    ms = seed_session()
    bad = Summary(
        goal="Migrate the billing module to the new API",
        done=("client migrated",),
        current_state="reading parts",
    )
    after = spliced(ms, bad, keep_from=len(ms) - 4)
    report = retention(ms, after, probes=[Probe.from_dict(SEED_PROBE)], auto=False)
    assert report.score == 0.0
    assert [f.text for f in report.lost] == ["do not change the public API"]


def test_retention_reports_the_constraint_kept_when_the_summary_keeps_it():
    ms = seed_session()
    good = Summary(
        goal="Migrate the billing module",
        constraints=("Do not change the public API of the billing module.",),
        current_state="reading parts",
    )
    after = spliced(ms, good, keep_from=len(ms) - 4)
    report = retention(ms, after, probes=[Probe.from_dict(SEED_PROBE)], auto=False)
    assert report.score == 1.0
    assert report.lost == []


def test_the_offline_summary_keeps_the_seed_constraint_and_paths():
    ms = seed_session()
    out = summarize(ms, Policy(keep_last=2, pin_head=True, summary_reserve=0), limit=2000)
    report = retention(ms, list(out.messages), probes=[Probe.from_dict(SEED_PROBE)])
    assert report.lost == []
    assert {i.fact.kind for i in report.items} >= {"probe", "task", "path"}
    # the turn-3 rule is the probe's auto-extracted copy: it is checked once, as the probe
    assert [i.fact.text for i in report.items if i.fact.kind in ("probe", "constraint")] == [
        "do not change the public API"
    ]


def test_auto_extracted_facts_cover_constraints_paths_and_identifiers():
    facts = extract_facts(
        [
            Message(
                0,
                "user",
                (TextBlock("Never rename charge_v2 in billing/api.py (ticket BILL-42)."),),
            )
        ]
    )
    # the first sentence is the task, but as a rule it is checked once, as the constraint
    assert [(f.kind, f.text) for f in facts] == [
        ("constraint", "Never rename charge_v2 in billing/api.py (ticket BILL-42)."),
        ("path", "billing/api.py"),
        ("identifier", "charge_v2"),
        ("identifier", "BILL-42"),
    ]


def test_retention_containment_ignores_case_accents_and_spacing():
    before = [Message(0, "user", (TextBlock("Não altere a API pública."),))]
    after = [Message(0, "user", (TextBlock("Constraints:\n- nao   ALTERE a api publica"),))]
    assert retention(before, after).score == 1.0


def test_splice_that_barely_changes_the_size_is_flagged_with_the_seed_warning():
    report = splice_effectiveness(151000, 149500)
    assert report.barely_changed
    assert report.warning == BARELY_CHANGED_WARNING
    good = splice_effectiveness(151000, 38000)
    assert not good.barely_changed
    assert good.warning is None
    assert good.saved == 113000


def test_pair_validity_names_the_orphans():
    h = History().user("go").tool("ls", "a")
    report = pair_validity(h.messages[:2])
    assert not report.ok
    assert report.to_dict()["orphans"] == [
        {"kind": "tool_use", "tool_use_id": "toolu_0001", "seq": 1}
    ]


def test_rework_signals_find_rereads_and_repeated_edits_after_a_compaction():
    h = History().user("fix it")
    h.tool("Read", "code", file_path="billing/api.py")
    h.tool("Edit", "ok", file_path="billing/api.py", old_string="a", new_string="b")
    h.tool("Read", "other", file_path="docs/x.md")
    compaction_seq = len(h.messages)
    h.user("[summary] carry on")
    h.tool("Read", "code", file_path="billing/api.py")
    h.tool("Edit", "ok", file_path="billing/api.py", old_string="a", new_string="b")
    h.tool("Read", "new", file_path="README.md")
    signals = rework_signals(h.messages, [compaction_seq])
    assert [(s.kind, s.path, s.first_seq, s.repeat_seq) for s in signals] == [
        ("reread", "billing/api.py", 1, 8),
        ("reedit", "billing/api.py", 3, 10),
    ]
    assert rework_signals(h.messages, []) == []


def test_rework_after_several_compactions_is_attributed_to_the_one_just_before_it():
    h = History().user("fix it")
    h.tool("Read", "code", file_path="a.py")  # seq 1
    first = len(h.messages)
    h.user("[summary 1]")
    h.tool("Read", "code", file_path="b.py")
    h.tool("Read", "code", file_path="a.py")  # re-read after the first compaction
    second = len(h.messages)
    h.user("[summary 2]")
    h.tool("Read", "code", file_path="a.py")  # again, first read still at seq 1
    h.tool("Read", "code", file_path="b.py")  # read first between the two compactions
    h.tool("Read", "code", file_path="b.py")  # reported once per compaction
    signals = rework_signals(h.messages, [second, first])
    assert [(s.path, s.first_seq, s.compaction_seq) for s in signals] == [
        ("a.py", 1, first),
        ("a.py", 1, second),
        ("b.py", first + 1, second),
    ]


def test_a_path_counts_as_kept_when_the_summary_names_it_relative_or_by_a_distinctive_name():
    from compaction.engine.evals import retention
    from compaction.engine.messages import Message, TextBlock, ToolUseBlock

    def read(seq, path):
        return Message(seq, "assistant", (ToolUseBlock(f"t{seq}", "Read", {"file_path": path}),))

    shell = Message(9, "assistant", (ToolUseBlock("t9", "Bash", {"command": "ls > /dev/null"}),))
    before = [
        read(1, "/home/u/proj/lib/billing/api.ex"),
        read(3, "/home/u/proj/lib/__init__.py"),
        shell,
    ]

    def kept(text):
        report = retention(before, [Message(20, "user", (TextBlock(text),))])
        return {i.fact.text.rsplit("/", 1)[-1]: i.kept for i in report.items}

    assert kept("Files touched: lib/billing/api.ex, lib/__init__.py") == {
        "api.ex": True,
        "__init__.py": True,
    }
    # a distinctive file name alone is enough; a generic one only when it is the one file of
    # that name the session used (two __init__.py: see test_verdicts)
    assert kept("Edited api.ex and __init__.py") == {"api.ex": True, "__init__.py": True}
    # a longer name that ends the same way does not name the file
    assert kept("Edited billing_api.ex") == {"api.ex": False, "__init__.py": False}
