"""Forms for the alert pages: project thresholds, a new webhook, and triage actions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django import forms
from django.utils import timezone

from alerts.models import THRESHOLD_FIELDS, AlertRule, AlertSettings, WebhookFormat
from sessions import limits


class AlertSettingsForm(forms.ModelForm[AlertSettings]):
    disabled_rules = forms.MultipleChoiceField(
        required=False,
        choices=AlertRule.choices,
        widget=forms.CheckboxSelectMultiple,
        label="Rules switched off",
    )

    class Meta:
        model = AlertSettings
        fields = [*THRESHOLD_FIELDS, "email_recipients"]
        labels = {
            "storm_compactions": "Storm: K compactions",
            "storm_window_minutes": "Storm: within W minutes of trace time",
            "repeated_compaction_count": "Repeated compaction: N compactions per session",
            "thrash_compactions": "Thrash: K compactions",
            "thrash_window_calls": "Thrash: within W model calls",
            "near_overflow_percent": "Near overflow: % of the window",
            "email_recipients": "E-mail new and reopened alerts to",
        }
        help_texts = {
            "storm_compactions": "",
            "storm_window_minutes": "",
            "repeated_compaction_count": "",
            "thrash_compactions": "",
            "thrash_window_calls": "",
            "near_overflow_percent": "",
        }
        widgets = {"email_recipients": forms.TextInput(attrs={"placeholder": "oncall@example.com"})}

    def __init__(self, *args: Any, recipients: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not recipients:  # who gets alert e-mails is the admins' to see and change
            del self.fields["email_recipients"]

    def clean_email_recipients(self) -> str:
        value: str = self.cleaned_data.get("email_recipients") or ""
        field = forms.EmailField()
        addresses = [a.strip() for a in value.split(",") if a.strip()]
        for address in addresses:
            field.clean(address)
        return ", ".join(addresses)


class WebhookForm(forms.Form):
    url = forms.URLField(label="URL", max_length=500, assume_scheme="https")
    secret = forms.CharField(min_length=16, max_length=200, widget=forms.PasswordInput)
    format = forms.ChoiceField(choices=WebhookFormat.choices, initial="json")
    rules = forms.MultipleChoiceField(
        required=False,
        choices=AlertRule.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every rule.",
    )


class WebhookEditForm(forms.Form):
    url = forms.URLField(label="URL", max_length=500, assume_scheme="https")
    format = forms.ChoiceField(choices=WebhookFormat.choices)
    rules = forms.MultipleChoiceField(
        required=False,
        choices=AlertRule.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every rule.",
    )
    active = forms.BooleanField(required=False, label="Active (deliver alerts)")
    new_secret = forms.CharField(
        required=False,
        min_length=16,
        max_length=200,
        label="New secret",
        widget=forms.PasswordInput,
        help_text="Leave empty to keep the current secret; fill in to rotate it.",
    )


class ResolveForm(forms.Form):
    reason = forms.CharField(max_length=limits.RESOLVE_REASON_MAX)


# The mute presets, in the words their buttons say: the common answers to "mute for how long".
MUTE_PRESETS: dict[str, tuple[str, timedelta]] = {
    "1h": ("1 h", timedelta(hours=1)),
    "8h": ("8 h", timedelta(hours=8)),
    "1d": ("1 day", timedelta(days=1)),
    "1w": ("1 week", timedelta(weeks=1)),
}


class MuteForm(forms.Form):
    """A preset ``duration`` from now, or ``until`` as the viewer typed it (a datetime-local:
    no zone), read in ``tz``: the browser's IANA zone, filled in by static/js/times.js.
    Without it (no JavaScript) it is read as UTC, which the label then says."""

    duration = forms.ChoiceField(
        required=False, choices=[("", "")] + [(k, v[0]) for k, v in MUTE_PRESETS.items()]
    )
    until = forms.DateTimeField(
        required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
    tz = forms.CharField(
        required=False, max_length=64, widget=forms.HiddenInput(attrs={"data-tz": ""})
    )

    def clean_tz(self) -> ZoneInfo:
        name: str = self.cleaned_data.get("tz") or "UTC"
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise forms.ValidationError(f"tz: unknown time zone {name!r}") from None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        until, zone = data.get("until"), data.get("tz")
        if data.get("duration"):
            data["until"] = timezone.now() + MUTE_PRESETS[data["duration"]][1]
        elif isinstance(until, datetime) and isinstance(zone, ZoneInfo):
            data["until"] = local_to_utc(until.replace(tzinfo=None), zone)
        elif "until" not in self.errors:
            self.add_error("until", "give a date and time, or pick how long")
        return data


def local_to_utc(naive: datetime, zone: ZoneInfo) -> datetime:
    """A wall-clock time in ``zone`` as the UTC moment it names (the earlier one when a
    clock change makes it ambiguous; a time skipped by one is moved past the gap)."""
    return naive.replace(tzinfo=zone).astimezone(UTC)


class CommentForm(forms.Form):
    text = forms.CharField(
        max_length=limits.ALERT_COMMENT_MAX, widget=forms.Textarea(attrs={"rows": 2})
    )


class AssignForm(forms.Form):
    assignee: forms.ModelChoiceField[Any] = forms.ModelChoiceField(
        queryset=None, required=False, empty_label="Nobody"
    )

    def __init__(self, *args: Any, users: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["assignee"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = users
