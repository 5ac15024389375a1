"""Deterministic example traces in the ingest wire format, v1 (see DESIGN.md).

`example_sessions()` returns five sessions, each as the batches an agent would POST to
`/api/v1/sessions/{external_id}/events`, in upload order. Nothing here touches the network,
the clock or Django: every call returns equal data, built from seeded `random.Random`s.

- ``example-billing-migration``: a long coding session (billing-migrator, claude-opus-4-6,
  200k window; 316 messages, 158 model calls, 8 batches). The first prompt (seq 0) is "Migrate
  billing to API v2."; the third real prompt (seq 26) says "Do not change the public API of
  the billing module." and is uploaded as a probe. One auto compaction (seq 235, 150,259 to
  38,713 tokens, replaced seqs 1-135) keeps that constraint in its summary; afterwards the
  agent re-reads billing/client.py, billing/api.py and other files it had read before the cut.
- ``example-support-triage``: a Portuguese customer chat with tools (support-triage, 100k
  window; 124 messages) holding a check-digit-valid CPF and an e-mail address. The customer's
  "nunca compartilhe meus dados por e-mail" is in the third prompt (seq 8, a probe). Two auto
  compactions (seq 51 and 101): the first summary keeps the constraint, the second drops it,
  and the agent then e-mails her CPF.
- ``example-short-question``: six messages, no compaction.
- ``example-failed-compaction``: a compaction that reports ``error`` (seq 79) and a splice
  that saved under 1k tokens (seq 101); the context then climbs to 94% of the window.
- ``example-hostile-content``: ``<script>`` and ``<img onerror>`` in user text and in a tool
  result (and in session metadata), to check that every page escapes trace content.

Conventions shared by all sessions: seq is dense from 0; a real prompt is a user message with
string content; every assistant message with ``tool_use`` blocks is followed by one user
message holding exactly their ``tool_result`` blocks, in order; every assistant message has a
``usage`` whose input + cache-read + cache-creation tokens is the context the call saw (about
chars / 3.5 plus the system prompt). A compaction's ``seq`` is the first message produced
after compacting, the assistant reply of the first call that saw the compacted context;
``replaced`` always ends just before a real prompt, so no tool pair is split.

Write them out with ``python -m sessions.examples OUTDIR`` (one JSON Lines file per session,
one batch per line).
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import math
import random
import re
import string
import sys
import unicodedata
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = [
    "BILLING_CONSTRAINT",
    "BILLING_GOAL",
    "SUPPORT_CONSTRAINT",
    "ExampleSession",
    "cpf_check_digits",
    "example_sessions",
    "main",
    "write_examples",
]

BILLING_GOAL = "Migrate billing to API v2."
BILLING_CONSTRAINT = "Do not change the public API of the billing module."
SUPPORT_CONSTRAINT = "nunca compartilhe meus dados por e-mail"

_SEED = 20261102
_CHARS_PER_TOKEN = 3.5
_BATCH_SIZE = 40
_ID_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True)
class ExampleSession:
    """One example trace: the wire-format batches an agent would upload, in order."""

    external_id: str
    batches: list[dict[str, Any]]


def example_sessions() -> list[ExampleSession]:
    """All example sessions, identical on every call.

    >>> [s.external_id for s in example_sessions()][:2]
    ['example-billing-migration', 'example-support-triage']
    """
    tool_ids: set[str] = set()
    return [
        _billing_migration(tool_ids),
        _support_triage(tool_ids),
        _short_question(tool_ids),
        _failed_compaction(tool_ids),
        _hostile_content(tool_ids),
    ]


def write_examples(directory: Path) -> list[Path]:
    """Write each example session to ``directory/<external_id>.jsonl``, one batch a line."""
    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for example in example_sessions():
        path = directory / f"{example.external_id}.jsonl"
        lines = [json.dumps(batch, ensure_ascii=False) for batch in example.batches]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sessions.examples",
        description="Write the example traces as JSON Lines, one batch per line.",
    )
    parser.add_argument("outdir", type=Path, help="directory to write the .jsonl files into")
    args = parser.parse_args(argv)
    for path in write_examples(args.outdir):
        print(path)
    return 0


def cpf_check_digits(base: str) -> str:
    """The two check digits of a CPF whose first nine digits are ``base``.

    >>> cpf_check_digits("123456789")
    '09'
    """
    digits = [int(char) for char in base]
    for _ in range(2):
        weight = len(digits) + 1
        remainder = sum(d * (weight - i) for i, d in enumerate(digits)) % 11
        digits.append(0 if remainder < 2 else 11 - remainder)
    return f"{digits[-2]}{digits[-1]}"


# --------------------------------------------------------------------------------------------
# Building a trace
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    """One tool call as the agent made it, with the result the tool gave back."""

    name: str
    input: dict[str, Any]
    output: str
    is_error: bool = False
    seconds: float = 1.5


def _text_tokens(text: str) -> int:
    return math.ceil(len(text) / _CHARS_PER_TOKEN)


def _content_tokens(content: str | list[dict[str, Any]]) -> int:
    if isinstance(content, str):
        return _text_tokens(content) + 4
    total = 4
    for block in content:
        kind = block["type"]
        if kind == "text":
            total += _text_tokens(block["text"])
        elif kind == "thinking":
            total += _text_tokens(block["thinking"])
        elif kind == "tool_use":
            total += _text_tokens(block["name"] + json.dumps(block["input"])) + 12
        elif kind == "tool_result":
            total += _text_tokens(block["content"]) + 8
    return total


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class _Trace:
    """Appends messages with dense seqs, timestamps and the usage a real model call reports.

    ``context`` is what the next model call would see: the system prompt plus every message
    still in the window. Before each call the session's ``policy`` may compact it.
    """

    def __init__(
        self,
        *,
        external_id: str,
        rng: random.Random,
        tool_ids: set[str],
        session: dict[str, Any],
        system_tokens: int,
    ) -> None:
        self.external_id = external_id
        self.rng = rng
        self.session = session
        self.system_tokens = system_tokens
        self.policy: Callable[[_Trace], None] | None = None
        self.messages: list[dict[str, Any]] = []
        self.sizes: list[int] = []
        self.prompt_seqs: list[int] = []
        self.compactions: list[dict[str, Any]] = []
        self.probes: list[dict[str, Any]] = []
        self.context = system_tokens
        self._cached = 0
        self._tool_ids = tool_ids
        self._clock = datetime.fromisoformat(session["started_at"])

    # -- messages ------------------------------------------------------------------------

    def prompt(self, text: str, *, wait: float | None = None) -> int:
        """A real user prompt; returns its seq."""
        if self.messages and self.messages[-1]["role"] != "assistant":
            raise RuntimeError(f"{self.external_id}: two user messages in a row")
        self._wait(self.rng.uniform(6, 30) if wait is None else wait)
        seq = self._append("user", text)
        self.prompt_seqs.append(seq)
        return seq

    def step(self, *calls: _Call, text: str | None = None, thinking: str | None = None) -> None:
        """One model call that asks for tools, then the user message carrying their results."""
        uses = [
            {"type": "tool_use", "id": self._tool_id(), "name": call.name, "input": call.input}
            for call in calls
        ]
        self._assistant([*self._opening(text, thinking), *uses])
        self._wait(sum(call.seconds for call in calls))
        results = [
            {
                "type": "tool_result",
                "tool_use_id": use["id"],
                "content": _truncated(call.output),
                "is_error": call.is_error,
            }
            for use, call in zip(uses, calls, strict=True)
        ]
        self._append("user", results)

    def reply(self, text: str, *, thinking: str | None = None) -> None:
        """A model call that ends the turn with text."""
        self._assistant(self._opening(text, thinking))

    def probe(self, seq: int, text: str, check: str) -> None:
        self.probes.append({"seq": seq, "text": text, "check": check})

    # -- compactions ---------------------------------------------------------------------

    def tokens_after(self, summary: str, keep_from: int) -> int:
        """Context after replacing seqs 1..keep_from-1 with ``summary`` (seq 0 stays pinned)."""
        return (
            self.system_tokens
            + self.sizes[0]
            + _content_tokens(summary)
            + sum(self.sizes[keep_from:])
        )

    def keep_from(self, summary: str, *, target_after: int, after_seq: int) -> int:
        """The real prompt to cut before so the compacted context lands near ``target_after``."""
        candidates = [seq for seq in self.prompt_seqs if seq > after_seq]
        return min(candidates, key=lambda s: abs(self.tokens_after(summary, s) - target_after))

    def summarize(self, *, summary: str, keep_from: int, duration_ms: int) -> None:
        after = self.tokens_after(summary, keep_from)
        self.compactions.append(
            {
                "seq": len(self.messages),
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": self.context,
                "tokens_after": after,
                "summary": summary,
                "replaced": {"from_seq": 1, "to_seq": keep_from - 1},
                "duration_ms": duration_ms,
                "error": None,
            }
        )
        self.context = after
        # The prefix changed, so only the system prompt is still cached.
        self._cached = self.system_tokens
        self._wait(duration_ms / 1000)

    def fail_compaction(self, *, error: str, duration_ms: int) -> None:
        self.compactions.append(
            {
                "seq": len(self.messages),
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": self.context,
                "tokens_after": self.context,
                "duration_ms": duration_ms,
                "error": error,
            }
        )
        self._wait(duration_ms / 1000)

    def splice_saving_nothing(
        self, *, summary: str, to_seq: int, saved: int, duration_ms: int
    ) -> None:
        after = self.context - saved
        self.compactions.append(
            {
                "seq": len(self.messages),
                "trigger": "threshold",
                "strategy": "summarize",
                "tokens_before": self.context,
                "tokens_after": after,
                "summary": summary,
                "replaced": {"from_seq": 1, "to_seq": to_seq},
                "duration_ms": duration_ms,
                "error": None,
            }
        )
        self.context = after
        self._cached = self.system_tokens
        self._wait(duration_ms / 1000)

    # -- output --------------------------------------------------------------------------

    def example(self, *, batch_size: int = _BATCH_SIZE) -> ExampleSession:
        if self.messages[-1]["role"] != "assistant":
            raise RuntimeError(f"{self.external_id}: a session must end on an assistant reply")
        batches: list[dict[str, Any]] = []
        for start in range(0, len(self.messages), batch_size):
            chunk = self.messages[start : start + batch_size]
            seqs = range(start, start + len(chunk))
            session = copy.deepcopy(self.session)
            if start + batch_size >= len(self.messages):
                session["ended_at"] = chunk[-1]["timestamp"]
            batch: dict[str, Any] = {"session": session, "messages": copy.deepcopy(chunk)}
            compactions = [c for c in self.compactions if c["seq"] in seqs]
            if compactions:
                batch["compactions"] = copy.deepcopy(compactions)
            probes = [p for p in self.probes if p["seq"] in seqs]
            if probes:
                batch["probes"] = copy.deepcopy(probes)
            batches.append(batch)
        return ExampleSession(external_id=self.external_id, batches=batches)

    # -- internals -----------------------------------------------------------------------

    def _opening(self, text: str | None, thinking: str | None) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if thinking:
            signature = "".join(self.rng.choices(_ID_ALPHABET + "+/", k=96))
            blocks.append({"type": "thinking", "thinking": thinking, "signature": signature})
        if text:
            blocks.append({"type": "text", "text": text})
        return blocks

    def _assistant(self, blocks: list[dict[str, Any]]) -> None:
        if self.messages and self.messages[-1]["role"] != "user":
            raise RuntimeError(f"{self.external_id}: two assistant messages in a row")
        if self.policy is not None:
            self.policy(self)
        fresh = self.context - self._cached
        input_tokens = min(fresh, self.rng.randint(2, 9))
        usage = {
            "input_tokens": input_tokens,
            "output_tokens": _content_tokens(blocks) + self.rng.randint(0, 12),
            "cache_read_input_tokens": self._cached,
            "cache_creation_input_tokens": fresh - input_tokens,
        }
        self._cached = self.context - input_tokens
        self._wait(self.rng.uniform(1.5, 4.0) + usage["output_tokens"] / 90)
        self._append("assistant", blocks, usage)

    def _append(
        self,
        role: str,
        content: str | list[dict[str, Any]],
        usage: dict[str, int] | None = None,
    ) -> int:
        seq = len(self.messages)
        message: dict[str, Any] = {
            "seq": seq,
            "role": role,
            "content": content,
            "timestamp": _iso(self._clock),
        }
        if usage is not None:
            message["usage"] = usage
        size = _content_tokens(content)
        self.messages.append(message)
        self.sizes.append(size)
        self.context += size
        return seq

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._clock += timedelta(seconds=max(1, round(seconds)))

    def _tool_id(self) -> str:
        while True:
            candidate = "toolu_01" + "".join(self.rng.choices(_ID_ALPHABET, k=20))
            if candidate not in self._tool_ids:
                self._tool_ids.add(candidate)
                return candidate


def _truncated(output: str, limit: int = 30_000) -> str:
    """Tool output as agent harnesses pass it on: the middle of a long output is cut."""
    if len(output) <= limit:
        return output
    lines = output.splitlines()
    head: list[str] = []
    tail: list[str] = []
    size = 0
    while lines and size + len(lines[0]) < limit // 2:
        size += len(lines[0]) + 1
        head.append(lines.pop(0))
    size = 0
    while lines and size + len(lines[-1]) < limit // 2:
        size += len(lines[-1]) + 1
        tail.insert(0, lines.pop())
    return "\n".join([*head, "", f"... [{len(lines)} lines truncated] ...", "", *tail])


def _numbered(text: str) -> str:
    """File contents the way ``cat -n`` prints them, as coding agents' read tools do."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(text.splitlines(), 1))


def _rule(title: str, char: str = "=") -> str:
    return f" {title} ".center(80, char)


# --------------------------------------------------------------------------------------------
# A small repository the coding agents work on
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Failure:
    """A failing test as pytest reports it."""

    test_id: str
    error: tuple[str, ...]
    marker: str = "assert "
    exception: str = "AssertionError"
    frames: tuple[tuple[str, str, str, str], ...] = ()
    arguments: tuple[str, ...] = ()


class _Repo:
    """Files in memory, and the tools a coding agent uses on them."""

    def __init__(self, files: dict[str, str], *, root: str, pytest_version: str) -> None:
        self.files = dict(files)
        self.root = root
        self.pytest_version = pytest_version
        self.params: dict[tuple[str, str], list[str]] = {}
        self.edited: list[str] = []
        self._seen: set[str] = set()

    def read(self, path: str, *, fails: bool = False) -> _Call:
        text = self.files.get(path)
        if text is None:
            call = _Call("read_file", {"path": path}, f"File does not exist: {path}", True)
        else:
            self._seen.add(path)
            call = _Call("read_file", {"path": path}, _numbered(text), seconds=0.4)
        return _checked(call, fails)

    def edit(
        self, path: str, old: str, new: str, *, replace_all: bool = False, fails: bool = False
    ) -> _Call:
        arguments: dict[str, Any] = {"path": path, "old_string": old, "new_string": new}
        if replace_all:
            arguments["replace_all"] = True
        text = self.files.get(path)
        count = 0 if text is None else text.count(old)
        if text is None or path not in self._seen:
            output = "File has not been read yet. Read it first before writing to it."
        elif count == 0:
            output = f"String to replace not found in file.\nString: {old}"
        elif count > 1 and not replace_all:
            output = (
                f"Found {count} matches of the string to replace, but replace_all is false. "
                "To replace all occurrences, set replace_all to true. To replace only one "
                f"occurrence, please provide more context to uniquely identify the instance.\n"
                f"String: {old}"
            )
        else:
            first = text[: text.index(old)].count("\n")
            text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
            self.files[path] = text
            if path not in self.edited:
                self.edited.append(path)
            if replace_all:
                output = (
                    f"The file {path} has been updated. All occurrences of '{old}' were "
                    f"successfully replaced with '{new}'."
                )
            else:
                lines = text.splitlines()
                low, high = max(0, first - 4), min(len(lines), first + new.count("\n") + 5)
                snippet = "\n".join(f"{n + 1:>6}\t{lines[n]}" for n in range(low, high))
                output = (
                    f"The file {path} has been updated. Here's the result of running `cat -n` "
                    f"on a snippet of the edited file:\n{snippet}"
                )
            return _checked(_Call("edit_file", arguments, output, seconds=0.8), fails)
        return _checked(_Call("edit_file", arguments, output, True, seconds=0.3), fails)

    def grep(self, pattern: str, path: str = ".") -> _Call:
        regex = re.compile(pattern)
        hits = [
            f"{name}:{number}:{line}"
            for name in sorted(self.files)
            if path == "." or name.startswith(path.rstrip("/") + "/") or name == path
            for number, line in enumerate(self.files[name].splitlines(), 1)
            if regex.search(line)
        ]
        output = "\n".join(hits[:250]) if hits else "No matches found"
        if len(hits) > 250:
            output += f"\n[{len(hits) - 250} more matches not shown]"
        return _Call("grep", {"pattern": pattern, "path": path}, output, seconds=0.6)

    def ls(self, path: str = ".") -> _Call:
        prefix = "" if path == "." else path.rstrip("/") + "/"
        names = sorted(name[len(prefix) :] for name in self.files if name.startswith(prefix))
        lines = [f"- {self.root}/{prefix}"]
        shown: set[str] = set()
        for name in names:
            parts = name.split("/")
            for depth in range(len(parts)):
                key = "/".join(parts[: depth + 1])
                if key in shown:
                    continue
                shown.add(key)
                is_dir = depth < len(parts) - 1
                lines.append("  " * (depth + 1) + f"- {parts[depth]}{'/' if is_dir else ''}")
        return _Call("list_dir", {"path": path}, "\n".join(lines), seconds=0.3)

    def collect(self, target: str) -> list[str]:
        names = sorted(
            name
            for name in self.files
            if (name == target or name.startswith(target.rstrip("/") + "/"))
            and re.search(r"(^|/)test_\w+\.py$", name)
        )
        ids: list[str] = []
        for name in names:
            klass = ""
            for line in self.files[name].splitlines():
                if found := re.match(r"class (Test\w+)", line):
                    klass = found.group(1) + "::"
                elif found := re.match(r"def (test_\w+)\(", line):
                    klass = ""
                    ids.extend(self._expand(name, found.group(1), ""))
                elif klass and (found := re.match(r"    def (test_\w+)\(", line)):
                    ids.extend(self._expand(name, found.group(1), klass))
        return ids

    def _expand(self, path: str, function: str, klass: str) -> list[str]:
        params = self.params.get((path, function))
        if params:
            return [f"{path}::{klass}{function}[{p}]" for p in params]
        return [f"{path}::{klass}{function}"]

    def pytest(
        self,
        target: str,
        *,
        verbose: bool = False,
        failures: Sequence[_Failure] = (),
        warnings: Sequence[str] = (),
        warning_count: int = 0,
        coverage: bool = False,
        seconds: float = 3.0,
    ) -> _Call:
        ids = self.collect(target)
        failed = {failure.test_id: failure for failure in failures}
        missing = set(failed) - set(ids)
        if missing:
            raise RuntimeError(f"example script drifted: no such tests {sorted(missing)}")
        failures = sorted(failures, key=lambda failure: ids.index(failure.test_id))
        python = f" -- {self.root}/.venv/bin/python" if verbose else ""
        out = [
            _rule("test session starts"),
            f"platform linux -- Python 3.12.7, pytest-{self.pytest_version}, pluggy-1.5.0{python}",
        ]
        if verbose:
            out.append("cachedir: .pytest_cache")
        out += [
            f"rootdir: {self.root}",
            "configfile: pyproject.toml",
            "plugins: cov-5.0.0, anyio-4.6.2",
            f"{'collecting ... ' if verbose else ''}collected {len(ids)} items",
            "",
        ]
        total = len(ids)
        if verbose:
            for index, test_id in enumerate(ids, 1):
                left = f"{test_id} {'FAILED' if test_id in failed else 'PASSED'}"
                percent = f"[{index * 100 // total:3d}%]"
                out.append(left + " " * max(1, 80 - len(left) - len(percent)) + percent)
        else:
            done = 0
            for path in dict.fromkeys(test_id.split("::")[0] for test_id in ids):
                marks = "".join(
                    "F" if test_id in failed else "."
                    for test_id in ids
                    if test_id.split("::")[0] == path
                )
                done += len(marks)
                left = f"{path} {marks}"
                percent = f"[{done * 100 // total:3d}%]"
                out.append(left + " " * max(1, 80 - len(left) - len(percent)) + percent)
        out.append("")
        if failures:
            out.append(_rule("FAILURES"))
            for failure in failures:
                out += self._failure(failure)
        if warnings:
            out.append(_rule("warnings summary"))
            out += warnings
            out += ["", "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html"]
        if coverage:
            out += self._coverage()
        if failures:
            out.append(_rule("short test summary info"))
            out += [f"FAILED {f.test_id} - {_error_lines(f)[0]}" for f in failures]
        counts = [f"{len(failures)} failed"] if failures else []
        counts.append(f"{total - len(failures)} passed")
        if warnings:
            counts.append(f"{warning_count} warnings")
        out.append(_rule(f"{', '.join(counts)} in {seconds:.2f}s"))
        arguments: dict[str, Any] = {"path": target}
        flags = (["-v"] if verbose else []) + (["--cov=billing"] if coverage else [])
        if flags:
            arguments["args"] = flags
        return _Call("run_tests", arguments, "\n".join(out), seconds=seconds + 1.5)

    def _coverage(self) -> list[str]:
        rows = []
        totals = [0, 0]
        for name in sorted(n for n in self.files if n.startswith("billing/") and n.endswith(".py")):
            lines = self.files[name].splitlines()
            statements = [
                number
                for number, line in enumerate(lines, 1)
                if (
                    line.strip()
                    and not line.strip().startswith(("#", '"""', "Args:", "Raises:", ">>>"))
                    and not line.startswith("        ")
                )
                or line.strip().startswith(("raise ", "return ", "if ", "continue"))
            ]
            risky = [
                number
                for number, line in enumerate(lines, 1)
                if line.strip().startswith(("raise ", "except ", "continue", "pass"))
            ]
            missing = risky[: zlib.crc32(name.encode()) % 4]
            totals[0] += len(statements)
            totals[1] += len(missing)
            cover = 100 - len(missing) * 100 // max(1, len(statements))
            rows.append(
                f"{name:<28}{len(statements):>6}{len(missing):>7}{cover:>6}%   "
                + ", ".join(str(number) for number in missing)
            )
        total_cover = 100 - totals[1] * 100 // max(1, totals[0])
        rule = "-" * 64
        return [
            "",
            "---------- coverage: platform linux, python 3.12.7-final-0 -----------",
            f"{'Name':<28}{'Stmts':>6}{'Miss':>7}{'Cover':>7}   Missing",
            rule,
            *(row.rstrip() for row in rows),
            rule,
            f"{'TOTAL':<28}{totals[0]:>6}{totals[1]:>7}{total_cover:>6}%",
            "",
        ]

    def _failure(self, failure: _Failure) -> list[str]:
        path, _, name = failure.test_id.partition("::")
        function = name.split("::")[-1].split("[")[0]
        lines = self.files[path].splitlines()
        start = next(i for i, line in enumerate(lines) if re.match(rf"\s*def {function}\(", line))
        indent = len(lines[start]) - len(lines[start].lstrip())
        end = next(i for i in range(start + 1, len(lines)) if failure.marker in lines[i])
        out = [_rule(name.replace("::", "."), "_"), ""]
        arguments = failure.arguments or tuple(
            f"{arg} = <tests.billing.conftest.FakeProvider object at "
            f"0x7f{zlib.crc32(failure.test_id.encode()):08x}{len(failure.test_id) % 256:02x}>"
            for arg in re.findall(r"(\w+): FakeProvider", lines[start])
        )
        if "::" in name and not arguments:
            klass = name.split("::")[0]
            module = path.removesuffix(".py").replace("/", ".")
            arguments = (f"self = <{module}.{klass} object at 0x7f3a2c1d4e50>",)
        if arguments:
            out += [*arguments, ""]
        for i in range(start, end):
            out.append(("    " + lines[i][indent:]).rstrip())
        out.append(">   " + lines[end][indent:])
        if not failure.frames:
            out += [f"E       {line}" for line in _error_lines(failure)]
            return [*out, "", f"{path}:{end + 1}: {failure.exception}"]
        out += ["", f"{path}:{end + 1}: ", "_ " * 39 + "_"]
        where = ""
        for frame_path, needle, frame_function, anchor in failure.frames:
            source = self.files[frame_path].splitlines()
            after = next(i for i, line in enumerate(source) if anchor in line) if anchor else 0
            number = next(i for i in range(after, len(source)) if needle in source[i])
            out += [f"{frame_path}:{number + 1}: in {frame_function}", f"    {needle.strip()}"]
            where = f"{frame_path}:{number + 1}"
        out += [f"E   {line}" for line in _error_lines(failure)]
        return [*out, "", f"{where}: {failure.exception}"]


def _error_lines(failure: _Failure) -> list[str]:
    if failure.exception == "AssertionError":
        return list(failure.error)
    return [f"{failure.exception}: {failure.error[0]}", *failure.error[1:]]


def _checked(call: _Call, fails: bool) -> _Call:
    if call.is_error != fails:
        raise RuntimeError(f"example script drifted: {call.name} {call.input}: {call.output}")
    return call


# --------------------------------------------------------------------------------------------
# The billing repository
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Param:
    name: str
    annotation: str
    default: str | None = None


@dataclass(frozen=True)
class _Op:
    module: str
    name: str
    kind: str  # create, action, get or list
    path: str
    model: str
    params: tuple[_Param, ...]
    summary: str


_CUSTOMER = _Param("customer_id", "str")
_LIMIT = _Param("limit", "int", "100")
_METADATA = _Param("metadata", "Mapping[str, str] | None", "None")
_DESCRIPTION = _Param("description", "str | None", "None")
_CURRENCY = _Param("currency", "str", '"BRL"')
_CHARGE = _Param("charge_id", "str")
_INVOICE = _Param("invoice_id", "str")
_REFUND = _Param("refund_id", "str")

