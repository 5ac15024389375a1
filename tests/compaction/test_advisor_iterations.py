"""Another model's inference inside a call (the advisor tool's ``advisor_message`` iteration)
is a call of that model, never compaction.

A faithful cut of a real Claude Code 2.1.232 transcript (teslamint/entirecontext, MIT; in
benchmarks/data/realtraces): its first user prompt and the response whose usage holds an
advisor iteration run on ``claude-fable-5``. The call's top-level usage holds only its own
sampling steps; the advisor's 149,112 in / 14,153 out are billed apart, at the advisor's
price, which the table does not have. Before, the product priced them as the call's
compaction at Opus 4.6 rates and put them in "summary calls".
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from compaction import selectors
from sessions.importers.claude_code import claude_code_import
from sessions.models import AgentSession, Message
from tests.factories import make_key, make_project

pytestmark = pytest.mark.django_db

REAL = (
    Path(__file__).resolve().parents[2]
    / "benchmarks/data/realtraces/teslamint__entirecontext/0T/01M0EE5721NRN8FGE1238MD50T/0"
    / "full.jsonl.gz"
)
ADVISED = "msg_011CeCPrR5DZPY5n2agnPUoV"


def _cut(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    with gzip.open(REAL, "rt", encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    prompt = next(r for r in records if r.get("type") == "user" and not r.get("isMeta"))
    advised = [
        r
        for r in records
        if r.get("type") == "assistant" and (r.get("message") or {}).get("id") == ADVISED
    ]
    path = tmp_path / "cut.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [prompt, *advised]))
    return path, advised[-1]["message"]["usage"]


def test_an_advisor_iteration_is_a_call_of_its_model_not_compaction(tmp_path: Path) -> None:
    path, usage = _cut(tmp_path)
    (advisor,) = [it for it in usage["iterations"] if it["type"] == "advisor_message"]
    assert advisor["model"] == "claude-fable-5"
    project = make_project()
    claude_code_import(project=project, paths=[path])
    session = AgentSession.objects.get(project=project)

    stored = Message.objects.get(session=session, role="assistant").iterations
    assert [it.get("model") for it in stored] == [None, "claude-fable-5", None]
    cost = selectors.session_costs([session])[session.pk]
    by_model = {m.model: (m.calls, m.usd) for m in cost.breakdown.by_model}
    assert by_model["claude-fable-5"] == (1, None)  # no price: counted, never guessed
    assert cost.breakdown.unpriced_calls == 1
    assert cost.breakdown.compaction_usd == 0
    # the call itself, at Opus 4.6 list prices (5 / 25 a million; reads 0.1x; writes 1.25x,
    # or 2x for the 1-hour part; this split names 931 of the 4,107 written as 1-hour)
    one_hour = usage["cache_creation"]["ephemeral_1h_input_tokens"]
    expected = (
        usage["input_tokens"] * 5
        + usage["output_tokens"] * 25
        + usage["cache_read_input_tokens"] * 0.5
        + (usage["cache_creation_input_tokens"] - one_hour) * 6.25
        + one_hour * 10
    ) / 1e6
    assert by_model["claude-opus-4-6"][1] == pytest.approx(expected, abs=1e-6)

    response = Client().get(
        f"/api/v1/sessions/{session.external_id}",
        headers={"Authorization": f"Bearer {make_key(project)}"},
    )
    assert response.status_code == 200, response.content
    cost_out = response.json()["cost"]
    assert cost_out["compaction_calls_usd"] == 0
    assert {m["model"] for m in cost_out["by_model"]} == {"claude-opus-4-6", "claude-fable-5"}
