"""Project pages for admins and reviewers: ingest keys, the audit log; and reveal. (The
members page is team's, team/views.py.)

Every page finds the project among the user's own (404 otherwise), then asks
``access.require_role`` (403 below the role it needs).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from privacy import audit, reveal
from privacy.models import AuditAction
from sessions import access, selectors, services
from sessions.errors import ApiError
from sessions.models import ApiKey, Membership, Project, Role

AUDIT_PER_PAGE = 100


@dataclass(frozen=True)
class ProjectRow:
    project: Project
    role: str
    sessions: int

    @property
    def role_label(self) -> str:
        return Role(self.role).label

    @property
    def reviews(self) -> bool:
        return access.RANK[self.role] >= access.RANK[Role.PRIVACY_REVIEWER]

    @property
    def administers(self) -> bool:
        return self.role == Role.ADMIN


@login_required
@require_GET
def project_list(request: HttpRequest) -> HttpResponse:
    """The user's projects, their role in each, and the project pages that role opens."""
    projects = (
        selectors.projects_for_user(request.user)
        .annotate(session_count=Count("sessions"))
        .order_by("name")
    )
    roles = dict(
        Membership.objects.filter(user__pk=request.user.pk or 0).values_list("project_id", "role")
    )
    superuser = getattr(request.user, "is_superuser", False)
    rows = [
        ProjectRow(
            project=project,
            role=Role.ADMIN if superuser else roles[project.pk],
            sessions=project.session_count,
        )
        for project in projects
    ]
    return render(request, "sessions/projects.html", {"rows": rows})


def _project(request: HttpRequest, pk: int, role: str) -> Project:
    project = selectors.projects_for_user(request.user).filter(pk=pk).first()
    if project is None:
        raise Http404("No such project among yours")
    access.require_role(request.user, project, role)
    return project


@login_required
@require_http_methods(["GET", "POST"])
def key_list(request: HttpRequest, pk: int) -> HttpResponse:
    project = _project(request, pk, Role.ADMIN)
    issued = None
    status = 200
    if request.method == "POST":
        try:
            issued = services.project_key_create(
                actor=request.user, project=project, name=request.POST.get("name", "")
            )
        except ApiError as exc:
            flash.error(request, exc.message)
            status = 400
    keys = project.api_keys.order_by("-created_at")
    context = {"project": project, "keys": keys, "issued": issued}
    response = render(request, "sessions/keys.html", context, status=status)
    if issued is not None:
        # The raw key is in this one response: keep it out of every cache.
        response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def key_revoke(request: HttpRequest, pk: int, key_pk: int) -> HttpResponse:
    project = _project(request, pk, Role.ADMIN)
    api_key = ApiKey.objects.filter(project=project, pk=key_pk).select_related("project").first()
    if api_key is None:
        raise Http404("No such key")
    services.project_key_revoke(actor=request.user, api_key=api_key)
    flash.success(request, f"Key {api_key.prefix}… was revoked.")
    return redirect("sessions:keys", project.pk)


@login_required
@require_GET
def audit_list(request: HttpRequest, pk: int) -> HttpResponse:
    project = _project(request, pk, Role.PRIVACY_REVIEWER)
    events = audit.audit_events(project=project)
    page = Paginator(events, AUDIT_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "sessions/audit.html", {"project": project, "page": page})


@login_required
@require_GET
def audit_export(request: HttpRequest, pk: int) -> HttpResponse:
    project = _project(request, pk, Role.PRIVACY_REVIEWER)
    events = list(audit.audit_events(project=project))
    audit.audit_record(
        actor=request.user,
        action=AuditAction.EXPORT,
        project=project,
        target="audit-log",
        detail={"rows": len(events)},
    )
    response = HttpResponse(audit.audit_csv(events), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="audit-project-{project.pk}.csv"'
    return response


@login_required
@require_POST
def value_reveal(request: HttpRequest) -> HttpResponse:
    """htmx: the raw value of one masked occurrence, for a privacy reviewer with a reason."""
    try:
        index = int(request.POST.get("index", ""))
    except ValueError:
        return HttpResponse("index: required, a number", status=400, content_type="text/plain")
    try:
        revealed = reveal.value_reveal(
            user=request.user,
            target=request.POST.get("target", ""),
            index=index,
            reason=request.POST.get("reason", ""),
        )
    except ApiError as exc:
        if exc.status == 404:
            raise Http404(exc.message) from None
        return render(request, "sessions/_revealed.html", {"error": exc.message}, status=exc.status)
    response = render(request, "sessions/_revealed.html", {"revealed": revealed})
    response["Cache-Control"] = "no-store"
    return response
