import json

import pytest

from compaction.engine.messages import (
    CompactionBlock,
    ImageBlock,
    Message,
    OpaqueBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireError,
    check_pairs,
    message_from_wire,
    message_to_wire,
    messages_from_wire,
    to_api_messages,
    turns,
)
from tests.engine.builders import History

DESIGN_EXAMPLE = [
    {
        "seq": 0,
        "role": "user",
        "content": "Migrate billing to API v2. Do not change the public API.",
        "timestamp": "2026-11-02T10:00:00Z",
    },
    {
        "seq": 1,
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading the module."},
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "read_file",
                "input": {"path": "billing/api.py"},
            },
        ],
        "usage": {
            "input_tokens": 4100,
            "output_tokens": 95,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        },
    },
    {
        "seq": 2,
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01",
                "content": "def charge(...): ...",
                "is_error": False,
            }
        ],
    },
]


def test_wire_format_example_from_design_reads_into_messages():
    ms = messages_from_wire(DESIGN_EXAMPLE)
    assert [m.role for m in ms] == ["user", "assistant", "user"]
    assert ms[0].content == (TextBlock("Migrate billing to API v2. Do not change the public API."),)
    assert ms[0].timestamp == "2026-11-02T10:00:00Z"
    assert ms[1].content[1] == ToolUseBlock("toolu_01", "read_file", {"path": "billing/api.py"})
    assert ms[1].usage is not None
    assert ms[1].usage.input_tokens == 4100
    assert ms[2].content == (ToolResultBlock("toolu_01", "def charge(...): ...", False),)
    assert check_pairs(ms) == []


def test_unknown_block_types_are_kept_opaque_not_rejected():
    m = message_from_wire(
        {
            "seq": 0,
            "role": "assistant",
            "content": [{"type": "server_tool_use", "id": "s1", "name": "web_search"}],
        }
    )
    assert m.content == (
        OpaqueBlock(
            "server_tool_use", {"type": "server_tool_use", "id": "s1", "name": "web_search"}
        ),
    )
    assert message_to_wire(m)["content"] == [
        {"type": "server_tool_use", "id": "s1", "name": "web_search"}
    ]


def test_wire_round_trip_keeps_every_block_kind():
    raw = {
        "seq": 7,
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "redacted_thinking", "data": "xyz"},
            {"type": "compaction", "content": "Earlier work summarized.", "encrypted_content": "E"},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            {"type": "text", "text": "ok"},
        ],
        "usage": {
            "input_tokens": 1,
            "output_tokens": 2,
            "iterations": [{"type": "compaction", "input_tokens": 9}],
        },
    }
    m = message_from_wire(raw)
    assert m.content[0] == ThinkingBlock("hmm", "sig")
    assert m.content[1] == ThinkingBlock("xyz", None, redacted=True)
    assert m.content[2] == CompactionBlock("Earlier work summarized.", "E")
    assert m.content[3] == ImageBlock("url", "https://example.com/a.png")
    back = message_from_wire(json.loads(json.dumps(message_to_wire(m))))
    assert back == m


def test_inline_images_are_kept_by_reference_not_by_bytes():
    m = message_from_wire(
        {
            "seq": 0,
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "QUJD" * 100},
                }
            ],
        }
    )
    image = m.content[0]
    assert isinstance(image, ImageBlock)
    assert image.ref.startswith("sha256:")
    assert "QUJD" not in json.dumps(message_to_wire(m))


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ({"role": "user", "content": "x"}, "messages[0].seq: missing or not an integer"),
        (
            {"seq": 0, "role": "robot", "content": "x"},
            "messages[0].role: must be one of system, user, assistant",
        ),
        ({"seq": 0, "role": "user"}, "messages[0].content: missing"),
        (
            {"seq": 0, "role": "user", "content": [{"text": "no type"}]},
            "messages[0].content[0].type: missing or not a string",
        ),
        (
            {"seq": 0, "role": "user", "content": "x", "usage": {"input_tokens": "many"}},
            "messages[0].usage.input_tokens: expected a number",
        ),
    ],
)
def test_wire_errors_name_the_field(raw, error):
    with pytest.raises(WireError) as exc:
        messages_from_wire([raw])
    assert str(exc.value) == error


def test_turns_never_start_at_tool_result_carrier():
    h = History().system("rules").user("fix the bug").tool("read_file", "code", path="a.py")
    h.assistant("fixed").user("now the docs").tool("read_file", "docs", path="README.md").assistant(
        "done"
    )
    ts = turns(h.messages)
    assert [t.messages[0].role for t in ts] == ["system", "user", "user"]
    assert [t.messages[0].text for t in ts[1:]] == ["fix the bug", "now the docs"]
    for t in ts:
        assert check_pairs(list(t.messages)) == []


def test_check_pairs_lists_every_orphan_use_and_result():
    h = History().user("go").tool("ls", "a.py").tool("cat", "x")
    ms = h.messages
    orphaned = [ms[0], ms[1], ms[4]]  # lost the result of the first call and the use of the second
    assert [(o.kind, o.tool_use_id) for o in check_pairs(orphaned)] == [
        ("tool_use", "toolu_0001"),
        ("tool_result", "toolu_0003"),
    ]


def test_to_api_messages_moves_system_out_and_drops_unsigned_thinking():
    ms = [
        Message(0, "system", (TextBlock("Be brief."),)),
        Message(1, "user", (TextBlock("hi"),)),
        Message(2, "assistant", (ThinkingBlock("secret", None), TextBlock("hello"))),
    ]
    system, api = to_api_messages(ms)
    assert system == "Be brief."
    assert api == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
    ]