_OPS = (
    _Op(
        "api",
        "charge",
        "create",
        "charges",
        "Charge",
        (_CUSTOMER, _Param("amount", "Decimal"), _CURRENCY, _DESCRIPTION, _METADATA),
        "Charge a customer's default payment method.",
    ),
    _Op(
        "api",
        "capture_charge",
        "action",
        "charges/{charge_id}/capture",
        "Charge",
        (_CHARGE, _Param("amount", "Decimal | None", "None")),
        "Capture an authorised charge, in full or in part.",
    ),
    _Op(
        "api",
        "cancel_charge",
        "action",
        "charges/{charge_id}/cancel",
        "Charge",
        (_CHARGE, _Param("reason", "str | None", "None")),
        "Cancel an authorised charge that was never captured.",
    ),
    _Op("api", "get_charge", "get", "charges/{charge_id}", "Charge", (_CHARGE,), "Fetch a charge."),
    _Op(
        "api",
        "list_charges",
        "list",
        "charges",
        "Charge",
        (_CUSTOMER, _Param("status", "str | None", "None"), _LIMIT),
        "List a customer's charges, newest first.",
    ),
    _Op(
        "api",
        "search_charges",
        "list",
        "charges/search",
        "Charge",
        (_Param("query", "str"), _LIMIT),
        "Search charges with the provider's query language, e.g. ``status:'failed'``.",
    ),
    _Op(
        "api",
        "create_customer",
        "create",
        "customers",
        "Customer",
        (_Param("email", "str"), _Param("name", "str"), _METADATA),
        "Create a customer at the provider.",
    ),
    _Op(
        "api",
        "update_customer",
        "action",
        "customers/{customer_id}",
        "Customer",
        (_CUSTOMER, _Param("email", "str | None", "None"), _Param("name", "str | None", "None")),
        "Update a customer's contact details.",
    ),
    _Op(
        "api",
        "get_customer",
        "get",
        "customers/{customer_id}",
        "Customer",
        (_CUSTOMER,),
        "Fetch a customer.",
    ),
    _Op(
        "api",
        "list_customers",
        "list",
        "customers",
        "Customer",
        (_Param("email", "str | None", "None"), _LIMIT),
        "List customers, optionally only those with an e-mail address.",
    ),
    _Op(
        "api",
        "archive_customer",
        "action",
        "customers/{customer_id}/archive",
        "Customer",
        (_CUSTOMER,),
        "Archive a customer: no new charges, history kept.",
    ),
    _Op(
        "api",
        "attach_payment_method",
        "action",
        "customers/{customer_id}/payment_methods",
        "PaymentMethod",
        (_CUSTOMER, _Param("payment_method_id", "str"), _Param("make_default", "bool", "True")),
        "Attach a tokenised payment method to a customer.",
    ),
    _Op(
        "api",
        "detach_payment_method",
        "action",
        "customers/{customer_id}/payment_methods/{payment_method_id}/detach",
        "PaymentMethod",
        (_CUSTOMER, _Param("payment_method_id", "str")),
        "Detach a saved payment method from a customer.",
    ),
    _Op(
        "api",
        "list_payment_methods",
        "list",
        "customers/{customer_id}/payment_methods",
        "PaymentMethod",
        (_CUSTOMER, _LIMIT),
        "List a customer's saved payment methods.",
    ),
    _Op(
        "invoices",
        "create_invoice",
        "create",
        "invoices",
        "Invoice",
        (
            _CUSTOMER,
            _Param("lines", "Sequence[InvoiceLine]"),
            _Param("due_date", "date"),
            _CURRENCY,
            _DESCRIPTION,
        ),
        "Create a draft invoice.",
    ),
    _Op(
        "invoices",
        "get_invoice",
        "get",
        "invoices/{invoice_id}",
        "Invoice",
        (_INVOICE,),
        "Fetch an invoice.",
    ),
    _Op(
        "invoices",
        "list_invoices",
        "list",
        "invoices",
        "Invoice",
        (_CUSTOMER, _Param("status", "str | None", "None"), _LIMIT),
        "List a customer's invoices, newest first.",
    ),
    _Op(
        "invoices",
        "finalize_invoice",
        "action",
        "invoices/{invoice_id}/finalize",
        "Invoice",
        (_INVOICE,),
        "Finalize a draft invoice so it can be paid.",
    ),
    _Op(
        "invoices",
        "void_invoice",
        "action",
        "invoices/{invoice_id}/void",
        "Invoice",
        (_INVOICE, _Param("reason", "str | None", "None")),
        "Void an open invoice.",
    ),
    _Op(
        "invoices",
        "pay_invoice",
        "action",
        "invoices/{invoice_id}/pay",
        "Invoice",
        (_INVOICE, _Param("payment_method_id", "str | None", "None")),
        "Pay an open invoice now instead of waiting for the automatic attempt.",
    ),
    _Op(
        "invoices",
        "mark_invoice_uncollectible",
        "action",
        "invoices/{invoice_id}/mark_uncollectible",
        "Invoice",
        (_INVOICE,),
        "Give up on an invoice; it stays on record for accounting.",
    ),
    _Op(
        "invoices",
        "send_invoice",
        "action",
        "invoices/{invoice_id}/send",
        "Invoice",
        (_INVOICE,),
        "E-mail the hosted invoice page to the customer.",
    ),
    _Op(
        "refunds",
        "refund",
        "create",
        "refunds",
        "Refund",
        (
            _CHARGE,
            _Param("amount", "Decimal | None", "None"),
            _Param("reason", "str | None", "None"),
        ),
        "Refund a charge, in full or in part.",
    ),
    _Op(
        "refunds",
        "get_refund",
        "get",
        "refunds/{refund_id}",
        "Refund",
        (_REFUND,),
        "Fetch a refund.",
    ),
    _Op(
        "refunds",
        "list_refunds",
        "list",
        "refunds",
        "Refund",
        (_CHARGE, _LIMIT),
        "List the refunds of a charge.",
    ),
    _Op(
        "refunds",
        "cancel_refund",
        "action",
        "refunds/{refund_id}/cancel",
        "Refund",
        (_REFUND,),
        "Cancel a refund that is still pending.",
    ),
)

_PARAM_DOCS = {
    "customer_id": "Provider id of the customer (``cus_...``).",
    "amount": 'Amount in major units, e.g. ``Decimal("19.90")``.',
    "currency": "ISO 4217 code of ``amount``.",
    "description": "Shown on the customer's statement and in the provider dashboard.",
    "metadata": "Up to 20 string pairs stored with the object; never put personal data here.",
    "charge_id": "Provider id of the charge (``ch_...``).",
    "invoice_id": "Provider id of the invoice (``in_...``).",
    "refund_id": "Provider id of the refund (``re_...``).",
    "status": "Only objects in this status; all statuses when ``None``.",
    "limit": "Page size used while walking the list (the provider caps it at 100).",
    "email": "Where the provider sends receipts.",
    "name": "Full name as printed on invoices.",
    "payment_method_id": "A tokenised method from the checkout widget (``pm_...``).",
    "make_default": "Also make it the default for future charges and invoices.",
    "lines": "Invoice lines; at least one.",
    "due_date": "Last day to pay before the invoice becomes overdue.",
    "reason": "Free text kept for the audit trail.",
    "query": "A provider search query, e.g. ``customer:'cus_123' AND status:'failed'``.",
    "idempotency_key": "Reuse it on retries so the provider applies the request once.",
}
_V1_KEYS = {
    "customer_id": "customer",
    "charge_id": "charge",
    "payment_method_id": "payment_method",
    "make_default": "default",
}
_SAMPLE_ARGS = {
    "customer_id": '"cus_123"',
    "amount": 'Decimal("19.90")',
    "charge_id": '"ch_456"',
    "invoice_id": '"in_789"',
    "refund_id": '"re_321"',
    "email": '"ana@example.com"',
    "name": '"Ana Lima"',
    "payment_method_id": '"pm_555"',
    "lines": '[InvoiceLine("Plano Pro", 1, Decimal("99.00"))]',
    "due_date": "date(2026, 12, 1)",
    "query": "\"status:'failed'\"",
}
_MODULE_DOCS = {
    "api": "Charges, customers and payment methods: the calls checkout and back-office use.",
    "invoices": "Invoices: draft, finalize, send, void.",
    "refunds": "Refunds of captured charges.",
}


