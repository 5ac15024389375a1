"""The engine's one door to the Anthropic API: client, summarizers, counter and judge.

Everything that talks to the ``anthropic`` SDK lives here, with the prompts it sends and the
parsing of what comes back: :class:`AnthropicSummarizer` (a Claude model writes the summary as
JSON), :class:`ServerCompactionSummarizer` (replays the API's own ``compact_20260112``
compaction), :func:`count_with_context_editing` (``clear_tool_uses_20250919`` as the API counts
it), :class:`AnthropicCounter` (``count_tokens``) and :class:`AnthropicJudge` (retention).

The rest of the engine is offline and deterministic and never imports this module at import
time: :func:`compaction.engine.summarizer_choice.summarizer_from_name` imports it when a
policy names an Anthropic summarizer. The SDK itself is imported only when a client is built,
on the first call, so even importing this module stays offline.

The pinned SDK (anthropic 2.x) speaks ``httpx2``: ``http_client`` is an ``httpx2.Client``
(tests give it an ``httpx2.MockTransport``; the SDK refuses a plain ``httpx`` object).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from compaction.engine import text as txt
from compaction.engine.messages import (
    Message,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    block_text,
    to_api_messages,
    usage_from_wire,
)
from compaction.engine.summarizers import (
    SUMMARY_HEADER,
    SummarizerError,
    Summary,
    SummaryError,
    SummaryResult,
)

if TYPE_CHECKING:
    import anthropic
    import httpx2
    from anthropic.types import MessageParam

DEFAULT_MODEL = "claude-sonnet-4-6"
BETA_COMPACTION = "compact-2026-01-12"
BETA_CONTEXT_EDITING = "context-management-2025-06-27"


# --- the client --------------------------------------------------------------------------------


def make_client(
    *,
    api_key: str | None,
    http_client: httpx2.Client | None = None,
    max_retries: int = 2,
    timeout: float = 60.0,
    base_url: str | None = None,
) -> anthropic.Anthropic:
    """An ``anthropic.Anthropic`` client; ``http_client`` routes (or, in tests, mocks) calls."""
    import anthropic

    return anthropic.Anthropic(
        api_key=api_key,
        http_client=http_client,
        max_retries=max_retries,
        timeout=timeout,
        base_url=base_url,
    )


class SdkClient:
    """Builds the client once, from the connection fields a dataclass declares."""

    api_key: str | None
    http_client: httpx2.Client | None
    max_retries: int
    timeout: float
    base_url: str | None
    _client: anthropic.Anthropic | None

    def client(self) -> anthropic.Anthropic:
        if self._client is None:
            self._client = make_client(
                api_key=self.api_key,
                http_client=self.http_client,
                max_retries=self.max_retries,
                timeout=self.timeout,
                base_url=self.base_url,
            )
        return self._client


def usage_of(response: Any) -> Usage:
    """The engine's :class:`Usage` of an SDK response (``iterations`` included)."""
    raw = getattr(response, "usage", None)
    if raw is None:
        return Usage()
    data = raw.model_dump() if hasattr(raw, "model_dump") else dict(raw)
    return usage_from_wire(data)


def answer_text(response: Any) -> str:
    """The text blocks of an SDK response, joined."""
    return "".join(
        getattr(b, "text", "") for b in response.content if getattr(b, "type", "") == "text"
    )


# --- prompts and answers -----------------------------------------------------------------------


def render_transcript(
    messages: Sequence[Message], *, tool_output_chars: int = 2000, max_chars: int = 400_000
) -> str:
    """A plain-text transcript for a summarizing model; long tool outputs are clipped.

    >>> from compaction.engine.messages import TextBlock
    >>> render_transcript([Message(3, "user", (TextBlock("Do not push."),))])
    '[3] user: Do not push.'
    """
    lines: list[str] = []
    for m in messages:
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                lines.append(f"[{m.seq}] {m.role} called {block_text(b)} (id {b.id})")
            elif isinstance(b, ToolResultBlock):
                flag = " ERROR" if b.is_error else ""
                body = txt.clip(b.text, tool_output_chars)
                lines.append(f"[{m.seq}] tool result{flag} for {b.tool_use_id}: {body}")
            elif isinstance(b, ThinkingBlock):
                continue
            else:
                body = block_text(b)
                if body.strip():
                    lines.append(f"[{m.seq}] {m.role}: {body}")
    out = "\n".join(lines)
    if len(out) > max_chars:
        # keep the start (the mission) and the end (the present); the middle is cheapest to lose
        half = max_chars // 2
        out = out[:half] + "\n[... transcript clipped ...]\n" + out[-half:]
    return out


