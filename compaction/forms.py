"""Forms to start replays and experiments, with defaults scaled to the session's window."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet

from compaction import selectors
from compaction.engine import replay as engine_replay
from compaction.engine.names import Stage, SummarizerName, Unit
from sessions import limits
from sessions.models import AgentSession, Project

# Labels for the engine's names (compaction/engine/names.py): the values live there once.
UNITS = [
    (Unit.TURN.value, "Turn boundaries (before a user prompt)"),
    (Unit.STEP.value, "Step boundaries (also inside a long turn, before a model call)"),
]
STAGE_CHOICES = [
    (f"{Stage.CLEAR_TOOL_RESULTS},{Stage.SUMMARIZE}", "Clear old tool results, then summarize"),
    (Stage.CLEAR_TOOL_RESULTS.value, "Clear old tool results only"),
    (Stage.SUMMARIZE.value, "Summarize only"),
    (
        f"{Stage.CLEAR_TOOL_RESULTS},{Stage.DROP_TURNS}",
        "Clear old tool results, then drop the oldest turns",
    ),
    (Stage.SLIDING_WINDOW.value, "Sliding window (last turns only)"),
]
SUMMARIZERS = [
    (SummarizerName.EXTRACTIVE.value, "Offline extractive (deterministic, no network)"),
    (SummarizerName.ANTHROPIC.value, "Anthropic Messages API (sends content out)"),
    (
        SummarizerName.SERVER_COMPACTION.value,
        "Anthropic server-side compaction (sends content out)",
    ),
]


# No context window comes near this; a bound keeps every number storable and computable.
LIMIT_MAX = 100_000_000


def _int_list(value: str, field: str) -> list[int]:
    try:
        numbers = [int(part.replace("_", "").strip()) for part in value.split(",") if part.strip()]
    except ValueError:
        raise forms.ValidationError(f"{field}: whole numbers separated by commas") from None
    if not numbers or any(n <= 0 for n in numbers):
        raise forms.ValidationError(f"{field}: give at least one positive number")
    if any(n > LIMIT_MAX for n in numbers):
        raise forms.ValidationError(f"{field}: at most {LIMIT_MAX:,} each")
    return numbers


class PolicyForm(forms.Form):
    soft_limit = forms.IntegerField(
        min_value=1,
        max_value=LIMIT_MAX,
        help_text="Above it, old tool results are cleared (cheap).",
    )
    hard_limit = forms.IntegerField(
        min_value=1,
        max_value=LIMIT_MAX,
        help_text="Above it, the middle of the history is summarized.",
    )
    keep_last = forms.IntegerField(
        min_value=1, max_value=1000, initial=6, help_text="Newest turns kept verbatim."
    )
    pin_head = forms.BooleanField(
        required=False, initial=True, help_text="Keep the first prompt verbatim."
    )
    unit = forms.ChoiceField(
        choices=UNITS,
        initial="turn",
        label="Cut at",
        help_text="Agents that run one prompt for hours need step boundaries to compact at all.",
    )
    step_fallback = forms.BooleanField(
        required=False,
        initial=True,
        label="Fall back to step boundaries",
        help_text="When a turn is the whole history, cut between model calls; a tool call "
        "always stays with its result.",
    )
    stages = forms.ChoiceField(choices=STAGE_CHOICES, initial=STAGE_CHOICES[0][0])
    summarizer = forms.ChoiceField(choices=SUMMARIZERS, initial="extractive")

    def __init__(self, *args: Any, session: AgentSession, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        window = selectors.session_window(session)[0]
        analysis = getattr(session, "analysis", None)
        # The peak the session reached: limits below it make the first replay compact (a
        # share of the window would never fire on a session that stayed well below it).
        self.peak: int | None = analysis.peak_context_tokens if analysis else None
        if self.peak:
            soft, hard = engine_replay.limits_below_peak(self.peak, window)
        else:
            soft, hard = int(window * 0.45), int(window * 0.6)
        self.fields["soft_limit"].initial = soft
        self.fields["hard_limit"].initial = hard
        self.window = window
        # Said only where the limits shown are these defaults (a span page may prefill others).
        prefilled = "soft_limit" in self.initial or "hard_limit" in self.initial
        self.peak_note = (
            f"This session peaked at {self.peak:,} tokens; these limits ({soft:,} soft, "
            f"{hard:,} hard) compact it."
            if self.peak and not prefilled and not self.is_bound
            else ""
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        soft, hard = data.get("soft_limit"), data.get("hard_limit")
        if soft and hard and soft > hard:
            self.add_error("soft_limit", "The soft limit must not exceed the hard limit.")
        return data

    def policy(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "soft_limit": data["soft_limit"],
            "hard_limit": data["hard_limit"],
            "keep_last": data["keep_last"],
            "pin_head": data["pin_head"],
            "unit": data["unit"],
            "step_fallback": data["step_fallback"],
            "stages": data["stages"].split(","),
            "summarizer": data["summarizer"],
            "context_window": self.window,
        }


class ExperimentForm(forms.Form):
    project = forms.ModelChoiceField(queryset=Project.objects.none())
    name = forms.CharField(max_length=limits.EXPERIMENT_NAME_MAX, initial="Policy grid")
    hard_limits = forms.CharField(
        initial="80000, 120000, 160000",
        help_text="Comma-separated; the soft limit is 75% of each.",
    )
    keep_lasts = forms.CharField(initial="4, 8", label="Keep last")
    unit = forms.ChoiceField(choices=UNITS, initial="step", label="Cut at")
    stages = forms.ChoiceField(choices=STAGE_CHOICES, initial=STAGE_CHOICES[0][0])
    summarizer = forms.ChoiceField(choices=SUMMARIZERS, initial="extractive")
    agent = forms.CharField(
        required=False, max_length=limits.AGENT_MAX, help_text="Only sessions of this agent."
    )
    sessions = forms.IntegerField(
        min_value=1, max_value=200, initial=20, help_text="Most recent sessions to replay."
    )
    baselines = forms.BooleanField(
        required=False,
        initial=True,
        label="Compare with the baselines",
        help_text="Also replay clearing old tool results only, and keeping the last turns "
        "without a summary, so the advice weighs every policy against the simplest ones.",
    )

    def __init__(self, *args: Any, projects: QuerySet[Project], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["project"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = projects
        if projects.count() == 1:
            field.initial = projects.first()

    def clean_hard_limits(self) -> list[int]:
        return _int_list(self.cleaned_data["hard_limits"], "Hard limits")

    def clean_keep_lasts(self) -> list[int]:
        return _int_list(self.cleaned_data["keep_lasts"], "Keep last")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        grid = len(data.get("hard_limits") or []) * len(data.get("keep_lasts") or [])
        if grid > 24:
            raise forms.ValidationError(f"{grid} policies is too many; at most 24.")
        return data

    def policies(self) -> list[dict[str, Any]]:
        data = self.cleaned_data
        return [
            {
                "soft_limit": int(hard * 0.75),
                "hard_limit": hard,
                "keep_last": keep,
                "unit": data["unit"],
                "stages": data["stages"].split(","),
                "summarizer": data["summarizer"],
            }
            for hard in data["hard_limits"]
            for keep in data["keep_lasts"]
        ]

    def chosen_sessions(self) -> QuerySet[AgentSession]:
        data = self.cleaned_data
        chosen = AgentSession.objects.filter(project=data["project"])
        if data.get("agent"):
            chosen = chosen.filter(agent=data["agent"])
        return chosen.order_by("-updated_at")[: data["sessions"]]