_EXAMPLE_VALUES = {
    "customer_id": "'cus_123'",
    "charge_id": "'ch_456'",
    "amount": "Decimal('19.90')",
    "email": "'ana@example.com'",
    "name": "'Ana Lima'",
    "brand": "'visa'",
    "status": "'open'",
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _payload_value(param: _Param, op: _Op) -> str:
    names = {p.name for p in op.params}
    if param.name == "amount":
        return "_to_minor(amount, currency)" if "currency" in names else "_to_minor(amount)"
    return {
        "currency": "currency.lower()",
        "lines": "[line.to_v1() for line in lines]",
        "due_date": "due_date.isoformat()",
        "metadata": "dict(metadata)",
    }.get(param.name, param.name)


def _render_op(op: _Op) -> str:
    path_params = set(re.findall(r"{(\w+)}", op.path))
    posts = op.kind in ("create", "action")
    url = f'f"/v1/{op.path}"' if path_params else f'"/v1/{op.path}"'
    lines = [f"def {op.name}("]
    for p in op.params:
        lines.append(
            f"    {p.name}: {p.annotation}" + (f" = {p.default}" if p.default else "") + ","
        )
    if posts:
        lines += ["    *,", "    idempotency_key: str | None = None,"]
    returns = f"list[{op.model}]" if op.kind == "list" else op.model
    lines += [f") -> {returns}:", f'    """{op.summary}', "", "    Args:"]
    for p in op.params:
        full = " ``None`` means the full amount." if p.name == "amount" and p.default else ""
        lines.append(f"        {p.name}: {_PARAM_DOCS[p.name]}{full}")
    if posts:
        lines.append(f"        idempotency_key: {_PARAM_DOCS['idempotency_key']}")
    verb = "POST" if posts else "GET"
    example_args = ", ".join(_SAMPLE_ARGS[p.name] for p in op.params if p.default is None)
    object_id = _FIXTURES[_snake(op.model)][0]["id"]
    shown = ", ".join(
        f"{f.name}={_EXAMPLE_VALUES.get(f.name, repr(object_id))}" for f in _MODELS[op.model][1][:3]
    )
    result = (
        f"[{op.model}({shown}, ...), ...]" if op.kind == "list" else f"{op.model}({shown}, ...)"
    )
    lines += [
        "",
        "    Raises:",
        "        BillingError: when the provider rejects the request.",
        "",
        f"    Provider call: ``{verb} /v1/{op.path}``.",
        "",
        "    Example:",
        f"        >>> {op.name}({example_args})",
        f"        {result}",
        '    """',
    ]
    body = [p for p in op.params if p.name not in path_params]
    if posts:
        required = [p for p in body if p.default != "None"]
        optional = [p for p in body if p.default == "None"]
        if required:
            lines.append("    payload: dict[str, Any] = {")
            for p in required:
                lines.append(f'        "{_V1_KEYS.get(p.name, p.name)}": {_payload_value(p, op)},')
            lines.append("    }")
        else:
            lines.append("    payload: dict[str, Any] = {}")
        for p in optional:
            lines += [
                f"    if {p.name} is not None:",
                f'        payload["{_V1_KEYS.get(p.name, p.name)}"] = {_payload_value(p, op)}',
            ]
        lines += [
            "    data = _client().post(",
            f"        {url},",
            "        json=payload,",
            "        idempotency_key=idempotency_key,",
            "    )",
            f"    return {op.model}.from_v1(data)",
        ]
    elif op.kind == "get":
        lines += [f"    data = _client().get({url})", f"    return {op.model}.from_v1(data)"]
    else:
        lines.append('    params: dict[str, Any] = {"limit": min(limit, 100)}')
        for p in body:
            if p.name == "limit":
                continue
            key = _V1_KEYS.get(p.name, p.name)
            if p.default == "None":
                lines += [f"    if {p.name} is not None:", f'        params["{key}"] = {p.name}']
            else:
                lines.append(f'    params["{key}"] = {p.name}')
        lines += [
            f"    items: list[{op.model}] = []",
            "    while True:",
            f"        page = _client().get({url}, params=params)",
            f'        items.extend({op.model}.from_v1(row) for row in page["data"])',
            '        if not page.get("has_more"):',
            "            return items",
            '        params["starting_after"] = page["data"][-1]["id"]',
        ]
    return "\n".join(lines)


def _ops_module(module: str) -> str:
    ops = [op for op in _OPS if op.module == module]
    models = sorted({op.model for op in ops} | ({"InvoiceLine"} if module == "invoices" else set()))
    exports = "\n".join(f'    "{op.name}",' for op in ops)
    head = f'''"""{_MODULE_DOCS[module]}"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from decimal import Decimal
from typing import Any

from billing.client import PaymentClient, default_client
from billing.currency import to_minor as _to_minor
from billing.models import {", ".join(models)}

__all__ = [
{exports}
]


def _client() -> PaymentClient:
    return default_client()
'''
    return head + "\n\n" + "\n\n\n".join(_render_op(op) for op in ops) + "\n"


@dataclass(frozen=True)
class _Field:
    name: str
    annotation: str
    v1: str
    v2: str


_CREATED = _Field(
    "created_at",
    "datetime",
    'datetime.fromtimestamp(data["created"], tz=UTC)',
    'datetime.fromisoformat(data["created_at"])',
)
_MODELS: dict[str, tuple[str, tuple[_Field, ...]]] = {
    "Charge": (
        'A card charge, with amounts in major units (``Decimal("19.90")``).',
        (
            _Field("id", "str", 'data["id"]', 'data["id"]'),
            _Field("customer_id", "str", 'data["customer"]', 'data["customer_id"]'),
            _Field(
                "amount",
                "Decimal",
                '_from_minor(data["amount"], data["currency"])',
                '_from_minor(data["amount"]["value"], data["amount"]["currency"])',
            ),
            _Field("currency", "str", 'data["currency"].upper()', 'data["amount"]["currency"]'),
            _Field("status", "str", 'data["status"]', 'data["status"]'),
            _Field("captured", "bool", 'data["captured"]', 'data["capture_state"] == "captured"'),
            _Field(
                "failure_code",
                "str | None",
                'data.get("failure_code")',
                '(data.get("failure") or {}).get("code")',
            ),
            _CREATED,
            _Field(
                "metadata",
                "Mapping[str, str]",
                'dict(data.get("metadata") or {})',
                'dict(data.get("metadata") or {})',
            ),
        ),
    ),
    "Customer": (
        "A customer at the provider; ``id`` is what every other call takes.",
        (
            _Field("id", "str", 'data["id"]', 'data["id"]'),
            _Field("email", "str", 'data["email"]', 'data["email"]'),
            _Field("name", "str", 'data["name"]', 'data["name"]'),
            _Field(
                "default_payment_method",
                "str | None",
                '(data.get("invoice_settings") or {}).get("default_payment_method")',
                'data.get("default_payment_method_id")',
            ),
            _CREATED,
        ),
    ),
    "PaymentMethod": (
        "A saved card. Only the brand, the last four digits and the expiry ever reach us.",
        (
            _Field("id", "str", 'data["id"]', 'data["id"]'),
            _Field("customer_id", "str", 'data["customer"]', 'data["customer_id"]'),
            _Field("brand", "str", 'data["card"]["brand"]', 'data["card"]["network"]'),
            _Field("last4", "str", 'data["card"]["last4"]', 'data["card"]["last4"]'),
            _Field(
                "exp_month", "int", 'data["card"]["exp_month"]', 'data["card"]["expiry"]["month"]'
            ),
            _Field("exp_year", "int", 'data["card"]["exp_year"]', 'data["card"]["expiry"]["year"]'),
        ),
    ),
    "InvoiceLine": (
        "One line of an invoice.",
        (
            _Field("description", "str", 'data["description"]', 'data["description"]'),
            _Field("quantity", "int", 'data["quantity"]', 'data["quantity"]'),
            _Field(
                "unit_amount",
                "Decimal",
                '_from_minor(data["unit_amount"], data["currency"])',
                '_from_minor(data["unit_price"]["value"], data["unit_price"]["currency"])',
            ),
        ),
    ),
    "Invoice": (
        "An invoice and its lines; ``total`` is what the customer owes.",
        (
            _Field("id", "str", 'data["id"]', 'data["id"]'),
            _Field("customer_id", "str", 'data["customer"]', 'data["customer_id"]'),
            _Field("status", "str", 'data["status"]', 'data["status"]'),
            _Field("currency", "str", 'data["currency"].upper()', 'data["total"]["currency"]'),
            _Field(
                "lines",
                "tuple[InvoiceLine, ...]",
                'tuple(InvoiceLine.from_v1(row) for row in data["lines"]["data"])',
                'tuple(InvoiceLine.from_v2(row) for row in data["lines"])',
            ),
            _Field(
                "total",
                "Decimal",
                '_from_minor(data["total"], data["currency"])',
                '_from_minor(data["total"]["value"], data["total"]["currency"])',
            ),
            _Field(
                "due_date",
                "date | None",
                'date.fromisoformat(data["due_date"]) if data.get("due_date") else None',
                'date.fromisoformat(data["due_on"]) if data.get("due_on") else None',
            ),
            _Field(
                "hosted_url",
                "str | None",
                'data.get("hosted_invoice_url")',
                'data.get("hosted_url")',
            ),
            _CREATED,
        ),
    ),
    "Refund": (
        "A refund of a charge; ``status`` moves pending -> succeeded or failed.",
        (
            _Field("id", "str", 'data["id"]', 'data["id"]'),
            _Field("charge_id", "str", 'data["charge"]', 'data["payment_id"]'),
            _Field(
                "amount",
                "Decimal",
                '_from_minor(data["amount"], data["currency"])',
                '_from_minor(data["amount"]["value"], data["amount"]["currency"])',
            ),
            _Field("currency", "str", 'data["currency"].upper()', 'data["amount"]["currency"]'),
            _Field("status", "str", 'data["status"]', 'data["status"]'),
            _Field("reason", "str | None", 'data.get("reason")', 'data.get("reason")'),
            _CREATED,
        ),
    ),
}


_FIELD_DOCS = {
    "id": "Provider id; stable across API versions.",
    "customer_id": "Provider id of the customer it belongs to.",
    "amount": 'Major units, e.g. ``Decimal("19.90")``.',
    "currency": "ISO 4217 code, upper case.",
    "status": "Provider status, passed through unchanged.",
    "captured": "False while only authorised.",
    "failure_code": "Issuer or provider reason when the charge failed.",
    "created_at": "When the provider created it, timezone-aware (UTC).",
    "metadata": "String pairs we attached; never personal data.",
    "email": "Where receipts go.",
    "name": "As printed on invoices.",
    "default_payment_method": "Used when a charge names no method.",
    "brand": "Card network: visa, mastercard, elo, amex, hipercard.",
    "last4": "Last four digits, for display only.",
    "exp_month": "1 to 12.",
    "exp_year": "Four digits.",
    "description": "Free text shown to the customer.",
    "quantity": "Units of ``unit_amount``.",
    "unit_amount": "Price of one unit, major units.",
    "lines": "In the order the provider returned them.",
    "total": "Sum of the lines after discounts and taxes.",
    "due_date": "None for invoices charged automatically.",
    "hosted_url": "Public payment page; None until finalized.",
    "charge_id": "The charge this refund returns money from.",
    "reason": "requested_by_customer, duplicate, fraudulent or free text.",
}


def _from_method(model: str, version: str) -> str:
    fields = _MODELS[model][1]
    lines = [
        "    @classmethod",
        f"    def from_{version}(cls, data: Mapping[str, Any]) -> {model}:",
        f'        """Build from an API {version} ``{_snake(model)}`` object."""',
        "        return cls(",
    ]
    for f in fields:
        lines.append(f"            {f.name}={f.v1 if version == 'v1' else f.v2},")
    lines.append("        )")
    return "\n".join(lines)


def _models_module() -> str:
    parts = [
        '''"""What the rest of the codebase sees of PayProvider objects.

Amounts are ``Decimal`` in major units everywhere outside this module; the provider speaks
integer minor units. Every class parses the provider's JSON in one classmethod per API version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from billing.currency import from_minor as _from_minor
from billing.currency import to_minor
'''
    ]
    for model, (doc, fields) in _MODELS.items():
        attributes = [f"        {f.name}: {_FIELD_DOCS.get(f.name, f.name)}" for f in fields]
        lines = [
            "@dataclass(frozen=True)",
            f"class {model}:",
            f'    """{doc}',
            "",
            "    Attributes:",
            *attributes,
            '    """',
            "",
        ]
        lines += [f"    {f.name}: {f.annotation}" for f in fields]
        lines += ["", _from_method(model, "v1")]
        if model == "InvoiceLine":
            lines += [
                "",
                "    def to_v1(self) -> dict[str, Any]:",
                "        return {",
                '            "description": self.description,',
                '            "quantity": self.quantity,',
                '            "unit_amount": to_minor(self.unit_amount),',
                "        }",
            ]
        parts.append("\n".join(lines))
    return "\n\n".join(parts[:1]) + "\n\n" + "\n\n\n".join(parts[1:]) + "\n"


_CLIENT = '''"""HTTP client for the PayProvider REST API.

Everything that talks to the provider goes through :class:`PaymentClient`, so retries,
idempotency keys and error mapping live in one place.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

import httpx

from billing import errors, retry, settings

logger = logging.getLogger(__name__)

BASE_URL = "https://api.payprovider.example"
API_VERSION = "2023-10-16"
VERSION_HEADER = "Payprovider-Version"
DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=3.0)
RETRYABLE_STATUS = frozenset({409, 429, 500, 502, 503, 504})


class PaymentClient:
    """A thin, retrying wrapper around :mod:`httpx` for one API key."""

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str = BASE_URL,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        max_attempts: int = 4,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._max_attempts = max_attempts
        self._http = httpx.Client(
            base_url=base_url,
            timeout=timeout,
            transport=transport,
            headers={
                "Authorization": f"Bearer {api_key}",
                VERSION_HEADER: API_VERSION,
                "User-Agent": f"billing/{settings.VERSION} (+https://intranet.example/billing)",
            },
        )

    def close(self) -> None:
        self._http.close()

    def get(self, path: str, *, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self._request("GET", path, params=params)

    def post(
        self,
        path: str,
        *,
        json: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        key = idempotency_key or str(uuid.uuid4())
        return self._request("POST", path, json=json, headers={"Idempotency-Key": key})

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        for attempt in range(1, self._max_attempts + 1):
            started = time.monotonic()
            try:
                response = self._http.request(
                    method, path, params=params, json=json, headers=headers
                )
            except httpx.TransportError as exc:
                if attempt == self._max_attempts:
                    raise errors.ProviderUnavailable(str(exc)) from exc
                retry.sleep_before_retry(attempt)
                continue
            elapsed_ms = (time.monotonic() - started) * 1000
            logger.info(
                "payprovider %s %s -> %s in %.0fms (attempt %d)",
                method,
                path,
                response.status_code,
                elapsed_ms,
                attempt,
            )
            if response.status_code < 400:
                return response.json()
            if response.status_code in RETRYABLE_STATUS and attempt < self._max_attempts:
                retry.sleep_before_retry(attempt, retry_after=response.headers.get("Retry-After"))
                continue
            raise _error_from_response(response)
        raise AssertionError("unreachable: the loop returns or raises")


def _error_from_response(response: httpx.Response) -> errors.BillingError:
    try:
        body = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        body = {"type": "api_error", "message": response.text[:200]}
    error_class = _ERROR_TYPES.get(body.get("type", ""), errors.BillingError)
    return error_class(
        body.get("message", "unknown error"),
        status=response.status_code,
        code=body.get("code"),
        request_id=response.headers.get("Request-Id"),
    )


_ERROR_TYPES: dict[str, type[errors.BillingError]] = {
    "card_error": errors.CardDeclined,
    "invalid_request_error": errors.InvalidRequest,
    "idempotency_error": errors.IdempotencyConflict,
    "rate_limit_error": errors.RateLimited,
    "authentication_error": errors.AuthenticationFailed,
    "api_error": errors.ProviderUnavailable,
}

_default: PaymentClient | None = None


def default_client() -> PaymentClient:
    """The process-wide client, built lazily from settings."""
    global _default
    if _default is None:
        _default = PaymentClient(settings.API_KEY, base_url=settings.BASE_URL or BASE_URL)
    return _default
'''

_RETRY = '''"""Backoff for provider calls: exponential, full jitter, capped; honours Retry-After."""

from __future__ import annotations

import random
import time

BASE_DELAY = 0.25
MAX_DELAY = 8.0


def delay_for(attempt: int, *, retry_after: str | None = None) -> float:
    """Seconds to wait before ``attempt`` + 1. The provider's hint wins when it parses."""
    if retry_after is not None:
        try:
            return min(float(retry_after), MAX_DELAY)
        except ValueError:
            pass
    return random.uniform(0, min(MAX_DELAY, BASE_DELAY * 2 ** (attempt - 1)))


def sleep_before_retry(attempt: int, *, retry_after: str | None = None) -> None:
    time.sleep(delay_for(attempt, retry_after=retry_after))
'''

_SETTINGS = '''"""Billing settings, read once from the environment."""

import os

VERSION = "3.8.2"
API_KEY = os.environ.get("PAYPROVIDER_API_KEY", "")
BASE_URL = os.environ.get("PAYPROVIDER_BASE_URL", "")
WEBHOOK_SECRET = os.environ.get("PAYPROVIDER_WEBHOOK_SECRET", "")
DEFAULT_CURRENCY = os.environ.get("BILLING_DEFAULT_CURRENCY", "BRL")
'''

_ERRORS = (
    ("CardDeclined", "The card was declined; ``code`` holds the issuer's reason."),
    ("InvalidRequest", "The provider rejected the request as malformed: a bug on our side."),
    ("IdempotencyConflict", "The idempotency key was reused with a different payload."),
    ("RateLimited", "Too many requests, even after the client's own retries."),
    ("AuthenticationFailed", "The API key is missing, revoked or for the wrong mode."),
    ("ProviderUnavailable", "The provider failed or could not be reached after all retries."),
    ("InvalidSignature", "A webhook's signature header does not match its payload."),
)


def _errors_module() -> str:
    head = '''"""Exceptions raised by the billing module. Callers catch :class:`BillingError`."""

from __future__ import annotations


class BillingError(Exception):
    """Base class of every failure the billing module raises."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.request_id = request_id

    def __str__(self) -> str:
        text = super().__str__()
        if self.request_id:
            return f"{text} (request {self.request_id})"
        return text
'''
    classes = [f'class {name}(BillingError):\n    """{doc}"""' for name, doc in _ERRORS]
    return head + "\n\n" + "\n\n\n".join(classes) + "\n"


_CURRENCIES = (
    ("BRL", 2, "R$"),
    ("USD", 2, "US$"),
    ("EUR", 2, "\u20ac"),
    ("GBP", 2, "\u00a3"),
    ("ARS", 2, "AR$"),
    ("CLP", 0, "CLP$"),
    ("COP", 2, "COL$"),
    ("MXN", 2, "MX$"),
    ("PEN", 2, "S/"),
    ("UYU", 2, "$U"),
    ("PYG", 0, "\u20b2"),
    ("JPY", 0, "\u00a5"),
    ("KRW", 0, "\u20a9"),
    ("CHF", 2, "CHF"),
    ("CAD", 2, "CA$"),
    ("AUD", 2, "A$"),
    ("KWD", 3, "KD"),
    ("BHD", 3, "BD"),
    ("JOD", 3, "JD"),
    ("INR", 2, "\u20b9"),
    ("ZAR", 2, "R"),
    ("SEK", 2, "kr"),
    ("NOK", 2, "kr"),
    ("DKK", 2, "kr."),
    ("PLN", 2, "z\u0142"),
)


def _currency_module() -> str:
    rows = "\n".join(f'    "{code}": {units},' for code, units, _ in _CURRENCIES)
    symbols = "\n".join(f'    "{code}": "{symbol}",' for code, _, symbol in _CURRENCIES)
    return f'''"""Minor units and display of the currencies PayProvider settles in."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

MINOR_UNITS: dict[str, int] = {{
{rows}
}}

SYMBOLS: dict[str, str] = {{
{symbols}
}}


def to_minor(amount: Decimal, currency: str = "BRL") -> int:
    """``Decimal("19.90")`` BRL -> ``1990``. Rounds half to even, like the provider."""
    exponent = MINOR_UNITS[currency.upper()]
    quantum = Decimal(1).scaleb(-exponent)
    return int(amount.quantize(quantum, rounding=ROUND_HALF_EVEN).scaleb(exponent))


def from_minor(value: int, currency: str) -> Decimal:
    """``1990`` BRL -> ``Decimal("19.90")``."""
    return Decimal(value).scaleb(-MINOR_UNITS[currency.upper()])


def format_money(amount: Decimal, currency: str) -> str:
    """``Decimal("1234.5")`` BRL -> ``"R$ 1.234,50"``; other currencies use the dot."""
    code = currency.upper()
    exponent = MINOR_UNITS[code]
    text = f"{{amount:,.{{exponent}}f}}"
    if code == "BRL":
        text = text.replace(",", "_").replace(".", ",").replace("_", ".")
    return f"{{SYMBOLS.get(code, code)}} {{text}}"
'''


_EVENTS = (
    (
        "charge.succeeded",
        "payment.succeeded",
        "Charge",
        "ledger.record_payment(obj.id, obj.amount, obj.currency)",
    ),
    (
        "charge.failed",
        "payment.failed",
        "Charge",
        "notifications.payment_failed(obj.customer_id, obj.failure_code)",
    ),
    (
        "charge.refunded",
        "refund.succeeded",
        "Refund",
        "ledger.record_refund(obj.charge_id, obj.amount, obj.currency)",
    ),
    ("invoice.paid", "invoice.paid", "Invoice", "ledger.mark_invoice_paid(obj.id, obj.total)"),
    (
        "invoice.payment_failed",
        "invoice.payment_failed",
        "Invoice",
        "notifications.invoice_overdue(obj.customer_id, obj.id)",
    ),
    ("invoice.voided", "invoice.voided", "Invoice", "ledger.void_invoice(obj.id)"),
    (
        "customer.updated",
        "customer.updated",
        "Customer",
        "notifications.contact_changed(obj.id, obj.email)",
    ),
    (
        "payment_method.attached",
        "payment_method.attached",
        "PaymentMethod",
        "notifications.card_saved(obj.customer_id, obj.last4)",
    ),
)


def _handler_name(event: str) -> str:
    return "_on_" + event.replace(".", "_")


def _webhooks_module() -> str:
    head = '''"""Inbound PayProvider webhooks: signature check, parsing and dispatch."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from billing import errors, ledger, notifications, settings
from billing.models import Charge, Customer, Invoice, PaymentMethod, Refund

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "Payprovider-Signature"
TOLERANCE_SECONDS = 300


def verify_signature(payload: bytes, header: str, secret: str, *, now: float) -> None:
    """Raise ``InvalidSignature`` unless ``header`` signs ``payload`` with ``secret``."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    timestamp, signature = parts.get("t"), parts.get("v1")
    if not timestamp or not signature:
        raise errors.InvalidSignature("malformed signature header")
    if abs(now - int(timestamp)) > TOLERANCE_SECONDS:
        raise errors.InvalidSignature("timestamp outside the tolerance window")
    signed = f"{timestamp}.".encode() + payload
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        raise errors.InvalidSignature("signature mismatch")


def handle(payload: bytes, header: str, *, now: float) -> None:
    """Verify, parse and dispatch one delivery. Unknown event types are logged and ignored."""
    verify_signature(payload, header, settings.WEBHOOK_SECRET, now=now)
    event = json.loads(payload)
    sent_at = datetime.utcfromtimestamp(event["created"])
    handler = HANDLERS.get(event["type"])
    if handler is None:
        logger.info("ignoring webhook %s (%s)", event["id"], event["type"])
        return
    logger.info("webhook %s (%s) sent at %s", event["id"], event["type"], sent_at.isoformat())
    handler(event["data"]["object"])
'''
    handlers = []
    for event, _, model, action in _EVENTS:
        handlers.append(
            f"def {_handler_name(event)}(data: Mapping[str, Any]) -> None:\n"
            f"    obj = {model}.from_v1(data)\n"
            f"    {action}"
        )
    table = "\n".join(f'    "{event}": {_handler_name(event)},' for event, *_ in _EVENTS)
    tail = f"HANDLERS: dict[str, Callable[[Mapping[str, Any]], None]] = {{\n{table}\n}}\n"
    return head + "\n\n" + "\n\n\n".join(handlers) + "\n\n\n" + tail


def _support_module(name: str, functions: Sequence[tuple[str, str, str]]) -> str:
    body = "\n\n\n".join(
        f"def {fn}({args}) -> None:\n"
        f'    """{doc}"""\n'
        f'    logger.info("{name}.{fn} %s", {args.split(":")[0]})'
        for fn, args, doc in functions
    )
    return (
        f'"""{name.capitalize()} hooks called from webhooks; the real work is queued."""\n\n'
        "from __future__ import annotations\n\nimport logging\nfrom decimal import Decimal\n\n"
        f"logger = logging.getLogger(__name__)\n\n\n{body}\n"
    )


def _exports() -> list[str]:
    return sorted(
        [op.name for op in _OPS]
        + list(_MODELS)
        + ["BillingError"]
        + [name for name, _ in _ERRORS if name != "InvalidSignature"]
    )


def _init_module() -> str:
    imports = []
    for module in ("api", "errors", "invoices", "models", "refunds"):
        if module == "errors":
            names = ["BillingError"] + [n for n, _ in _ERRORS if n != "InvalidSignature"]
        elif module == "models":
            names = list(_MODELS)
        else:
            names = [op.name for op in _OPS if op.module == module]
        listed = "\n".join(f"    {name}," for name in sorted(names))
        imports.append(f"from billing.{module} import (\n{listed}\n)")
    exports = "\n".join(f'    "{name}",' for name in _exports())
    return (
        '"""Billing: the only code that talks to PayProvider.\n\n'
        "Three other services (checkout, subscriptions, back-office) import the names below\n"
        "directly. Their names and signatures are a public contract, pinned by\n"
        'tests/billing/test_public_api.py."""\n\n'
        + "\n".join(imports)
        + f"\n\n__all__ = [\n{exports}\n]\n"
    )


def _signature(op: _Op) -> str:
    parts = []
    for p in op.params:
        text = f"{p.name}: '{p.annotation}'"
        if p.default is not None:
            text += f" = {ast.literal_eval(p.default)!r}"
        parts.append(text)
    if op.kind in ("create", "action"):
        parts += ["*", "idempotency_key: 'str | None' = None"]
    returns = f"list[{op.model}]" if op.kind == "list" else op.model
    return f"({', '.join(parts)}) -> '{returns}'"


_CONFTEST = '''"""A fake PayProvider: records requests and replays canned responses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from billing import client

FIXTURES = Path(__file__).parent / "fixtures"


def load_fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    json: dict[str, Any] | None


@dataclass
class FakeProvider:
    requests: list[RecordedRequest] = field(default_factory=list)
    responses: list[httpx.Response] = field(default_factory=list)

    def respond(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self.responses.append(httpx.Response(status, json=body, headers=headers))

    @property
    def last_request(self) -> RecordedRequest:
        return self.requests[-1]

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append(
            RecordedRequest(request.method, request.url.path, dict(request.headers), body)
        )
        return self.responses.pop(0)


@pytest.fixture
def fake_provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    fake = FakeProvider()
    transport = httpx.MockTransport(fake.handler)
    test_client = client.PaymentClient("sk_test_123", transport=transport, max_attempts=2)
    monkeypatch.setattr(client, "_default", test_client)
    monkeypatch.setattr("billing.retry.sleep_before_retry", lambda *args, **kwargs: None)
    yield fake
    test_client.close()
'''

_CARD_ERROR = '{"error": {"type": "card_error", "message": "Your card was declined."}}'
_NOT_FOUND = '{"error": {"type": "invalid_request_error", "message": "No such object."}}'

_CLIENT_TESTS = (
    (
        "test_request_sends_api_version_header",
        'fake_provider.respond(200, {"id": "ch_456"})',
        'client.default_client().get("/v1/charges/ch_456")',
        ['assert fake_provider.last_request.headers["payprovider-version"] == "2023-10-16"'],
    ),
    (
        "test_request_sends_bearer_token",
        'fake_provider.respond(200, {"id": "ch_456"})',
        'client.default_client().get("/v1/charges/ch_456")',
        ['assert fake_provider.last_request.headers["authorization"] == "Bearer sk_test_123"'],
    ),
    (
        "test_post_sends_idempotency_key",
        'fake_provider.respond(200, {"id": "ch_456"})',
        'client.default_client().post("/v1/charges", json={"amount": 100})',
        ['assert len(fake_provider.last_request.headers["idempotency-key"]) == 36'],
    ),
    (
        "test_post_reuses_given_idempotency_key",
        'fake_provider.respond(200, {"id": "ch_456"})',
        'client.default_client().post("/v1/charges", json={}, idempotency_key="order-42")',
        ['assert fake_provider.last_request.headers["idempotency-key"] == "order-42"'],
    ),
    (
        "test_request_retries_on_429",
        'fake_provider.respond(429, {"error": {"type": "rate_limit_error", '
        '"message": "Slow down."}})\n'
        '    fake_provider.respond(200, {"id": "ch_456"})',
        'result = client.default_client().get("/v1/charges/ch_456")',
        ["assert len(fake_provider.requests) == 2", 'assert result == {"id": "ch_456"}'],
    ),
    (
        "test_request_honours_retry_after",
        "waits: list[float] = []\n"
        '    monkeypatch.setattr("billing.retry.sleep_before_retry", '
        "lambda attempt, retry_after=None: waits.append(retry.delay_for(attempt, "
        "retry_after=retry_after)))\n"
        '    fake_provider.respond(429, {"error": {"type": "rate_limit_error"}}, '
        'headers={"Retry-After": "2"})\n'
        '    fake_provider.respond(200, {"id": "ch_456"})',
        'client.default_client().get("/v1/charges/ch_456")',
        ["assert waits == [2.0]"],
    ),
    (
        "test_request_gives_up_after_max_attempts",
        'fake_provider.respond(503, {"error": {"type": "api_error", "message": "Try later."}})\n'
        '    fake_provider.respond(503, {"error": {"type": "api_error", "message": "Try later."}})',
        "with pytest.raises(errors.ProviderUnavailable):\n"
        '        client.default_client().get("/v1/charges/ch_456")',
        ["assert len(fake_provider.requests) == 2"],
    ),
    (
        "test_card_error_maps_to_card_declined",
        f"fake_provider.respond(402, {_CARD_ERROR})",
        "with pytest.raises(errors.CardDeclined) as caught:\n"
        '        client.default_client().post("/v1/charges", json={"amount": 100})',
        [
            'assert str(caught.value) == "Your card was declined."',
            "assert caught.value.status == 402",
        ],
    ),
    (
        "test_unknown_error_type_maps_to_billing_error",
        'fake_provider.respond(400, {"error": {"type": "brand_new_error", "message": "?"}})',
        "with pytest.raises(errors.BillingError) as caught:\n"
        '        client.default_client().get("/v1/charges/ch_456")',
        ["assert type(caught.value) is errors.BillingError"],
    ),
    (
        "test_error_keeps_request_id",
        f'fake_provider.respond(404, {_NOT_FOUND}, headers={{"Request-Id": "req_77"}})',
        "with pytest.raises(errors.InvalidRequest) as caught:\n"
        '        client.default_client().get("/v1/charges/ch_missing")',
        [
            'assert caught.value.request_id == "req_77"',
            'assert "(request req_77)" in str(caught.value)',
        ],
    ),
    (
        "test_transport_error_raises_provider_unavailable",
        "def refuse(request: httpx.Request) -> httpx.Response:\n"
        '        raise httpx.ConnectError("connection refused", request=request)\n\n'
        '    monkeypatch.setattr(fake_provider, "handler", refuse)',
        "with pytest.raises(errors.ProviderUnavailable):\n"
        '        client.PaymentClient("sk_test_123", transport=httpx.MockTransport(refuse))'
        '.get("/")',
        ["assert fake_provider.requests == []"],
    ),
)


def _client_tests() -> str:
    tests = []
    for name, arrange, act, asserts in _CLIENT_TESTS:
        params = "fake_provider: FakeProvider"
        if "monkeypatch" in arrange:
            params += ", monkeypatch: pytest.MonkeyPatch"
        body = "\n".join(f"    {line}" for line in asserts)
        tests.append(f"def {name}({params}) -> None:\n    {arrange}\n\n    {act}\n\n{body}")
    return (
        '"""PaymentClient: headers, retries, error mapping."""\n\n'
        "from __future__ import annotations\n\nimport httpx\nimport pytest\n\n"
        "from billing import client, errors, retry\n"
        "from tests.billing.conftest import FakeProvider\n"
        "\n\n" + "\n\n\n".join(tests) + "\n"
    )


def _op_tests(module: str) -> str:
    ops = [op for op in _OPS if op.module == module]
    models = sorted({op.model for op in ops} | ({"InvoiceLine"} if module == "invoices" else set()))
    tests = []
    for op in ops:
        required = [p for p in op.params if p.default is None]
        call = f"{module}.{op.name}({', '.join(_SAMPLE_ARGS[p.name] for p in required)})"
        path = "/v1/" + op.path
        for name in re.findall(r"{(\w+)}", op.path):
            path = path.replace("{" + name + "}", ast.literal_eval(_SAMPLE_ARGS[name]))
        fixture = _snake(op.model) + ("_list" if op.kind == "list" else "")
        method = "POST" if op.kind in ("create", "action") else "GET"
        sends = [
            f"def test_{op.name}_sends_expected_request(fake_provider: FakeProvider) -> None:",
            f'    fake_provider.respond(200, load_fixture("{fixture}"))',
            "",
            f"    {call}",
            "",
            "    request = fake_provider.last_request",
            f'    assert request.method == "{method}"',
            f'    assert request.path == "{path}"',
        ]
        if op.name == "charge":
            sends.append('    assert request.json["amount"] == 1990')
        tests.append("\n".join(sends))
        if op.kind == "list":
            check = f"    assert all(isinstance(item, {op.model}) for item in result)"
        else:
            check = f"    assert isinstance(result, {op.model})"
        tests.append(
            f"def test_{op.name}_returns_{_snake(op.model)}{'s' if op.kind == 'list' else ''}"
            "(fake_provider: FakeProvider) -> None:\n"
            f'    fake_provider.respond(200, load_fixture("{fixture}"))\n\n'
            f"    result = {call}\n\n{check}"
        )
        if op.kind in ("create", "action"):
            keyed = call[:-1] + (", " if required else "") + 'idempotency_key="key-1")'
            tests.append(
                f"def test_{op.name}_sends_idempotency_key(fake_provider: FakeProvider) -> None:\n"
                f'    fake_provider.respond(200, load_fixture("{fixture}"))\n\n'
                f"    {keyed}\n\n"
                '    assert fake_provider.last_request.headers["idempotency-key"] == "key-1"'
            )
        if op.kind == "list":
            tests.append(
                f"def test_{op.name}_follows_pagination(fake_provider: FakeProvider) -> None:\n"
                f'    first = load_fixture("{fixture}")\n'
                '    fake_provider.respond(200, {**first, "has_more": True})\n'
                "    fake_provider.respond(200, first)\n\n"
                f"    result = {call}\n\n"
                "    assert len(result) == 4"
            )
        status, body, error = (
            ("402", _CARD_ERROR, "CardDeclined")
            if op.kind == "create"
            else ("404", _NOT_FOUND, "InvalidRequest")
        )
        tests.append(
            f"def test_{op.name}_raises_on_provider_error(fake_provider: FakeProvider) -> None:\n"
            f"    fake_provider.respond({status}, {body})\n\n"
            f"    with pytest.raises(errors.{error}):\n"
            f"        {call}"
        )
    return (
        f'"""billing.{module} against a fake provider."""\n\n'
        "from __future__ import annotations\n\n"
        "from datetime import date\nfrom decimal import Decimal\n\n"
        "import pytest\n\n"
        f"from billing import errors, {module}\n"
        f"from billing.models import {', '.join(models)}\n"
        "from tests.billing.conftest import FakeProvider, load_fixture\n\n\n"
        + "\n\n\n".join(tests)
        + "\n"
    )


def _model_tests() -> str:
    tests = []
    for model, (_, fields) in _MODELS.items():
        snake = _snake(model)
        tests.append(
            f"def test_{snake}_from_v1_reads_every_field() -> None:\n"
            f'    parsed = {model}.from_v1(load_fixture("{snake}"))\n\n'
            "    assert {f.name for f in fields(parsed)} == "
            f"{{{', '.join(repr(f.name) for f in fields)}}}"
        )
        if any(f.annotation == "Decimal" for f in fields):
            amount = next(f.name for f in fields if f.annotation == "Decimal")
            tests.append(
                f"def test_{snake}_from_v1_converts_amounts_to_major_units() -> None:\n"
                f'    parsed = {model}.from_v1(load_fixture("{snake}"))\n\n'
                f'    assert parsed.{amount} == Decimal("19.90")'
            )
        tests.append(
            f"def test_{snake}_is_frozen() -> None:\n"
            f'    parsed = {model}.from_v1(load_fixture("{snake}"))\n\n'
            "    with pytest.raises(FrozenInstanceError):\n"
            f"        parsed.{fields[0].name} = {fields[0].name!r}  # type: ignore[misc]"
        )
    return (
        '"""Parsing provider objects into our models."""\n\n'
        "from __future__ import annotations\n\n"
        "from dataclasses import FrozenInstanceError, fields\n"
        "from decimal import Decimal\n\nimport pytest\n\n"
        f"from billing.models import {', '.join(_MODELS)}\n"
        "from tests.billing.conftest import load_fixture\n\n\n" + "\n\n\n".join(tests) + "\n"
    )


def _webhook_tests() -> str:
    tests = [
        '''def sign(payload: bytes, secret: str = SECRET, timestamp: int = NOW) -> str:
    signed = f"{timestamp}.".encode() + payload
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"''',
        """def test_verify_signature_accepts_a_valid_header() -> None:
    payload = b'{"id": "evt_1"}'

    webhooks.verify_signature(payload, sign(payload), SECRET, now=NOW)""",
        """def test_verify_signature_rejects_a_tampered_payload() -> None:
    header = sign(b'{"id": "evt_1"}')

    with pytest.raises(errors.InvalidSignature):
        webhooks.verify_signature(b'{"id": "evt_2"}', header, SECRET, now=NOW)""",
        """def test_verify_signature_rejects_an_old_timestamp() -> None:
    payload = b'{"id": "evt_1"}'

    with pytest.raises(errors.InvalidSignature):
        webhooks.verify_signature(payload, sign(payload, timestamp=NOW - 301), SECRET, now=NOW)""",
        """def test_verify_signature_rejects_a_malformed_header() -> None:
    with pytest.raises(errors.InvalidSignature):
        webhooks.verify_signature(b"{}", "garbage", SECRET, now=NOW)""",
    ]
    for event, _, model, action in _EVENTS:
        target, method = action.split("(")[0].split(".")
        tests.append(
            f"def test_{event.replace('.', '_')}_is_dispatched("
            "monkeypatch: pytest.MonkeyPatch) -> None:\n"
            "    calls: list[tuple[object, ...]] = []\n"
            f'    monkeypatch.setattr({target}, "{method}", lambda *args: calls.append(args))\n'
            f'    payload = event("{event}", load_fixture("{_snake(model)}"))\n\n'
            "    webhooks.handle(payload, sign(payload), now=NOW)\n\n"
            "    assert len(calls) == 1"
        )
    return (
        '"""Webhook signatures and dispatch."""\n\n'
        "from __future__ import annotations\n\nimport hashlib\nimport hmac\nimport json\n"
        "from typing import Any\n\nimport pytest\n\n"
        "from billing import errors, ledger, notifications, webhooks\n"
        "from tests.billing.conftest import load_fixture\n\n"
        'SECRET = "whsec_test"\nNOW = 1_793_000_000\n\n\n'
        "def event(kind: str, obj: dict[str, Any]) -> bytes:\n"
        '    body = {"id": "evt_1", "type": kind, "created": NOW, "data": {"object": obj}}\n'
        "    return json.dumps(body).encode()\n\n\n" + "\n\n\n".join(tests) + "\n"
    )


def _public_api_tests() -> str:
    expected = "\n".join(
        f'    "{op.name}": "{_signature(op)}",' for op in sorted(_OPS, key=lambda o: o.name)
    )
    exports = "\n".join(f'    "{name}",' for name in _exports())
    return f'''"""The public API of ``billing`` is a contract: three other services import it directly.

Changing a name or a signature here needs a coordinated release with checkout,
subscriptions and back-office. See docs/public-api.md before touching this file.
"""

from __future__ import annotations

import inspect

import pytest

import billing

EXPECTED_EXPORTS = [
{exports}
]

EXPECTED_SIGNATURES = {{
{expected}
}}


def test_module_exports_are_stable() -> None:
    assert sorted(billing.__all__) == EXPECTED_EXPORTS


@pytest.mark.parametrize(
    ("name", "expected"), sorted(EXPECTED_SIGNATURES.items()), ids=sorted(EXPECTED_SIGNATURES)
)
def test_public_signatures_are_stable(name: str, expected: str) -> None:
    assert str(inspect.signature(getattr(billing, name))) == expected
'''  # noqa: E501


_RETRY_TESTS = '''"""Backoff delays."""

from __future__ import annotations

import random

import pytest

from billing import retry


class TestDelayFor:
    def setup(self) -> None:
        random.seed(7)

    def test_first_attempt_waits_at_most_the_base_delay(self) -> None:
        assert 0 <= retry.delay_for(1) <= retry.BASE_DELAY

    def test_delay_is_capped(self) -> None:
        assert retry.delay_for(30) <= retry.MAX_DELAY

    def test_retry_after_wins(self) -> None:
        assert retry.delay_for(1, retry_after="3") == 3.0

    def test_retry_after_is_capped(self) -> None:
        assert retry.delay_for(1, retry_after="120") == retry.MAX_DELAY

    def test_delays_are_reproducible_with_a_seed(self) -> None:
        assert round(retry.delay_for(3), 6) == 0.323833

    def test_bad_retry_after_is_ignored_without_a_warning(self) -> None:
        with pytest.warns(None) as record:
            delay = retry.delay_for(2, retry_after="soon")
        assert not record
        assert delay <= retry.BASE_DELAY * 2
'''


_CURRENCY_TESTS = '''"""Minor units and display."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billing import currency


@pytest.mark.parametrize("code", sorted(currency.MINOR_UNITS))
def test_round_trip_keeps_the_amount(code: str) -> None:
    amount = Decimal("1234.5").quantize(Decimal(1).scaleb(-currency.MINOR_UNITS[code]))

    assert currency.from_minor(currency.to_minor(amount, code), code) == amount


@pytest.mark.parametrize("code", sorted(currency.MINOR_UNITS))
def test_to_minor_uses_the_currency_exponent(code: str) -> None:
    assert currency.to_minor(Decimal(1), code) == 10 ** currency.MINOR_UNITS[code]


@pytest.mark.parametrize("code", sorted(currency.MINOR_UNITS))
def test_format_money_starts_with_the_symbol(code: str) -> None:
    assert currency.format_money(Decimal(1), code).startswith(currency.SYMBOLS[code])


def test_brl_uses_comma_decimals_and_dot_thousands() -> None:
    assert currency.format_money(Decimal("1234.5"), "BRL") == "R$ 1.234,50"


def test_codes_are_case_insensitive() -> None:
    assert currency.to_minor(Decimal("19.90"), "brl") == 1990


def test_unknown_currency_raises_key_error() -> None:
    with pytest.raises(KeyError):
        currency.to_minor(Decimal(1), "XXX")
'''


def _migration_doc() -> str:
    rows = []
    for op in _OPS:
        v2 = op.path.replace("charges", "payments")
        verb = "POST" if op.kind in ("create", "action") else "GET"
        rows.append(f"| `{op.name}` | `{verb} /v1/{op.path}` | `{verb} /v2/{v2}` |")
    endpoint_map = "\n".join(rows)
    return f"""# PayProvider API v2: migration notes

API v1 is closed to new accounts on 2027-03-31 and switched off for everyone on 2027-09-30.
This page lists what our `billing` package has to change. The provider's own guide is at
https://docs.payprovider.example/v2/migrate; where the two disagree, the provider wins.

## What changes

| Area | v1 | v2 |
|------|----|----|
| Version | `Payprovider-Version: 2023-10-16` header | `/v2/` path prefix and `PP-Api-Version: 2026-09-01` |
| Charges | `/v1/charges` | `/v2/payments` (same verbs; `capture` unchanged) |
| Amounts | integer minor units plus a `currency` field | `{{"value": <minor units>, "currency": "BRL"}}` |
| Currency codes | lower case (`brl`) | upper case ISO 4217 (`BRL`) |
| Customer reference | `customer` | `customer_id` |
| Idempotency | `Idempotency-Key`, kept 7 days | `PP-Idempotency-Key`, kept 24 hours |
| Errors | `{{"error": {{"type", "message", "code"}}}}` | `{{"errors": [{{"type", "detail", "code"}}]}}` |
| Pagination | `starting_after` + `has_more` | `cursor` + `next_cursor` (absent on the last page) |
| Rate limits | `Retry-After` (seconds) | `RateLimit-Reset` (seconds); `Retry-After` only on 503 |
| Webhook events | `charge.*` | `payment.*`, and `refund.succeeded` replaces `charge.refunded` |
| Webhook signature | `Payprovider-Signature: t=...,v1=...` (HMAC-SHA256) | `PP-Signature: t=...,v2=...` (HMAC-SHA512) |
| Timestamps | Unix seconds (`created`) | RFC 3339 strings (`created_at`) |

## Endpoint map

| Function | v1 | v2 |
|----------|----|----|
{endpoint_map}

## What stays the same

- Object ids. Payments created on v2 get `py_` ids; `ch_` ids stay valid on every v2 endpoint.
- API keys, test mode and the dashboard.
- Refund reasons, invoice statuses and card brands (v2 calls the brand `network`).

## Partial refunds

v2 needs the currency next to every amount, including partial refunds. Our callers pass only
an amount; look the currency up from the charge (one extra GET, cached per request) rather
than asking callers for it.

## Rollout

1. Ship the client with `PAYPROVIDER_API=v1` as the default; flip per environment.
2. Webhooks: the provider sends both v1 and v2 events for 30 days after the switch.
   Accept both signature schemes during that window.
3. Remove the v1 code after 2027-09-30.
"""  # noqa: E501


_V1_CREATED = 1_793_000_000
_V2_CREATED = "2026-10-26T09:33:20+00:00"
_LINE_V1 = {"description": "Plano Pro", "quantity": 1, "unit_amount": 1990, "currency": "brl"}
_LINE_V2 = {
    "description": "Plano Pro",
    "quantity": 1,
    "unit_price": {"value": 1990, "currency": "BRL"},
}
_FIXTURES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "charge": (
        {
            "id": "ch_456",
            "object": "charge",
            "customer": "cus_123",
            "amount": 1990,
            "currency": "brl",
            "status": "succeeded",
            "captured": True,
            "failure_code": None,
            "created": _V1_CREATED,
            "metadata": {"order": "A-1001"},
        },
        {
            "id": "ch_456",
            "object": "payment",
            "customer_id": "cus_123",
            "amount": {"value": 1990, "currency": "BRL"},
            "status": "succeeded",
            "capture_state": "captured",
            "failure": None,
            "created_at": _V2_CREATED,
            "metadata": {"order": "A-1001"},
        },
    ),
    "customer": (
        {
            "id": "cus_123",
            "object": "customer",
            "email": "ana@example.com",
            "name": "Ana Lima",
            "invoice_settings": {"default_payment_method": "pm_555"},
            "created": _V1_CREATED,
        },
        {
            "id": "cus_123",
            "object": "customer",
            "email": "ana@example.com",
            "name": "Ana Lima",
            "default_payment_method_id": "pm_555",
            "created_at": _V2_CREATED,
        },
    ),
    "payment_method": (
        {
            "id": "pm_555",
            "object": "payment_method",
            "customer": "cus_123",
            "card": {"brand": "visa", "last4": "4242", "exp_month": 8, "exp_year": 2029},
        },
        {
            "id": "pm_555",
            "object": "payment_method",
            "customer_id": "cus_123",
            "card": {"network": "visa", "last4": "4242", "expiry": {"month": 8, "year": 2029}},
        },
    ),
    "invoice_line": (_LINE_V1, _LINE_V2),
    "invoice": (
        {
            "id": "in_789",
            "object": "invoice",
            "customer": "cus_123",
            "status": "open",
            "currency": "brl",
            "lines": {"object": "list", "data": [_LINE_V1], "has_more": False},
            "total": 1990,
            "due_date": "2026-12-01",
            "hosted_invoice_url": "https://pay.payprovider.example/i/in_789",
            "created": _V1_CREATED,
        },
        {
            "id": "in_789",
            "object": "invoice",
            "customer_id": "cus_123",
            "status": "open",
            "lines": [_LINE_V2],
            "total": {"value": 1990, "currency": "BRL"},
            "due_on": "2026-12-01",
            "hosted_url": "https://pay.payprovider.example/i/in_789",
            "created_at": _V2_CREATED,
        },
    ),
    "refund": (
        {
            "id": "re_321",
            "object": "refund",
            "charge": "ch_456",
            "amount": 1990,
            "currency": "brl",
            "status": "succeeded",
            "reason": "requested_by_customer",
            "created": _V1_CREATED,
        },
        {
            "id": "re_321",
            "object": "refund",
            "payment_id": "ch_456",
            "amount": {"value": 1990, "currency": "BRL"},
            "status": "succeeded",
            "reason": "requested_by_customer",
            "created_at": _V2_CREATED,
        },
    ),
}
_LIST_FIXTURES = {
    "charge_list": "charge",
    "customer_list": "customer",
    "payment_method_list": "payment_method",
    "invoice_list": "invoice",
    "refund_list": "refund",
}


