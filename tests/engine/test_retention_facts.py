"""Retention verdicts you can defend: one test per cause of a wrong "lost" (issue 11), on the
two real Claude Code compactions of the corpus where they show it, on small histories otherwise.
"""

from __future__ import annotations

import pytest

from compaction.engine import facts as facts_module
from compaction.engine.claude_code import parse_transcript
from compaction.engine.evals import (
    DROPPED_NOTHING,
    FactCache,
    FactLedger,
    Probe,
    RetentionReport,
    extract_facts,
    retention,
)
from compaction.engine.messages import Message, TextBlock
from tests.engine.builders import History
from tests.importers.corpus import AUTO, MANUAL

ROOT = "/home/u/shop/"


def summary(text: str, seq: int = 99) -> list[Message]:
    return [Message(seq, "user", (TextBlock(text),))]


def verdicts(report: RetentionReport) -> dict[str, bool]:
    return {i.fact.text: i.kept for i in report.items}


@pytest.fixture(scope="module")
def real() -> dict[str, tuple[list[Message], list[Message], RetentionReport]]:
    """Each real compaction: the history before it, Claude Code's summary, the report."""
    out = {}
    for name, path in (("auto", AUTO), ("manual", MANUAL)):
        t = parse_transcript(path)
        before = [m for m in t.messages if m.seq < t.compactions[0].seq]
        after = [m for m in t.messages if m.seq == t.summary_seqs[0]]
        out[name] = (before, after, retention(before, after))
    return out


# --- what counts as a fact ----------------------------------------------------------------------


def test_a_task_notification_is_not_a_prompt_and_its_temp_path_is_no_fact(real):
    before, _, report = real["auto"]
    notification = next(m for m in before if m.text.startswith("<task-notification>"))
    texts = [i.fact.text for i in report.items]
    assert not [i for i in report.items if i.fact.seq == notification.seq]
    assert not [t for t in texts if t.startswith("/tmp/") or t == "claude-1000"]
    # the task is the user's first prompt, not a harness record
    assert [(i.fact.text, i.kept) for i in report.items if i.fact.kind == "task"] == [
        ("Implement spotter-gqc", True)
    ]


def test_a_task_id_without_a_digit_is_a_fact_and_the_summary_keeps_it(real):
    _, _, report = real["auto"]
    (item,) = [i for i in report.items if i.fact.kind == "identifier" and " " not in i.fact.text]
    assert (item.fact.text, item.kept) == ("spotter-gqc", True)
    assert "spotter-gqc" in item.evidence


def test_a_command_the_agent_ran_twice_is_a_fact_the_summary_keeps_by_its_words(real):
    _, _, report = real["auto"]
    commands = {
        i.fact.text: i.verdict
        for i in report.items
        if i.fact.kind == "identifier" and " " in i.fact.text
    }
    assert commands == {"mix compile": "kept", "mix test": "kept"}


def test_directories_searched_are_not_facts(real):
    before, _, report = real["auto"]
    # Grep over the checkout and over lib/spotter_web: scopes, not files read
    searched = [
        use.input["path"]
        for m in before
        for use in m.tool_uses()
        if use.name == "Grep" and "path" in use.input
    ]
    assert "/home/USER/projects/spotter-worktrees/spotter-gqc" in searched
    paths = {i.fact.text for i in report.items if i.fact.kind == "path"}
    assert paths.isdisjoint(searched)


def test_harness_records_echoed_as_user_messages_give_no_fact():
    h = History().user("Fix the flaky checkout test.")
    h.user(
        "<task-notification>\n<task-id>b1</task-id>\n<output-file>/tmp/claude-1000/x/b1.output"
        "</output-file>\n</task-notification>\nRead the output file to retrieve the result: "
        "/tmp/claude-1000/x/b1.output"
    )
    h.user("<system-reminder>Never use emojis.</system-reminder>")
    h.user("<command-name>/compact</command-name>\n<command-message>compact</command-message>")
    h.user("<local-command-stdout>Compacted. Do not reply.</local-command-stdout>")
    assert [(f.kind, f.text) for f in extract_facts(h.messages)] == [
        ("task", "Fix the flaky checkout test.")
    ]