def parse_json_object(text: str) -> Any:
    """The first JSON object in a model answer (tolerates a code fence or words around it).

    >>> parse_json_object('Here: ```json\\n{"goal": "x"}\\n```')
    {'goal': 'x'}
    """
    start = text.find("{")
    if start < 0:
        raise SummaryError("answer: no JSON object found")
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise SummaryError(f"answer: invalid JSON ({exc.msg} at char {exc.pos})") from exc
    return value


SYSTEM_PROMPT = """\
You condense the older part of a long working session between a user and an AI agent. The
agent will lose that part of the conversation once you answer; your notes are all it will keep.

Reply with one JSON object and nothing else. Keys, all required:
  "goal": string, what the user ultimately wants, in one or two sentences;
  "constraints": list of strings, every rule or limit the user set, copied word for word,
      in whatever language it was written ("do not ...", "never ...", "only ...", "must ...");
  "decisions": list of strings, choices made and the reason for each;
  "done": list of strings, work finished, naming files and commands;
  "current_state": string, where the work stands at the end of the transcript;
  "next_steps": list of strings, what remains, in order;
  "files_touched": list of strings, each "path (read)" or "path (edited)";
  "errors": list of strings, failures seen and whether they were fixed.

Keep paths, identifiers, numbers, versions and error messages exact. Record only what the
transcript shows; write an empty list rather than guess. When a detail is too long to keep,
say where it came from (for example "full traceback in the earlier pytest run") so the agent
can fetch it again. Notes from an earlier condensation may appear in the transcript: carry
their constraints and decisions forward."""

JUDGE_PROMPT = """\
You check whether working notes kept by an AI agent still convey a list of facts. For each
numbered fact, answer true if a reader of the context below would know it (same meaning,
any wording or language), false if it is missing, weakened or contradicted.
Reply with one JSON object only: {"kept": [true, false, ...]} with one boolean per fact."""


# --- a summary written by a model ----------------------------------------------------------------


@dataclass
class AnthropicSummarizer(SdkClient):
    """Summaries written by a Claude model through the ``anthropic`` SDK, validated as JSON.

    Transport errors and 429/5xx/529 answers are retried by the SDK (``max_retries``, with its
    backoff); an answer that is not valid JSON for the schema is asked again up to
    ``json_attempts`` times. Every attempt's usage adds up in ``SummaryResult.cost``.

    >>> AnthropicSummarizer(api_key="k").name  # no client, no network until summarize()
    'anthropic'
    """

    api_key: str | None = None
    model: str = DEFAULT_MODEL
    http_client: httpx2.Client | None = None
    max_tokens: int = 4096
    timeout: float = 120.0
    max_retries: int = 3
    json_attempts: int = 2
    tool_output_chars: int = 2000
    max_input_chars: int = 400_000
    base_url: str | None = None
    name: str = "anthropic"
    _client: anthropic.Anthropic | None = field(default=None, init=False, repr=False)

    def summarize(self, messages: Sequence[Message]) -> SummaryResult:
        transcript = render_transcript(
            messages, tool_output_chars=self.tool_output_chars, max_chars=self.max_input_chars
        )
        convo: list[MessageParam] = [
            {
                "role": "user",
                "content": f"<transcript>\n{transcript}\n</transcript>\n\nWrite the JSON notes.",
            }
        ]
        cost = Usage()
        error: SummaryError | None = None
        for attempt in range(1, self.json_attempts + 1):
            response = self.client().messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=SYSTEM_PROMPT,
                messages=convo,
            )
            cost = cost + usage_of(response)
            answer = answer_text(response)
            try:
                summary = Summary.from_dict(parse_json_object(answer))
            except SummaryError as exc:
                error = exc
                convo = [
                    *convo,
                    {"role": "assistant", "content": answer or "(empty)"},
                    {
                        "role": "user",
                        "content": f"That answer was rejected ({exc}). Reply again with the "
                        "JSON object only, with exactly the keys listed.",
                    },
                ]
                continue
            return SummaryResult(
                summary, summary.to_text(), self.name, cost, self.model, attempts=attempt
            )
        raise SummarizerError(
            f"{self.model} gave no valid summary in {self.json_attempts} attempts: {error}", cost
        )


# --- server-side compaction (compact_20260112) ---------------------------------------------------


