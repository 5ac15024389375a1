"""Forms of the privacy pages: the review queue's filters and a data-subject request."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet

from privacy.detect import pii
from privacy.models import FindingStatus, FindingWhere, SummaryDelta
from sessions import limits
from sessions.models import Project


class FindingFilterForm(forms.Form):
    """Filters of the privacy review queue."""

    project = forms.IntegerField(required=False, min_value=1, max_value=limits.ROW_ID_MAX)
    kind = forms.ChoiceField(required=False, choices=[("", "Any"), *[(k, k) for k in pii.KINDS]])
    where = forms.ChoiceField(required=False, choices=[("", "Anywhere"), *FindingWhere.choices])
    status = forms.ChoiceField(required=False, choices=[("", "Any"), *FindingStatus.choices])
    level = forms.ChoiceField(required=False, choices=[("", "Personal data"), ("info", "Info")])
    summary_delta = forms.ChoiceField(
        required=False, label="Summary", choices=[("", "Any"), *SummaryDelta.choices]
    )


class SubjectForm(forms.Form):
    """A data-subject request: which project, whose identifier, and (to export or erase) why.

    Sent by POST only, so the identifier never lands in a URL, a log line or browser history.
    """

    project = forms.ModelChoiceField(queryset=Project.objects.none(), empty_label=None)
    identifier = forms.CharField(
        max_length=limits.SUBJECT_IDENTIFIER_MAX,
        help_text="CPF, CNPJ, e-mail or phone, in any format.",
    )
    reason = forms.CharField(
        max_length=limits.SUBJECT_REASON_MAX,
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    delete_sessions = forms.BooleanField(
        required=False, label="Delete every session holding it (instead of anonymizing)"
    )

    def __init__(self, *args: Any, projects: QuerySet[Project], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["project"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = projects
