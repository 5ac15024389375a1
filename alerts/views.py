"""The triage pages: the alert queue, one alert, the nav count, and project alert settings.

Reads go through alerts/selectors.py; every change goes through a service in
alerts/services.py (or alerts/webhooks.py) after the one role check in sessions/access.py.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages as flash
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from alerts import charts, selectors, services, webhooks
from alerts.forms import (
    MUTE_PRESETS,
    AlertSettingsForm,
    AssignForm,
    CommentForm,
    MuteForm,
    ResolveForm,
    WebhookEditForm,
    WebhookForm,
)
from alerts.models import (
    Alert,
    AlertRule,
    AlertSettings,
    AlertSeverity,
    AlertState,
    Webhook,
    WebhookDelivery,
)
from privacy import masking
from sessions import selectors as session_selectors
from sessions.access import has_role, require_role
from sessions.errors import BadRequest, Conflict, NotFound
from sessions.models import Project, Role
from team import selectors as team_selectors

ALERTS_PER_PAGE = 50
CHART_DAYS = (14, 30)


def _projects(request: HttpRequest) -> Any:
    return session_selectors.projects_for_user(request.user)


def _alert(request: HttpRequest, pk: int) -> Alert:
    try:
        alert = selectors.alert_get(projects=_projects(request), pk=pk)
    except NotFound:
        raise Http404("No such alert in your projects") from None
    # The page quotes its session: the first names found there are masked alone too.
    masking.names_scope_enter(project_id=alert.project_id, session_id=alert.session_id)
    return alert


def _back(request: HttpRequest, default: str) -> str:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return target
    return default


def _settings_projects(request: HttpRequest, projects: Any) -> list[Project]:
    """The projects whose alert settings the user may open (engineers and above)."""
    if getattr(request.user, "is_superuser", False):
        return list(projects.order_by("name")[:10])
    roles = [Role.ENGINEER, Role.PRIVACY_REVIEWER, Role.ADMIN]
    return list(
        projects.filter(memberships__user__pk=request.user.pk, memberships__role__in=roles)
        .order_by("name")
        .distinct()[:10]
    )


@login_required
@require_GET
def alert_list(request: HttpRequest) -> HttpResponse:
    projects = _projects(request)
    params = request.GET.copy()
    if "state" not in params:
        params["state"] = AlertState.OPEN  # the queue opens on what needs someone
    error = ""
    try:
        # triage starts at the top: the most severe first, unless the user sorts otherwise
        filters = selectors.AlertFilters.parse(params, default_sort="severity")
    except BadRequest as exc:
        error = exc.message
        filters = selectors.AlertFilters(state=AlertState.OPEN, sort="severity")
    found = selectors.alerts_filtered(projects=projects, filters=filters)
    page = Paginator(found, ALERTS_PER_PAGE).get_page(request.GET.get("page"))
    rows = list(page.object_list)
    spans = selectors.alert_span_urls(rows)
    days = 30 if request.GET.get("days") == "30" else 14
    counts = selectors.alerts_per_day(projects=projects, days=days)
    query = params.copy()
    query.pop("page", None)
    context = {
        "page": page,
        "rows": [(a, spans.get(a.pk)) for a in rows],
        "filters": filters,
        "error": error,
        "rules": AlertRule.choices,
        "states": AlertState.choices,
        "severities": AlertSeverity.choices,
        "sorts": list(selectors.SORTS),
        "projects": list(projects.order_by("name")[:200]),
        "assignees": selectors.assignee_names(projects=projects),
        "days": days,
        "chart_days": CHART_DAYS,
        "figure": charts.alerts_per_day(counts, labels=dict(AlertRule.choices)),
        "extra_query": query.urlencode(),
        "here": request.get_full_path(),
        "settings_projects": _settings_projects(request, projects),
    }
    return render(request, "alerts/alert_list.html", context)


@login_required
@require_POST
def alerts_acknowledge(request: HttpRequest) -> HttpResponse:
    """Bulk acknowledge: only alerts in projects where the user may triage."""
    ids = [int(v) for v in request.POST.getlist("alert") if v.isdecimal() and len(v) <= 18]
    allowed = [
        a.pk
        for a in Alert.objects.filter(project__in=_projects(request), pk__in=ids)
        if has_role(request.user, a.project_id, Role.ENGINEER)
    ]
    done = services.alerts_acknowledge(alert_ids=allowed, actor=request.user)
    if ids and not allowed:
        flash.error(request, "Acknowledging needs the engineer role in the project.")
    else:
        flash.success(request, f"Acknowledged {done} alert{'s' if done != 1 else ''}.")
    return redirect(_back(request, "alerts:list"))


@login_required
@require_GET
def alert_count(request: HttpRequest) -> HttpResponse:
    count = selectors.open_alert_count(projects=_projects(request))
    return render(request, "alerts/alert_list.html#nav-count", {"open_alert_count": count})


def _members(alert: Alert) -> Any:
    return (
        get_user_model()
        .objects.filter(memberships__project=alert.project_id)
        .order_by("username")
        .distinct()
    )


@login_required
def alert_detail(request: HttpRequest, pk: int) -> HttpResponse:
    alert = _alert(request, pk)
    span = selectors.alert_span_urls([alert]).get(alert.pk)
    context = {
        "alert": alert,
        "numbers": [(k.replace("_", " "), v) for k, v in alert.evidence["numbers"].items()],
        "rule_line": selectors.alert_rule_line(alert),
        "span_url": span,
        "events": alert.events.select_related("actor"),
        "can_triage": has_role(request.user, alert.project_id, Role.ENGINEER),
        "resolve_form": ResolveForm(),
        "mute_form": MuteForm(),
        "mute_presets": [(key, words) for key, (words, _) in MUTE_PRESETS.items()],
        "comment_form": CommentForm(),
        "assign_form": AssignForm(users=_members(alert), initial={"assignee": alert.assignee_id}),
        "deliveries": alert.deliveries.select_related("webhook")[:20],
        "alert_marks": team_selectors.alert_marks_for(
            alert=alert,
            user=request.user,
            can_mark=has_role(request.user, alert.project_id, Role.ENGINEER),
        ),
    }
    return render(request, "alerts/alert_detail.html", context)


@login_required
@require_POST
def alert_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    alert = _alert(request, pk)
    require_role(request.user, alert.project_id, Role.ENGINEER)
    user = request.user
    try:
        if action == "acknowledge":
            services.alert_acknowledge(alert_id=alert.pk, actor=user)
        elif action == "resolve":
            reason = request.POST.get("reason", "")
            services.alert_resolve(alert_id=alert.pk, reason=reason, actor=user)
        elif action == "mute":
            mute = MuteForm(request.POST)
            if not mute.is_valid():
                if "tz" in mute.errors:
                    raise BadRequest(str(mute.errors["tz"][0]))
                if "duration" in mute.errors:
                    raise BadRequest(f"duration: one of {', '.join(MUTE_PRESETS)}")
                raise BadRequest("until: give a date and time, or pick how long")
            services.alert_mute(alert_id=alert.pk, until=mute.cleaned_data["until"], actor=user)
        elif action == "assign":
            assign = AssignForm(request.POST, users=_members(alert))
            if not assign.is_valid():
                raise BadRequest("assignee: not a member of this project")
            services.alert_assign(
                alert_id=alert.pk, assignee=assign.cleaned_data["assignee"], actor=user
            )
        elif action == "comment":
            services.alert_comment(alert_id=alert.pk, text=request.POST.get("text", ""), actor=user)
        else:
            raise Http404("No such action")
    except (BadRequest, Conflict) as exc:
        flash.error(request, exc.message)
    else:
        flash.success(request, f"Alert {action}{'d' if action.endswith('e') else 'ed'}.")
    return redirect("alerts:detail", alert.pk)


# --- project settings ----------------------------------------------------------------------


def _project(request: HttpRequest, pk: int, role: str = Role.ADMIN) -> Project:
    project: Project | None = _projects(request).filter(pk=pk).first()
    if project is None:
        raise Http404("No such project")
    require_role(request.user, project, role)
    return project


@login_required
def project_settings(request: HttpRequest, pk: int) -> HttpResponse:
    """Thresholds for engineers and admins; e-mail recipients, webhooks and their deliveries
    for admins only."""
    project = _project(request, pk, Role.ENGINEER)
    admin = has_role(request.user, project, Role.ADMIN)
    if request.method == "POST" and request.POST.get("form") == "webhook" and not admin:
        require_role(request.user, project, Role.ADMIN)
    current = AlertSettings.objects.filter(project=project).first() or AlertSettings(
        project=project
    )
    form = AlertSettingsForm(
        request.POST if request.POST.get("form") == "thresholds" else None,
        instance=current,
        recipients=admin,
    )
    hook_form = WebhookForm(request.POST if request.POST.get("form") == "webhook" else None)
    if request.method == "POST" and request.POST.get("form") == "thresholds" and form.is_valid():
        webhooks.alert_settings_save(
            settings_row=form.save(commit=False), changed=form.changed_data, by=request.user
        )
        flash.success(
            request,
            "Alert thresholds saved; the sessions active in the last 30 days are being judged "
            "again by them in the background.",
        )
        return redirect("alerts:project-settings", project.pk)
    if request.method == "POST" and request.POST.get("form") == "webhook" and hook_form.is_valid():
        data = hook_form.cleaned_data
        try:
            webhooks.webhook_create(
                project=project,
                url=data["url"],
                secret=data["secret"],
                format=data["format"],
                rules=list(data["rules"]),
                by=request.user,
            )
        except BadRequest as exc:
            hook_form.add_error(None, exc.message)
        else:
            flash.success(request, "Webhook added.")
            return redirect("alerts:project-settings", project.pk)
    context = {
        "project": project,
        "admin": admin,
        "form": form,
        "hook_form": hook_form,
        "hooks": Webhook.objects.filter(project=project),
        "deliveries": WebhookDelivery.objects.filter(webhook__project=project).select_related(
            "webhook", "alert"
        )[:30],
    }
    return render(request, "alerts/project_settings.html", context)


@login_required
@require_POST
def webhook_delete(request: HttpRequest, pk: int, hook_pk: int) -> HttpResponse:
    project = _project(request, pk)
    if webhooks.webhook_delete(project=project, webhook_id=hook_pk, by=request.user):
        flash.success(request, "Webhook removed.")
    return redirect("alerts:project-settings", project.pk)


@login_required
def webhook_edit(request: HttpRequest, pk: int, hook_pk: int) -> HttpResponse:
    project = _project(request, pk)
    hook = get_object_or_404(Webhook, project=project, pk=hook_pk)
    initial = {"url": hook.url, "format": hook.format, "rules": hook.rules, "active": hook.active}
    form = WebhookEditForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            webhooks.webhook_update(
                project=project,
                webhook_id=hook.pk,
                url=data["url"],
                format=data["format"],
                rules=list(data["rules"]),
                active=data["active"],
                new_secret=data["new_secret"],
                by=request.user,
            )
        except BadRequest as exc:
            form.add_error(None, exc.message)
        else:
            flash.success(request, "Webhook saved.")
            return redirect("alerts:project-settings", project.pk)
    context = {"project": project, "hook": hook, "form": form}
    return render(request, "alerts/webhook_edit.html", context)


@login_required
@require_POST
def webhook_test(request: HttpRequest, pk: int, hook_pk: int) -> HttpResponse:
    project = _project(request, pk)
    try:
        webhooks.webhook_test_send(project=project, webhook_id=hook_pk, by=request.user)
    except NotFound:
        raise Http404("No such webhook in this project") from None
    flash.success(request, "Test delivery queued; its result shows in the delivery log below.")
    return redirect("alerts:project-settings", project.pk)
