"""Which compaction policy to run: the cost-retention front and a recommendation with evidence.

Input: one :class:`Outcome` per (policy, session) — the money the session would have cost under
the policy, the retention of its facts, whether it overflowed the window or a splice failed, and
the facts it lost by kind. :func:`advise` returns the Pareto front of money (lower is better)
against retention (higher is better) and the recommendation (an :class:`AdviceDict`).

Rules, each in one place here:

* **Hard constraints.** A policy that overflowed the window or failed a splice on any session
  is never on the front, however cheap: it would have broken the agent.
* **The front.** Of the policies measured on every session, those that no other policy beats on
  both axes (cheaper and at least as retentive, or as cheap and more retentive).
* **The recommendation.** Of the front, the policy that saves the most money against the
  baseline (the observed policy) while its retention stays within :data:`RETENTION_TOLERANCE`
  of the baseline's. When none saves money, the baseline itself, with nothing saved.
* **Only when the evidence supports it.** No recommendation (``recommended`` None, and
  ``no_recommendation`` says why and how many sessions it would take) when fewer than
  :data:`ADVICE_MIN_SESSIONS` sessions back it, or when the saving's 90 % interval includes a
  loss. A policy that wrote no summary on a session has no retention there (None, never
  100 %); one with no retention on any session is never recommended.
* **The evidence.** ``usd_saved`` is the sum over sessions of baseline minus policy; its 90 %
  interval is a percentile bootstrap over sessions (resampled with replacement, savings summed),
  from a seeded generator, so the same outcomes give the same interval.
* **Facts by kind.** Every fact the evals check is put in one of :data:`KINDS` by
  :func:`fact_kind` (the extractor's kinds map straight across; an uploaded probe is classified
  by its words).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

__all__ = [
    "ADVICE_MIN_SESSIONS",
    "BOOTSTRAP_RESAMPLES",
    "KINDS",
    "OBSERVED",
    "RETENTION_TOLERANCE",
    "AdviceDict",
    "Outcome",
    "advise",
    "baseline_policies",
    "bootstrap_ci",
    "fact_kind",
    "pareto_front",
    "summary_drift",
]

AdviceKind = Literal["task", "constraint", "file", "identifier", "decision", "next_step"]
KINDS: tuple[AdviceKind, ...] = (
    "task",
    "constraint",
    "file",
    "identifier",
    "decision",
    "next_step",
)

# A recommended policy may keep up to 5 points of retention less than the observed policy
# (0.90 against 0.95 passes, 0.89 does not): the offline checks disagree with a careful reader
# on a few facts in a hundred, so a smaller gap is noise, not a loss.
RETENTION_TOLERANCE = 0.05
BOOTSTRAP_RESAMPLES = 2000
CI_LEVEL = 0.90
# Fewer sessions than this behind a saving is not evidence enough to recommend a policy.
ADVICE_MIN_SESSIONS = 10
OBSERVED = "observed"
OBSERVED_LABEL = "observed (what the harness did)"

# --- facts by kind ------------------------------------------------------------------------------

_PATHLIKE = re.compile(
    r"(?:^|[\s`'\"(])(?:[~.]?/)?(?:[\w.@+-]+/)+[\w.@+-]+|"
    r"\b[\w-]+\.(?:py|pyi|js|ts|tsx|jsx|json|ya?ml|toml|md|txt|rs|go|java|rb|ex|exs|sh|sql|"
    r"html|css|cfg|ini|lock|c|h|cpp|hpp|kt|swift|php|cs)\b"
)
_NEXT = re.compile(
    r"^\s*(?:next\b|then\b|todo\b|to do\b|after that\b|afterwards\b|remaining\b|"
    r"still need|próximo|proximo|em seguida|depois|falta)|\bTODO\b|\bnext step",
    re.IGNORECASE,
)
_DECIDED = re.compile(
    r"\b(?:decided|decide to|chose|chosen|we will|we'll|let's go with|let's use|let's|"
    r"going with|settled on|instead of|decidimos|vamos)\b",
    re.IGNORECASE,
)
# The words of a rule that outrank a decision's ("we decided we must never ...").
_RULE = re.compile(
    r"\b(?:must|never|always|don't|do not|dont|shouldn't|should not|nunca|sempre|não|nao)\b",
    re.IGNORECASE,
)
_ID_TOKEN = re.compile(
    r"^(?:\w+://\S+|[0-9a-f]{7,40}|#?\d[\d,._-]*|[A-Za-z]+-\d+[\w-]*|"
    r"[A-Za-z_][\w]*_[\w]+|[a-z]+[A-Z]\w+|[A-Z][a-z0-9]+[A-Z]\w+|[\w.-]*\d[\w.-]*)$"
)


def classify_text(text: str) -> AdviceKind:
    """The kind of a fact known only by its words (an uploaded probe).

    A path is a file; a single token that reads as an id (a hash, a number, a URL, a ticket
    key, a code name) an identifier; "next", "then", "TODO" a next step; "decided", "let's",
    "we will" a decision; anything else (usually "must", "never", "always", "don't") a rule.

    >>> [classify_text(t) for t in ("billing/api.py", "BILL-42", "a1b2c3d4e5",
    ...  "Next: run the migration", "We decided to use httpx", "Never log the card number")]
    ['file', 'identifier', 'identifier', 'next_step', 'decision', 'constraint']
    """
    stripped = text.strip().strip("`'\".,;:")
    if stripped and " " not in stripped:
        url = re.match(r"^\w+://", stripped)
        if not url and _PATHLIKE.search(f" {stripped}") and ("/" in stripped or "." in stripped):
            return "file"
        if _ID_TOKEN.match(stripped):
            return "identifier"
    if _NEXT.search(text):
        return "next_step"
    if _DECIDED.search(text) and not _RULE.search(text):
        return "decision"
    if _PATHLIKE.search(text) and not _RULE.search(text) and len(text.split()) <= 3:
        return "file"
    return "constraint"


def fact_kind(kind: str, text: str) -> AdviceKind:
    """One of :data:`KINDS` for a fact the evals checked (``RetentionItemDict`` kind and text).

    The extractor's kinds map straight across (``path`` → file, ``task``, ``identifier``); a
    rule or a decision that says what comes next is a next step; a probe is classified by its
    words (:func:`classify_text`).

    >>> fact_kind("path", "lib/a.ex"), fact_kind("task", "Migrate billing.")
    ('file', 'task')
    >>> fact_kind("constraint", "Then you must run the tests again.")
    'next_step'
    >>> fact_kind("probe", "do not change the public API")
    'constraint'
    """
    if kind == "path":
        return "file"
    if kind in ("task", "identifier"):
        return kind  # type: ignore[return-value]
    if kind in ("constraint", "decision"):
        if _NEXT.search(text):
            return "next_step"
        return kind  # type: ignore[return-value]
    return classify_text(text)


def lost_and_checked(
    items: Iterable[Mapping[str, Any]],
) -> tuple[dict[str, int], dict[str, int]]:
    """Facts lost and facts checked by kind, over the retention items of a run's spans.

    A fact is counted once per run (by kind and text), and lost when any span lost it.

    >>> lost, checked = lost_and_checked([{"kind": "path", "text": "a.py", "kept": False},
    ...     {"kind": "path", "text": "a.py", "kept": True},
    ...     {"kind": "task", "text": "t", "kept": True}])
    >>> lost["file"], checked["file"], checked["task"]
    (1, 1, 1)
    """
    verdicts: dict[tuple[AdviceKind, str], bool] = {}
    for item in items:
        key = (fact_kind(str(item.get("kind")), str(item.get("text", ""))), str(item.get("text")))
        verdicts[key] = verdicts.get(key, False) or not item.get("kept")
    lost: dict[str, int] = dict.fromkeys(KINDS, 0)
    checked: dict[str, int] = dict.fromkeys(KINDS, 0)
    for (kind, _), was_lost in verdicts.items():
        checked[kind] += 1
        lost[kind] += was_lost
    return lost, checked


# --- baselines ------------------------------------------------------------------------------------


def baseline_policies(reference: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The two simplest policies every advice compares against, at the limits of ``reference``
    (an experiment's first policy): clear old tool results only, and keep the last N turns
    without a summary (drop the oldest turns).

    >>> [p["stages"] for p in baseline_policies({"hard_limit": 9000, "soft_limit": 6000})]
    [['clear_tool_results'], ['drop_turns']]
    """
    keep = {
        k: reference[k]
        for k in ("soft_limit", "hard_limit", "context_window", "unit")
        if k in reference
    }
    keep_last = reference.get("keep_last", 6)
    return [
        {**keep, "stages": ["clear_tool_results"], "summarizer": "extractive"},
        {**keep, "keep_last": keep_last, "stages": ["drop_turns"], "summarizer": "extractive"},
    ]