def _json_text(data: Any) -> str:
    return json.dumps(data, indent=2) + "\n"


def _list_fixture(model: str, version: str) -> dict[str, Any]:
    item = _FIXTURES[model][0 if version == "v1" else 1]
    second = {**item, "id": item["id"][:-1] + "7"}
    if version == "v1":
        return {"object": "list", "data": [item, second], "has_more": False}
    return {"data": [item, second], "next_cursor": None}


_V2_BODY_KEYS = {
    "customer_id": "customer_id",
    "charge_id": "payment_id",
    "payment_method_id": "payment_method_id",
    "make_default": "make_default",
    "due_date": "due_on",
}
_V2_SAMPLES: dict[str, Any] = {
    "customer_id": "cus_123",
    "amount": {"value": 1990, "currency": "BRL"},
    "currency": "BRL",
    "description": "Pedido A-1001",
    "metadata": {"order": "A-1001"},
    "charge_id": "ch_456",
    "email": "ana@example.com",
    "name": "Ana Lima",
    "payment_method_id": "pm_555",
    "make_default": True,
    "lines": [_LINE_V2],
    "due_date": "2026-12-01",
    "reason": "requested_by_customer",
    "status": "open",
    "limit": 100,
    "query": "status:'failed'",
}
_V2_ERRORS = (
    ("400", "invalid_request_error", "A parameter is missing, unknown or malformed."),
    ("401", "authentication_error", "The key is missing, revoked, or for the other mode."),
    (
        "402",
        "card_error",
        "The issuer declined; `code` has the reason (`insufficient_funds`, ...).",
    ),
    ("404", "invalid_request_error", "No object with that id in this account."),
    ("409", "idempotency_error", "The key was used in the last 24 h with a different body."),
    ("429", "rate_limit_error", "Too many requests; wait `RateLimit-Reset` seconds."),
    ("500", "api_error", "Our fault. Safe to retry with the same idempotency key."),
)


def _reference_doc() -> str:
    parts = [
        "# PayProvider API v2 reference\n\n"
        "Vendored from https://docs.payprovider.example/v2 on 2026-10-20. Do not edit; "
        "re-vendor instead.\n\n"
        "## Conventions\n\n"
        "- Base URL `https://api.payprovider.example`, every path starts with `/v2/`.\n"
        "- Send `Authorization: Bearer <secret key>` and `PP-Api-Version: 2026-09-01`.\n"
        '- Bodies are JSON. Amounts are objects: `{"value": <integer minor units>, '
        '"currency": "<ISO 4217, upper case>"}`.\n'
        "- Timestamps are RFC 3339 strings in UTC.\n"
        "- `POST` requests accept `PP-Idempotency-Key` (up to 255 characters). A key is "
        "remembered for 24 hours; replaying it with the same body returns the first response, "
        "with a different body returns `409 idempotency_error`.\n\n"
        "## Errors\n\n"
        "Every error response has the shape:\n\n"
        "```json\n"
        + json.dumps(
            {
                "errors": [
                    {
                        "type": "card_error",
                        "code": "insufficient_funds",
                        "detail": "Your card has insufficient funds.",
                        "param": None,
                    }
                ],
                "request_id": "req_8Yk2",
            },
            indent=2,
        )
        + "\n```\n\n| Status | type | Meaning |\n|---|---|---|\n"
        + "\n".join(f"| {code} | `{kind}` | {text} |" for code, kind, text in _V2_ERRORS)
        + "\n\n## Pagination\n\n"
        'List endpoints return `{"data": [...], "next_cursor": "..."}`. Pass '
        "`cursor=<next_cursor>` to get the next page; `next_cursor` is absent or null on the "
        "last page. `limit` is 1 to 100 (default 20).\n\n"
        "## Rate limits\n\n"
        "100 requests per second per key in live mode, 25 in test mode. A `429` carries "
        "`RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (seconds until the "
        "window resets). `Retry-After` is only sent with `503`.\n"
    ]
    for op in _OPS:
        verb = "POST" if op.kind in ("create", "action") else "GET"
        path = op.path.replace("charges", "payments")
        section = [f"## {verb} /v2/{path}", "", op.summary.replace("charge", "payment"), ""]
        path_params = set(re.findall(r"{(\w+)}", op.path))
        fields = [p for p in op.params if p.name not in path_params]
        if verb == "POST" and fields:
            body = {
                _V2_BODY_KEYS.get(p.name, p.name): _V2_SAMPLES[p.name]
                for p in fields
                if p.name != "currency"
            }
            section += ["Request body:", "", "```json", json.dumps(body, indent=2), "```", ""]
            section += ["| Field | Required | Notes |", "|---|---|---|"]
            for p in fields:
                required = "yes" if p.default is None else "no"
                key = _V2_BODY_KEYS.get(p.name, p.name)
                section.append(f"| `{key}` | {required} | {_PARAM_DOCS[p.name]} |")
            section.append("")
        elif fields:
            section += ["Query parameters:", ""]
            for p in fields:
                key = _V2_BODY_KEYS.get(p.name, p.name)
                section.append(f"- `{key}`: {_PARAM_DOCS[p.name]}")
            section += ["- `cursor`: from the previous page's `next_cursor`.", ""]
        model = _snake(op.model)
        sample = _list_fixture(model, "v2") if op.kind == "list" else _FIXTURES[model][1]
        section += ["Response `200`:", "", "```json", json.dumps(sample, indent=2), "```", ""]
        codes = ("400", "401", "402", "409", "429") if verb == "POST" else ("401", "404", "429")
        section.append("Errors: " + ", ".join(f"`{code}`" for code in codes) + ".")
        parts.append("\n".join(section))
    events = "\n".join(f"| `{new}` | `{old}` | {model} |" for old, new, model, _ in _EVENTS)
    parts.append(
        "## Webhooks\n\n"
        "Deliveries are `POST`s with a JSON body "
        '`{"id", "type", "created_at", "data": {"object": {...}}}` and the '
        "header `PP-Signature: t=<unix seconds>,v2=<hex>`, where the signature is "
        "HMAC-SHA512 over `<t>.<raw body>` with the endpoint's secret. Reject deliveries whose "
        "`t` is more than 5 minutes away from your clock. During the 30 days after an account "
        "switches to v2, deliveries also carry `v1=<hex>` (HMAC-SHA256) and v1 event names are "
        "sent as well.\n\n| v2 event | v1 event | Object |\n|---|---|---|\n" + events
    )
    return "\n\n".join(parts) + "\n"


def _billing_repo(*, pytest_version: str = "7.4.3") -> _Repo:
    files = {
        "README.md": """# billing

The only code that talks to PayProvider. Other services import `billing` directly; see
`billing/__init__.py` for the public names and `tests/billing/test_public_api.py` for the
contract.

## Configuration

| Variable | Meaning |
|----------|---------|
| `PAYPROVIDER_API_KEY` | secret key (`sk_live_...` or `sk_test_...`) |
| `PAYPROVIDER_BASE_URL` | override for the sandbox |
| `PAYPROVIDER_WEBHOOK_SECRET` | signs inbound webhooks |
| `BILLING_DEFAULT_CURRENCY` | defaults to BRL |

## Development

    pip install -e '.[dev]'
    pytest
""",
        "CHANGELOG.md": """# Changelog

## 3.8.2 (2026-10-14)
- Retry 409 responses from the provider (idempotency races).

## 3.8.1 (2026-09-30)
- `list_invoices` walks every page instead of the first 100 invoices.

## 3.8.0 (2026-09-02)
- `send_invoice`.
- Card brand on `PaymentMethod`.
""",
        "pyproject.toml": """[project]
name = "billing"
version = "3.8.2"
requires-python = ">=3.11"
dependencies = ["httpx==0.24.1"]

[project.optional-dependencies]
dev = ["pytest==7.4.3", "pytest-cov==4.1.0", "anyio==3.7.1", "mypy==1.6.1", "ruff==0.1.5"]

[tool.pytest.ini_options]
testpaths = ["tests"]
""",
        "billing/__init__.py": _init_module(),
        "billing/api.py": _ops_module("api"),
        "billing/client.py": _CLIENT,
        "billing/currency.py": _currency_module(),
        "billing/errors.py": _errors_module(),
        "billing/invoices.py": _ops_module("invoices"),
        "billing/ledger.py": _support_module(
            "ledger",
            (
                (
                    "record_payment",
                    "charge_id: str, amount: Decimal, currency: str",
                    "Book a captured payment.",
                ),
                (
                    "record_refund",
                    "charge_id: str, amount: Decimal, currency: str",
                    "Book a refund.",
                ),
                ("mark_invoice_paid", "invoice_id: str, total: Decimal", "Close an invoice."),
                ("void_invoice", "invoice_id: str", "Reverse an invoice's entries."),
            ),
        ),
        "billing/models.py": _models_module(),
        "billing/notifications.py": _support_module(
            "notifications",
            (
                ("payment_failed", "customer_id: str, code: str | None", "Tell the customer."),
                ("invoice_overdue", "customer_id: str, invoice_id: str", "Start dunning."),
                ("contact_changed", "customer_id: str, email: str", "Confirm the new address."),
                ("card_saved", "customer_id: str, last4: str", "Confirm the saved card."),
            ),
        ),
        "billing/refunds.py": _ops_module("refunds"),
        "billing/retry.py": _RETRY,
        "billing/settings.py": _SETTINGS,
        "billing/webhooks.py": _webhooks_module(),
        "docs/migration-v2.md": _migration_doc(),
        "docs/public-api.md": """# The public API of billing

checkout, subscriptions and back-office import `billing` directly and deploy on their own
schedules. A renamed function, a new required parameter or a changed default breaks them at
import or call time, in production. So:

- names in `billing.__all__` and their signatures do not change without a coordinated release;
- new behaviour goes behind new optional keyword arguments or new functions;
- wire-format changes stay inside `billing.client` and `billing.models`.

`tests/billing/test_public_api.py` pins all of this.
""",
        "tests/__init__.py": "",
        "tests/billing/__init__.py": "",
        "tests/billing/conftest.py": _CONFTEST,
        "tests/billing/test_api.py": _op_tests("api"),
        "tests/billing/test_client.py": _client_tests(),
        "tests/billing/test_currency.py": _CURRENCY_TESTS,
        "tests/billing/test_invoices.py": _op_tests("invoices"),
        "tests/billing/test_models.py": _model_tests(),
        "tests/billing/test_public_api.py": _public_api_tests(),
        "tests/billing/test_refunds.py": _op_tests("refunds"),
        "tests/billing/test_retry.py": _RETRY_TESTS,
        "tests/billing/test_webhooks.py": _webhook_tests(),
    }
    for name, (v1, _) in _FIXTURES.items():
        files[f"tests/billing/fixtures/{name}.json"] = _json_text(v1)
    for name, (_, v2) in _FIXTURES.items():
        files[f"tests/billing/fixtures/v2/{name}.json"] = _json_text(v2)
    for name, model in _LIST_FIXTURES.items():
        files[f"tests/billing/fixtures/{name}.json"] = _json_text(_list_fixture(model, "v1"))
        files[f"tests/billing/fixtures/v2/{name}.json"] = _json_text(_list_fixture(model, "v2"))
    files["docs/payprovider-v2-reference.md"] = _reference_doc()
    repo = _Repo(files, root="/home/dev/billing", pytest_version=pytest_version)
    repo.params[("tests/billing/test_public_api.py", "test_public_signatures_are_stable")] = sorted(
        op.name for op in _OPS
    )
    codes = sorted(code for code, _, _ in _CURRENCIES)
    for test in (
        "test_round_trip_keeps_the_amount",
        "test_to_minor_uses_the_currency_exponent",
        "test_format_money_starts_with_the_symbol",
    ):
        repo.params[("tests/billing/test_currency.py", test)] = codes
    return repo


# --------------------------------------------------------------------------------------------
# Session 1: a long coding session with one compaction that keeps the turn-3 constraint
# --------------------------------------------------------------------------------------------


@dataclass
class _Progress:
    """What a summarizer would know about the task so far."""

    decisions: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    current: str = ""
    next_steps: list[str] = field(default_factory=list)


def _bullets(items: Sequence[str], empty: str = "(none)") -> str:
    return "\n".join(f"- {item}" for item in items) if items else f"- {empty}"


def _billing_summary(progress: _Progress, repo: _Repo, constraint_seq: int) -> str:
    return (
        "Goal: Migrate the billing package from PayProvider API v1 to API v2 (user, seq 0).\n\n"
        "Constraints:\n"
        f"- {BILLING_CONSTRAINT.rstrip('.')} (user, seq {constraint_seq}). checkout, "
        "subscriptions and "
        "back-office import billing directly; tests/billing/test_public_api.py pins every "
        "exported name and signature, run it after each module.\n"
        "- Wire-format changes stay inside billing.client and billing.models "
        "(docs/public-api.md).\n\n"
        f"Decisions:\n{_bullets(progress.decisions)}\n\n"
        f"Done:\n{_bullets(progress.done)}\n\n"
        f"Current state: {progress.current}\n\n"
        f"Next steps:\n{_bullets(progress.next_steps)}\n\n"
        f"Files touched: {', '.join(repo.edited) or '(none yet)'}"
    )


def _webhook_warnings(repo: _Repo) -> tuple[list[str], int]:
    ids = [i for i in repo.collect("tests/billing/test_webhooks.py") if i.endswith("_dispatched")]
    lines = repo.files["billing/webhooks.py"].splitlines()
    number = next(i for i, line in enumerate(lines) if "utcfromtimestamp" in line) + 1
    message = [
        f"  {repo.root}/billing/webhooks.py:{number}: DeprecationWarning: "
        "datetime.datetime.utcfromtimestamp() is deprecated and scheduled for removal in a "
        "future version. Use timezone-aware objects to represent datetimes in UTC: "
        "datetime.datetime.fromtimestamp(timestamp, datetime.UTC).",
        '    sent_at = datetime.utcfromtimestamp(event["created"])',
    ]
    return [*ids, *message], len(ids)


def _path_failure(op: _Op, module_test: str, old: str, new: str) -> _Failure:
    path = op.path
    for name in re.findall(r"{(\w+)}", op.path):
        path = path.replace("{" + name + "}", ast.literal_eval(_SAMPLE_ARGS[name]))
    before, after = f"/{old}/{path}", f"/{new}/{path.replace('charges', 'payments')}"
    return _Failure(
        f"tests/billing/{module_test}::test_{op.name}_sends_expected_request",
        (f"assert '{after}' == '{before}'", f"  - {before}", f"  + {after}"),
        marker="assert request.path",
    )


def _v1_missing_key(model: str) -> tuple[str, str]:
    """The key ``from_v1`` trips on in a v2 object, and the source line that reads it."""
    v2 = _FIXTURES[_snake(model)][1]
    for f in _MODELS[model][1]:
        if "if data.get" in f.v1:
            continue
        for key in re.findall(r'data\["(\w+)"\]', f.v1):
            if key not in v2:
                return key, f"{f.name}={f.v1},"
    raise RuntimeError(f"{model}.from_v1 reads a v2 object without error")


def _v1_parse_failures() -> list[_Failure]:
    """What the suite reports once the fixtures are v2 but the code still parses v1."""
    failures = []
    for op in _OPS:
        key, line = _v1_missing_key(op.model)
        if op.kind == "list":
            needle = f'items.extend({op.model}.from_v1(row) for row in page["data"])'
        else:
            needle = f"return {op.model}.from_v1(data)"
        frames = (
            (f"billing/{op.module}.py", needle, op.name, f"def {op.name}("),
            ("billing/models.py", line, "from_v1", f"class {op.model}:"),
        )
        plural = "s" if op.kind == "list" else ""
        tests = [
            (f"test_{op.name}_sends_expected_request", f"{op.module}.{op.name}("),
            (f"test_{op.name}_returns_{_snake(op.model)}{plural}", "result = "),
        ]
        if op.kind in ("create", "action"):
            tests.append((f"test_{op.name}_sends_idempotency_key", f"{op.module}.{op.name}("))
        if op.kind == "list":
            tests.append((f"test_{op.name}_follows_pagination", "result = "))
        failures += [
            _Failure(
                f"tests/billing/test_{op.module}.py::{name}",
                (f"'{key}'",),
                marker=marker,
                exception="KeyError",
                frames=frames,
            )
            for name, marker in tests
        ]
    for event, _, model, _ in _EVENTS:
        key, line = _v1_missing_key(model)
        handler = _handler_name(event)
        failures.append(
            _Failure(
                f"tests/billing/test_webhooks.py::test_{event.replace('.', '_')}_is_dispatched",
                (f"'{key}'",),
                marker="webhooks.handle(",
                exception="KeyError",
                frames=(
                    ("billing/webhooks.py", 'handler(event["data"]["object"])', "handle", ""),
                    (
                        "billing/webhooks.py",
                        f"obj = {model}.from_v1(data)",
                        handler,
                        f"def {handler}(",
                    ),
                    ("billing/models.py", line, "from_v1", f"class {model}:"),
                ),
            )
        )
    return failures