def compaction_edit(
    *,
    trigger_tokens: int | None = None,
    instructions: str | None = None,
    pause_after_compaction: bool = False,
) -> dict[str, Any]:
    """The ``context_management.edits`` entry that turns on server-side compaction.

    >>> compaction_edit(trigger_tokens=100000)
    {'type': 'compact_20260112', 'trigger': {'type': 'input_tokens', 'value': 100000}}
    """
    edit: dict[str, Any] = {"type": "compact_20260112"}
    if trigger_tokens is not None:
        edit["trigger"] = {"type": "input_tokens", "value": trigger_tokens}
    if instructions:
        edit["instructions"] = instructions
    if pause_after_compaction:
        edit["pause_after_compaction"] = True
    return edit


@dataclass
class ServerCompactionSummarizer(SdkClient):
    """Replays the API's own compaction: sends the old messages with ``compact_20260112``.

    ``pause_after_compaction`` makes the API stop right after writing the compaction block, so
    the block's ``content`` is the summary and ``usage`` (iterations included) is its cost.
    The API compacts only above its trigger (minimum 50,000 input tokens); below it this
    raises :class:`SummarizerError`.
    """

    api_key: str | None = None
    model: str = "claude-opus-4-6"
    http_client: httpx2.Client | None = None
    trigger_tokens: int = 50_000
    instructions: str | None = None
    max_tokens: int = 4096
    timeout: float = 300.0
    max_retries: int = 3
    base_url: str | None = None
    name: str = "server_compaction"
    _client: anthropic.Anthropic | None = field(default=None, init=False, repr=False)

    def request(self, messages: Sequence[Message]) -> dict[str, Any]:
        """The keyword arguments of ``client.beta.messages.create`` for these messages."""
        system, api = to_api_messages(messages)
        if not api or api[-1]["role"] != "user":
            api.append({"role": "user", "content": "Continue."})
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": api,
            "betas": [BETA_COMPACTION],
            "context_management": {
                "edits": [
                    compaction_edit(
                        trigger_tokens=self.trigger_tokens,
                        instructions=self.instructions,
                        pause_after_compaction=True,
                    )
                ]
            },
        }
        if system:
            kwargs["system"] = system
        return kwargs

    def summarize(self, messages: Sequence[Message]) -> SummaryResult:
        response = self.client().beta.messages.create(**self.request(messages))
        cost = usage_of(response)
        block = next((b for b in response.content if getattr(b, "type", "") == "compaction"), None)
        if block is None:
            raise SummarizerError(
                "the API did not compact: the context is below the trigger "
                f"({self.trigger_tokens} input tokens)",
                cost,
            )
        content = getattr(block, "content", None)
        if not content:
            raise SummarizerError("the API returned a compaction block without a summary", cost)
        summary = Summary(current_state=str(content))
        note = f"{SUMMARY_HEADER}\n{content}"
        return SummaryResult(summary, note, self.name, cost, self.model)


# --- context editing (clear_tool_uses_20250919) --------------------------------------------------


def clear_tool_uses_edit(
    *,
    trigger_tokens: int | None = None,
    keep_tool_uses: int | None = None,
    clear_at_least: int | None = None,
    exclude_tools: Sequence[str] = (),
    clear_tool_inputs: bool = False,
) -> dict[str, Any]:
    """The ``context_management.edits`` entry for API-side tool result clearing.

    >>> clear_tool_uses_edit(trigger_tokens=30000, keep_tool_uses=3)["keep"]
    {'type': 'tool_uses', 'value': 3}
    """
    edit: dict[str, Any] = {"type": "clear_tool_uses_20250919"}
    if trigger_tokens is not None:
        edit["trigger"] = {"type": "input_tokens", "value": trigger_tokens}
    if keep_tool_uses is not None:
        edit["keep"] = {"type": "tool_uses", "value": keep_tool_uses}
    if clear_at_least is not None:
        edit["clear_at_least"] = {"type": "input_tokens", "value": clear_at_least}
    if exclude_tools:
        edit["exclude_tools"] = list(exclude_tools)
    if clear_tool_inputs:
        edit["clear_tool_inputs"] = True
    return edit


@dataclass(frozen=True)
class ContextEditingCount:
    """What context editing would leave of a history, as ``count_tokens`` reports it.

    >>> ContextEditingCount(original_input_tokens=5000, input_tokens=1200).cleared_tokens
    3800
    """

    original_input_tokens: int
    input_tokens: int

    @property
    def cleared_tokens(self) -> int:
        return self.original_input_tokens - self.input_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "original_input_tokens": self.original_input_tokens,
            "input_tokens": self.input_tokens,
            "cleared_tokens": self.cleared_tokens,
        }


