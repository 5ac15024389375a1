"""Forms for the session pages: list filters and sorting."""

from __future__ import annotations

from django import forms
from django.http import QueryDict

from privacy import masking
from sessions import limits
from sessions.filters import PERIOD_LABELS, SORTS


class SessionFilterForm(forms.Form):
    q = forms.CharField(required=False, label="Search", max_length=limits.SEARCH_QUERY_MAX)
    project = forms.IntegerField(required=False, min_value=1, max_value=limits.ROW_ID_MAX)
    agent = forms.CharField(required=False, max_length=limits.AGENT_MAX)
    model = forms.CharField(required=False, max_length=limits.SESSION_MODEL_MAX)
    started_after = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    started_before = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    period = forms.ChoiceField(
        required=False,
        label="Updated",
        choices=[("", "Any time"), *PERIOD_LABELS.items()],
    )
    compacted = forms.ChoiceField(
        required=False,
        label="Compactions",
        choices=[("", "Any"), ("yes", "Compacted"), ("no", "Never compacted")],
    )
    min_fill = forms.IntegerField(required=False, label="Peak fill ≥ %", min_value=0, max_value=200)
    problems = forms.ChoiceField(
        required=False,
        label="Problems",
        choices=[
            ("", "Any"),
            ("failed", "Failed splice"),
            ("lost", "Lost rules"),
            ("lost_files", "Lost files only"),
            ("orphans", "Orphan tool pairs"),
            ("alerts", "Has open alerts"),
            ("pii", "Personal data in summary"),
            ("pii_open", "Personal data to review"),
            ("overflow", "Overflow"),
        ],
    )
    subagents = forms.BooleanField(required=False, label="Show subagents")
    sort = forms.CharField(required=False)

    # Why the query was not run (it is a person's identifier), or None: see clean_q.
    refusal: str | None = None

    def clean_q(self) -> str:
        """A query holding a person's identifier is dropped (search reads masked text only,
        so it could only confirm or deny one) and ``refusal`` says why; the page neither
        runs it nor puts it back in a link or in the search box."""
        q: str = self.cleaned_data.get("q") or ""
        self.refusal = masking.query_refusal(q) if q else None
        if self.refusal:
            if isinstance(self.data, QueryDict):
                data = self.data.copy()
                data["q"] = ""
                self.data = data
            return ""
        return q

    def clean_sort(self) -> str:
        value = self.cleaned_data.get("sort") or "-updated"
        return value if value.lstrip("-") in SORTS else "-updated"


class SessionDeleteForm(forms.Form):
    """The confirm step of deleting a session: the external id typed again, and why."""

    confirm = forms.CharField(
        label="Type the session's external id to confirm", max_length=limits.EXTERNAL_ID_MAX
    )
    reason = forms.CharField(
        label="Reason",
        max_length=limits.DELETE_REASON_MAX,
        widget=forms.Textarea(attrs={"rows": 2}),
    )

    def __init__(self, *args: object, external_id: str, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.external_id = external_id

    def clean_confirm(self) -> str:
        value: str = self.cleaned_data["confirm"]
        if value != self.external_id:
            raise forms.ValidationError("Does not match the session's external id.")
        return value


class ProjectPolicyForm(forms.Form):
    """A project's privacy policy: retention, masking at ingest, external models."""

    retention_days = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=36_500,
        label="Retention (days)",
        help_text="Sessions not updated for this long are deleted with everything derived "
        "from them, by a periodic purge. Empty keeps them forever.",
    )
    mask_at_ingest = forms.BooleanField(
        required=False,
        label="Mask personal data at ingest (store the masked text only)",
    )
    allow_external_models = forms.BooleanField(
        required=False,
        label="Allow sending trace content to an external model (e.g. the Anthropic API)",
    )
    judge_retention = forms.BooleanField(
        required=False,
        label="Check retention with an LLM judge where the offline check finds nothing "
        "(needs the switch above and ANTHROPIC_API_KEY)",
    )