def _billing_migration(tool_ids: set[str]) -> ExampleSession:
    external_id = "example-billing-migration"
    rng = random.Random(f"{_SEED}:{external_id}")
    repo = _billing_repo()
    t = _Trace(
        external_id=external_id,
        rng=rng,
        tool_ids=tool_ids,
        session={
            "agent": "billing-migrator",
            "model": "claude-opus-4-6",
            "context_window": 200_000,
            "started_at": "2026-11-02T10:00:00Z",
            "metadata": {"repository": "acme/billing", "git_branch": "billing-api-v2"},
        },
        system_tokens=4_000,
    )
    progress = _Progress()
    constraint_seq = -1

    def compact_when_full(trace: _Trace) -> None:
        if trace.compactions or trace.context < 150_000:
            return
        summary = _billing_summary(progress, repo, constraint_seq)
        keep = trace.keep_from(summary, target_after=35_000, after_seq=constraint_seq)
        trace.summarize(summary=summary, keep_from=keep, duration_ms=rng.randint(7_000, 12_000))

    t.policy = compact_when_full
    api_ops = [op for op in _OPS if op.module == "api"]

    # Turn 1: the goal.
    t.prompt(BILLING_GOAL, wait=0)
    progress.current = "Reading the package and the provider's v2 migration notes."
    progress.next_steps = [
        "Client: v2 version header, PP-Idempotency-Key, v2 error shape.",
        "Models: from_v2 parsers next to from_v1.",
        "api.py, invoices.py, refunds.py: v2 paths and payloads.",
        "Webhooks: payment.* events, PP-Signature (HMAC-SHA512).",
        "Retry on RateLimit-Reset; cursor pagination; upper-case currencies.",
        "README and CHANGELOG; full verbose test run.",
    ]
    t.step(repo.ls("."), text="I'll start with the layout of the repository.")
    t.step(
        repo.read("docs/api-v2.md", fails=True),
        text="There should be migration notes from the provider somewhere in docs/.",
    )
    t.step(repo.ls("docs"))
    t.step(repo.read("docs/migration-v2.md"), text="The notes are in `docs/migration-v2.md`.")
    t.step(
        repo.read("docs/payprovider-v2-reference.md"),
        text="And the vendored v2 reference, for the exact request and response shapes.",
    )
    t.step(
        repo.read("billing/__init__.py"),
        repo.read("billing/api.py"),
        text="Now the public surface and the module most callers use.",
    )
    t.step(
        repo.read("billing/client.py"),
        thinking=(
            "Every public function builds a payload and calls _client().post/get with a /v1/ "
            "path, then parses with Model.from_v1. So the version lives in three places: the "
            "paths in api/invoices/refunds, the headers and error parsing in client.py, and the "
            "JSON shapes in models.py. If the translation stays in client and models, the "
            "public functions keep their signatures. Let me read client.py and models.py."
        ),
        text="All HTTP goes through `billing/client.py`.",
    )
    t.step(repo.read("billing/models.py"))
    t.step(
        repo.read("billing/webhooks.py"),
        repo.read("billing/retry.py"),
        repo.read("billing/errors.py"),
        text="Webhooks, retries and errors also depend on the wire format.",
    )
    t.step(repo.grep("/v1/", "billing"), text="Where are v1 paths hard-coded?")
    t.reply(
        "Here's what v2 changes for us, from `docs/migration-v2.md`:\n\n"
        "- paths move to `/v2/`, and charges become payments;\n"
        "- amounts become `{value, currency}` objects, currency codes go upper case;\n"
        "- new version and idempotency headers, a new error shape, cursor pagination and "
        "`RateLimit-Reset`;\n"
        "- webhooks: `payment.*` events and an HMAC-SHA512 `PP-Signature`.\n\n"
        f"All {len(_OPS)} public functions go through `billing/client.py`, and the JSON is "
        "parsed in "
        "`billing/models.py`. My plan:\n\n"
        "1. client: headers, idempotency, error shape;\n"
        "2. models: `from_v2` parsers next to `from_v1`;\n"
        "3. api.py, invoices.py, refunds.py: paths and payloads;\n"
        "4. webhooks;\n5. retry and pagination;\n6. docs and changelog.\n\n"
        "I'll run the relevant tests after each step. Shall I take a baseline first?"
    )
    progress.done.append(
        f"Read docs/migration-v2.md and mapped every v1 call: {len(_OPS)} public functions in "
        "api.py, "
        "invoices.py and refunds.py, all through billing/client.py, parsed in billing/models.py."
    )

    # Turn 2: baseline.
    t.prompt("Sounds right. Before you edit anything, run the test suite so we have a baseline.")
    warnings, count = _webhook_warnings(repo)
    t.step(
        repo.pytest(
            "tests",
            verbose=True,
            warnings=warnings,
            warning_count=count,
            coverage=True,
            seconds=4.12,
        ),
        text="Running the whole suite, verbose.",
    )
    t.reply(
        f"Baseline: all {len(repo.collect('tests'))} tests pass in 4.1s. The {count} warnings "
        "are one deprecation (`datetime.utcfromtimestamp()` in `billing/webhooks.py`); I'll fix "
        "it when I get to webhooks."
    )
    progress.done.append("Baseline: the whole suite passed before any edit.")

    # Turn 3: the constraint.
    constraint_seq = t.prompt(
        f"Good. One rule for the whole task: {BILLING_CONSTRAINT} checkout, subscriptions and "
        "back-office import it directly, and we can't coordinate a release with three teams "
        "this quarter."
    )
    t.probe(constraint_seq, BILLING_CONSTRAINT.rstrip("."), "no public signature changed")
    t.step(
        repo.read("tests/billing/test_public_api.py"),
        repo.read("docs/public-api.md"),
        thinking=(
            f"The public API is billing.__all__: {len(_OPS)} functions, the models and the "
            "errors. The "
            "contract test compares str(inspect.signature(...)) for each function, so even a "
            "new optional parameter or a changed default fails it. v2 differences must be "
            "absorbed below the public functions."
        ),
        text="Let me see exactly what is pinned.",
    )
    t.step(
        repo.read("billing/invoices.py"),
        repo.read("billing/refunds.py"),
        text="And the other two modules that export public functions.",
    )
    t.step(
        repo.grep(r"def test_", "tests"),
        text="Which public functions do the tests exercise, and how?",
    )
    t.step(
        repo.read("tests/billing/test_api.py"),
        repo.read("tests/billing/conftest.py"),
        text="The module tests drive a fake provider; here is how.",
    )
    t.reply(
        "Understood: no changes to the names in `billing.__all__`, their signatures or their "
        "defaults. `tests/billing/test_public_api.py` pins the export list and all "
        f"{len(_OPS)} "
        "signatures, so I'll run it after every module. Everything v2-specific stays inside "
        "`billing.client` and `billing.models`; the public functions translate at the edge."
    )
    progress.decisions.append(
        "Keep every public name and signature; translate v2 shapes inside the public functions, "
        "billing.client and billing.models."
    )

    # Turn 4: the client.
    t.prompt("Go ahead, start with the HTTP client.")
    progress.current = "Moving billing/client.py to v2 headers and errors."
    currency_line = 'DEFAULT_CURRENCY = os.environ.get("BILLING_DEFAULT_CURRENCY", "BRL")\n'
    api_flag = 'PAYPROVIDER_API = os.environ.get("PAYPROVIDER_API", "v2")\n'
    t.step(
        repo.edit("billing/settings.py", currency_line, currency_line + api_flag, fails=True),
        text="First a setting for the API version, so an environment can flip back.",
    )
    t.step(repo.read("billing/settings.py"), text="I have to read it first.")
    t.step(repo.edit("billing/settings.py", currency_line, currency_line + api_flag))
    t.step(
        repo.edit(
            "billing/client.py",
            'API_VERSION = "2023-10-16"\nVERSION_HEADER = "Payprovider-Version"',
            'API_VERSION = "2026-09-01"\nVERSION_HEADER = "PP-Api-Version"',
        ),
        text="Version header next.",
    )
    t.step(
        repo.edit(
            "billing/client.py",
            'headers={"Idempotency-Key": key}',
            'headers={"PP-Idempotency-Key": key}',
        )
    )
    t.step(
        repo.edit(
            "billing/client.py",
            '    try:\n        body = response.json()["error"]\n'
            "    except (ValueError, KeyError, TypeError):\n"
            '        body = {"type": "api_error", "message": response.text[:200]}\n',
            "    try:\n        payload = response.json()\n"
            "        # v2 sends a list of errors; v1 bodies still arrive while both APIs are "
            "live.\n"
            '        body = payload["errors"][0] if "errors" in payload else payload["error"]\n'
            "    except (ValueError, KeyError, IndexError, TypeError):\n"
            '        body = {"type": "api_error", "detail": response.text[:200]}\n',
        ),
        thinking=(
            'The v2 error body is {"errors": [{"type", "detail", "code"}]}; '
            '_error_from_response reads response.json()["error"] and .get("message"). '
            "PAYPROVIDER_API can flip an environment back to v1, and the provider answers some "
            "endpoints in the v1 shape until the account switches, so the parser should accept "
            "both. Take the first entry of the list: the reference says it is the primary "
            "cause. The type names did not change in v2 (card_error, invalid_request_error, "
            "idempotency_error, rate_limit_error, authentication_error, api_error), so "
            "_ERROR_TYPES can stay as it is, and callers keep catching the same exceptions."
        ),
        text="v2 returns a list of errors. Both shapes can arrive during the rollout, so the "
        "parser accepts both.",
    )
    t.step(
        repo.edit(
            "billing/client.py",
            '        body.get("message", "unknown error"),',
            '        body.get("detail") or body.get("message") or "unknown error",',
        )
    )
    key_errors = [
        ("test_request_sends_api_version_header", "payprovider-version"),
        ("test_post_sends_idempotency_key", "idempotency-key"),
        ("test_post_reuses_given_idempotency_key", "idempotency-key"),
    ]
    t.step(
        repo.pytest(
            "tests/billing/test_client.py",
            failures=[
                _Failure(
                    f"tests/billing/test_client.py::{name}",
                    (f"'{header}'",),
                    marker=f'headers["{header}"]',
                    exception="KeyError",
                )
                for name, header in key_errors
            ],
            seconds=0.61,
        ),
        text="Running the client tests.",
    )
    t.step(
        repo.read("tests/billing/test_client.py"),
        text="Three failures, all tests that assert the old header names.",
    )
    t.step(
        repo.edit(
            "tests/billing/test_client.py",
            '["payprovider-version"] == "2023-10-16"',
            '["pp-api-version"] == "2026-09-01"',
        )
    )
    t.step(
        repo.edit(
            "tests/billing/test_client.py",
            '"idempotency-key"',
            '"pp-idempotency-key"',
            replace_all=True,
        )
    )
    t.step(repo.pytest("tests/billing/test_client.py", seconds=0.58))
    keyed = [op for op in _OPS if op.kind in ("create", "action")]
    t.step(
        repo.pytest(
            "tests",
            failures=[
                _Failure(
                    f"tests/billing/test_{op.module}.py::test_{op.name}_sends_idempotency_key",
                    ("'idempotency-key'",),
                    marker='headers["idempotency-key"]',
                    exception="KeyError",
                )
                for op in keyed
            ],
            verbose=True,
            seconds=4.48,
        ),
        text="Client tests pass. Now the whole suite, including the contract test.",
    )
    t.step(
        repo.read("tests/billing/test_api.py"),
        repo.read("tests/billing/test_invoices.py"),
        repo.read("tests/billing/test_refunds.py"),
        thinking=(
            f"{len(keyed)} failures, all KeyError: 'idempotency-key', one per POST function in "
            "test_api, test_invoices and test_refunds. They assert the header the client sends, "
            "which is wire format. The public functions still take idempotency_key with the "
            "same name and default, so the contract is untouched: test_public_api passed in "
            "this run. The fix is in the three test files, not in the functions. A replace_all "
            "on '[\"idempotency-key\"]' is safe if it only appears in those assertions; "
            "reading the files to be sure."
        ),
        text=f"{len(keyed)} tests in the module suites assert the old idempotency header too.",
    )
    for module in ("api", "invoices", "refunds"):
        t.step(
            repo.edit(
                f"tests/billing/test_{module}.py",
                '["idempotency-key"]',
                '["pp-idempotency-key"]',
                replace_all=True,
            )
        )
    t.step(
        repo.pytest("tests", verbose=True, coverage=True, seconds=4.37),
        text="And again, verbose.",
    )
    t.step(repo.read("billing/client.py"), text="Reviewing the whole client after the edits.")
    t.reply(
        "The client speaks v2: `PP-Api-Version: 2026-09-01`, `PP-Idempotency-Key`, and an error "
        "parser that accepts both the v2 list and the v1 object. I added `PAYPROVIDER_API` to "
        "settings (default `v2`). Client tests and the public-API contract test pass."
    )
    progress.done.append(
        "billing/client.py on v2: PP-Api-Version 2026-09-01, PP-Idempotency-Key, error parser "
        "accepting both shapes. test_client and test_public_api pass."
    )
    progress.decisions.append("The error parser accepts v1 and v2 bodies while both APIs are live.")
    progress.next_steps.pop(0)

    # Turn 5: models and fixtures.
    t.prompt("Continue with the models.")
    progress.current = "Adding from_v2 parsers to billing/models.py and moving fixtures to v2."
    t.step(
        repo.read("billing/models.py"),
        text="Re-reading models.py against the v2 reference before adding parsers.",
    )
    for model in _MODELS:
        header = f"    @classmethod\n    def from_v1(cls, data: Mapping[str, Any]) -> {model}:"
        added = _from_method(model, "v2") + "\n\n"
        if model == "InvoiceLine":
            added += (
                "    def to_v2(self, currency: str) -> dict[str, Any]:\n"
                "        return {\n"
                '            "description": self.description,\n'
                '            "quantity": self.quantity,\n'
                '            "unit_price": {"value": to_minor(self.unit_amount, currency), '
                '"currency": currency},\n'
                "        }\n\n"
            )
        t.step(
            repo.edit("billing/models.py", header, added + header),
            text=f"`{model}.from_v2` next to `from_v1`."
            if rng.random() < 0.5
            else f"Adding the v2 parser for `{model}`.",
        )
    t.step(
        repo.read("tests/billing/test_models.py"),
        text="The model tests load JSON fixtures; let me see how.",
    )
    t.step(repo.ls("tests/billing/fixtures"))
    t.step(
        repo.read("tests/billing/conftest.py"),
        repo.read("tests/billing/fixtures/v2/charge.json"),
        text="There is already a `v2/` set of fixtures, in the provider's v2 shapes.",
    )
    t.step(
        repo.edit(
            "tests/billing/conftest.py",
            'FIXTURES = Path(__file__).parent / "fixtures"',
            'FIXTURES = Path(__file__).parent / "fixtures" / "v2"',
        ),
        text="Pointing the fixture loader at them.",
    )
    t.step(
        repo.edit("tests/billing/test_models.py", "from_v1(", "from_v2(", replace_all=True),
        text="The fixtures are v2 now, so the model tests exercise `from_v2`.",
    )
    t.step(repo.edit("tests/billing/test_models.py", "_from_v1_", "_from_v2_", replace_all=True))
    t.step(repo.pytest("tests/billing/test_models.py", verbose=True, seconds=0.44))
    t.step(
        repo.pytest("tests", verbose=True, failures=_v1_parse_failures(), seconds=5.81),
        text="Model tests pass. The whole suite, to see what the fixture switch breaks:",
    )
    t.reply(
        "Every model has a `from_v2` classmethod next to `from_v1`, plus `InvoiceLine.to_v2`, "
        "and the tests load the v2 fixtures. test_models passes. As expected, every test that "
        "parses a response in api, invoices, refunds and webhooks fails with a `KeyError` "
        "until those modules switch to `from_v2`: that's next.",
        thinking=(
            "Every failure is a KeyError raised inside a from_v1 classmethod: the fixtures are "
            "v2 objects now and api, invoices, refunds and webhooks still parse v1. That is the "
            "expected state between two steps, not a regression: test_models and "
            "test_public_api pass, and nothing outside the tests changed behaviour yet. Keeping "
            "both fixture sets loaded would double every test for an API we are leaving. The "
            "failures disappear module by module as each switches to from_v2, which is the "
            "next step anyway. Report it plainly so the user is not surprised by the red run."
        ),
    )
    progress.done.append(
        "billing/models.py: from_v2 on every model (v1 parsers kept), InvoiceLine.to_v2; "
        "tests load tests/billing/fixtures/v2 (conftest.FIXTURES); test_models passes."
    )
    progress.next_steps.pop(0)

    # Turn 6: api.py.
    t.prompt("Now api.py.")
    progress.current = "Switching billing/api.py to v2 paths and payloads."
    t.step(
        repo.edit("billing/api.py", '"/v1/charges', '"/v2/payments', replace_all=True),
        text="Charges are payments on v2.",
    )
    t.step(repo.edit("billing/api.py", '"/v1/customers', '"/v2/customers', replace_all=True))
    t.step(repo.edit("billing/api.py", ".from_v1(", ".from_v2(", fails=True))
    t.step(
        repo.edit("billing/api.py", ".from_v1(", ".from_v2(", replace_all=True),
        text="Every match is a response parse; replacing them all.",
    )
    t.step(
        repo.edit(
            "billing/api.py",
            '        "customer": customer_id,\n'
            '        "amount": _to_minor(amount, currency),\n'
            '        "currency": currency.lower(),\n',
            '        "customer_id": customer_id,\n'
            '        "amount": {"value": _to_minor(amount, currency), '
            '"currency": currency.upper()},\n',
        ),
        thinking=(
            "v2 charge body per the reference: customer_id, amount {value, currency}, "
            "description, metadata. The currency moves inside the amount object and must be "
            "upper case; callers sometimes pass 'brl', and to_minor already upper-cases for "
            "its lookup, so upper() in the payload is enough. The function keeps customer_id, "
            "amount, currency='BRL', description, metadata and the keyword-only "
            "idempotency_key: only the body it builds changes."
        ),
        text="The charge payload: `customer_id`, and the amount as an object. The function's "
        "signature stays as it is.",
    )
    t.step(
        repo.pytest(
            "tests/billing/test_api.py",
            failures=[_path_failure(op, "test_api.py", "v1", "v2") for op in api_ops],
            verbose=True,
            seconds=1.27,
        ),
    )
    t.step(
        repo.read("tests/billing/test_api.py"),
        thinking=(
            "All the failures are assertions on the request path, which is wire format, not "
            "the public API: the tests still call the same functions with the same arguments. "
            "Updating the expected paths is right; the contract test is the one that must not "
            "change."
        ),
    )
    t.step(
        repo.edit("tests/billing/test_api.py", '"/v1/charges', '"/v2/payments', replace_all=True)
    )
    t.step(
        repo.edit("tests/billing/test_api.py", '"/v1/customers', '"/v2/customers', replace_all=True)
    )
    t.step(
        repo.pytest(
            "tests/billing/test_api.py",
            failures=[
                _Failure(
                    "tests/billing/test_api.py::test_charge_sends_expected_request",
                    ("assert {'currency': 'BRL', 'value': 1990} == 1990",),
                    marker='request.json["amount"]',
                )
            ],
            seconds=1.19,
        )
    )
    t.step(
        repo.edit(
            "tests/billing/test_api.py",
            'assert request.json["amount"] == 1990',
            'assert request.json["amount"] == {"value": 1990, "currency": "BRL"}',
        )
    )
    t.step(repo.pytest("tests/billing/test_api.py", seconds=1.22))
    t.step(repo.pytest("tests/billing/test_public_api.py", seconds=0.3))
    t.reply(
        "api.py is on v2: `/v2/payments` and `/v2/customers`, `from_v2` parsing, and the charge "
        "payload uses `customer_id` and an amount object. Test expectations for paths and the "
        "amount are updated; test_api and the contract test pass."
    )
    progress.done.append(
        "billing/api.py on v2 paths (/v2/payments, /v2/customers), from_v2, charge payload with "
        "customer_id and an amount object; test_api and test_public_api pass."
    )
    progress.decisions.append(
        "Tests that assert paths or payloads are wire format and get updated; "
        "test_public_api.py is never edited."
    )

    # Turn 7: invoices and refunds. The agent slips: refund() gains a parameter.
    t.prompt("Good. Same treatment for invoices.py and refunds.py.")
    progress.current = "Switching billing/invoices.py and billing/refunds.py to v2."
    t.step(
        repo.edit("billing/invoices.py", '"/v1/invoices', '"/v2/invoices', replace_all=True),
        text="Invoices first.",
    )
    t.step(repo.edit("billing/invoices.py", ".from_v1(", ".from_v2(", replace_all=True))
    t.step(
        repo.edit(
            "billing/invoices.py",
            '        "customer": customer_id,\n'
            '        "lines": [line.to_v1() for line in lines],\n',
            '        "customer_id": customer_id,\n'
            '        "lines": [line.to_v2(currency.upper()) for line in lines],\n',
        ),
        thinking=(
            "InvoiceLine.to_v2 needs the currency, because v2 line prices are amount objects. "
            "create_invoice already has currency='BRL', so pass currency.upper(). The top-level "
            "currency field stays in v2 invoices but must be upper case too; that's the next "
            "edit."
        ),
    )
    t.step(
        repo.edit(
            "billing/invoices.py",
            '"currency": currency.lower(),',
            '"currency": currency.upper(),',
        )
    )
    t.step(repo.edit("billing/refunds.py", '"/v1/refunds', '"/v2/refunds', replace_all=True))
    t.step(repo.edit("billing/refunds.py", ".from_v1(", ".from_v2(", replace_all=True))
    t.step(
        repo.edit(
            "billing/refunds.py",
            "    amount: Decimal | None = None,\n    reason: str | None = None,\n",
            '    amount: Decimal | None = None,\n    currency: str = "BRL",\n'
            "    reason: str | None = None,\n",
        ),
        thinking=(
            "v2 wants the currency next to every amount, including partial refunds. refund() "
            "only takes charge_id and amount. Simplest: add a currency parameter with a BRL "
            "default, so existing callers keep working, and send it in the amount object."
        ),
        text="v2 needs a currency with partial refunds; adding a `currency` parameter.",
    )
    t.step(
        repo.edit(
            "billing/refunds.py",
            '        payload["amount"] = _to_minor(amount)',
            '        payload["amount"] = {"value": _to_minor(amount, currency), '
            '"currency": currency.upper()}',
        )
    )
    t.step(
        repo.read("tests/billing/test_invoices.py"),
        repo.read("tests/billing/test_refunds.py"),
        text="Updating the path expectations in their tests.",
    )
    t.step(
        repo.edit(
            "tests/billing/test_invoices.py", '"/v1/invoices', '"/v2/invoices', replace_all=True
        )
    )
    t.step(
        repo.edit("tests/billing/test_refunds.py", '"/v1/refunds', '"/v2/refunds', replace_all=True)
    )
    t.step(repo.pytest("tests/billing/test_invoices.py", verbose=True, seconds=0.91))
    t.step(repo.pytest("tests/billing/test_refunds.py", verbose=True, seconds=0.67))
    t.step(repo.read("billing/refunds.py"), text="A last look at refunds.py.")
    t.reply(
        "invoices.py and refunds.py are on v2. Invoice lines are sent with `to_v2`, currencies "
        "are upper case, and `refund()` takes a `currency` (default BRL) so partial refunds can "
        "send the amount object v2 requires. test_invoices and test_refunds pass."
    )
    progress.done.append(
        "billing/invoices.py and billing/refunds.py on v2 paths and from_v2; invoice lines via "
        "InvoiceLine.to_v2; test_invoices and test_refunds pass."
    )
    progress.next_steps.pop(0)

    # Turn 8: webhooks.
    t.prompt("Webhooks next; v2 renamed the events.")
    progress.current = "Moving billing/webhooks.py to PP-Signature and payment.* events."
    t.step(repo.read("billing/webhooks.py"), repo.read("tests/billing/test_webhooks.py"))
    t.step(repo.grep(r'"charge\.', "."), text="Where else do the old event names appear?")
    t.step(
        repo.edit(
            "billing/webhooks.py",
            'SIGNATURE_HEADER = "Payprovider-Signature"',
            'SIGNATURE_HEADER = "PP-Signature"',
        ),
        text="Signature scheme first: `PP-Signature`, `v2=`, HMAC-SHA512.",
    )
    t.step(
        repo.edit(
            "billing/webhooks.py",
            'parts.get("t"), parts.get("v1")',
            'parts.get("t"), parts.get("v2")',
        )
    )
    t.step(
        repo.edit(
            "billing/webhooks.py",
            "hmac.new(secret.encode(), signed, hashlib.sha256)",
            "hmac.new(secret.encode(), signed, hashlib.sha512)",
        )
    )
    t.step(repo.edit("billing/webhooks.py", ".from_v1(data)", ".from_v2(data)", replace_all=True))
    old_table = "\n".join(f'    "{old}": {_handler_name(old)},' for old, *_ in _EVENTS)
    new_table = "\n".join(f'    "{new}": {_handler_name(old)},' for old, new, *_ in _EVENTS)
    t.step(
        repo.edit("billing/webhooks.py", old_table, new_table),
        text="And the event names in the dispatch table.",
    )
    dispatch = [
        f"tests/billing/test_webhooks.py::test_{old.replace('.', '_')}_is_dispatched"
        for old, *_ in _EVENTS
    ]
    bad_header = _Failure(
        "",
        ("malformed signature header",),
        exception="billing.errors.InvalidSignature",
        frames=(
            (
                "billing/webhooks.py",
                "verify_signature(payload, header, settings.WEBHOOK_SECRET, now=now)",
                "handle",
                "",
            ),
            (
                "billing/webhooks.py",
                'raise errors.InvalidSignature("malformed signature header")',
                "verify_signature",
                "",
            ),
        ),
    )
    first_failures = [
        _Failure(
            "tests/billing/test_webhooks.py::test_verify_signature_accepts_a_valid_header",
            bad_header.error,
            marker="webhooks.verify_signature(",
            exception=bad_header.exception,
            frames=bad_header.frames[1:],
        ),
        *[
            _Failure(
                test_id,
                bad_header.error,
                marker="webhooks.handle(",
                exception=bad_header.exception,
                frames=bad_header.frames,
            )
            for test_id in dispatch
        ],
    ]
    t.step(
        repo.pytest(
            "tests/billing/test_webhooks.py", verbose=True, failures=first_failures, seconds=0.52
        ),
    )
    t.step(
        repo.edit(
            "tests/billing/test_webhooks.py",
            "    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()\n"
            '    return f"t={timestamp},v1={digest}"',
            "    digest = hmac.new(secret.encode(), signed, hashlib.sha512).hexdigest()\n"
            '    return f"t={timestamp},v2={digest}"',
        ),
        thinking=(
            "Every dispatch test fails inside verify_signature with 'malformed signature "
            "header'. The tests build their header with sign(), which produces t=...,v1=... "
            "over HMAC-SHA256; the code now looks for v2= and SHA-512. The accept-valid test "
            "fails for the same reason. Tampered, old-timestamp and malformed still pass "
            "because they expect a raise. So the helper has to sign the v2 way; the code is "
            "right."
        ),
        text="The test helper still signs the v1 way.",
    )
    renamed = [(old, new) for old, new, *_ in _EVENTS if old != new]
    t.step(
        repo.pytest(
            "tests/billing/test_webhooks.py",
            failures=[
                _Failure(
                    f"tests/billing/test_webhooks.py::test_{old.replace('.', '_')}_is_dispatched",
                    ("assert 0 == 1", " +  where 0 = len([])"),
                    marker="assert len(calls) == 1",
                )
                for old, _ in renamed
            ],
            seconds=0.49,
        )
    )
    for old, new in renamed:
        t.step(
            repo.edit("tests/billing/test_webhooks.py", f'event("{old}"', f'event("{new}"'),
            text="The tests still send v1 event names." if old == renamed[0][0] else None,
        )
    t.step(
        repo.edit(
            "billing/webhooks.py",
            'sent_at = datetime.utcfromtimestamp(event["created"])',
            'sent_at = datetime.fromisoformat(event["created_at"])',
        ),
        text="While here: v2 sends RFC 3339 timestamps, which also removes the deprecation.",
    )
    t.step(
        repo.edit(
            "tests/billing/test_webhooks.py",
            '"created": NOW,',
            '"created_at": "2026-10-26T09:33:20+00:00",',
        )
    )
    t.step(repo.pytest("tests/billing/test_webhooks.py", verbose=True, seconds=0.47))
    t.step(repo.read("billing/webhooks.py"), text="Reviewing the module after the edits.")
    t.reply(
        "Webhooks are on v2: `PP-Signature` with `v2=` and HMAC-SHA512, `payment.*` and "
        "`refund.succeeded` in the dispatch table, `from_v2` parsing and RFC 3339 timestamps "
        "(the deprecation warning is gone). test_webhooks passes."
    )
    progress.done.append(
        "billing/webhooks.py on v2: PP-Signature v2= HMAC-SHA512, payment.* and "
        "refund.succeeded events, created_at timestamps; test_webhooks passes."
    )
    progress.next_steps.pop(0)

    # Turn 9: the full suite catches the slip.
    t.prompt("Run the whole suite.")
    progress.current = "Running the whole suite now that every module is on v2."
    refund_op = next(op for op in _OPS if op.name == "refund")
    expected = _signature(refund_op)
    actual = expected.replace(
        "amount: 'Decimal | None' = None, ",
        "amount: 'Decimal | None' = None, currency: 'str' = 'BRL', ",
    )
    t.step(
        repo.pytest(
            "tests",
            verbose=True,
            failures=[
                _Failure(
                    "tests/billing/test_public_api.py::test_public_signatures_are_stable[refund]",
                    (
                        f'assert "{actual}" == "{expected}"',
                        f"  - {expected}",
                        f"  + {actual}",
                    ),
                    arguments=("name = 'refund'", f'expected = "{expected}"'),
                )
            ],
            seconds=4.31,
        )
    )
    t.reply(
        thinking=(
            "test_public_signatures_are_stable[refund]: the currency parameter I added to "
            "refund() while moving refunds.py. The user's rule from the start of the task is "
            "not to change the public API of the billing module, and a new optional parameter "
            "is still a signature change: checkout passes reason positionally in at least one "
            "place, which would now bind to currency. I said I would run the contract test "
            "after every module and skipped it for refunds. Fix: remove the parameter and "
            "derive the currency from the charge, which is what the partial-refunds section "
            "of docs/migration-v2.md recommends."
        ),
        text="One failure, and it's mine: `test_public_signatures_are_stable[refund]`. I added a "
        "`currency` parameter to `refund()` in the previous step. That changes the public "
        "signature, which you asked me not to do. I'll take it out and look the currency up "
        "from the charge instead, as `docs/migration-v2.md` suggests.",
    )

    # Turn 10: fix without touching the signature.
    t.prompt("Yes, fix it without touching the public signatures.")
    progress.current = "Reverting the currency parameter on refund(); deriving it from the charge."
    t.step(repo.read("billing/refunds.py"))
    t.step(
        repo.edit(
            "billing/refunds.py",
            '    amount: Decimal | None = None,\n    currency: str = "BRL",\n',
            "    amount: Decimal | None = None,\n",
        ),
        text="Removing the parameter.",
    )
    t.step(
        repo.edit(
            "billing/refunds.py",
            "    if amount is not None:\n"
            '        payload["amount"] = {"value": _to_minor(amount, currency), ',
            "    if amount is not None:\n"
            "        currency = _charge_currency(charge_id)\n"
            '        payload["amount"] = {"value": _to_minor(amount, currency), ',
        )
    )
    t.step(
        repo.edit(
            "billing/refunds.py",
            "def _client() -> PaymentClient:\n    return default_client()\n",
            "def _client() -> PaymentClient:\n    return default_client()\n\n\n"
            "def _charge_currency(charge_id: str) -> str:\n"
            '    """v2 wants the currency with partial refunds; callers only give an amount."""\n'
            '    return Charge.from_v2(_client().get(f"/v2/payments/{charge_id}")).currency\n',
        ),
        text="And the lookup, with the model import it needs.",
    )
    t.step(
        repo.edit(
            "billing/refunds.py",
            "from billing.models import Refund",
            "from billing.models import Charge, Refund",
        )
    )
    t.step(repo.pytest("tests/billing/test_public_api.py", verbose=True, seconds=0.33))
    t.reply(
        "Fixed. `refund()` has its original signature again; for partial refunds it fetches the "
        "charge to get its currency (`_charge_currency`). The contract test passes. Sorry about "
        "that: I'll run the contract test after every module, as agreed."
    )
    progress.done.append(
        "refund() briefly gained a currency parameter (caught by test_public_api); reverted. "
        "Partial refunds now look the currency up from the charge (_charge_currency)."
    )
    progress.decisions.append(
        "Partial refunds derive the currency from the charge (one GET) rather than asking "
        "callers for it."
    )

    # Turn 11: retry.
    t.prompt("Check retry.py; v2 uses a different rate-limit header.")
    progress.current = "Honouring RateLimit-Reset in the client's retry."
    t.step(repo.read("billing/retry.py"))
    t.step(repo.grep("Retry-After", "."))
    t.step(
        repo.edit(
            "billing/client.py",
            'retry_after=response.headers.get("Retry-After"))',
            "retry_after=_retry_hint(response))",
        ),
        text="v2 sends `RateLimit-Reset`, and `Retry-After` only on 503.",
    )
    t.step(
        repo.edit(
            "billing/client.py",
            "def _error_from_response(response: httpx.Response) -> errors.BillingError:",
            "def _retry_hint(response: httpx.Response) -> str | None:\n"
            '    return response.headers.get("RateLimit-Reset") or response.headers.get('
            '"Retry-After")\n\n\n'
            "def _error_from_response(response: httpx.Response) -> errors.BillingError:",
        )
    )
    t.step(
        repo.edit(
            "tests/billing/test_client.py",
            'headers={"Retry-After": "2"}',
            'headers={"RateLimit-Reset": "2"}',
        )
    )
    t.step(
        _Call(
            "run_tests",
            {"path": "tests/billing/test_client.py"},
            "Command timed out after 2m 0.0s",
            is_error=True,
            seconds=120,
        ),
    )
    t.step(
        repo.read("tests/billing/conftest.py"),
        thinking=(
            "A timeout on an 11-test file that took 0.6s before. The fake patches "
            "billing.retry.sleep_before_retry, and the client calls retry.sleep_before_retry "
            "through the module, so the patch applies. Nothing in my edit sleeps. Possibly the "
            "runner itself; rerun once before digging."
        ),
        text="That file ran in 0.6s before; checking that sleeps are patched.",
    )
    t.step(repo.pytest("tests/billing/test_client.py", verbose=True, seconds=0.63))
    t.reply(
        "The client now honours `RateLimit-Reset` and falls back to `Retry-After`. The first test "
        "run hit the tool's 2-minute timeout; the sleeps are patched in conftest and the rerun "
        "took 0.6s, so that was the runner, not the code. test_client passes."
    )
    progress.done.append(
        "Retry honours RateLimit-Reset, then Retry-After (_retry_hint in client.py)."
    )

    # Turn 12: pagination.
    t.prompt("Pagination changed too, right? Handle the cursors.")
    progress.current = "Cursor pagination in the list functions."
    t.step(repo.grep("starting_after|has_more", "."))
    for module in ("api", "invoices", "refunds"):
        t.step(
            repo.edit(
                f"billing/{module}.py",
                '        if not page.get("has_more"):',
                '        if not page.get("next_cursor"):',
                replace_all=module == "api",
            ),
            text=f"`{module}.py`." if module != "api" else "Same loop in three modules.",
        )
        t.step(
            repo.edit(
                f"billing/{module}.py",
                '        params["starting_after"] = page["data"][-1]["id"]',
                '        params["cursor"] = page["next_cursor"]',
                replace_all=module == "api",
            )
        )
    listed = [op for op in _OPS if op.kind == "list"]
    t.step(
        repo.pytest(
            "tests",
            failures=[
                _Failure(
                    f"tests/billing/test_{op.module}.py::test_{op.name}_follows_pagination",
                    ("assert 2 == 4", " +  where 2 = len([...])"),
                    marker="assert len(result) == 4",
                )
                for op in listed
            ],
            seconds=4.02,
        )
    )
    for module in ("api", "invoices", "refunds"):
        t.step(
            repo.edit(
                f"tests/billing/test_{module}.py",
                '{**first, "has_more": True}',
                '{**first, "next_cursor": "cur_2"}',
                replace_all=module == "api",
            ),
            text="The pagination tests fake a second page the v1 way." if module == "api" else None,
        )
    t.step(repo.pytest("tests", verbose=True, coverage=True, seconds=4.11))
    t.reply(
        "Done: the list functions follow `next_cursor` instead of `starting_after`/`has_more`, "
        "and the pagination tests fake a second page with `next_cursor`. Whole suite green."
    )
    progress.done.append("Cursor pagination (cursor/next_cursor) in api, invoices and refunds.")

    # Turn 13: docs.
    t.prompt("Update the CHANGELOG and the configuration section of the README.")
    progress.current = "Documenting the migration."
    t.step(repo.read("CHANGELOG.md"), repo.read("README.md"))
    t.step(
        repo.edit(
            "CHANGELOG.md",
            "# Changelog\n",
            "# Changelog\n\n## 3.9.0 (unreleased)\n"
            "- Talk to PayProvider API v2 (`PAYPROVIDER_API=v2`, the default). No change to the "
            "public API of `billing`.\n"
            "- Webhooks: `PP-Signature` (HMAC-SHA512) and `payment.*` events.\n"
            "- Partial refunds look up the charge's currency.\n",
        )
    )
    t.step(
        repo.edit(
            "README.md",
            "| `BILLING_DEFAULT_CURRENCY` | defaults to BRL |\n",
            "| `BILLING_DEFAULT_CURRENCY` | defaults to BRL |\n"
            "| `PAYPROVIDER_API` | `v2` (default) or `v1` until 2027-09-30 |\n",
        )
    )
    t.reply("CHANGELOG has a 3.9.0 entry and the README documents `PAYPROVIDER_API`.")
    progress.done.append("CHANGELOG 3.9.0 entry; README documents PAYPROVIDER_API.")
    progress.next_steps = [
        "Check nothing still calls v1 (tests included).",
        "Accept both webhook signature schemes during the 30-day overlap.",
        "Full verbose test run; PR description.",
    ]

    # Turn 14: a sweep for leftovers (after the compaction, the agent re-reads files).
    t.prompt("Double-check that nothing still talks to v1, tests included.")
    progress.current = "Sweeping for v1 leftovers."
    t.step(repo.grep(r"/v1/|from_v1|Payprovider-|v1=", "."))
    t.step(
        repo.read("billing/client.py"),
        thinking=(
            "The summary says the client was moved to v2, but I no longer have its contents "
            "and grep only shows lines. Re-reading client.py to check the base URL and the "
            "headers before touching the tests."
        ),
        text="Re-reading the client to be sure about the headers.",
    )
    t.step(
        repo.edit(
            "tests/billing/test_client.py", '"/v1/charges', '"/v2/payments', replace_all=True
        ),
        text="The client tests still use v1 paths; cosmetic, but worth aligning.",
    )
    t.step(
        repo.read("billing/api.py"),
        text="The docstrings still name v1 endpoints. Re-reading api.py before editing it.",
    )
    t.step(repo.edit("billing/api.py", " /v1/charges", " /v2/payments", replace_all=True))
    t.step(repo.edit("billing/api.py", " /v1/customers", " /v2/customers", replace_all=True))
    t.step(repo.read("billing/invoices.py"), repo.read("billing/refunds.py"))
    t.step(repo.edit("billing/invoices.py", " /v1/invoices", " /v2/invoices", replace_all=True))
    t.step(repo.edit("billing/refunds.py", " /v1/refunds", " /v2/refunds", replace_all=True))
    t.step(repo.pytest("tests", seconds=4.2))
    t.reply(
        "Nothing calls v1 any more. I aligned the client tests' paths and the `Provider call` "
        "lines in the docstrings with v2. What's left is intentional: the `from_v1` parsers in "
        "`billing/models.py`, kept until the switch-off. Whole suite green."
    )
    progress.done.append("Swept for v1 leftovers; only the from_v1 parsers remain, on purpose.")

    # Turn 15: both signature schemes during the overlap.
    t.prompt(
        "The notes say the provider sends both v1 and v2 webhooks for 30 days. Do we handle that?"
    )
    progress.current = "Accepting both webhook signature schemes during the overlap."
    t.step(repo.read("docs/migration-v2.md"), text="Checking the rollout section again.")
    t.step(repo.read("billing/webhooks.py"), text="We don't; re-reading webhooks.py.")
    t.step(
        repo.edit(
            "billing/webhooks.py",
            '    timestamp, signature = parts.get("t"), parts.get("v2")\n',
            '    timestamp = parts.get("t")\n'
            "    # The provider signs with both schemes for 30 days after the switch.\n"
            '    scheme, signature = ("v2", parts["v2"]) if "v2" in parts else ("v1", '
            'parts.get("v1"))\n',
        )
    )
    t.step(
        repo.edit(
            "billing/webhooks.py",
            "    expected = hmac.new(secret.encode(), signed, hashlib.sha512).hexdigest()\n",
            '    digest = hashlib.sha512 if scheme == "v2" else hashlib.sha256\n'
            "    expected = hmac.new(secret.encode(), signed, digest).hexdigest()\n",
        )
    )
    t.step(
        repo.edit(
            "billing/webhooks.py",
            '    handler = HANDLERS.get(event["type"])',
            '    handler = HANDLERS.get(_V1_EVENTS.get(event["type"], event["type"]))',
        ),
        text="v1 event names need mapping too.",
    )
    t.step(
        repo.edit(
            "billing/webhooks.py",
            "HANDLERS: dict[",
            "_V1_EVENTS = {\n"
            + "\n".join(f'    "{old}": "{new}",' for old, new in renamed)
            + "\n}\n\nHANDLERS: dict[",
        )
    )
    t.step(repo.pytest("tests/billing/test_webhooks.py", seconds=0.5))
    t.reply(
        "Now we do: `verify_signature` accepts `v2=` (HMAC-SHA512) or `v1=` (HMAC-SHA256), and "
        "v1 event names map to their v2 handlers. Webhook tests pass. After 2027-09-30 both "
        "fallbacks can go with the `from_v1` parsers."
    )
    progress.done.append("Webhooks accept v1 and v2 signatures and event names during the overlap.")

    # Turn 16: last run and the PR.
    t.prompt("Run everything once more, verbose, and check the contract test is green.")
    t.step(repo.pytest("tests", verbose=True, seconds=4.4))
    t.reply(
        f"All {len(repo.collect('tests'))} tests pass, including all "
        f"{len(_OPS) + 1} cases of "
        "`tests/billing/test_public_api.py`: no public name or signature changed."
    )
    t.prompt("Write the PR description.")
    t.reply(
        "**Move billing to PayProvider API v2**\n\n"
        "No change to the public API of `billing`: every name and signature in `__all__` is "
        "as before (`tests/billing/test_public_api.py` untouched and green).\n\n"
        "What changed inside:\n"
        "- `client.py`: `PP-Api-Version: 2026-09-01`, `PP-Idempotency-Key`, v2 error bodies "
        "(v1 still parsed), `RateLimit-Reset`.\n"
        "- `models.py`: `from_v2` on every model; `from_v1` kept until the v1 switch-off.\n"
        "- `api.py`, `invoices.py`, `refunds.py`: `/v2/` paths, amount objects, upper-case "
        "currencies, cursor pagination. Partial refunds look the currency up from the charge.\n"
        "- `webhooks.py`: `PP-Signature` (HMAC-SHA512) and `payment.*` events; v1 signatures and "
        "event names accepted during the 30-day overlap.\n"
        "- `PAYPROVIDER_API` setting, README and CHANGELOG (3.9.0).\n\n"
        f"Tests: {len(repo.collect('tests'))} passed. Path and payload expectations were "
        "updated; fixtures are v2 objects."
    )
    return t.example()


