"""The example traces: wire-format batches that tell the stories they promise.

They are read the way the demo reads them, from the committed files in
sessions/fixtures/examples/; test_example_traces.py checks that the generator still writes
exactly those files.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from sessions import example_data
from sessions.example_data import ExampleSession
from tests import example_traces

BILLING = "example-billing-migration"
SUPPORT = "example-support-triage"
SHORT = "example-short-question"
FAILED = "example-failed-compaction"
HOSTILE = "example-hostile-content"
STORM = "example-compaction-storm"
LOOP = "example-compaction-loop"
IDS = [BILLING, SUPPORT, SHORT, FAILED, HOSTILE, STORM, LOOP]

Message = dict[str, Any]


@pytest.fixture(scope="module")
def sessions() -> dict[str, ExampleSession]:
    return {example.external_id: example for example in example_data.example_sessions()}


def messages(example: ExampleSession) -> list[Message]:
    return [message for batch in example.batches for message in batch["messages"]]


def compactions(example: ExampleSession) -> list[dict[str, Any]]:
    return [event for batch in example.batches for event in batch.get("compactions", [])]


def probes(example: ExampleSession) -> list[dict[str, Any]]:
    return [probe for batch in example.batches for probe in batch.get("probes", [])]


def prompts(example: ExampleSession) -> list[Message]:
    return [m for m in messages(example) if m["role"] == "user" and isinstance(m["content"], str)]


def blocks(message: Message, kind: str) -> Iterator[dict[str, Any]]:
    content = message["content"]
    if isinstance(content, list):
        yield from (block for block in content if block["type"] == kind)


def context(message: Message) -> int:
    usage = message["usage"]
    return int(
        usage["input_tokens"]
        + usage["cache_read_input_tokens"]
        + usage["cache_creation_input_tokens"]
    )


def calls(example: ExampleSession) -> list[Message]:
    return [m for m in messages(example) if m["role"] == "assistant"]


def all_text(example: ExampleSession) -> str:
    return json.dumps(example.batches, ensure_ascii=False)


def tool_uses(example: ExampleSession, name: str) -> list[tuple[int, dict[str, Any]]]:
    return [
        (message["seq"], block)
        for message in messages(example)
        for block in blocks(message, "tool_use")
        if block["name"] == name
    ]


def cpf_is_valid(cpf: str) -> bool:
    digits = [int(char) for char in re.sub(r"\D", "", cpf)]
    if len(digits) != 11 or len(set(digits)) == 1:
        return False
    for size in (9, 10):
        total = sum(d * (size + 1 - i) for i, d in enumerate(digits[:size]))
        check = (total * 10) % 11 % 10
        if digits[size] != check:
            return False
    return True


# -- every session ---------------------------------------------------------------------------


def test_example_sessions_are_identical_on_every_call() -> None:
    assert example_data.example_sessions() == example_data.example_sessions()
    assert example_traces.example_sessions() == example_traces.example_sessions()


def test_there_are_seven_sessions_with_stable_external_ids(
    sessions: dict[str, ExampleSession],
) -> None:
    assert list(sessions) == IDS


@pytest.mark.parametrize("external_id", IDS)
def test_batches_use_only_wire_format_keys(
    sessions: dict[str, ExampleSession], external_id: str
) -> None:
    for batch in sessions[external_id].batches:
        assert set(batch) <= {"session", "messages", "compactions", "probes"}
        assert {"agent", "model", "context_window", "started_at"} <= set(batch["session"])
        assert batch["messages"]
        assert len(batch["messages"]) <= 40
        for message in batch["messages"]:
            assert set(message) <= {"seq", "role", "content", "timestamp", "usage"}


@pytest.mark.parametrize("external_id", IDS)
def test_seqs_are_dense_from_zero_in_upload_order(
    sessions: dict[str, ExampleSession], external_id: str
) -> None:
    seqs = [message["seq"] for message in messages(sessions[external_id])]

    assert seqs == list(range(len(seqs)))


@pytest.mark.parametrize("external_id", IDS)
def test_roles_alternate_starting_with_a_user_prompt(
    sessions: dict[str, ExampleSession], external_id: str
) -> None:
    roles = [message["role"] for message in messages(sessions[external_id])]

    assert roles[0] == "user"
    assert isinstance(messages(sessions[external_id])[0]["content"], str)
    assert all(a != b for a, b in itertools.pairwise(roles))
    assert roles[-1] == "assistant"


@pytest.mark.parametrize("external_id", IDS)
def test_no_two_user_messages_in_a_row(
    sessions: dict[str, ExampleSession], external_id: str
) -> None:
    roles = [message["role"] for message in messages(sessions[external_id])]

    assert ("user", "user") not in set(itertools.pairwise(roles))


@pytest.mark.parametrize("external_id", IDS)
def test_every_tool_use_has_exactly_one_result_in_the_next_message(
    sessions: dict[str, ExampleSession], external_id: str
) -> None:
    trace = messages(sessions[external_id])
    for index, message in enumerate(trace):
        uses = [block["id"] for block in blocks(message, "tool_use")]
        if not uses:
            continue
        answer = trace[index + 1]
        results = [block["tool_use_id"] for block in blocks(answer, "tool_result")]
        assert answer["role"] == "user"
        assert results == uses
        assert isinstance(answer["content"], list)
        assert len(answer["content"]) == len(uses)


@pytest.mark.parametrize("external_id", IDS)
def test_every_tool_result_answers_a_tool_use_in_the_previous_message(
    sessions: dict[str, ExampleSession], external_id: str
) -> None:
    trace = messages(sessions[external_id])
    results = [
        (index, block["tool_use_id"])
        for index, message in enumerate(trace)
        for block in blocks(message, "tool_result")
    ]
    for index, tool_use_id in results:
        previous = [block["id"] for block in blocks(trace[index - 1], "tool_use")]
        assert tool_use_id in previous
    assert len({tool_use_id for _, tool_use_id in results}) == len(results)


def test_tool_use_ids_are_unique_across_sessions_and_well_formed(
    sessions: dict[str, ExampleSession],
) -> None:
    ids = [
        block["id"]
        for example in sessions.values()
        for message in messages(example)
        for block in blocks(message, "tool_use")
    ]

    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"toolu_[A-Za-z0-9]{22}", tool_use_id) for tool_use_id in ids)


@pytest.mark.parametrize("external_id", IDS)
def test_every_assistant_message_reports_usage_within_the_window(
    sessions: dict[str, ExampleSession], external_id: str
) -> None:
    example = sessions[external_id]
    window = example.batches[0]["session"]["context_window"]
    for message in calls(example):
        assert message["usage"]["output_tokens"] > 0
        assert 0 < context(message) < window
    assert all("usage" not in m for m in messages(example) if m["role"] == "user")


@pytest.mark.parametrize("external_id", IDS)
def test_timestamps_never_go_backwards(
    sessions: dict[str, ExampleSession], external_id: str
) -> None:
    example = sessions[external_id]
    started = datetime.fromisoformat(example.batches[0]["session"]["started_at"])
    stamps = [datetime.fromisoformat(m["timestamp"]) for m in messages(example)]

    assert stamps[0] >= started
    assert stamps == sorted(stamps)
    assert example.batches[-1]["session"]["ended_at"] == messages(example)[-1]["timestamp"]


@pytest.mark.parametrize("external_id", IDS)
def test_usage_drops_after_each_successful_compaction(
    sessions: dict[str, ExampleSession], external_id: str
) -> None:
    example = sessions[external_id]
    for event in compactions(example):
        if event["error"] or event["tokens_after"] > event["tokens_before"] * 0.9:
            continue
        before = [m for m in calls(example) if m["seq"] < event["seq"]][-1]
        after = next(m for m in calls(example) if m["seq"] >= event["seq"])
        assert context(before) <= event["tokens_before"]
        assert context(after) == event["tokens_after"]
        assert context(after) < context(before)
        assert context(after) <= event["tokens_before"] * 0.7
        assert (
            after["usage"]["cache_read_input_tokens"] < before["usage"]["cache_read_input_tokens"]
        )


@pytest.mark.parametrize("external_id", IDS)
def test_replaced_ranges_end_just_before_a_real_prompt(
    sessions: dict[str, ExampleSession], external_id: str
) -> None:
    example = sessions[external_id]
    prompt_seqs = {message["seq"] for message in prompts(example)}
    for event in compactions(example):
        if "replaced" in event:
            assert event["replaced"]["from_seq"] == 1
            assert event["replaced"]["to_seq"] + 1 in prompt_seqs
            assert event["replaced"]["to_seq"] < event["seq"]
        assert messages(example)[event["seq"]]["role"] == "assistant"


def test_batches_survive_a_json_round_trip(sessions: dict[str, ExampleSession]) -> None:
    for example in sessions.values():
        for batch in example.batches:
            assert json.loads(json.dumps(batch)) == batch


# -- session 1: the billing migration ---------------------------------------------------------


def test_billing_session_is_a_long_coding_session(sessions: dict[str, ExampleSession]) -> None:
    example = sessions[BILLING]
    session = example.batches[0]["session"]
    names = {block["name"] for m in messages(example) for block in blocks(m, "tool_use")}

    assert session["agent"] == "billing-migrator"
    assert session["model"] == "claude-opus-4-6"
    assert session["context_window"] == 200_000
    assert messages(example)[0]["timestamp"] == "2026-11-02T10:00:00Z"
    assert 120 <= len(calls(example)) <= 160
    assert len(example.batches) >= 5
    assert {"read_file", "grep", "run_tests", "edit_file", "list_dir"} <= names


def test_billing_goal_is_the_first_prompt(sessions: dict[str, ExampleSession]) -> None:
    first = prompts(sessions[BILLING])[0]

    assert first["seq"] == 0
    assert first["content"] == example_traces.BILLING_GOAL == "Migrate billing to API v2."


def test_billing_constraint_is_in_the_third_prompt_and_uploaded_as_a_probe(
    sessions: dict[str, ExampleSession],
) -> None:
    third = prompts(sessions[BILLING])[2]
    (probe,) = probes(sessions[BILLING])

    assert example_traces.BILLING_CONSTRAINT in third["content"]
    assert not any(
        example_traces.BILLING_CONSTRAINT in p["content"] for p in prompts(sessions[BILLING])[:2]
    )
    assert probe["seq"] == third["seq"]
    assert probe["text"].lower() in third["content"].lower()


def test_billing_tool_outputs_are_large_and_varied(sessions: dict[str, ExampleSession]) -> None:
    outputs = [
        block["content"]
        for message in messages(sessions[BILLING])
        for block in blocks(message, "tool_result")
    ]
    large = [output for output in outputs if len(output) > 4_000]

    assert len(set(large)) >= 20
    assert any("def charge(" in output for output in large)
    assert any("test session starts" in output and "FAILED" in output for output in large)


def test_billing_session_has_tool_errors_and_thinking(sessions: dict[str, ExampleSession]) -> None:
    trace = messages(sessions[BILLING])
    errors = [b for m in trace for b in blocks(m, "tool_result") if b["is_error"]]
    thinking = [b for m in trace for b in blocks(m, "thinking")]

    assert 2 <= len(errors) <= 8
    assert len(thinking) >= 5


def test_billing_context_grows_like_real_token_counts(sessions: dict[str, ExampleSession]) -> None:
    trace = messages(sessions[BILLING])
    cut = compactions(sessions[BILLING])[0]["seq"]
    before = [m for m in calls(sessions[BILLING]) if m["seq"] < cut]
    chars = 0
    for message in trace:
        if message["seq"] >= before[-1]["seq"]:
            break
        chars += len(json.dumps(message["content"]))
    growth = [context(b) - context(a) for a, b in itertools.pairwise(before)]

    assert context(before[0]) == pytest.approx(4_000, abs=100)
    assert all(step >= 0 for step in growth)
    assert context(before[-1]) - 4_000 == pytest.approx(chars / 3.5, rel=0.2)
    for previous, current in itertools.pairwise(before):
        assert current["usage"]["cache_read_input_tokens"] >= context(previous) * 0.95


def test_billing_compaction_summarizes_150k_down_to_about_35k(
    sessions: dict[str, ExampleSession],
) -> None:
    (event,) = compactions(sessions[BILLING])

    assert event["trigger"] == "auto"
    assert event["strategy"] == "summarize"
    assert event["error"] is None
    assert 150_000 <= event["tokens_before"] <= 160_000
    assert 30_000 <= event["tokens_after"] <= 40_000
    assert event["duration_ms"] > 0
    for heading in ("Goal:", "Constraints:", "Decisions:", "Done:", "Current state:", "Next"):
        assert heading in event["summary"]


def test_billing_summary_keeps_the_public_api_constraint(
    sessions: dict[str, ExampleSession],
) -> None:
    (event,) = compactions(sessions[BILLING])
    (probe,) = probes(sessions[BILLING])

    assert event["replaced"]["from_seq"] <= probe["seq"] <= event["replaced"]["to_seq"]
    assert probe["text"].lower() in event["summary"].lower()


def test_billing_context_grows_again_after_the_compaction(
    sessions: dict[str, ExampleSession],
) -> None:
    (event,) = compactions(sessions[BILLING])
    after = [m for m in calls(sessions[BILLING]) if m["seq"] >= event["seq"]]

    assert len(after) >= 20
    assert context(after[-1]) > context(after[0]) + 20_000


def test_billing_agent_rereads_a_file_it_read_before_the_compaction(
    sessions: dict[str, ExampleSession],
) -> None:
    (event,) = compactions(sessions[BILLING])
    reads = tool_uses(sessions[BILLING], "read_file")
    before = {block["input"]["path"] for seq, block in reads if seq <= event["replaced"]["to_seq"]}
    after = {block["input"]["path"] for seq, block in reads if seq > event["seq"]}

    assert {"billing/client.py", "billing/api.py"} <= before & after


def test_documented_seqs_match_the_billing_trace(sessions: dict[str, ExampleSession]) -> None:
    (event,) = compactions(sessions[BILLING])

    assert prompts(sessions[BILLING])[2]["seq"] == 26
    assert event["seq"] == 235
    assert event["replaced"] == {"from_seq": 1, "to_seq": 135}


# -- session 2: the support chat that loses its constraint -------------------------------------


def test_support_session_is_a_portuguese_chat_with_tools(
    sessions: dict[str, ExampleSession],
) -> None:
    example = sessions[SUPPORT]
    session = example.batches[0]["session"]

    assert session["agent"] == "support-triage"
    assert session["context_window"] == 100_000
    assert len(prompts(example)) >= 10
    assert len(calls(example)) >= 40
    assert "obrigad" in all_text(example).lower()


def test_support_constraint_is_stated_early_and_uploaded_as_a_probe(
    sessions: dict[str, ExampleSession],
) -> None:
    (probe,) = probes(sessions[SUPPORT])
    early = prompts(sessions[SUPPORT])[:3]

    assert probe["text"] == example_traces.SUPPORT_CONSTRAINT
    assert any(probe["seq"] == p["seq"] and probe["text"] in p["content"] for p in early)


def test_support_constraint_survives_the_first_summary_but_not_the_second(
    sessions: dict[str, ExampleSession],
) -> None:
    first, second = compactions(sessions[SUPPORT])
    (probe,) = probes(sessions[SUPPORT])

    assert probe["text"].lower() in first["summary"].lower()
    assert probe["text"].lower() not in second["summary"].lower()
    assert "e-mail" not in second["summary"].split("Restrições:")[1].split("Decisões:")[0]
    assert "só chat" not in second["summary"]
    assert second["replaced"]["to_seq"] >= probe["seq"]


def test_support_agent_emails_customer_data_after_losing_the_constraint(
    sessions: dict[str, ExampleSession],
) -> None:
    second = compactions(sessions[SUPPORT])[1]
    emails = tool_uses(sessions[SUPPORT], "enviar_email")

    assert len(emails) == 1
    seq, block = emails[0]
    assert seq > second["seq"]
    assert re.search(r"\d{3}\.\d{3}\.\d{3}-\d{2}", block["input"]["corpo"])


def test_support_cpf_passes_the_check_digit_algorithm(
    sessions: dict[str, ExampleSession],
) -> None:
    cpfs = set(re.findall(r"\b\d{3}\.\d{3}\.\d{3}-\d{2}\b", all_text(sessions[SUPPORT])))

    assert len(cpfs) == 1
    assert all(cpf_is_valid(cpf) for cpf in cpfs)


def test_support_chat_holds_an_email_address(sessions: dict[str, ExampleSession]) -> None:
    second_prompt = prompts(sessions[SUPPORT])[1]["content"]

    assert re.search(r"[\w.]+@gmail\.com", second_prompt)


def test_cpf_check_digits_match_the_known_example() -> None:
    assert example_traces.cpf_check_digits("123456789") == "09"
    assert cpf_is_valid("123.456.789-09")
    assert not cpf_is_valid("123.456.789-00")


# -- sessions 3 to 5 ---------------------------------------------------------------------------


def test_short_session_has_a_handful_of_messages_and_no_compaction(
    sessions: dict[str, ExampleSession],
) -> None:
    example = sessions[SHORT]

    assert 5 <= len(messages(example)) <= 8
    assert compactions(example) == []
    assert len(example.batches) == 1


def test_failed_compaction_reports_an_error_and_changes_nothing(
    sessions: dict[str, ExampleSession],
) -> None:
    failed, splice = compactions(sessions[FAILED])

    assert failed["error"] == "summarizer timed out after 30s"
    assert failed["tokens_after"] == failed["tokens_before"]
    assert "summary" not in failed
    assert splice["error"] is None
    assert 0.97 <= splice["tokens_after"] / splice["tokens_before"] < 1


def test_failed_compaction_session_ends_near_the_window(
    sessions: dict[str, ExampleSession],
) -> None:
    example = sessions[FAILED]
    window = example.batches[0]["session"]["context_window"]
    after = [m for m in calls(example) if m["seq"] > compactions(example)[-1]["seq"]]

    assert context(after[-1]) >= 0.9 * window
    assert context(after[-1]) > context(after[0])


def test_hostile_content_is_kept_verbatim_in_user_text_and_tool_results(
    sessions: dict[str, ExampleSession],
) -> None:
    trace = messages(sessions[HOSTILE])
    user_text = " ".join(p["content"] for p in prompts(sessions[HOSTILE]))
    results = " ".join(b["content"] for m in trace for b in blocks(m, "tool_result"))

    assert "<script>alert(1)</script>" in user_text
    assert "<img src=x onerror=alert(2)>" in user_text
    assert "<script>alert(1)</script>" in results
    assert "<img src=x onerror=alert(2)>" in results