def test_failed_reads_and_temp_paths_are_not_facts_but_a_later_good_read_is():
    h = History().user("Fix billing.")
    h.tool("Read", "<tool_use_error>File does not exist.</tool_use_error>", file_path=ROOT + "a.ex")
    h.tool("Read", "boom", is_error=True, file_path=ROOT + "b.ex")
    h.tool("Read", "ok", file_path="/tmp/scratch/c.ex")
    h.tool("Read", "ok", file_path=ROOT + "b.ex")  # read again, this time it worked
    assert [f.text for f in extract_facts(h.messages) if f.kind == "path"] == [ROOT + "b.ex"]


def test_a_failed_read_stays_failed_after_its_result_is_cleared():
    h = History().user("Fix billing.")
    h.tool("Read", "File does not exist.", file_path=ROOT + "a.ex")
    cache = FactCache()
    assert extract_facts(h.messages, cache=cache) == extract_facts(h.messages[:1])
    cleared = [*h.messages[:2]]  # the carrier of the failed result was dropped or cleared
    assert [f.kind for f in extract_facts(cleared, cache=cache)] == ["task"]


def test_dot_and_folders_listed_are_not_facts():
    h = History().user("Where is rounding done?")
    h.tool("Grep", "lib/billing/api.ex", pattern="round", path=".")
    h.tool("LS", "billing/", path=ROOT + "lib")
    h.tool("Glob", "api.ex", pattern="*.ex", path=ROOT + "lib/billing")
    h.tool("Edit", "ok", file_path=ROOT + "lib/billing/api.ex", old_string="a", new_string="b")
    assert [f.text for f in extract_facts(h.messages) if f.kind == "path"] == [
        ROOT + "lib/billing/api.ex"
    ]


def test_hyphenated_english_words_and_versions_are_not_ids():
    h = History().user("Pass the pre-commit hooks with an end-to-end, read-only test of API v2.")
    assert [f.kind for f in extract_facts(h.messages)] == ["task"]


# --- how a fact counts as kept ------------------------------------------------------------------


def test_a_file_named_by_its_module_or_class_counts_as_kept():
    h = History().user("Paginate invoices.")
    h.tool("Read", "x", file_path=ROOT + "lib/shop_web/live/invoice_list_live.ex")
    h.tool("Read", "x", file_path=ROOT + "billing/client.py")
    h.tool("Read", "x", file_path=ROOT + "lib/shop/transcripts/message.ex")
    report = retention(
        h.messages,
        summary(
            "Goal: paginate invoices. Updated InvoiceListLive; Billing.Client retries;\n"
            "Shop.Transcripts.Message has a new field."
        ),
    )
    assert all(verdicts(report).values()), report.to_dict()
    by_text = {i.fact.text: i for i in report.items}
    assert "InvoiceListLive" in by_text[ROOT + "lib/shop_web/live/invoice_list_live.ex"].evidence


def test_a_bare_class_name_or_a_longer_name_does_not_name_a_file():
    h = History().user("Tidy.")
    h.tool("Read", "x", file_path=ROOT + "billing/client.py")
    h.tool("Read", "x", file_path=ROOT + "lib/api.ex")
    report = retention(h.messages, summary("Tidy. Edited the Client class and billing_api.ex."))
    assert verdicts(report) == {
        "Tidy.": True,
        ROOT + "billing/client.py": False,
        ROOT + "lib/api.ex": False,
    }
    lost = {i.fact.text: i.evidence for i in report.items if not i.kept}
    assert lost[ROOT + "billing/client.py"] == "no line names the file (client.py, billing.client)"