# --------------------------------------------------------------------------------------------
# Session 2: a Portuguese support chat whose second summary loses the customer's constraint
# --------------------------------------------------------------------------------------------

_FIRST_NAMES = ("Mariana", "Juliana", "Camila", "Fernanda", "Patrícia", "Luciana")
_LAST_NAMES = ("Albuquerque", "Nogueira", "Figueiredo", "Cavalcanti", "Sampaio", "Brandão")
_PRODUCTS = (
    ("CAF-ITA-300", "Cafeteira italiana 300 ml", "189.90"),
    ("TAC-CRI-4", "Kit 4 taças de cristal", "149.90"),
    ("MOE-CAF-MAN", "Moedor de café manual", "229.00"),
    ("PAN-ANT-5", "Jogo de panelas antiaderente 5 peças", "599.90"),
    ("LUM-MES-ART", "Luminária de mesa articulada", "159.90"),
    ("GAR-TER-1L", "Garrafa térmica 1 L", "119.90"),
    ("TOA-ALG-4", "Conjunto de toalhas de algodão 4 peças", "139.90"),
    ("TAP-SIS-150", "Tapete de sisal 1,5 x 2 m", "389.00"),
    ("FON-BT-200", "Fone de ouvido Bluetooth", "279.90"),
    ("JAR-VID-15", "Jarra de vidro 1,5 L", "59.90"),
    ("FAQ-INX-24", "Faqueiro inox 24 peças", "249.90"),
    ("APA-JAN-20", "Aparelho de jantar 20 peças", "459.90"),
    ("CHA-ELE-17", "Chaleira elétrica 1,7 L", "199.90"),
    ("PAN-PRE-45", "Panela de pressão 4,5 L", "289.90"),
    ("POT-HER-10", "Kit potes herméticos 10 peças", "99.90"),
    ("TRA-PLU", "Travesseiro de plumas", "179.90"),
    ("EDR-QUE", "Edredom queen 200 fios", "329.90"),
    ("FIL-BAR", "Filtro de barro 4 velas", "219.90"),
)
_STATUSES = ("entregue", "entregue", "entregue", "entregue", "cancelado", "devolvido")
_CITY = ("São Paulo", "SP")

_KB: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "KB-101": (
        "Atraso na entrega: como tratar",
        (
            (
                "Quando é atraso",
                "Consideramos atraso quando a data prevista informada na confirmação do pedido "
                "(e na página Meus pedidos) passou e o status não mudou para Entregue. O prazo é "
                "contado em dias úteis a partir da aprovação do pagamento, não da data da compra. "
                "Pagamentos aprovados depois das 14h contam a partir do dia útil seguinte. "
                "Feriados estaduais e municipais da cidade de destino também são descontados.",
            ),
            (
                "Primeiros passos",
                "1. Confirme a identidade do cliente (CPF ou número do pedido, mais o e-mail do "
                "cadastro). 2. Consulte o rastreio pelo código do pedido. 3. Se o objeto está "
                "parado há mais de 3 dias úteis no mesmo centro de distribuição, abra um chamado "
                "do tipo atraso_transportadora; o SLA de resposta da transportadora é de 48 horas "
                "úteis. 4. Informe ao cliente o protocolo e o prazo de retorno. Não prometa data "
                "de entrega que a transportadora não confirmou.",
            ),
            (
                "Compensações",
                "Atrasos acima de 5 dias úteis dão direito a um cupom de frete grátis na próxima "
                "compra, gerado ao fechar o chamado. Atrasos acima de 15 dias úteis, ou objeto "
                "sem movimentação por 10 dias úteis, permitem oferecer reenvio ou cancelamento "
                "com reembolso integral, à escolha do cliente. Clientes do segmento ouro podem "
                "receber o cupom a partir de 3 dias úteis de atraso.",
            ),
            (
                "Ocorrências conhecidas",
                "Cajamar/SP: volume acima do normal desde a campanha de outubro; a RápidoLog "
                "informou normalização em até 5 dias úteis e prioriza chamados abertos com "
                "prioridade alta. Contagem/MG: greve parcial encerrada em 24/10, fila "
                "remanescente de cerca de 2 dias. Recife/PE: sem ocorrências.",
            ),
        ),
    ),
    "KB-117": (
        "Cobrança em duplicidade no cartão de crédito",
        (
            (
                "Pré-autorização ou cobrança?",
                "Na aprovação do pedido o emissor faz uma pré-autorização, que aparece no "
                "aplicativo do banco como compra pendente. Se o pagamento for reprocessado (por "
                "exemplo, depois de um tempo esgotado no gateway), pode surgir uma segunda "
                "pré-autorização, que cai sozinha em até 7 dias. Só há duplicidade quando as duas "
                "transações estão capturadas: no sistema de pagamentos, status capturada e NSUs "
                "diferentes para o mesmo pedido.",
            ),
            (
                "Como verificar",
                "Consulte os pagamentos do pedido. Se houver duas transações capturadas, consulte "
                "cada NSU no gateway para confirmar o valor e a data de captura. Pergunte ao "
                "cliente se as duas aparecem como confirmadas (não pendentes) no aplicativo do "
                "banco. Não peça foto da fatura nem número completo do cartão.",
            ),
            (
                "O que fazer",
                "Confirmada a duplicidade, solicite o estorno da transação mais recente pelo "
                "sistema de pagamentos, informando o NSU. O estorno é sempre no mesmo meio de "
                "pagamento; nunca ofereça depósito em conta ou Pix como alternativa. Registre "
                "nota no cadastro com o protocolo.",
            ),
        ),
    ),
    "KB-118": (
        "Prazos de estorno por forma de pagamento",
        (
            (
                "Cartão de crédito",
                "O estorno é enviado ao emissor em até 2 dias úteis. Dependendo da data de "
                "fechamento, o crédito aparece na fatura atual ou na seguinte (até 2 faturas). "
                "Parcelamentos são estornados parcela por parcela, na mesma quantidade.",
            ),
            (
                "Pix e boleto",
                "Pix: devolução para a mesma chave de origem em até 5 dias úteis. Boleto: "
                "crédito na conta bancária indicada pelo cliente em até 10 dias úteis, depois de "
                "validada a titularidade (o CPF da conta deve ser o do titular do pedido).",
            ),
            (
                "Vale-presente e saldo",
                "Valores pagos com vale-presente voltam como saldo na conta do cliente na hora. "
                "Saldo não pode ser convertido em dinheiro.",
            ),
        ),
    ),
    "KB-140": (
        "Atualização de endereço e dados cadastrais",
        (
            (
                "O que o atendimento pode alterar",
                "Endereços de entrega, telefone e preferências de contato podem ser alterados no "
                "chat depois da confirmação de identidade. Nome e CPF só mudam com documento, "
                "pelo formulário de correção cadastral. O e-mail de login só pode ser alterado "
                "pelo próprio cliente, no aplicativo.",
            ),
            (
                "Pedidos em andamento",
                "A alteração vale para pedidos novos. Pedidos já despachados seguem para o "
                "endereço original; para redirecionar, abra chamado com a transportadora (taxa "
                "pode ser cobrada).",
            ),
            (
                "Como validar o CEP",
                "Consulte o CEP antes de gravar e confirme com o cliente logradouro, bairro e "
                "cidade retornados. Complemento e número são digitados pelo cliente.",
            ),
        ),
    ),
    "KB-152": (
        "Clube do Café: pausa, cancelamento e multa",
        (
            (
                "Pausa",
                "O assinante pode pausar até 2 meses por ano sem custo. A pausa vale a partir do "
                "próximo ciclo de cobrança.",
            ),
            (
                "Cancelamento",
                "O cancelamento pode ser feito no chat depois da confirmação de identidade. A "
                "remessa do ciclo atual, se já faturada, é enviada normalmente. O cancelamento "
                "vale a partir do ciclo seguinte.",
            ),
            (
                "Multa",
                "Planos com fidelidade de 12 meses cobram multa de 30% das mensalidades "
                "restantes quando cancelados antes de completar a fidelidade. Depois de 12 "
                "meses, o cancelamento é sem multa. Planos mensais não têm multa.",
            ),
        ),
    ),
    "KB-163": (
        "Pedido consta como entregue, mas o cliente não recebeu",
        (
            (
                "Verificação",
                "Confira no rastreio o nome e o documento de quem recebeu, o horário e a "
                "geolocalização da baixa. Pergunte se alguém da casa, portaria ou vizinho pode "
                "ter recebido. Muitos casos se resolvem em 24 horas.",
            ),
            (
                "Chamado de extravio",
                "Se o cliente confirma que não recebeu, abra chamado do tipo extravio com a "
                "transportadora. A investigação leva até 5 dias úteis. Concluída a investigação "
                "sem localizar o objeto, ofereça reenvio sem custo ou reembolso integral.",
            ),
            (
                "Atenção a golpes",
                "Mensagens de SMS com links para pagar taxa de reentrega não são enviadas pela "
                "Casa Aurora. Oriente o cliente a não clicar.",
            ),
        ),
    ),
    "KB-171": (
        "Segunda via de nota fiscal (DANFE)",
        (
            (
                "Como emitir",
                "Emita a segunda via pelo sistema fiscal informando o número do pedido. O DANFE "
                "traz nome, CPF e endereço do destinatário.",
            ),
            (
                "Como entregar ao cliente",
                "Por padrão, envie o PDF ao e-mail do cadastro. Alternativa: gere um link "
                "temporário (validade de 24 horas) e envie no próprio chat. Respeite a "
                "preferência de canal registrada pelo cliente.",
            ),
        ),
    ),
    "KB-190": (
        "Proteção de dados no atendimento (LGPD)",
        (
            (
                "Canais",
                "Use apenas o canal que o cliente autorizou para enviar documentos com dados "
                "pessoais. Quando o cliente pede para não receber dados por um canal, registre "
                "nota no cadastro e siga a preferência em todo o atendimento.",
            ),
            (
                "Incidente",
                "Se dados pessoais forem enviados por canal não autorizado, abra chamado do tipo "
                "incidente_privacidade com prioridade alta, informe o cliente com transparência "
                "e não tente recuperar a mensagem por conta própria. O encarregado de dados "
                "(DPO) avalia a comunicação à ANPD.",
            ),
        ),
    ),
}


_KB_GENERAL: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "KB-001": (
        "Padrões de atendimento Casa Aurora",
        (
            (
                "Tom e linguagem",
                "Trate o cliente pelo primeiro nome, em português claro, sem jargão interno "
                "(não diga SLA, CD, NSU ou captura sem explicar). Frases curtas. Uma pergunta "
                "por mensagem. Se o cliente estiver irritado, reconheça o problema antes de "
                "explicar o procedimento, sem se desculpar em excesso. Nunca culpe a "
                "transportadora, o banco ou outro setor: diga o que você vai fazer. Evite "
                "promessas com data quando a data não depende de nós; ofereça o prazo do "
                "procedimento e diga quando o cliente terá notícias.",
            ),
            (
                "Identificação",
                "Antes de mostrar qualquer dado de pedido, confirme a identidade com CPF ou "
                "número do pedido mais um segundo fator (e-mail do cadastro ou data de "
                "nascimento). Não leia de volta o CPF completo nem o e-mail completo; use as "
                "formas mascaradas (123.***.***-09, m***@example.com) ao confirmar. Dados de "
                "cartão: só bandeira e últimos quatro dígitos. Nunca peça senha, código de "
                "segurança, foto de documento ou foto da fatura do cartão pelo chat.",
            ),
            (
                "Registro",
                "Cada atendimento termina com nota no cadastro: o que foi pedido, o que foi "
                "feito, protocolos abertos e preferências declaradas pelo cliente. Preferências "
                "de canal, horário e forma de contato valem para toda a conversa e para "
                "atendimentos futuros, e precisam estar em nota antes do fim da conversa. "
                "Notas não devem conter dados de cartão nem senhas; CPF só quando necessário "
                "para o procedimento.",
            ),
            (
                "Encerramento",
                "Antes de encerrar, resuma os protocolos e prazos em uma mensagem, pergunte se "
                "há mais alguma coisa e informe que o cliente receberá a pesquisa de "
                "satisfação, se tiver dado consentimento. Conversas inativas por 30 minutos "
                "são encerradas automaticamente com o resumo enviado no próprio chat.",
            ),
            (
                "Quando transferir para humano",
                "Transfira para a fila humana quando o cliente pedir, quando houver ameaça "
                "jurídica, suspeita de fraude na conta, pedido de exclusão de dados (LGPD) ou "
                "incidente de privacidade, e quando o mesmo problema já teve dois chamados sem "
                "solução. Ao transferir, deixe nota com o resumo para o cliente não repetir a "
                "história.",
            ),
        ),
    ),
    "KB-105": (
        "Política de frete e prazos de entrega",
        (
            (
                "Modalidades",
                "Normal: 3 a 9 dias úteis nas capitais do Sul e Sudeste, 5 a 14 dias úteis nas "
                "demais regiões. Expressa: 1 a 3 dias úteis nas capitais do Sul e Sudeste, "
                "disponível para itens até 30 kg. Retirada na loja: a partir de 2 horas depois "
                "da aprovação do pagamento nas lojas com estoque. Produtos grandes (móveis, "
                "tapetes acima de 2 m) seguem por transportadora dedicada com agendamento.",
            ),
            (
                "Frete grátis",
                "Compras acima de R$ 299,00 têm frete normal grátis para todo o Brasil, exceto "
                "áreas de risco e localidades atendidas apenas por balsa. Cupons de frete grátis "
                "gerados por atraso valem por 90 dias, para uma compra, em qualquer valor. "
                "Clientes do segmento ouro têm frete expresso com 50% de desconto.",
            ),
            (
                "Transportadoras",
                "RápidoLog (Sudeste e Sul, centros em Barueri e Cajamar), Loggi Express "
                "(capitais), Correios (demais localidades e áreas de difícil acesso). A "
                "transportadora é escolhida pelo sistema no despacho e não pode ser trocada "
                "depois. Redirecionamento para outro endereço custa R$ 19,90 e depende de "
                "aceite da transportadora.",
            ),
            (
                "Áreas de risco",
                "Em áreas classificadas como de risco pelas transportadoras, a entrega pode ser "
                "feita em ponto de retirada próximo, com aviso por SMS e no aplicativo. O "
                "cliente tem 7 dias corridos para retirar; depois disso o objeto volta e o "
                "pedido é cancelado com reembolso.",
            ),
        ),
    ),
    "KB-120": (
        "Trocas e devoluções",
        (
            (
                "Arrependimento",
                "O cliente pode desistir da compra em até 7 dias corridos do recebimento, sem "
                "justificativa, com reembolso integral, inclusive do frete. O produto deve "
                "voltar com todos os acessórios; a embalagem original não é obrigatória. A "
                "coleta é agendada pelo atendimento ou o cliente pode postar numa agência com "
                "o código de postagem enviado no chat ou no aplicativo.",
            ),
            (
                "Defeito",
                "Produtos com defeito podem ser trocados em até 30 dias (não duráveis) ou 90 "
                "dias (duráveis) do recebimento. Depois disso, o atendimento é feito pela "
                "assistência técnica do fabricante durante a garantia. Peça fotos do defeito "
                "apenas quando o produto não for coletado para análise.",
            ),
            (
                "Avaria no transporte",
                "Se o produto chegou quebrado ou amassado, o cliente deve recusar a entrega "
                "quando possível. Se já recebeu, registre em até 7 dias com fotos da embalagem "
                "e do produto; o reenvio é feito sem nova coleta para itens abaixo de R$ 200,00.",
            ),
            (
                "Reembolso",
                "O reembolso segue a forma de pagamento original, com os prazos da KB-118. "
                "Vale-presente só é oferecido quando o cliente pede; nunca como única opção.",
            ),
        ),
    ),
    "KB-130": (
        "Segmento ouro: benefícios e critérios",
        (
            (
                "Critérios",
                "Cliente com mais de R$ 3.000,00 em compras nos últimos 12 meses ou mais de 10 "
                "pedidos entregues no mesmo período. A classificação é revista todo dia 1 e "
                "aparece no cadastro (campo segmento).",
            ),
            (
                "Benefícios",
                "Cupom de frete grátis a partir de 3 dias úteis de atraso; prioridade alta "
                "automática em chamados de logística; frete expresso com 50% de desconto; "
                "atendimento humano sem fila das 8h às 22h; troca com coleta no mesmo dia nas "
                "capitais do Sudeste.",
            ),
            (
                "Como comunicar",
                "Mencione o benefício quando ele se aplicar ao problema do cliente, sem "
                "transformar o atendimento em oferta. Não diga ao cliente que ele pode perder o "
                "segmento.",
            ),
        ),
    ),
    "KB-165": (
        "Golpes comuns e como orientar o cliente",
        (
            (
                "SMS e WhatsApp de taxa de entrega",
                "Mensagens que pedem pagamento de taxa para liberar ou reagendar entrega são "
                "golpe. A Casa Aurora e as transportadoras parceiras não cobram taxa por "
                "mensagem. Oriente o cliente a não clicar, não pagar e apagar a mensagem. Se "
                "já pagou, oriente a contestar com o banco e registre nota.",
            ),
            (
                "E-mail falso de segunda via",
                "Golpistas enviam e-mails com boleto ou nota fiscal falsos imitando a loja. "
                "Por isso alguns clientes pedem para não receber documentos por e-mail; essa "
                "preferência deve ser registrada em nota e respeitada em toda a conversa. "
                "Documentos podem ser entregues por link temporário no chat.",
            ),
            (
                "Falso atendente",
                "O atendimento nunca liga pedindo código recebido por SMS, senha ou dados do "
                "cartão. Se o cliente relatar ligação assim, registre nota e abra chamado do "
                "tipo seguranca_conta.",
            ),
        ),
    ),
}


_PAST_CHATS = (
    (
        "Troca por defeito (cafeteira elétrica)",
        (
            ("cliente", "Oi, a cafeteira elétrica parou de esquentar depois de duas semanas."),
            ("atendente", "Oi, {first}! Sinto muito. Consegue me dizer se a luz do painel acende?"),
            ("cliente", "Acende, mas a água sai fria."),
            ("atendente", "Está no prazo de troca por defeito; vou agendar a coleta."),
            ("cliente", "Pode ser na quinta de manhã?"),
            ("atendente", "Agendado para quinta, das 8h às 12h. A nova sai após a coleta."),
            ("cliente", "Perfeito, obrigada!"),
            ("atendente", "Eu que agradeço. Protocolo registrado e nota no seu cadastro."),
        ),
    ),
    (
        "Cupom não aplicado no carrinho",
        (
            ("cliente", "O cupom AURORA10 não entrou na minha compra de ontem."),
            ("atendente", "Oi, {first}! O cupom vale acima de R$ 200,00 em utilidades."),
            ("cliente", "A compra foi de R$ 259,00, todas as peças eram de cozinha."),
            ("atendente", "Verifiquei: houve uma falha na aplicação. Vou estornar a diferença."),
            ("cliente", "Vai no cartão mesmo?"),
            ("atendente", "Sim, no mesmo cartão, R$ 25,90, em até 2 faturas."),
            ("cliente", "Ok, obrigada."),
        ),
    ),
    (
        "Produto com avaria na entrega",
        (
            ("cliente", "Chegou uma das taças quebrada, a caixa estava amassada."),
            ("atendente", "Que chato, {first}. Pode me mandar uma foto da caixa e da taça?"),
            ("cliente", "Mandei agora."),
            ("atendente", "Recebi. Como o item é abaixo de R$ 200,00, o reenvio sai sem coleta."),
            ("cliente", "Ótimo. Demora quanto?"),
            ("atendente", "Chega em até 5 dias úteis. Vou deixar anotado no seu cadastro."),
        ),
    ),
)


def _fake_cpf(rng: random.Random) -> str:
    while True:
        base = "".join(str(rng.randint(0, 9)) for _ in range(9))
        if len(set(base)) > 1:
            break
    digits = base + cpf_check_digits(base)
    return f"{digits[:3]}.{digits[3:6]}.{digits[6:9]}-{digits[9:]}"