def count_with_context_editing(
    messages: Sequence[Message],
    edit: Mapping[str, Any],
    *,
    model: str,
    api_key: str | None = None,
    http_client: httpx2.Client | None = None,
    max_retries: int = 2,
    timeout: float = 30.0,
    base_url: str | None = None,
) -> ContextEditingCount:
    """Ask ``count_tokens`` (beta) how many tokens a context editing edit would leave."""
    client = make_client(
        api_key=api_key,
        http_client=http_client,
        max_retries=max_retries,
        timeout=timeout,
        base_url=base_url,
    )
    system, api = to_api_messages(messages)
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": api,
        "betas": [BETA_CONTEXT_EDITING],
        "context_management": {"edits": [dict(edit)]},
    }
    if system:
        kwargs["system"] = system
    result = client.beta.messages.count_tokens(**kwargs)
    after = int(result.input_tokens)
    cm = getattr(result, "context_management", None)
    original = int(getattr(cm, "original_input_tokens", after)) if cm is not None else after
    return ContextEditingCount(original, after)


# --- exact token counts (count_tokens) -----------------------------------------------------------


class AnthropicCounter:
    """Exact counts from the Messages API ``count_tokens`` endpoint, through the SDK.

    ``count`` is exact for a whole context. ``count_message`` counts one message on its own
    (rendered as text, minus the cost of an empty request), which is close but not exact.
    It is a :class:`compaction.engine.tokens.TokenCounter`.
    """

    name = "anthropic"
    exact = True

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        http_client: httpx2.Client | None = None,
        system: str | None = None,
        max_retries: int = 2,
        timeout: float = 30.0,
        base_url: str | None = None,
    ) -> None:
        self.model = model
        self.system = system
        self._api_key = api_key
        self._http_client = http_client
        self._max_retries = max_retries
        self._timeout = timeout
        self._base_url = base_url
        self._client: anthropic.Anthropic | None = None
        self._baseline: int | None = None

    def _get_client(self) -> anthropic.Anthropic:
        if self._client is None:
            self._client = make_client(
                api_key=self._api_key,
                http_client=self._http_client,
                max_retries=self._max_retries,
                timeout=self._timeout,
                base_url=self._base_url,
            )
        return self._client

    def count_wire(self, messages: list[dict[str, Any]], system: str | None = None) -> int:
        """Count API-shaped messages as they are."""
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        sys_text = system if system is not None else self.system
        if sys_text:
            kwargs["system"] = sys_text
        result = self._get_client().messages.count_tokens(**kwargs)
        return int(result.input_tokens)

    def count(self, messages: Iterable[Message]) -> int:
        system, api = to_api_messages(list(messages))
        return self.count_wire(api, system or None)

    def count_message(self, message: Message) -> int:
        if self._baseline is None:
            self._baseline = self.count_wire([{"role": "user", "content": "."}])
        text = message.text or "."
        return max(0, self.count_wire([{"role": "user", "content": text}]) - self._baseline)


# --- a judge for retention -----------------------------------------------------------------------


@dataclass
class AnthropicJudge(SdkClient):
    """An LLM judge for retention (a :class:`compaction.engine.evals.Judge`).

    Asked only about the facts not found verbatim; its usage adds up in ``cost``.
    """

    api_key: str | None = None
    model: str = DEFAULT_MODEL
    http_client: httpx2.Client | None = None
    max_tokens: int = 1024
    timeout: float = 60.0
    max_retries: int = 3
    base_url: str | None = None
    cost: Usage = field(default_factory=Usage)
    _client: anthropic.Anthropic | None = field(default=None, init=False, repr=False)

    def judge(self, facts: Sequence[str], context: str) -> list[bool]:
        listing = "\n".join(f"{i + 1}. {f}" for i, f in enumerate(facts))
        response = self.client().messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            system=JUDGE_PROMPT,
            messages=[
                {
                    "role": "user",
                    "content": f"<context>\n{context}\n</context>\n<facts>\n{listing}\n</facts>",
                }
            ],
        )
        self.cost = self.cost + usage_of(response)
        data = parse_json_object("".join(getattr(b, "text", "") for b in response.content))
        kept = data.get("kept") if isinstance(data, Mapping) else None
        if not isinstance(kept, list) or len(kept) != len(facts):
            raise SummaryError(f"judge: expected {len(facts)} booleans under 'kept'")
        return [v is True for v in kept]
