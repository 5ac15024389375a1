import random

from compaction.engine.messages import (
    Iteration,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from compaction.engine.tokens import (
    CharCounter,
    billed_tokens,
    calibrate,
    char_breakdown,
    context_size,
    observed_curve,
)


def test_context_size_is_input_plus_cache_read_plus_cache_creation():
    u = Usage(
        input_tokens=3,
        output_tokens=900,
        cache_read_input_tokens=21460,
        cache_creation_input_tokens=12497,
    )
    assert context_size(u) == 33960


def test_context_size_uses_the_last_message_iteration_never_a_sum_or_a_compaction_entry():
    u = Usage(
        input_tokens=90000,
        output_tokens=500,
        iterations=(
            Iteration("message", input_tokens=40000),
            Iteration("message", input_tokens=50000),
            Iteration("compaction", input_tokens=180000, output_tokens=3000),
        ),
    )
    assert context_size(u) == 50000


def test_billed_tokens_include_compaction_iterations_the_context_series_does_not():
    u = Usage(input_tokens=100, output_tokens=10, iterations=(Iteration("compaction", 5000, 800),))
    assert billed_tokens(u) == 100 + 10 + 5000 + 800
    assert context_size(u) == 100


def test_char_breakdown_separates_prose_code_and_tool_output():
    m = Message(
        0,
        "assistant",
        (TextBlock("see:\n```py\nx = 1\n```\ndone"), ToolUseBlock("t", "bash", {"command": "ls"})),
    )
    b = char_breakdown(m)
    assert b.code == len("py\nx = 1\n") + len("bash") + len('{"command": "ls"}')
    assert b.prose == len("see:\n") + len("\ndone") + 6
    r = char_breakdown(Message(1, "user", (ToolResultBlock("t", "a.py\nb.py"),)))
    assert r.tool_output == 9
    assert r.prose == 0


def synthetic_trace(seed=3, base=18000, ratios=(4.0, 2.5, 3.2)):
    """A trace whose reported usage follows known chars-per-token ratios plus a fixed base."""
    rng = random.Random(seed)
    counter_ratios = dict(zip(("prose", "code", "tool_output"), ratios, strict=True))
    messages, seq, cum = [], 0, 0.0
    for _ in range(40):
        prompt = Message(seq, "user", (TextBlock("p" * rng.randint(50, 400)),))
        call = Message(
            seq + 1,
            "assistant",
            (ToolUseBlock(f"t{seq}", "run", {"cmd": "c" * rng.randint(10, 300)}),),
        )
        result = Message(
            seq + 2, "user", (ToolResultBlock(f"t{seq}", "o" * rng.randint(100, 9000)),)
        )
        for m in (prompt,):
            cum += sum(char_breakdown(m).get(k) / counter_ratios[k] for k in counter_ratios) + 4
        usage = Usage(input_tokens=2, cache_read_input_tokens=round(base + cum) - 2)
        messages += [prompt, Message(call.seq, "assistant", call.content, usage=usage), result]
        for m in (messages[-2], result):
            cum += sum(char_breakdown(m).get(k) / counter_ratios[k] for k in counter_ratios) + 4
        seq += 3
    return messages


def test_calibration_recovers_known_ratios_and_base_and_reports_a_small_error():
    counter = calibrate(synthetic_trace())
    report = counter.report
    assert report is not None
    assert report.samples == 40
    assert abs(counter.chars_per_token["prose"] - 4.0) < 0.2
    assert abs(counter.chars_per_token["code"] - 2.5) < 0.2
    assert abs(counter.chars_per_token["tool_output"] - 3.2) < 0.05
    assert abs(counter.base_tokens - 18000) < 50
    assert report.mean_abs_pct_error < 0.005


def test_calibration_without_usage_falls_back_and_says_so():
    counter = calibrate(
        [Message(0, "user", (TextBlock("hi"),)), Message(1, "assistant", (TextBlock("yo"),))]
    )
    assert counter.chars_per_token == {"prose": 4.0, "code": 4.0, "tool_output": 4.0}
    assert "not enough samples" in counter.report.note


def test_observed_curve_gives_one_point_per_call_reported_or_estimated():
    ms = [
        Message(0, "user", (TextBlock("x" * 4000),)),
        Message(
            1,
            "assistant",
            (TextBlock("a"),),
            usage=Usage(input_tokens=5, cache_read_input_tokens=1995, output_tokens=7),
        ),
        Message(2, "user", (TextBlock("y" * 400),)),
        Message(3, "assistant", (TextBlock("b" * 40),)),
    ]
    points = observed_curve(ms, CharCounter(), context_window=10000, base_tokens=1000)
    assert [(p.seq, p.context_tokens, p.estimated) for p in points] == [
        (1, 2000, False),
        (3, 1000 + 1004 + 5 + 104, True),
    ]
    assert points[0].billed_tokens == 2007
    assert points[0].fill == 0.2
    assert points[1].billed_tokens == points[1].context_tokens + 14


def test_attribution_splits_context_growth_over_the_messages_that_caused_it():
    from compaction.engine.messages import Message, TextBlock, Usage
    from compaction.engine.tokens import CharCounter, attribute_usage

    def call(seq, size):
        return Message(seq, "assistant", (TextBlock("ok"),), usage=Usage(input_tokens=size))

    ms = [
        Message(0, "user", (TextBlock("a" * 400),)),
        call(1, 2000),
        Message(2, "user", (TextBlock("b" * 300),)),
        Message(3, "user", (TextBlock("c" * 100),)),
        call(4, 2500),
        Message(5, "user", (TextBlock("d" * 40),)),
        call(6, 1200),  # the context shrank: no measurement, estimates stand
        Message(7, "user", (TextBlock("e" * 40),)),
    ]
    counter = CharCounter()
    a = attribute_usage(ms, counter)
    assert a.base_tokens == 2000 - counter.count_message(ms[0])
    assert a.counts[1] + a.counts[2] + a.counts[3] == 500
    assert a.counts[2] > a.counts[3]  # in proportion to their size
    assert a.estimated == frozenset({0, 4, 5, 6, 7})
    assert a.counts[5] == counter.count_message(ms[5])