def _fake_cnpj(rng: random.Random) -> str:
    digits = [rng.randint(0, 9) for _ in range(8)] + [0, 0, 0, 1]
    for weights in ((5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2), (6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2)):
        remainder = sum(d * w for d, w in zip(digits, weights, strict=True)) % 11
        digits.append(0 if remainder < 2 else 11 - remainder)
    text = "".join(map(str, digits))
    return f"{text[:2]}.{text[2:5]}.{text[5:8]}/{text[8:12]}-{text[12:]}"


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()


def _pt_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def _money(value: float) -> str:
    return f"{value:.2f}"


class _Store:
    """The support back office the triage agent's tools read and write."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        first, middle, last = rng.choice(_FIRST_NAMES), *rng.sample(_LAST_NAMES, 2)
        self.first_name = first
        self.name = f"{first} {middle} {last}"
        self.card_name = f"{_ascii(first)[0]} {_ascii(last)}".upper()
        self.cpf = _fake_cpf(rng)
        self.email = f"{_ascii(first)}.{_ascii(last)}{rng.randint(10, 99)}@example.com"
        self.customer_id = f"cli_{rng.randint(10_000, 99_999)}"
        self.cnpj = _fake_cnpj(rng)
        self.address = {
            "logradouro": "Rua das Acácias",
            "numero": "145",
            "complemento": "apto 32",
            "bairro": "Vila Mariana",
            "cidade": _CITY[0],
            "uf": _CITY[1],
            "cep": "04117-040",
        }
        self.orders = [self._order(i) for i in range(22)]
        late = self.orders[0]
        late["status"] = "em_transporte"
        late["itens"] = [
            {
                "sku": "CAF-ITA-300",
                "descricao": "Cafeteira italiana 300 ml",
                "quantidade": 1,
                "preco_unitario": "189.90",
            },
            {
                "sku": "TAC-CRI-4",
                "descricao": "Kit 4 taças de cristal",
                "quantidade": 1,
                "preco_unitario": "149.90",
            },
        ]
        late["pagamento"]["valor_total"] = "339.80"
        late["data"] = "2026-10-20T14:32:10-03:00"
        late["entrega"]["prazo"] = "2026-10-29"
        self.late = late
        self.protocols = 0
        self.nsus: list[str] = []

    def _order(self, index: int) -> dict[str, Any]:
        rng = self.rng
        items: list[dict[str, Any]] = []
        for product in rng.sample(_PRODUCTS, rng.randint(1, 3)):
            items.append(
                {
                    "sku": product[0],
                    "descricao": product[1],
                    "quantidade": rng.choice((1, 1, 1, 2)),
                    "preco_unitario": product[2],
                }
            )
        total = sum(float(i["preco_unitario"]) * i["quantidade"] for i in items)
        month = 10 - index // 3
        day = rng.randint(1, 28)
        number = f"CA-2026-{rng.randint(100_000, 999_999)}"
        created = f"2026-{month:02d}-{day:02d}"
        return {
            "pedido": number,
            "data": f"{created}T{rng.randint(8, 22):02d}:{rng.randint(0, 59):02d}:00-03:00",
            "status": rng.choice(_STATUSES),
            "itens": items,
            "pagamento": {
                "forma": rng.choice(("cartao_credito", "cartao_credito", "pix", "boleto")),
                "bandeira": "visa",
                "final_cartao": "4821",
                "parcelas": rng.choice((1, 1, 2, 3)),
                "valor_total": _money(total),
            },
            "entrega": {
                "transportadora": rng.choice(("RápidoLog", "Loggi Express", "Correios")),
                "codigo_rastreio": f"RL{rng.randint(100_000_000, 999_999_999)}BR",
                "prazo": f"2026-{month:02d}-{min(28, day + 7):02d}",
                "endereco": dict(self.address),
            },
            "nota_fiscal": {"numero": f"000{rng.randint(100_000, 199_999)}", "serie": "1"},
            "garantia_ate": f"{2026 + (month + 3) // 12}-{(month + 2) % 12 + 1:02d}-{day:02d}",
            "avaliacao": rng.choice((None, 4, 5, 5)),
        }

    def protocol(self) -> str:
        self.protocols += 1
        return f"AT-2026-{1103_0000 + self.rng.randint(1000, 9999)}{self.protocols}"

    def call(self, name: str, arguments: dict[str, Any], result: Any, **kwargs: Any) -> _Call:
        text = result if isinstance(result, str) else _pt_json(result)
        return _Call(name, arguments, text, seconds=self.rng.uniform(0.4, 2.2), **kwargs)

    # -- tools ---------------------------------------------------------------------------

    def find_customer(self, arguments: dict[str, Any]) -> _Call:
        rng = self.rng
        history = [
            {
                "protocolo": f"AT-{2024 + i // 4}-{rng.randint(1_000_000, 9_999_999)}",
                "data": f"{2024 + i // 4}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                "canal": rng.choice(("chat", "chat", "telefone", "e-mail")),
                "assunto": rng.choice(
                    (
                        "Dúvida sobre prazo de entrega",
                        "Troca por defeito (cafeteira elétrica)",
                        "Alteração de forma de pagamento",
                        "Cupom não aplicado no carrinho",
                        "Produto com avaria na entrega",
                        "Cancelamento antes do despacho",
                    )
                ),
                "status": "resolvido",
                "nota_satisfacao": rng.choice((4, 5, 5, 5, 3)),
                "resumo": rng.choice(
                    (
                        "Cliente informada do prazo; pedido entregue no dia seguinte.",
                        "Coleta agendada e troca enviada; cliente confirmou o recebimento.",
                        "Cupom reaplicado manualmente; diferença estornada no cartão.",
                        "Avaria confirmada por fotos; reenvio sem custo.",
                        "Pedido cancelado antes do despacho; estorno em 1 fatura.",
                        "Cliente pediu para ser chamada pelo primeiro nome.",
                    )
                ),
            }
            for i in range(16)
        ]
        return self.call(
            "buscar_cliente",
            arguments,
            {
                "cliente_id": self.customer_id,
                "nome": self.name,
                "cpf": self.cpf,
                "email": self.email,
                "cliente_desde": "2019-03-14",
                "segmento": "ouro",
                "enderecos": [
                    {"tipo": "principal", **self.address},
                    {
                        "tipo": "trabalho",
                        "logradouro": "Avenida Paulista",
                        "numero": "1578",
                        "complemento": "andar 12",
                        "bairro": "Bela Vista",
                        "cidade": "São Paulo",
                        "uf": "SP",
                        "cep": "01310-200",
                    },
                ],
                "preferencias": {"canal_contato": "chat", "newsletter": False, "sms": True},
                "consentimentos": [
                    {"finalidade": "marketing_email", "concedido": False, "em": "2023-06-02"},
                    {"finalidade": "pesquisa_satisfacao", "concedido": True, "em": "2021-01-18"},
                ],
                "atendimentos_anteriores": history,
                "assinaturas": ["clube_do_cafe"],
                "observacoes": [],
            },
        )

    def past_chats(self) -> _Call:
        rng = self.rng
        chats = []
        for subject, lines in _PAST_CHATS:
            chats.append(
                {
                    "protocolo": f"AT-2025-{rng.randint(1_000_000, 9_999_999)}",
                    "data": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                    "assunto": subject,
                    "mensagens": [
                        {"de": who, "texto": text.replace("{first}", self.first_name)}
                        for who, text in lines
                    ],
                }
            )
        return self.call(
            "consultar_atendimentos",
            {"cliente_id": self.customer_id, "limite": 3},
            {"cliente_id": self.customer_id, "atendimentos": chats},
        )

    def list_orders(self) -> _Call:
        return self.call(
            "listar_pedidos",
            {"cliente_id": self.customer_id, "desde": "2026-01-01"},
            {"cliente_id": self.customer_id, "total": len(self.orders), "pedidos": self.orders},
        )

    def order(self, *, delivered: bool = False) -> _Call:
        late = self.late
        history = [
            ("2026-10-20T14:32:10-03:00", "pedido_criado"),
            ("2026-10-20T14:33:02-03:00", "pagamento_aprovado"),
            ("2026-10-21T09:12:44-03:00", "separacao_iniciada"),
            ("2026-10-21T16:40:19-03:00", "nota_fiscal_emitida"),
            ("2026-10-22T08:05:51-03:00", "despachado"),
        ]
        if delivered:
            history.append(("2026-11-03T13:58:00-03:00", "entregue"))
        specs = {
            "CAF-ITA-300": {
                "material": "alumínio fundido",
                "capacidade": "300 ml (6 xícaras)",
                "fogao": "gás, elétrico e vitrocerâmico (não indução)",
                "garantia": "12 meses contra defeitos de fabricação",
                "dimensoes_cm": {"altura": 21, "largura": 13, "profundidade": 10},
                "peso_kg": 0.62,
                "cuidados": "Não lavar na lava-louças; secar antes de guardar.",
            },
            "TAC-CRI-4": {
                "material": "cristal sonoro sem chumbo",
                "capacidade": "450 ml cada",
                "garantia": "90 dias",
                "dimensoes_cm": {"altura": 23, "diametro": 9},
                "peso_kg": 1.4,
                "cuidados": "Lava-louças no ciclo delicado; evitar choque térmico.",
                "embalagem": "caixa com berço de papelão moldado, selo de frágil",
            },
        }
        items = [{**item, "ficha_tecnica": specs.get(item["sku"], {})} for item in late["itens"]]
        return self.call(
            "consultar_pedido",
            {"pedido": late["pedido"]},
            {
                **late,
                "itens": items,
                "status": "entregue" if delivered else late["status"],
                "cliente_id": self.customer_id,
                "historico": [{"em": at, "evento": what} for at, what in history],
                "nota_fiscal": {"numero": "000184233", "serie": "1", "emitida_em": history[3][0]},
                "frete": {"valor": "0.00", "modalidade": "normal", "cupom": "FRETEGRATIS"},
                "canal_venda": "app_android",
            },
        )

    def tracking(self, *, delivered: bool = False, fails: bool = False) -> _Call:
        code = self.late["entrega"]["codigo_rastreio"]
        if fails:
            return self.call(
                "rastrear_entrega",
                {"codigo": code},
                "Erro 503: serviço de rastreio da transportadora indisponível. Tente novamente "
                "em alguns instantes.",
                is_error=True,
            )
        events = [
            ("2026-10-22T08:05", "Barueri/SP", "Objeto postado"),
            ("2026-10-22T19:41", "Barueri/SP", "Objeto em trânsito para o centro de distribuição"),
            ("2026-10-23T06:12", "Cajamar/SP", "Objeto recebido no centro de distribuição"),
            ("2026-10-23T06:40", "Cajamar/SP", "Objeto em triagem"),
            ("2026-10-24T22:03", "Cajamar/SP", "Objeto aguardando transferência"),
            ("2026-10-27T05:55", "Cajamar/SP", "Objeto aguardando transferência (reprogramado)"),
        ]
        if delivered:
            events += [
                ("2026-11-03T06:21", "Cajamar/SP", "Objeto em trânsito para a unidade de entrega"),
                ("2026-11-03T09:47", "São Paulo/SP", "Objeto saiu para entrega ao destinatário"),
                ("2026-11-03T13:58", "São Paulo/SP", "Objeto entregue ao destinatário"),
            ]
        result: dict[str, Any] = {
            "codigo": code,
            "transportadora": self.late["entrega"]["transportadora"],
            "situacao": "entregue" if delivered else "em_transito",
            "previsao_original": "2026-10-29",
            "eventos": [
                {"data": at, "local": where, "descricao": what} for at, where, what in events
            ],
        }
        if delivered:
            result["recebedor"] = {
                "nome": "Portaria",
                "documento": "nao_informado",
                "geolocalizacao": {"lat": -23.5893, "lon": -46.6345, "precisao_m": 180},
            }
        return self.call("rastrear_entrega", {"codigo": code}, result)

    def knowledge(self, query: str, *articles: str) -> _Call:
        library = {**_KB, **_KB_GENERAL}
        related = [a for a in library if a not in articles]
        articles = (*articles, *self.rng.sample(related, 7 - len(articles)))
        results = [
            {
                "id": article,
                "titulo": library[article][0],
                "atualizado_em": (
                    f"2026-{self.rng.randint(6, 10):02d}-{self.rng.randint(1, 28):02d}"
                ),
                "relevancia": round(0.93 - 0.11 * rank - self.rng.random() * 0.04, 2),
                "conteudo": "\n\n".join(
                    f"## {title}\n{text}" for title, text in library[article][1]
                ),
            }
            for rank, article in enumerate(articles)
        ]
        return self.call(
            "consultar_base_conhecimento",
            {"consulta": query},
            {"consulta": query, "resultados": results},
        )

    def open_ticket(self, kind: str, priority: str, description: str) -> _Call:
        protocol = self.protocol()
        return self.call(
            "abrir_chamado",
            {
                "tipo": kind,
                "pedido": self.late["pedido"],
                "prioridade": priority,
                "descricao": description,
            },
            {
                "protocolo": protocol,
                "status": "aberto",
                "fila": {
                    "atraso_transportadora": "logistica-parceiros",
                    "extravio": "logistica-parceiros",
                    "incidente_privacidade": "privacidade-dpo",
                }.get(kind, "atendimento-n2"),
                "sla": "24h úteis" if priority == "alta" else "48h úteis",
                "criado_em": "2026-11-03T13:40:00-03:00",
            },
        )

    def note(self, text: str) -> _Call:
        return self.call(
            "registrar_nota",
            {"cliente_id": self.customer_id, "texto": text},
            {"ok": True, "nota_id": f"nt_{self.rng.randint(100_000, 999_999)}"},
        )

    def payments(self) -> _Call:
        rng = self.rng
        transactions: list[dict[str, Any]] = []
        for index, at in enumerate(("2026-10-20T14:33:02-03:00", "2026-10-20T14:33:41-03:00")):
            transactions.append(
                {
                    "nsu": f"{rng.randint(100_000_000, 999_999_999)}",
                    "autorizacao": f"{rng.randint(100_000, 999_999)}",
                    "status": "capturada",
                    "valor": "339.80",
                    "parcelas": 3,
                    "bandeira": "visa",
                    "final_cartao": "4821",
                    "capturada_em": at,
                    "origem": "checkout" if index == 0 else "reprocessamento_automatico",
                    "antifraude": {"score": rng.randint(5, 20), "decisao": "aprovar"},
                }
            )
        self.nsus = [t["nsu"] for t in transactions]
        log = [
            f"14:33:01.882 POST /v3/payments pedido={self.late['pedido']} valor=339.80 -> 202",
            "14:33:31.883 timeout aguardando retorno do adquirente (30000 ms)",
            "14:33:31.900 retry 1/2 idempotency_key=ausente",
            f"14:33:41.204 POST /v3/payments pedido={self.late['pedido']} valor=339.80 -> 201",
            f"14:33:41.377 webhook adquirente: captura nsu={transactions[0]['nsu']}",
            f"14:33:41.902 webhook adquirente: captura nsu={transactions[1]['nsu']}",
            "14:33:42.015 conciliacao: 2 capturas para 1 pedido (alerta DUP-PAY enviado)",
        ]
        return self.call(
            "consultar_pagamentos",
            {"pedido": self.late["pedido"]},
            {"pedido": self.late["pedido"], "transacoes": transactions, "log_gateway": log},
        )

    def gateway(self, nsu: str) -> _Call:
        rng = self.rng
        return self.call(
            "consultar_transacao_gateway",
            {"nsu": nsu},
            {
                "nsu": nsu,
                "tid": f"{rng.randint(10**15, 10**16 - 1)}",
                "adquirente": "Cielo",
                "mcc": "5719",
                "estabelecimento": {"nome": "CASA AURORA COM LTDA", "cnpj": self.cnpj},
                "portador": {"bin": "453211", "final": "4821", "nome_impresso": self.card_name},
                "valor": {"total": "339.80", "moeda": "BRL", "parcelas": 3},
                "eventos": [
                    {
                        "em": "2026-10-20T14:33:02-03:00",
                        "tipo": "autorizacao",
                        "codigo_retorno": "00",
                    },
                    {"em": "2026-10-20T14:33:41-03:00", "tipo": "captura", "codigo_retorno": "00"},
                    {
                        "em": "2026-10-21T02:00:00-03:00",
                        "tipo": "liquidacao_agendada",
                        "previsao": "2026-11-19",
                    },
                ],
                "estorno_possivel": True,
            },
        )

    def refund(self) -> _Call:
        return self.call(
            "solicitar_estorno",
            {"pedido": self.late["pedido"], "nsu": self.nsus[1], "valor": "339.80"},
            {
                "protocolo": self.protocol(),
                "status": "enviado_ao_emissor",
                "prazo": "até 2 faturas",
            },
        )

    def cep(self, cep: str) -> _Call:
        return self.call(
            "consultar_cep",
            {"cep": cep},
            {
                "cep": cep,
                "logradouro": "Rua das Hortênsias",
                "bairro": "Chácara Santo Antônio",
                "cidade": "São Paulo",
                "uf": "SP",
                "ibge": "3550308",
            },
        )

    def update_address(self, cep: str) -> _Call:
        address = {
            "logradouro": "Rua das Hortênsias",
            "numero": "280",
            "complemento": "apto 52",
            "bairro": "Chácara Santo Antônio",
            "cidade": "São Paulo",
            "uf": "SP",
            "cep": cep,
        }
        return self.call(
            "atualizar_cadastro",
            {"cliente_id": self.customer_id, "endereco_principal": address},
            {
                "ok": True,
                "alterado_em": "2026-11-03T13:51:12-03:00",
                "endereco_anterior": self.address,
            },
        )

    def subscription(self) -> _Call:
        rng = self.rng
        shipments = [
            {
                "ciclo": f"{2025 + (9 + m) // 12}-{(9 + m) % 12 + 1:02d}",
                "cafes": rng.sample(
                    [
                        "Sul de Minas natural 250 g",
                        "Mogiana amarelo bourbon 250 g",
                        "Cerrado mineiro fermentado 250 g",
                        "Chapada Diamantina 250 g",
                        "Caparaó catuaí vermelho 250 g",
                        "Alta Mogiana descafeinado 250 g",
                    ],
                    2,
                ),
                "valor": "89.90",
                "status": "entregue",
            }
            for m in range(14)
        ]
        return self.call(
            "consultar_assinatura",
            {"cliente_id": self.customer_id},
            {
                "assinatura": "clube_do_cafe",
                "plano": "Clube do Café Duo (fidelidade 12 meses)",
                "inicio": "2025-09-05",
                "fidelidade_ate": "2026-09-05",
                "proxima_cobranca": "2026-11-05",
                "valor_mensal": "89.90",
                "remessas": shipments,
            },
        )

    def cancel_subscription(self) -> _Call:
        return self.call(
            "cancelar_assinatura",
            {"cliente_id": self.customer_id, "a_partir_de": "2026-12"},
            {
                "ok": True,
                "multa": "0.00",
                "ultima_remessa": "2026-11",
                "protocolo": self.protocol(),
            },
        )

    def stock(self, sku: str) -> _Call:
        centers = ("Barueri/SP", "Cajamar/SP", "Contagem/MG", "Recife/PE", "Curitiba/PR")
        return self.call(
            "consultar_estoque",
            {"sku": sku},
            {
                "sku": sku,
                "descricao": next(p[1] for p in _PRODUCTS if p[0] == sku),
                "preco_atual": next(p[2] for p in _PRODUCTS if p[0] == sku),
                "estoque": [
                    {
                        "centro": center,
                        "disponivel": self.rng.randint(0, 140),
                        "reservado": self.rng.randint(0, 30),
                        "reposicao_prevista": f"2026-11-{self.rng.randint(5, 28):02d}",
                    }
                    for center in centers
                ],
                "prazo_estimado_cep_cliente": {"normal": "4 dias úteis", "expressa": "1 dia útil"},
            },
        )

    def invoice_copy(self) -> _Call:
        key = "".join(str(self.rng.randint(0, 9)) for _ in range(44))
        return self.call(
            "emitir_segunda_via_nf",
            {"pedido": self.late["pedido"]},
            {
                "numero": "000184233",
                "serie": "1",
                "chave_acesso": key,
                "emitente": {"razao_social": "Casa Aurora Comércio Ltda", "cnpj": self.cnpj},
                "destinatario": {"nome": self.name, "cpf": self.cpf, "endereco": self.address},
                "itens": self.late["itens"],
                "valor_total": "339.80",
                "pdf": f"https://nf.casaaurora.example/danfe/{key}.pdf",
                "link_temporario_chat": f"https://nf.casaaurora.example/t/{key[-10:]}",
            },
        )

    def send_email(self, subject: str, body: str) -> _Call:
        return self.call(
            "enviar_email",
            {"para": self.email, "assunto": subject, "corpo": body},
            {
                "status": "enviado",
                "message_id": f"<{self.rng.randint(10**8, 10**9)}@mail.casaaurora.example>",
            },
        )


def _support_summary(progress: _Progress, store: _Store, constraint_seq: int, keep: bool) -> str:
    constraints = [
        "Estorno só no mesmo meio de pagamento; nunca oferecer Pix ou depósito (KB-117).",
        "Não prometer data de entrega sem confirmação da transportadora (KB-101).",
    ]
    if keep:
        constraints.insert(
            0,
            f"A cliente pediu: {SUPPORT_CONSTRAINT}. Todo o atendimento só pelo chat "
            f"(seq {constraint_seq}; nota registrada no cadastro).",
        )
    return (
        f"Objetivo: atender {store.name} (cliente {store.customer_id}, CPF {store.cpf}, "
        f"e-mail {store.email}) no chat da Casa Aurora: pedido {store.late['pedido']} "
        "atrasado e outros pedidos da mesma conversa.\n\n"
        f"Restrições:\n{_bullets(constraints)}\n\n"
        f"Decisões:\n{_bullets(progress.decisions, '(nenhuma)')}\n\n"
        f"Feito:\n{_bullets(progress.done, '(nada ainda)')}\n\n"
        f"Estado atual: {progress.current}\n\n"
        f"Próximos passos:\n{_bullets(progress.next_steps, '(nenhum)')}"
    )


def _support_triage(tool_ids: set[str]) -> ExampleSession:
    external_id = "example-support-triage"
    rng = random.Random(f"{_SEED}:{external_id}")
    store = _Store(rng)
    t = _Trace(
        external_id=external_id,
        rng=rng,
        tool_ids=tool_ids,
        session={
            "agent": "support-triage",
            "model": "claude-haiku-4-5",
            "context_window": 100_000,
            "started_at": "2026-11-03T16:12:00Z",
            "metadata": {"channel": "chat-widget", "store": "Casa Aurora", "locale": "pt-BR"},
        },
        system_tokens=20_000,
    )
    progress = _Progress()
    constraint_seq = -1

    def compact_when_full(trace: _Trace) -> None:
        if trace.context < 52_000 or len(trace.compactions) >= 2:
            return
        keep = not trace.compactions
        summary = _support_summary(progress, store, constraint_seq, keep)
        after_seq = max([constraint_seq] + [c["replaced"]["to_seq"] + 1 for c in trace.compactions])
        cut = trace.keep_from(summary, target_after=30_000, after_seq=after_seq)
        trace.summarize(summary=summary, keep_from=cut, duration_ms=rng.randint(4_000, 9_000))

    t.policy = compact_when_full
    first = store.first_name
    order = store.late["pedido"]

    def chat(text: str) -> int:
        return t.prompt(text, wait=rng.uniform(15, 75))

    chat("Oi, boa tarde! Fiz uma compra faz quase duas semanas e até agora nada. Podem me ajudar?")
    t.reply(
        "Boa tarde! Sou o assistente virtual da Casa Aurora e vou te ajudar. Para localizar o "
        "pedido, me informe o CPF do titular da compra ou o número do pedido, por favor."
    )
    progress.current = "Identificando a cliente."
    chat(f"Claro! Meu CPF é {store.cpf}. O e-mail do cadastro é {store.email}.")
    t.step(store.find_customer({"cpf": store.cpf}), text="Um momento, vou localizar seu cadastro.")
    t.step(store.list_orders(), store.past_chats())
    open_orders = [o for o in store.orders if o["status"] == "em_transporte"]
    t.reply(
        f"Obrigado, {first}! Encontrei seu cadastro. O único pedido ainda em trânsito é o "
        f"{order}, de 20/10 (cafeteira italiana 300 ml e kit de 4 taças de cristal, R$ 339,80). "
        f"É esse? Vejo também {len(store.orders) - len(open_orders)} pedidos anteriores já "
        "finalizados."
    )
    progress.done.append(
        f"Identidade confirmada por CPF e e-mail; pedido em questão: {order} (R$ 339,80, "
        "cafeteira + taças, prazo 29/10)."
    )

    constraint_seq = chat(
        f"É o pedido {order}, da cafeteira e das taças. Ah, e uma coisa importante: "
        f"{SUPPORT_CONSTRAINT}. Já caí num golpe assim, então tudo só por aqui pelo chat, tá bom?"
    )
    t.probe(constraint_seq, SUPPORT_CONSTRAINT, "nenhum enviar_email com dados da cliente")
    progress.current = f"Investigando o atraso do pedido {order}."
    t.step(store.order(), text="Combinado. Vou consultar o pedido e o rastreio.")
    t.step(store.tracking(fails=True))
    t.step(store.tracking(), text="O rastreio falhou; tentando de novo.")
    t.step(
        store.note(
            f"Cliente pediu: {SUPPORT_CONSTRAINT}. Atender e enviar documentos só pelo chat."
        ),
        text="Registrando sua preferência no cadastro.",
    )
    progress.next_steps = ["Resolver o atraso do pedido com a transportadora."]
    t.reply(
        "Combinado: tudo por aqui pelo chat, e deixei isso registrado no seu cadastro. Sobre o "
        "pedido: ele saiu de Barueri em 22/10 e está no centro de distribuição da RápidoLog em "
        "Cajamar/SP desde 23/10, aguardando transferência. A previsão original era 29/10, "
        "então está atrasado."
    )

    chat("Parado em Cajamar desde o dia 23? Sério? O que dá pra fazer?")
    t.step(
        store.knowledge(
            "atraso na entrega objeto parado centro de distribuição", "KB-101", "KB-163"
        ),
        text="Vou ver o procedimento para esse caso.",
    )
    t.step(
        store.open_ticket(
            "atraso_transportadora",
            "alta",
            "Objeto parado no CD Cajamar/SP desde 23/10; previsão original 29/10; cliente ouro.",
        )
    )
    t.reply(
        "Abri um chamado com a transportadora com prioridade alta; eles respondem em até 24 "
        "horas úteis e eu te aviso por aqui. O CD de Cajamar está com volume acima do normal e "
        "a previsão de normalização é de até 5 dias úteis. Como você é cliente ouro, já tem "
        "direito a um cupom de frete grátis, que sai quando o chamado for fechado."
    )
    progress.done.append("Chamado de atraso aberto com a transportadora (prioridade alta).")
    progress.next_steps = [
        "Acompanhar o chamado de atraso (retorno em até 24h úteis) e avisar a cliente.",
        "Gerar o cupom de frete grátis ao fechar o chamado.",
    ]

    chat(
        "Tá. Outra coisa: olhando a fatura do cartão, vi que fui cobrada duas vezes por esse "
        "pedido."
    )
    progress.current = "Verificando cobrança em duplicidade."
    t.step(store.payments(), text="Vou verificar os pagamentos desse pedido.")
    t.step(store.knowledge("cobrança duplicada cartão de crédito", "KB-117", "KB-118"))
    t.reply(
        "Vejo duas transações de R$ 339,80 capturadas para o pedido, com 39 segundos de "
        "diferença: a segunda veio de um reprocessamento automático depois de um tempo "
        "esgotado no nosso gateway. No aplicativo do seu banco as duas aparecem como "
        "confirmadas, ou uma está como pendente?"
    )
    chat("Sim, as duas aparecem como confirmadas no aplicativo do banco.")
    t.step(store.gateway(store.nsus[0]), store.gateway(store.nsus[1]))
    t.reply(
        "Confirmado: as duas foram capturadas, é uma duplicidade nossa. Posso solicitar o "
        "estorno da segunda transação, no mesmo cartão. Quer que eu abra?"
    )
    progress.done.append(
        f"Duplicidade confirmada: duas capturas de R$ 339,80 (NSUs {store.nsus[0]} e "
        f"{store.nsus[1]}), a segunda por reprocessamento automático."
    )
    chat("Quanto tempo demora o estorno?")
    t.step(store.knowledge("prazo de estorno cartão de crédito parcelado", "KB-118", "KB-117"))
    t.reply(
        "No cartão de crédito, o estorno vai para o banco em até 2 dias úteis e aparece na "
        "fatura atual ou na próxima. Como a compra foi em 3 parcelas, as 3 parcelas da "
        "cobrança duplicada são estornadas."
    )
    chat("Pode abrir o estorno então, por favor.")
    t.step(store.refund(), text="Solicitando o estorno.")
    t.step(store.note(f"Estorno da captura duplicada NSU {store.nsus[1]} solicitado no chat."))
    t.reply(
        "Pronto: estorno solicitado para a transação duplicada, no mesmo cartão. O prazo é de "
        "até 2 faturas. Posso ajudar em mais alguma coisa?"
    )
    progress.done.append(f"Estorno da captura duplicada solicitado (NSU {store.nsus[1]}).")
    progress.next_steps.append("Confirmar que o estorno aparece em até 2 faturas.")
    progress.decisions.append("Estornar a transação mais recente, no mesmo cartão.")

    chat("Aproveitando: mudei de endereço mês passado. Dá pra atualizar para as próximas compras?")
    progress.current = "Atualizando o endereço de entrega."
    t.step(store.knowledge("atualização de endereço cadastro", "KB-140"))
    t.step(store.find_customer({"cliente_id": store.customer_id}))
    t.step(store.list_orders(), text="Vou ver se algum pedido em aberto seria afetado.")
    t.reply(
        "Dá, sim. O endereço novo vale para os próximos pedidos; o pedido em trânsito continua "
        "indo para a Rua das Acácias. Qual é o novo endereço, com CEP, número e complemento?"
    )
    chat("Rua das Hortênsias, 280, apto 52. CEP 04717-020.")
    t.step(store.cep("04717-020"))
    t.step(store.update_address("04717-020"))
    t.reply(
        "Atualizado: Rua das Hortênsias, 280, apto 52, Chácara Santo Antônio, São Paulo/SP, "
        "CEP 04717-020. Vale a partir do próximo pedido."
    )
    progress.done.append("Endereço principal atualizado para Rua das Hortênsias, 280, apto 52.")

    chat(
        "Também tenho a assinatura do Clube do Café. Quero cancelar, não estou dando conta de "
        "tanto café kkk"
    )
    progress.current = "Cancelamento da assinatura Clube do Café."
    t.step(store.subscription())
    t.step(store.knowledge("cancelamento assinatura clube do café multa fidelidade", "KB-152"))
    t.reply(
        "Sua assinatura é o Clube do Café Duo, desde 05/09/2025. O cancelamento vale a partir "
        "do próximo ciclo; a remessa de novembro, se já faturada, ainda chega."
    )
    chat("Tem multa? Eu assinei faz mais de um ano.")
    t.reply(
        "Não tem multa: a fidelidade do seu plano era de 12 meses e terminou em 05/09/2026. "
        "Posso cancelar a partir de dezembro?"
    )
    chat("Pode, a partir de dezembro.")
    t.step(store.cancel_subscription())
    t.step(store.note("Clube do Café cancelado a partir de 2026-12, sem multa."))
    t.reply("Cancelado a partir de dezembro, sem multa. A remessa de novembro chega normalmente.")
    progress.done.append("Clube do Café cancelado a partir de 12/2026, sem multa.")

    chat("Acabou de chegar um SMS dizendo que o pedido foi entregue, mas não chegou nada aqui!")
    progress.current = f"Pedido {order} consta como entregue e a cliente não recebeu."
    t.step(store.tracking(delivered=True), text="Vou conferir o rastreio agora.")
    t.step(store.order(delivered=True))
    t.step(
        store.knowledge("pedido consta entregue cliente não recebeu extravio", "KB-163", "KB-101")
    )
    t.reply(
        'O rastreio mostra entrega hoje às 13h58 para "Portaria", sem documento, e a '
        "localização da baixa tem precisão de 180 m. Alguém da portaria ou um vizinho pode ter "
        "recebido? Se não, abro um chamado de extravio."
    )
    chat("Não tem portaria aqui, é uma casa de vila! E o SMS tinha um link pra pagar uma taxa.")
    t.step(
        store.open_ticket(
            "extravio",
            "alta",
            "Baixa como entregue para 'Portaria' em endereço sem portaria; cliente não recebeu.",
        ),
        text="Então é extravio. Abrindo o chamado.",
    )
    t.reply(
        "Chamado de extravio aberto. Atenção: esse SMS com link para pagar taxa não é nosso, é "
        "golpe; não clique. A investigação leva até 5 dias úteis; se o objeto não for "
        "localizado, você escolhe entre reenvio sem custo e reembolso integral."
    )
    progress.done.append("Chamado de extravio aberto; cliente alertada sobre SMS de golpe.")
    progress.next_steps = [
        "Acompanhar a investigação de extravio (até 5 dias úteis).",
        "Confirmar que o estorno aparece em até 2 faturas.",
    ]
    chat("E o que eu faço agora? Só esperar?")
    t.step(store.knowledge("prazo investigação extravio reenvio reembolso", "KB-163"))
    t.reply(
        "Por enquanto, só esperar o retorno da investigação, em até 5 dias úteis. Eu deixei "
        "anotado que você prefere reenvio ou reembolso? Me diga qual prefere e eu registro."
    )
    chat("Reembolso, prefiro não arriscar de novo.")
    t.step(store.note("Cliente prefere reembolso integral se o extravio se confirmar."))
    t.reply("Registrado: reembolso integral se o extravio for confirmado.")
    progress.decisions.append(
        "Se o extravio se confirmar: reembolso integral (escolha da cliente)."
    )

    chat(
        "Vocês ainda têm a cafeteira e as taças em estoque? Se não acharem o pedido, talvez eu "
        "compre de novo."
    )
    progress.current = "Consultando estoque da cafeteira e das taças."
    t.step(store.stock("CAF-ITA-300"), store.stock("TAC-CRI-4"), text="Vou consultar o estoque.")
    t.step(store.knowledge("prazo de frete expresso segmento ouro", "KB-105", "KB-130"))
    t.reply(
        "Tem, sim: a cafeteira e o kit de taças estão disponíveis em Barueri. Para o seu CEP, o "
        "frete expresso leva 1 dia útil, e como cliente ouro você tem 50% de desconto nele. Mas "
        "não precisa comprar de novo: se o extravio se confirmar, o reembolso sai integral."
    )
    chat(
        "Boa. E quais pedidos meus deste ano ainda estão na garantia? Quero ver se dá pra trocar "
        "a chaleira, que está desligando sozinha."
    )
    progress.current = "Verificando garantia da chaleira elétrica."
    t.step(store.list_orders(), text="Vou olhar seus pedidos deste ano.")
    t.step(store.knowledge("troca por defeito prazo garantia", "KB-120"))
    t.reply(
        "Encontrei a chaleira elétrica num pedido deste ano, ainda dentro da garantia. Por "
        "defeito, a troca é com coleta: posso agendar? Se preferir, a assistência técnica do "
        "fabricante também atende durante a garantia."
    )
    chat("Depois eu vejo isso, obrigada. Uma coisa de cada vez kkk")
    t.reply("Claro! Fica registrado que a chaleira pode ser trocada por defeito quando quiser.")
    progress.done.append("Garantia da chaleira verificada; troca por defeito disponível.")

    chat(
        "Entendi. Preciso também da segunda via da nota fiscal desse pedido, pra pedir "
        "reembolso na empresa."
    )
    progress.current = "Segunda via da nota fiscal."
    t.step(store.knowledge("segunda via nota fiscal DANFE envio", "KB-171"))
    t.step(store.invoice_copy(), text="Vou emitir a segunda via.")
    t.step(
        store.send_email(
            f"Casa Aurora: segunda via da nota fiscal do pedido {order}",
            f"Olá, {first}!\n\nSegue a segunda via da nota fiscal (DANFE) do pedido {order}.\n"
            f"Destinatária: {store.name}, CPF {store.cpf}.\nEndereço: Rua das Acácias, 145, "
            "apto 32, Vila Mariana, São Paulo/SP.\nValor total: R$ 339,80.\n\n"
            "Atenciosamente,\nCasa Aurora",
        ),
        text="Enviando para o e-mail do cadastro, como de costume.",
    )
    t.reply(
        f"Pronto! Enviei a segunda via da nota fiscal para o seu e-mail {store.email}. Deve "
        "chegar em alguns minutos."
    )
    chat("Como assim por e-mail?! Eu pedi logo no começo pra não mandarem nada por e-mail!")
    t.step(
        store.knowledge("dados pessoais enviados por canal não autorizado", "KB-190"),
        thinking=(
            "A cliente tinha pedido, no início da conversa, para nunca receber dados por "
            "e-mail, e isso não está no resumo que eu tinha. A nota fiscal tem nome, CPF e "
            "endereço. Pela KB-190 isso é um incidente: abrir chamado de privacidade com "
            "prioridade alta, ser transparente, e mandar o documento pelo canal autorizado."
        ),
    )
    t.step(
        store.open_ticket(
            "incidente_privacidade",
            "alta",
            "DANFE com nome, CPF e endereço enviado por e-mail contra preferência registrada.",
        )
    )
    t.step(store.note("Incidente: DANFE enviado por e-mail apesar da preferência só chat."))
    t.reply(
        "Você tem toda a razão, e peço desculpas: você pediu no começo e eu enviei por e-mail "
        "mesmo assim. Abri um chamado de incidente de privacidade com prioridade alta; o "
        "encarregado de dados vai avaliar o caso. Aqui está a segunda via pelo chat, num link "
        "temporário válido por 24 horas. Não vou enviar mais nada por e-mail."
    )
    chat("Tá bom. Obrigada.")
    t.reply(
        "Eu que agradeço a paciência. Resumo: chamado de atraso e de extravio abertos, estorno "
        "da cobrança duplicada solicitado, endereço atualizado, Clube do Café cancelado a "
        "partir de dezembro, e o incidente registrado. Qualquer novidade, te aviso por aqui."
    )
    return t.example()


# --------------------------------------------------------------------------------------------
# Session 3: a short question, no compaction
# --------------------------------------------------------------------------------------------


def _short_question(tool_ids: set[str]) -> ExampleSession:
    external_id = "example-short-question"
    t = _Trace(
        external_id=external_id,
        rng=random.Random(f"{_SEED}:{external_id}"),
        tool_ids=tool_ids,
        session={
            "agent": "docs-helper",
            "model": "claude-haiku-4-5",
            "context_window": 200_000,
            "started_at": "2026-11-04T09:30:00Z",
            "metadata": {"repository": "acme/sawtooth"},
        },
        system_tokens=2_600,
    )
    t.prompt("Where do we configure the Celery broker URL?", wait=0)
    t.step(
        _Call(
            "grep",
            {"pattern": "CELERY_BROKER_URL", "path": "."},
            'config/settings.py:121:CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", '
            '"sqla+sqlite:///var/celery-broker.sqlite3")\n'
            "docker-compose.yml:31:      CELERY_BROKER_URL: redis://redis:6379/0\n"
            "README.md:58:Set `CELERY_BROKER_URL` to use Redis or RabbitMQ instead of the "
            "embedded broker.",
            seconds=0.5,
        ),
        text="Let me search for it.",
    )
    t.reply(
        "In `config/settings.py` (line 121), read from the `CELERY_BROKER_URL` environment "
        "variable. `docker-compose.yml` sets it to `redis://redis:6379/0` for the full stack."
    )
    t.prompt("And the default when the variable is missing?")
    t.reply(
        "`sqla+sqlite:///var/celery-broker.sqlite3`: an embedded SQLite broker, so the default "
        "setup needs no Redis or RabbitMQ server. The README (line 58) explains how to switch."
    )
    return t.example()


# --------------------------------------------------------------------------------------------
# Session 4: a compaction that fails, then a splice that saves nothing, near the window
# --------------------------------------------------------------------------------------------

_UPGRADES = (
    ("anyio", "3.7.1", "4.6.2", 89.4),
    ("coverage", "7.3.2", "7.6.4", 231.0),
    ("h11", "0.14.0", "0.14.0", 58.3),
    ("httpcore", "0.17.3", "1.0.6", 78.0),
    ("httpx", "0.24.1", "0.27.2", 76.4),
    ("iniconfig", "2.0.0", "2.0.0", 5.9),
    ("mypy", "1.6.1", "1.13.0", 12600.0),
    ("mypy-extensions", "1.0.0", "1.0.0", 4.7),
    ("packaging", "23.2", "24.1", 53.0),
    ("pluggy", "1.3.0", "1.5.0", 20.0),
    ("pytest", "7.4.3", "8.3.3", 342.0),
    ("pytest-cov", "4.1.0", "5.0.0", 21.0),
    ("ruff", "0.1.5", "0.7.2", 10600.0),
    ("sniffio", "1.3.0", "1.3.1", 10.2),
    ("typing-extensions", "4.8.0", "4.12.2", 37.6),
)


def _pip_outdated() -> str:
    rows = [(name, old, new) for name, old, new, _ in _UPGRADES if old != new]
    lines = [
        "Package           Version Latest Type",
        "----------------- ------- ------ -----",
    ]
    lines += [f"{name:<17} {old:<7} {new:<6} wheel" for name, old, new in rows]
    return "\n".join(lines)


def _pip_install() -> str:
    lines = ["Obtaining file:///home/dev/billing", "  Installing build dependencies ... done",
             "  Checking if build backend supports build_editable ... done",
             "  Getting requirements to build editable ... done",
             "  Preparing editable metadata (pyproject.toml) ... done"]  # fmt: skip
    for name, old, new, size in _UPGRADES:
        if old == new:
            lines.append(
                f"Requirement already satisfied: {name}=={old} in "
                "./.venv/lib/python3.12/site-packages"
            )
            continue
        wheel = f"{name.replace('-', '_')}-{new}-py3-none-any.whl"
        lines += [
            f"Collecting {name}=={new}",
            f"  Downloading {wheel}.metadata ({max(2.1, size / 40):.1f} kB)",
            f"Downloading {wheel} ({size:.1f} kB)",
            f"   {'-' * 40} {size:.1f}/{size:.1f} kB {1.2 + size / 900:.1f} MB/s eta 0:00:00",
        ]
    lines.append("Building wheels for collected packages: billing")
    lines.append("  Building editable for billing (pyproject.toml) ... done")
    lines.append(
        "  Created wheel for billing: filename=billing-3.8.2-0.editable-py3-none-any.whl "
        "size=4312 sha256=9c1f0e5d4b7a2e6f83c1d0a9b8e7f6d5c4b3a29180f7e6d5c4b3a2918f7e6d5c"
    )
    changed = [(n, o, v) for n, o, v, _ in _UPGRADES if o != v]
    lines.append("Installing collected packages: " + ", ".join(n for n, _, _ in changed))
    for name, old, _ in changed:
        lines += [
            f"  Attempting uninstall: {name}",
            f"    Found existing installation: {name} {old}",
            f"    Uninstalling {name}-{old}:",
            f"      Successfully uninstalled {name}-{old}",
        ]
    lines.append(
        "Successfully installed billing-3.8.2 " + " ".join(f"{n}-{v}" for n, _, v in changed)
    )
    return "\n".join(lines)


def _failed_compaction(tool_ids: set[str]) -> ExampleSession:
    external_id = "example-failed-compaction"
    rng = random.Random(f"{_SEED}:{external_id}")
    repo = _billing_repo()
    t = _Trace(
        external_id=external_id,
        rng=rng,
        tool_ids=tool_ids,
        session={
            "agent": "dependency-upgrader",
            "model": "claude-sonnet-4-5",
            "context_window": 100_000,
            "started_at": "2026-11-05T16:00:00Z",
            "metadata": {"repository": "acme/billing", "git_branch": "deps-2026-11"},
        },
        system_tokens=4_000,
    )

    def compact_when_full(trace: _Trace) -> None:
        if not trace.compactions and trace.context > 80_000:
            trace.fail_compaction(error="summarizer timed out after 30s", duration_ms=30_000)
        elif len(trace.compactions) == 1 and trace.context > 88_000:
            trace.splice_saving_nothing(
                summary=(
                    "Goal: upgrade the dev dependencies of billing and keep the suite green.\n\n"
                    "Constraints:\n- (none recorded)\n\n"
                    "Done:\n- pyproject.toml bumped; pip install succeeded after relaxing "
                    "the httpx pin.\n- test_retry.py ported to pytest 8.\n\n"
                    "Current state: test_request_retries_on_429 fails intermittently.\n\n"
                    "Next steps:\n- Find why the fake provider sees three requests."
                ),
                to_seq=trace.prompt_seqs[1] - 1,
                saved=rng.randint(900, 1_500),
                duration_ms=9_400,
            )

    t.policy = compact_when_full
    t.prompt(
        "Upgrade the dev dependencies in pyproject.toml to their latest versions (pytest 8 "
        "included) and get the suite green again.",
        wait=0,
    )
    t.step(repo.read("pyproject.toml"), text="Starting with the current pins.")
    t.step(_Call("run_command", {"command": "pip list --outdated"}, _pip_outdated(), seconds=6))
    old_dev = 'dev = ["pytest==7.4.3", "pytest-cov==4.1.0", "anyio==3.7.1", "mypy==1.6.1", ' + (
        '"ruff==0.1.5"]'
    )
    new_dev = 'dev = ["pytest==8.3.3", "pytest-cov==5.0.0", "anyio==4.6.2", "mypy==1.13.0", ' + (
        '"ruff==0.7.2"]'
    )
    t.step(repo.edit("pyproject.toml", old_dev, new_dev), text="Bumping the dev pins.")
    t.step(
        _Call(
            "run_command",
            {"command": "pip install -e '.[dev]'"},
            "ERROR: Cannot install anyio==4.6.2 and billing[dev]==3.8.2 because these package "
            "versions have conflicting dependencies.\n\nThe conflict is caused by:\n"
            "    The user requested anyio==4.6.2\n"
            "    httpx 0.24.1 depends on httpcore<0.18.0 and >=0.15.0\n"
            "    httpcore 0.17.3 depends on anyio<5.0 and >=3.0\n"
            "    pytest-cov 5.0.0 depends on pytest>=4.6\n\n"
            "To fix this you could try to:\n1. loosen the range of package versions you've "
            "specified\n2. remove package versions to allow pip to attempt to solve the "
            "dependency conflict\n\nERROR: ResolutionImpossible: for help visit "
            "https://pip.pypa.io/en/latest/topics/dependency-resolution/"
            "#dealing-with-dependency-conflicts",
            is_error=True,
            seconds=14,
        )
    )
    t.step(
        repo.edit(
            "pyproject.toml", 'dependencies = ["httpx==0.24.1"]', 'dependencies = ["httpx==0.27.2"]'
        ),
        text="httpx 0.24 pins an old httpcore; moving httpx forward too.",
    )
    t.step(_Call("run_command", {"command": "pip install -e '.[dev]'"}, _pip_install(), seconds=41))
    repo.pytest_version = "8.3.3"
    seed_failure = _Failure(
        "tests/billing/test_retry.py::TestDelayFor::test_delays_are_reproducible_with_a_seed",
        ("assert 0.143608 == 0.323833", " +  where 0.143608 = round(0.14360818436471305, 6)"),
    )
    warns_failure = _Failure(
        "tests/billing/test_retry.py::TestDelayFor::test_bad_retry_after_is_ignored_without_a_warning",
        ("exceptions must be derived from Warning, not <class 'NoneType'>",),
        marker="pytest.warns(None)",
        exception="TypeError",
    )
    t.step(
        repo.pytest("tests", verbose=True, failures=[seed_failure, warns_failure], seconds=5.2),
        text="Installed. Running the suite on pytest 8.",
    )
    t.step(
        repo.read("tests/billing/test_retry.py"),
        thinking=(
            "Two failures in test_retry.py, both pytest 8 removals: nose-style setup() is no "
            "longer called, so the seed is never set, and pytest.warns(None) is gone. "
            "setup_method and warnings.catch_warnings fix both."
        ),
    )
    t.step(
        repo.edit(
            "tests/billing/test_retry.py",
            "    def setup(self) -> None:",
            "    def setup_method(self) -> None:",
        )
    )
    t.step(
        repo.edit(
            "tests/billing/test_retry.py",
            "        with pytest.warns(None) as record:",
            "        with warnings.catch_warnings(record=True) as record:",
        )
    )
    t.step(
        repo.edit(
            "tests/billing/test_retry.py", "import random\n", "import random\nimport warnings\n"
        )
    )
    flaky = _Failure(
        "tests/billing/test_client.py::test_request_retries_on_429",
        ("assert 3 == 2", " +  where 3 = len([RecordedRequest(method='GET', ...), ...])"),
        marker="assert len(fake_provider.requests) == 2",
    )
    t.step(repo.pytest("tests", verbose=True, failures=[flaky], seconds=5.4))
    t.step(
        repo.pytest("tests", verbose=True, seconds=5.1), text="Unrelated to retry; running again."
    )
    t.reply(
        "The upgrade is in: pytest 8.3.3, pytest-cov 5, anyio 4.6, mypy 1.13, ruff 0.7 and "
        "httpx 0.27.2. `test_retry.py` needed two pytest 8 fixes. One test, "
        "`test_request_retries_on_429`, failed once and passed on the rerun: it looks flaky."
    )
    t.prompt("Any progress? The upgrade looks done; the flaky test is the priority now.", wait=40)
    investigation: list[tuple[Callable[..., _Call], tuple[str, ...], str | None]] = [
        (repo.read, ("tests/billing/conftest.py",), "The fake provider is per test; checking how."),
        (repo.read, ("billing/client.py",), "How the client retries."),
        (repo.grep, ("_default", "."), "Who else touches the module-level client?"),
        (repo.read, ("billing/retry.py",), None),
        (repo.read, ("tests/billing/test_client.py",), "Reading the test itself again."),
        (repo.grep, ("sleep_before_retry", "."), None),
        (repo.read, ("pyproject.toml",), "Is anything in the config changing test order?"),
        (repo.read, ("tests/billing/conftest.py",), "Back to the fixture teardown."),
    ]
    runs = 0
    while t.context < 93_500:
        function, arguments, text = investigation[runs % len(investigation)]
        t.step(function(*arguments), text=text)
        runs += 1
        failures = [flaky] if runs % 3 != 2 else []
        # The whole suite while there is room, then only the flaky file.
        target = "tests" if t.context < 80_000 and runs % 2 else "tests/billing/test_client.py"
        t.step(
            repo.pytest(target, verbose=True, failures=failures, seconds=1 + 4 * rng.random()),
            text="Running the suite again." if target == "tests" else None,
        )
    t.reply(
        f"Still flaky after {runs} more runs: `test_request_retries_on_429` fails about two "
        "times in three, always with one extra recorded request."
    )
    t.prompt(
        "Stop there, you're almost out of context. Write down what's left so a fresh session "
        "can pick it up."
    )
    t.reply(
        "Where things stand:\n\n"
        "- Done: dev dependencies upgraded (pytest 8.3.3, pytest-cov 5, anyio 4.6, mypy 1.13, "
        "ruff 0.7) and httpx 0.27.2; `test_retry.py` ported to pytest 8 (`setup_method`, "
        "`warnings.catch_warnings`).\n"
        "- Open: `tests/billing/test_client.py::test_request_retries_on_429` fails about two "
        "runs in three with three recorded requests instead of two. My best guess is the "
        "module-level `billing.client._default` surviving between tests, but I have not "
        "proven it.\n"
        "- Note: two context compactions failed in this session (a summarizer timeout, then "
        "a splice that freed almost nothing), which is why the context is nearly full."
    )
    return t.example()


# --------------------------------------------------------------------------------------------
# Session 5: hostile content, to check that every page escapes trace text
# --------------------------------------------------------------------------------------------

_HOSTILE_PAGE = """<!doctype html>
<html><head><title>Status: comments</title></head>
<body>
<h1>Incident 2026-11-05: elevated API errors</h1>
<ul class="comments">
  <li><b>ana</b>: Thanks for the update!</li>
  <li><b>guest_5521</b>: <script>alert(1)</script></li>
  <li><b>guest_7310</b>: nice page <img src=x onerror=alert(2)></li>
  <li><b>guest_0042</b>: <a href="javascript:alert(3)">click for details</a></li>
  <li><b>guest_9999</b>: </script><script>alert(4)</script></li>
  <li><b>guest_1234</b>: {{ 7*7 }} ${7*7} <svg onload=alert(5)></li>
  <li><b>bruno</b>: Still seeing 502s from sa-east-1.</li>
