"""Benchmark: precision of the personal data scan on real developer traces, per kind.

Run: ``.venv/bin/python benchmarks/pii_real.py [--verbose]``. The last line printed is JSON:
``{"detections": ..., "findings": ..., "info": ..., "precision_pct": ..., "per_kind": {...},
"seconds": ...}``.

The traces are real sessions other people recorded and published (``benchmarks/data/
realtraces/``, sources and licences in its ``SOURCES.md``, held out from the tests) and the
corpus the tests read (``tests/fixtures/corpus/``). Every distinct value the detector found
in them was labelled once by reading its context (``benchmarks/data/pii_real_labels.jsonl``:
the file, the kind, a SHA-256 of the normalized value, ``person`` or ``not_person`` with a
category; never the value itself). Each detection is scored at the level the product gives it:

* ``finding`` (masked, listed, alerted on): a true positive when labelled ``person``, a false
  positive when ``not_person``; scored apart by confidence: ``high`` (a check digit, a pattern,
  a name a cue or a document marks) and ``review`` (a common first name followed by surnames,
  which the product lists for a reviewer to decide);
* ``info`` (looks like personal data, nobody's): counted apart; an ``info`` detection of a
  value labelled ``person`` is a miss (``person_as_info``).

Detections of values the labels do not know are counted as ``unlabelled`` and listed with
``--verbose``, to be labelled by reading them.

``--sessions [heldout|tuning]`` scores the labelled sessions of ``benchmarks/data/
pii_sessions/`` instead (real Claude Code and Codex sessions of public repositories, sources in
its ``SOURCES.md``): an exhaustive ground truth, each value a person's (``finding``), nobody's
(``info``) or no personal data at all (``not_personal``), written by a labeller apart from the
detector, split by repository before any tuning (held out when sha256("owner/name") starts
with 0-7; the repositories held out until the scan's errors on them were read, at stops 47,
48 and 49, are tuning since: ``READ_AFTER_MEASURING``). Every distinct value the scan reports
at level ``finding`` in a session is scored once: true when labelled ``finding``, false
otherwise (labelled ``info``/``not_personal``, or not in the ground truth at all,
``unlabelled``). Precision per kind (``precision``): a
percentage and its 90 % Wilson interval where the kind has at least 20 scored findings, the
counts below that ("4 of 5"), "n/a" where it has none; recall of the labelled real names,
e-mails and secrets.
``--import-labels FILE`` writes the labeller's file into the benchmark's, each value replaced
by its SHA-256 and a masked form.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._stats import wilson  # noqa: E402 - after the path insert above
from privacy.detect import pii  # noqa: E402

SETS = {
    "realtraces": ROOT / "benchmarks" / "data" / "realtraces",
    "corpus": ROOT / "tests" / "fixtures" / "corpus",
}
LABELS = ROOT / "benchmarks" / "data" / "pii_real_labels.jsonl"
SESSIONS = ROOT / "benchmarks" / "data" / "pii_sessions"
# The labeller's kinds for the scan's.
LABEL_KIND = {"person_name": "name"}
RECALL_KINDS = ("name", "email", "secret")
MIN_FOR_PRECISION = 20
NOT_TRACES = re.compile(
    r"(^|/)(LICEN[CS]E[^/]*|SOURCES\.md|MANIFEST\.json|manifest\.json|README\.md)$"
)
# Held out until the scan's false findings on them were read (stops 47, 48 and 49): tuning
# since, and the held-out half is sessions labelled after that.
READ_AFTER_MEASURING = frozenset(
    {
        "0anes0/verilog_simulasyonu-LSFL-",
        "0xRickx/Kangaroo_2.2.5",
        "7567491/Feishu_ClaudeCode",
        "Akash-Modi104/trading-bot",
        "AlexShchuka/mozgoslav",
        "AmbidextrousCoatie/league_analyzer",
        "andress722/CRM_ADMIN",
        "Aquaticat/Monochromatic",
        "Asphyksia/OpenCoder",
        "BillWan-zzzyyy/BillWan-zzzyyy.github.io",
        "bumpy-croc/ai-trading-bot",
        "chikachow/cyspbot",
        "ChrisGVE/MunsellSpace",
        "concord-consortium/codap",
        "design4pro/mcp-rag-server",
        "eitatech/gatomia-vscode",
        "entireio/auth-go",
        "entireio/git-sync",
        "entireio/skills",
        "EntityProcess/agentv",
        "Episk-pos/lenr.academy",
        "f/awesome-chatgpt-prompts",
        "Firedogs2x/Houdoku-2",
        "flop-labs/technocore-chat",
        "hasanabuzayed/mersal-kava",
        "Hoper-J/cpolar-connect",
        "Hornsyld/economic-bc-connector",
        "iDorgham/DocGen",
        "IngoS11/EmailBuddy",
        "j5ik2o/dotfiles",
        "jdx/mise",
        "JeffreyCA/azure-dev",
        "JobiJoba/SchaerbeekMunicipality",
        "Kocoro-lab/Shannon",
        "maorenxin/CopyTrading",
        "Monotoba/OpenPrintKit",
        "Ogekuri/G",
        "Ogekuri/useReq",
        "openbmc/bmcweb",
        "PackmindHub/context-evaluator",
        "pichsy/download-manager",
        "prjctimg/learn-p5",
        "procrypto/Personal_AI_Infrastructure",
        "Prometheus-AGS/prometheus-parking-lot-rs",
        "Python-AI-Solutions/agentic-neurodata-conversion",
        "robin-collins/gpt-crawler",
        "rpng/open_vins",
        "Singingkettle/ChangShuoRadioRecognition",
        "Smartagent-so/Personal_AI_Infrastructure",
        "stat-guy/imessage-mail",
        "twardoch/geminpy",
        "yixian-huang/cocli",
        "yutakobayashidev/repiq",
    }
)


def split_of(repo: str) -> str:
    """The half a repository's sessions belong to."""
    if repo in READ_AFTER_MEASURING:
        return "tuning"
    return "heldout" if hashlib.sha256(repo.encode()).hexdigest()[0] in "01234567" else "tuning"