def test_the_checkouts_mix_exs_is_named_alone_on_a_real_summary(real):
    _, _, report = real["manual"]
    by_text = {i.fact.text: i for i in report.items}
    item = by_text["/home/USER/projects/spotter-worktrees/spotter-4te/mix.exs"]
    assert item.kept
    assert "mix.exs" in item.evidence
    dotfile = by_text["/home/USER/projects/spotter-worktrees/spotter-4te/.dialyzerignore"]
    assert dotfile.kept


def test_a_folder_counts_as_kept_when_a_file_inside_it_is_named():
    h = History().user("Port the billing API. Only touch lib/ and priv/. Never touch test/.")
    report = retention(
        h.messages,
        summary("Goal: port the billing API.\nFiles: lib/billing/api.ex, priv/repo/m.exs"),
    )
    paths = {i.fact.text: i.kept for i in report.items if i.fact.kind == "path"}
    assert paths == {"lib/": True, "priv/": True, "test/": False}


def test_dont_never_and_avoid_keep_a_do_not_rule_and_the_words_without_it_do_not():
    h = History().user("Migrate billing. Do not change the public API. Do not use floats.")
    for kept in (
        "Constraints: don't change the public API; avoid floats.",
        "Rules: the public API must never change. Never use floats for money.",
        "Keep the public API unchanged. No floats: use Decimal.",
    ):
        report = retention(h.messages, summary(f"Goal: migrate billing.\n{kept}"))
        assert all(verdicts(report).values()), (kept, report.to_dict())
    report = retention(h.messages, summary("Goal: migrate billing.\nChanged the public API."))
    lost = {i.fact.text: i.evidence for i in report.items if not i.kept}
    assert lost["Do not change the public API."] == (
        "closest line has the words without the negation: Changed the public API."
    )


def test_an_explicit_reversal_is_not_kept():
    h = History().user("Migrate billing. Do not change the public API.")
    report = retention(
        h.messages,
        summary(
            "Goal: migrate billing.\n"
            "It is fine to change the public API now; earlier we said do not change it."
        ),
        probes=[Probe("don't change the public API", 0)],
    )
    assert verdicts(report) == {"don't change the public API": False, "Migrate billing.": True}
    assert report.items[0].evidence.startswith("reversed: It is fine to change the public API")


def test_a_probe_and_its_auto_extracted_copy_count_once():
    h = History().user("Migrate billing.").assistant("ok")
    h.user("Before you go on: do not change the public API of the billing module.")
    report = retention(
        h.messages,
        summary("Goal: migrate billing."),
        probes=[Probe("do not change the public API")],
    )
    assert [(i.fact.kind, i.kept) for i in report.items] == [("probe", False), ("task", True)]
    assert report.score == 0.5


def test_a_splice_that_dropped_nothing_loses_nothing():
    h = History().user("Migrate billing. Do not change the public API.")
    h.tool("Read", "x", file_path=ROOT + "billing/api.py")
    report = retention(h.messages, list(h.messages), probes=[Probe("never log the CPF")])
    assert report.lost == []
    assert {i.evidence for i in report.items} == {DROPPED_NOTHING}


def test_every_verdict_carries_its_evidence_in_the_stored_dict(real):
    for _, _, report in real.values():
        for item in report.items:
            d = item.to_dict()
            assert set(d) == {
                "kind",
                "text",
                "seq",
                "kept",
                "method",
                "evidence",
                "verdict",
                "needed_again",
            }
            assert d["evidence"], d


def test_the_real_summaries_lose_only_files_they_never_name(real):
    _, after, report = real["auto"]
    text = after[0].text
    lost = [i.fact.text.rsplit("/", 1)[-1] for i in report.items if not i.kept]
    assert sorted(lost) == [
        "20260211104759_replace_pane_id_with_session_id.exs",
        "config.exs",
        "hooks_controller_test.exs",
        "layouts.ex",
        "project.ex",
        "root.html.heex",
        "test_helper.exs",
    ]
    for name in lost:
        assert name not in text
    # the manual summary names every file; it never says how the project is compiled
    assert [(f.kind, f.text) for f in real["manual"][2].lost] == [("identifier", "mix compile")]


