"""Forms for the session pages: list filters and sorting."""

from __future__ import annotations

from django import forms

from sessions.filters import PERIOD_LABELS, SORTS


class SessionFilterForm(forms.Form):
    q = forms.CharField(required=False, label="Search", max_length=200)
    project = forms.IntegerField(required=False, min_value=1)
    agent = forms.CharField(required=False, max_length=200)
    model = forms.CharField(required=False, max_length=200)
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
            ("orphans", "Orphan tool pairs"),
            ("alerts", "Has open alerts"),
        ],
    )
    sort = forms.CharField(required=False)

    def clean_sort(self) -> str:
        value = self.cleaned_data.get("sort") or "-updated"
        return value if value.lstrip("-") in SORTS else "-updated"