# Keys whose values are record ids, never text a person wrote.
ID_KEY = re.compile(r"^(id|uuid|signature)$|(_id|Id|ID|_uuid|Uuid|UUID)$")


def _text(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")


def _records(text: str) -> list[Any]:
    """A whole JSON document, else every JSON value of every line (some lines hold two)."""
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    out = []
    for line in text.splitlines():
        line, at = line.strip(), 0
        while at < len(line):
            try:
                value, at = decoder.raw_decode(line, at)
            except json.JSONDecodeError:
                break
            out.append(value)
            while at < len(line) and line[at].isspace():
                at += 1
    return out


def _parsed(path: Path, text: str) -> list[Any]:
    # a compressed copy is read as the file it holds: "history.md.gz" as Markdown
    suffix = Path(path.stem).suffix if path.suffix == ".gz" else path.suffix
    if suffix == ".md":
        return [text]
    if suffix == ".txt":  # a recorded SSE stream: data lines are JSON, the rest text
        out: list[Any] = []
        for line in text.splitlines():
            if line.startswith("data:"):
                try:
                    out.append(json.loads(line[5:].strip()))
                    continue
                except json.JSONDecodeError:
                    pass
            if line.strip() and not line.startswith("event:"):
                out.append(line)
        return out
    if suffix in (".yaml", ".yml"):
        return []  # the corpus's YAML files are schema definitions, not traces
    return _records(text)


def _strings(value: Any, key: str = "") -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, key)
    elif isinstance(value, dict):
        for k, v in value.items():
            if not (isinstance(k, str) and ID_KEY.search(k)):
                yield from _strings(v, str(k))


def traces() -> Iterator[tuple[str, str, Path]]:
    for name, root in SETS.items():
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root).as_posix()
            if path.is_file() and not NOT_TRACES.search(relative):
                yield name, relative, path


def detections() -> Iterator[tuple[str, str, pii.Detection]]:
    """Every detection in every distinct string of every trace file."""
    for name, relative, path in traces():
        seen: set[str] = set()
        for record in _parsed(path, _text(path)):
            for text in _strings(record):
                if text in seen:
                    continue
                seen.add(text)
                for found in pii.scan(text):
                    yield name, relative, found


def _pct(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 2) if whole else None