# --- speed: each message once, each context once --------------------------------------------


def test_facts_are_extracted_once_per_message_across_compactions(monkeypatch):
    calls: list[int] = []
    original = facts_module.message_facts

    def counting(message: Message) -> facts_module.MessageFacts:
        calls.append(message.seq)
        return original(message)

    monkeypatch.setattr(facts_module, "message_facts", counting)
    h = History().user("Migrate billing. Do not change the public API.")
    for i in range(20):
        h.tool("Read", "x", file_path=f"{ROOT}billing/m{i}.py")
    cache = FactCache()
    for end in (11, 21, 31, 41):  # four compactions over a growing history
        retention(h.messages[:end], summary("Goal: migrate billing."), cache=cache)
    assert sorted(calls) == list(range(41))


def test_a_ledger_gives_the_facts_before_each_compaction_without_re_extracting():
    h = History().user("Migrate billing.")
    for i in range(4):
        h.tool("Read", "x", file_path=f"{ROOT}billing/m{i}.py")
    ledger = FactLedger()
    ledger.feed(h.messages)
    assert ledger.facts(before_seq=5) == extract_facts(h.messages[:5])
    assert ledger.facts() == extract_facts(h.messages)
    report = retention(h.messages[:5], summary("billing/m0.py"), facts=ledger.facts(before_seq=5))
    assert verdicts(report) == {
        "Migrate billing.": False,
        f"{ROOT}billing/m0.py": True,
        f"{ROOT}billing/m1.py": False,
    }


def test_demo_billing_compaction_checks_files_not_folders_failed_reads_or_versions():
    from compaction.engine.messages import message_from_wire
    from sessions.example_data import example_session

    session = example_session("example-billing-migration")
    messages = sorted(
        (message_from_wire(m) for b in session.batches for m in b.get("messages", [])),
        key=lambda m: m.seq,
    )
    (event,) = [c for b in session.batches for c in b.get("compactions", [])]
    replaced = range(event["replaced"]["from_seq"], event["replaced"]["to_seq"] + 1)
    before = [m for m in messages if m.seq < event["seq"]]
    after = [m for m in before if m.seq not in replaced] + summary(event["summary"], event["seq"])
    failed_reads = {
        use.input["path"]
        for m in before
        for use in m.tool_uses()
        for r in messages
        for res in r.tool_results()
        if res.tool_use_id == use.id and res.is_error and "path" in use.input
    }
    assert "docs/api-v2.md" in failed_reads

    report = retention(
        before,
        after,
        probes=[
            Probe(event_probe, 26)
            for event_probe in ("Do not change the public API of the billing module",)
        ],
    )
    texts = {i.fact.text for i in report.items}
    assert texts.isdisjoint({"billing", "docs", "tests", "tests/billing/fixtures", "v2", "."})
    assert "docs/api-v2.md" not in texts  # its only read failed: File does not exist
    assert "invoices.py" not in texts  # said bare in a prompt: it is billing/invoices.py
    assert "billing/invoices.py" in texts
    assert [f.text for f in report.lost] == [
        "billing/__init__.py",
        "tests/billing/fixtures/v2/charge.json",
    ]
    probe = report.items[0]
    assert probe.kept
    assert "not to change the public API of the billing module" in probe.evidence


def test_a_real_summary_names_a_dependency_file_only_by_its_module(real):
    _, after, report = real["manual"]
    path = (
        "/home/USER/projects/spotter-worktrees/spotter-4te/deps/opentelemetry_bandit/lib/"
        "opentelemetry_bandit.ex"
    )
    assert "opentelemetry_bandit.ex" not in after[0].text
    (item,) = [i for i in report.items if i.fact.text == path]
    assert item.kept
    assert "opentelemetry_bandit" in item.evidence