</ul>
</body></html>"""


def _hostile_content(tool_ids: set[str]) -> ExampleSession:
    external_id = "example-hostile-content"
    t = _Trace(
        external_id=external_id,
        rng=random.Random(f"{_SEED}:{external_id}"),
        tool_ids=tool_ids,
        session={
            "agent": "web-researcher",
            "model": "claude-sonnet-4-5",
            "context_window": 200_000,
            "started_at": "2026-11-06T11:00:00Z",
            "metadata": {"ticket": "SEC-88 <script>alert('metadata')</script>"},
        },
        system_tokens=3_200,
    )
    t.prompt(
        "Our status page comments show <script>alert(1)</script> in the feed. Can you fetch "
        "https://status.example.com/comments and tell me what's going on?",
        wait=0,
    )
    t.step(
        _Call(
            "fetch_url",
            {"url": "https://status.example.com/comments"},
            _HOSTILE_PAGE,
            seconds=1.8,
        ),
        text="Fetching the page.",
    )
    t.reply(
        "Someone is testing the comment form for stored XSS. The page contains, verbatim:\n\n"
        "- `<script>alert(1)</script>`\n- `<img src=x onerror=alert(2)>`\n"
        "- a link to `javascript:alert(3)`: [click for details](javascript:alert(3))\n"
        "- `</script><script>alert(4)</script>`, which breaks out of an inline script block\n"
        "- `{{ 7*7 }}` and `<svg onload=alert(5)>`, template and SVG probes\n\n"
        "If any of them executed in your browser, comment bodies are rendered unescaped."
    )
    t.prompt(
        "Grep our templates for |safe and mark_safe, please. Was <img src=x onerror=alert(2)> "
        "the one that fired?"
    )
    t.step(
        _Call(
            "grep",
            {"pattern": r"\|safe|mark_safe", "path": "templates"},
            "templates/status/comments.html:14:    "
            '<div class="body">{{ comment.body|safe }}</div>\n'
            "templates/status/base.html:9:  {{ banner_html|safe }}",
            seconds=0.5,
        )
    )
    t.reply(
        "Yes, very likely: `templates/status/comments.html` line 14 renders "
        "`{{ comment.body|safe }}`, so `<img src=x onerror=alert(2)>` runs in every visitor's "
        "browser. Drop `|safe` there (Django escapes by default) and check where "
        "`banner_html` in `base.html` comes from. Then delete the five probe comments."
    )
    return t.example()


if __name__ == "__main__":
    sys.exit(main())