def precision(true: int, findings: int) -> dict[str, Any]:
    """A kind's precision as the benchmarks report it: a percentage and its 90 % interval only
    from ``MIN_FOR_PRECISION`` scored findings up; below that the counts alone (``"4 of 5"``);
    "n/a" when the kind has no finding.

    >>> precision(18, 41)["precision_pct"], precision(4, 5), precision(0, 0)
    (43.9, {'precision_pct': None, 'counts': '4 of 5'}, {'precision_pct': 'n/a'})
    """
    if findings == 0:
        return {"precision_pct": "n/a"}
    if findings < MIN_FOR_PRECISION:
        return {"precision_pct": None, "counts": f"{true} of {findings}"}
    low, high = wilson(true, findings) or (0.0, 0.0)
    return {
        "precision_pct": _pct(true, findings),
        "ci90_pct": [round(100 * low, 1), round(100 * high, 1)],
    }


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _mask_label(value: str) -> str:
    """A label's value masked for the stored file: its first character and length."""
    return f"{value[:1]}… ({len(value)} chars)"


def import_labels(source: Path) -> int:
    """The labeller's file (values in clear) into ``pii_sessions/labels.jsonl`` (hashed): its
    sessions replace those of the same id and join the others."""
    target = SESSIONS / "labels.jsonl"
    kept = target.read_text().splitlines() if target.exists() else []
    out: list[str] = []
    for line in source.read_text().splitlines():
        session = json.loads(line)
        session["items"] = [
            {
                "kind": item["kind"],
                "value_sha256": _sha(item["value"]),
                "masked": _mask_label(item["value"]),
                "label": item["label"],
                "note": item.get("note", ""),
            }
            for item in session["items"]
        ]
        out.append(json.dumps(session, ensure_ascii=False))
    ids = {json.loads(line)["session"] for line in out}
    kept = [line for line in kept if line.strip() and json.loads(line)["session"] not in ids]
    target.write_text("\n".join([*kept, *out]) + "\n")
    print(f"{len(out)} sessions written to {target} ({len(kept)} kept)")
    return 0


def _session_findings(trace: Path) -> dict[tuple[str, str], tuple[pii.Detection, int]]:
    """Each distinct value the scan reports at level finding in a trace: (kind, normalized)
    -> (a detection of it, how many times)."""
    found: dict[tuple[str, str], tuple[pii.Detection, int]] = {}
    seen: set[str] = set()
    for record in _parsed(trace, _text(trace)):
        for text in _strings(record):
            if text in seen:
                continue
            seen.add(text)
            for d in pii.scan(text):
                if d.level != "finding":
                    continue
                key = (d.kind, d.normalized)
                first, count = found.get(key, (d, 0))
                found[key] = (first, count + 1)
    return found