# --- the front and the recommendation ------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One session under one policy. ``policy`` is the policy's label (the baseline's is
    :data:`OBSERVED`); ``usd`` what the session would have cost; ``retention`` the fraction of
    its facts kept (None when the policy wrote no summary there: nothing to have kept)."""

    policy: str
    session: str
    usd: float
    retention: float | None
    overflowed: bool = False
    failed_splice: bool = False
    agent: str = ""
    lost_by_kind: Mapping[str, int] = field(default_factory=dict)
    checked_by_kind: Mapping[str, int] = field(default_factory=dict)


class FrontRow(TypedDict):
    policy: dict[str, Any]
    label: str
    usd: float
    retention: float | None
    overflowed_sessions: int
    failed_splices: int
    on_front: bool
    retention_by_kind: dict[str, float | None]


class BaselineDict(TypedDict):
    policy: dict[str, Any]
    label: str
    usd: float
    retention: float | None


class NoRecommendationDict(TypedDict):
    """Why there is no recommendation, and how many sessions in all it would take."""

    reason: str
    sessions_needed: int | None  # None: more sessions would not make this saving certain


class RecommendedDict(TypedDict):
    policy: dict[str, Any]
    label: str
    usd_saved: float
    usd_saved_ci: list[float]
    retention: float | None
    sessions: int
    lost_by_kind: dict[str, int]
    worst_session: str | None


class AdviceDict(TypedDict):
    """What :func:`advise` returns (the API's shape, plus every policy's row in ``policies``)."""

    front: list[FrontRow]
    policies: list[FrontRow]
    recommended: RecommendedDict | None
    no_recommendation: NoRecommendationDict | None
    recommended_by_agent: dict[str, RecommendedDict | None]
    baseline: BaselineDict
    sessions: int
    tolerance: float


def pareto_front(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """Labels not dominated on (usd lower, retention higher), cheapest first.

    >>> pareto_front({"a": (1.0, 0.5), "b": (2.0, 0.9), "c": (2.0, 0.4), "d": (3.0, 0.9)})
    ['a', 'b']
    """
    front = []
    for label, (usd, ret) in points.items():
        dominated = any(
            (u <= usd and r >= ret) and (u < usd or r > ret)
            for other, (u, r) in points.items()
            if other != label
        )
        if not dominated:
            front.append(label)
    return sorted(front, key=lambda label: (points[label][0], -points[label][1], label))


def bootstrap_ci(
    values: Sequence[float], *, seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """90 % percentile interval of the sum of ``values``, resampled with replacement.

    >>> bootstrap_ci([1.0, 1.0, 1.0])
    (3.0, 3.0)
    >>> low, high = bootstrap_ci([0.5, 1.5, 1.0, 2.0], seed=1); low < 5.0 < high
    True
    """
    if not values:
        return (0.0, 0.0)
    rng = random.Random(seed)
    n = len(values)
    sums = sorted(sum(values[rng.randrange(n)] for _ in range(n)) for _ in range(resamples))
    tail = (1 - CI_LEVEL) / 2
    low = sums[int(tail * (resamples - 1))]
    high = sums[round((1 - tail) * (resamples - 1))]
    return (round(low, 6), round(high, 6))


def mean_retention(runs: Sequence[Outcome]) -> float | None:
    """The mean retention over the sessions where the policy wrote a summary, else None.

    >>> mean_retention([Outcome("p", "a", 1.0, None), Outcome("p", "b", 1.0, 0.8)])
    0.8
    >>> mean_retention([Outcome("p", "a", 1.0, None)]) is None
    True
    """
    known = [o.retention for o in runs if o.retention is not None]
    return round(sum(known) / len(known), 4) if known else None


def evidence_check(
    savings: Sequence[float], ci: tuple[float, float], min_sessions: int
) -> NoRecommendationDict | None:
    """Why a saving is not evidence enough to recommend (None when it is): fewer sessions
    than ``min_sessions`` back it, or its 90 % interval includes a loss. ``sessions_needed``
    is how many sessions in all it would take: the minimum, or, for a saving whose interval
    reaches below zero, the count at which the interval (narrowing as the square root of the
    sessions) would clear zero.

    >>> evidence_check([1.0] * 3, (3.0, 3.0), 10)["sessions_needed"]
    10
    >>> evidence_check([4.0, -1.0] * 6, (-0.7, 30.0), 10)["reason"]
    "the saving's 90 % interval includes a loss (-$0.70 to $30.00)"
    >>> evidence_check([2.0] * 12, (24.0, 24.0), 10) is None
    True
    """
    n = len(savings)
    if n < min_sessions:
        return {
            "reason": f"{n} session{'s' if n != 1 else ''} back it; at least {min_sessions} needed",
            "sessions_needed": min_sessions,
        }
    low, high = ci
    if low >= 0:
        return None
    total = sum(savings)
    needed = None
    if total > 0:
        half_width = max(total - low, 0.0)
        needed = max(n + 1, math.ceil(n * (half_width / total) ** 2))
    return {
        "reason": (f"the saving's 90 % interval includes a loss ({_usd(low)} to {_usd(high)})"),
        "sessions_needed": needed,
    }


def _usd(value: float) -> str:
    return f"-${-value:,.2f}" if value < 0 else f"${value:,.2f}"


def _by_policy(outcomes: Iterable[Outcome]) -> dict[str, dict[str, Outcome]]:
    grouped: dict[str, dict[str, Outcome]] = {}
    for o in outcomes:
        grouped.setdefault(o.policy, {})[o.session] = o
    return grouped


def _row(
    label: str, policy: Mapping[str, Any], runs: Sequence[Outcome], on_front: bool
) -> FrontRow:
    by_kind: dict[str, float | None] = {}
    for kind in KINDS:
        checked = sum(o.checked_by_kind.get(kind, 0) for o in runs)
        lost = sum(o.lost_by_kind.get(kind, 0) for o in runs)
        by_kind[kind] = round(1 - lost / checked, 4) if checked else None
    return {
        "policy": dict(policy),
        "label": OBSERVED_LABEL if label == OBSERVED else label,
        "usd": round(sum(o.usd for o in runs), 6),
        "retention": mean_retention(runs),
        "overflowed_sessions": sum(o.overflowed for o in runs),
        "failed_splices": sum(o.failed_splice for o in runs),
        "on_front": on_front,
        "retention_by_kind": by_kind,
    }


def _recommend(
    grouped: Mapping[str, Mapping[str, Outcome]],
    policies: Mapping[str, Mapping[str, Any]],
    sessions: Sequence[str],
    *,
    tolerance: float,
    seed: int,
    min_sessions: int = ADVICE_MIN_SESSIONS,
) -> tuple[RecommendedDict | None, NoRecommendationDict | None, list[FrontRow], list[FrontRow]]:
    complete = {
        label: [runs[s] for s in sessions]
        for label, runs in grouped.items()
        if all(s in runs for s in sessions)
    }
    # a policy with no retention anywhere (it wrote no summary) cannot claim to keep facts
    allowed = {
        label: (sum(o.usd for o in runs), retention)
        for label, runs in complete.items()
        if runs
        and not any(o.overflowed or o.failed_splice for o in runs)
        and (retention := mean_retention(runs) if label != OBSERVED else _base_retention(runs))
        is not None
    }
    front = pareto_front(allowed)
    rows = {
        label: _row(label, policies.get(label, {}), runs, label in front)
        for label, runs in complete.items()
    }
    base_runs = complete.get(OBSERVED, [])
    base_usd = sum(o.usd for o in base_runs)
    base_ret = _base_retention(base_runs)
    choice = OBSERVED
    best = 0.0
    for label in front:
        usd, ret = allowed[label]
        saved = base_usd - usd
        if ret >= base_ret - tolerance - 1e-12 and saved > best:
            choice, best = label, saved
    runs = complete.get(choice, [])
    base = {o.session: o.usd for o in base_runs}
    savings = [base.get(o.session, o.usd) - o.usd for o in runs]
    lost: dict[str, int] = {kind: sum(o.lost_by_kind.get(kind, 0) for o in runs) for kind in KINDS}
    measured = [o for o in runs if o.retention is not None]
    worst = min(measured, key=lambda o: (o.retention or 0.0, o.session), default=None)
    ci = bootstrap_ci(savings, seed=seed)
    recommended: RecommendedDict = {
        "policy": dict(policies.get(choice, {})),
        "label": OBSERVED_LABEL if choice == OBSERVED else choice,
        "usd_saved": round(sum(savings), 6),
        "usd_saved_ci": list(ci),
        "retention": mean_retention(runs),
        "sessions": len(runs),
        "lost_by_kind": lost,
        "worst_session": worst.session if worst is not None else None,
    }
    ordered = sorted(rows.values(), key=lambda r: (r["usd"], -(r["retention"] or 0.0), r["label"]))
    front_rows = [r for r in ordered if r["on_front"]]
    why = evidence_check(savings, ci, min_sessions)
    if why is not None:
        return None, why, front_rows, ordered
    return recommended, None, front_rows, ordered


def _base_retention(runs: Sequence[Outcome]) -> float:
    """The observed policy's retention to compare against: 1.0 where it wrote no summary
    (the harness never compacted, so it lost nothing), for the tolerance rule only."""
    known = mean_retention(runs)
    return 1.0 if known is None else known


def advise(
    outcomes: Sequence[Outcome],
    *,
    policies: Mapping[str, Mapping[str, Any]],
    tolerance: float = RETENTION_TOLERANCE,
    seed: int = 0,
    min_sessions: int = ADVICE_MIN_SESSIONS,
) -> AdviceDict:
    """The front, the recommendation overall and per agent, and the baseline.

    Sessions compared are the baseline's (:data:`OBSERVED`); a policy not measured on every one
    of them is left out of the front. ``policies`` gives each label's policy dict.

    >>> out = [Outcome("observed", "s1", 2.0, 0.9), Outcome("observed", "s2", 2.0, 0.9),
    ...        Outcome("cheap", "s1", 1.0, 0.88), Outcome("cheap", "s2", 1.0, 0.88),
    ...        Outcome("broken", "s1", 0.1, 1.0, overflowed=True),
    ...        Outcome("broken", "s2", 0.1, 1.0)]
    >>> advice = advise(out, policies={"cheap": {"hard_limit": 9000}}, min_sessions=2)
    >>> [r["label"] for r in advice["front"]], advice["recommended"]["usd_saved"]
    (['cheap', 'observed (what the harness did)'], 2.0)
    >>> advice["recommended"]["policy"], advice["recommended"]["usd_saved_ci"]
    ({'hard_limit': 9000}, [2.0, 2.0])
    """
    grouped = _by_policy(outcomes)
    sessions = sorted(grouped.get(OBSERVED, {}))
    recommended, why, front, rows = _recommend(
        grouped, policies, sessions, tolerance=tolerance, seed=seed, min_sessions=min_sessions
    )
    by_agent: dict[str, RecommendedDict | None] = {}
    agents = sorted({o.agent for o in grouped.get(OBSERVED, {}).values()})
    for agent in agents:
        mine = [s for s in sessions if grouped[OBSERVED][s].agent == agent]
        by_agent[agent], _, _, _ = _recommend(
            grouped, policies, mine, tolerance=tolerance, seed=seed, min_sessions=min_sessions
        )
    base = next((r for r in rows if r["label"] == OBSERVED_LABEL), None)
    return {
        "front": front,
        "policies": rows,
        "recommended": recommended,
        "no_recommendation": why,
        "recommended_by_agent": by_agent,
        "baseline": {
            "policy": dict(policies.get(OBSERVED, {})),
            "label": OBSERVED_LABEL,
            "usd": base["usd"] if base else 0.0,
            "retention": base["retention"] if base else None,
        },
        "sessions": len(sessions),
        "tolerance": tolerance,
    }


# --- drift: a summary of a summary ------------------------------------------------------------


class DriftRow(TypedDict):
    """What one summary lost of the facts the summary before it still held."""

    seq: int
    previous_seq: int
    carried: int
    lost: int
    lost_fraction: float | None
    lost_by_kind: dict[str, int]


def summary_drift(spans: Sequence[tuple[int, Sequence[Mapping[str, Any]]]]) -> list[DriftRow]:
    """For each summary after the first: of the facts the previous summary kept, how many this
    one lost, and of which kind. ``spans`` are (seq, retention items) of a run's successive
    summaries, in order; a fact is its kind and text.

    >>> first = [{"kind": "path", "text": "a.py", "kept": True},
    ...          {"kind": "constraint", "text": "Never push.", "kept": True}]
    >>> second = [{"kind": "path", "text": "a.py", "kept": False},
    ...           {"kind": "constraint", "text": "Never push.", "kept": True}]
    >>> row = summary_drift([(10, first), (30, second)])[0]
    >>> row["carried"], row["lost"], row["lost_fraction"], row["lost_by_kind"]["file"]
    (2, 1, 0.5, 1)
    """
    rows: list[DriftRow] = []
    previous: tuple[int, set[tuple[str, str]]] | None = None
    for seq, items in spans:
        kept = {(str(i.get("kind")), str(i.get("text"))) for i in items if i.get("kept")}
        lost_now = {(str(i.get("kind")), str(i.get("text"))) for i in items if not i.get("kept")}
        if previous is not None:
            before_seq, carried = previous
            dropped = carried & lost_now
            by_kind: dict[str, int] = dict.fromkeys(KINDS, 0)
            for kind, text in dropped:
                by_kind[fact_kind(kind, text)] += 1
            rows.append(
                {
                    "seq": seq,
                    "previous_seq": before_seq,
                    "carried": len(carried),
                    "lost": len(dropped),
                    "lost_fraction": round(len(dropped) / len(carried), 4) if carried else None,
                    "lost_by_kind": by_kind,
                }
            )
        previous = (seq, kept)
    return rows