def score_sessions(split: str, *, verbose: bool = False) -> dict[str, Any]:
    rows = [json.loads(line) for line in (SESSIONS / "labels.jsonl").read_text().splitlines()]
    for row in rows:
        if row["split"] != split_of(row["repo"]):
            raise SystemExit(f"{row['session']}: split {row['split']!r}, the rule says otherwise")
    sessions = [row for row in rows if row["split"] == split]
    counts: dict[str, Counter[str]] = {}
    recall: dict[str, Counter[str]] = {kind: Counter() for kind in RECALL_KINDS}
    false: list[tuple[int, str, str, str]] = []
    started = time.perf_counter()
    for session in sessions:
        labels = {item["value_sha256"]: item for item in session["items"]}
        found = _session_findings(SESSIONS / "traces" / session["trace"])
        reported: set[str] = set()
        for (kind, normalized), (d, count) in found.items():
            hashes = {_sha(d.value), _sha(normalized)}
            reported |= hashes
            label = next((labels[h] for h in hashes if h in labels), None)
            outcome = "unlabelled" if label is None else label["label"]
            outcome = "true" if outcome == "finding" else outcome
            counts.setdefault(kind, Counter())[outcome] += 1
            if outcome != "true":
                why = label["note"] if label else "not in the ground truth"
                false.append((count, session["session"], f"{kind} {pii.masked_preview(d)}", why))
        for item in session["items"]:
            if item["label"] == "finding" and item["kind"] in RECALL_KINDS:
                hit = item["value_sha256"] in reported
                recall[item["kind"]]["found" if hit else "missed"] += 1
                if verbose and not hit:
                    print(f"missed {session['session']}: {item['kind']} {item['masked']}")
    per_kind: dict[str, dict[str, Any]] = {}
    # Every kind the scan reported or the labels hold as a person's: one with no finding
    # reads "n/a", never a missing row.
    labelled_kinds = {
        item["kind"] for s in sessions for item in s["items"] if item["label"] == "finding"
    } | set(RECALL_KINDS)
    scan_kinds = {LABEL_KIND.get(kind, kind): kind for kind in counts}
    for kind in sorted(set(scan_kinds) | labelled_kinds):
        c = counts.get(scan_kinds.get(kind, kind), Counter())
        total = sum(c.values())
        per_kind[kind] = {
            "reported": total,
            "true": c["true"],
            "false_labelled": c["info"] + c["not_personal"],
            "false_unlabelled": c["unlabelled"],
            **precision(c["true"], total),
        }
    false.sort(reverse=True)
    if verbose:
        for count, name, what, why in false:
            print(f"false x{count} {name}: {what} ({why})")
    return {
        "split": split,
        "sessions": len(sessions),
        "labelled_values": sum(len(s["items"]) for s in sessions),
        "labelled_findings": sum(
            1 for s in sessions for item in s["items"] if item["label"] == "finding"
        ),
        "per_kind": per_kind,
        "recall": {
            kind: {
                **dict(c),
                "recall_pct": _pct(c["found"], c["found"] + c["missed"])
                if c["found"] + c["missed"]
                else "n/a",
            }
            for kind, c in recall.items()
        },
        "worst_false": [
            {"times": count, "session": name, "found": what, "why": why}
            for count, name, what, why in false[:5]
        ],
        "seconds": round(time.perf_counter() - started, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--verbose", action="store_true", help="list every error")
    parser.add_argument("--sessions", choices=("heldout", "tuning"), default=None)
    parser.add_argument("--import-labels", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.import_labels is not None:
        return import_labels(args.import_labels)
    if args.sessions is not None:
        print(json.dumps(score_sessions(args.sessions, verbose=args.verbose)))
        return 0
    labels = {
        (row["set"], row["file"], row["kind"], row["value_sha256"]): row
        for row in map(json.loads, LABELS.read_text().splitlines())
    }
    counts: dict[str, Counter[str]] = {}
    started = time.perf_counter()
    for name, relative, found in detections():
        digest = hashlib.sha256(found.normalized.encode()).hexdigest()
        label = labels.get((name, relative, found.kind, digest))
        truth = "person" if label is not None and label["label"] == "person" else "not_person"
        if label is None:
            outcome = "unlabelled"
        elif found.level == "info":
            outcome = f"info_{truth}"
        else:
            outcome = f"{'sure' if found.confidence == 'high' else 'review'}_{truth}"
        counts.setdefault(found.kind, Counter())[outcome] += 1
        if args.verbose and outcome in (
            "sure_not_person",
            "review_not_person",
            "info_person",
            "unlabelled",
        ):
            print(
                f"{outcome:20} {name}/{relative}: {found.kind} {pii.masked_preview(found)}"
                f" ({label['category'] if label else 'no label'})",
                file=sys.stderr,
            )
    seconds = time.perf_counter() - started
    per_kind = {}
    for kind, c in sorted(counts.items()):
        tp, fp = c["sure_person"], c["sure_not_person"]
        per_kind[kind] = {
            "findings": tp + fp,
            "true": tp,
            "false": fp,
            **precision(tp, tp + fp),
            "review": c["review_person"] + c["review_not_person"],
            "review_true": c["review_person"],
            "info": c["info_person"] + c["info_not_person"],
            "person_as_info": c["info_person"],
            "unlabelled": c["unlabelled"],
        }
    tp = sum(k["true"] for k in per_kind.values())
    fp = sum(k["false"] for k in per_kind.values())
    review = sum(k["review"] for k in per_kind.values())
    review_true = sum(k["review_true"] for k in per_kind.values())
    print(
        json.dumps(
            {
                "files": sum(1 for _ in traces()),
                "detections": sum(sum(c.values()) for c in counts.values()),
                "findings": tp + fp,
                "true_findings": tp,
                "false_findings": fp,
                "precision_pct": _pct(tp, tp + fp),
                "review": review,
                "review_true": review_true,
                "precision_with_review_pct": _pct(tp + review_true, tp + fp + review),
                "info": sum(k["info"] for k in per_kind.values()),
                "person_as_info": sum(k["person_as_info"] for k in per_kind.values()),
                "unlabelled": sum(k["unlabelled"] for k in per_kind.values()),
                "per_kind": per_kind,
                "seconds": round(seconds, 2),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
