"""The project policy page (admins): retention with its periodic purge, masking at ingest,
and the switch that forbids sending content to an external model."""

from __future__ import annotations

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from sessions import access, selectors, services
from sessions.forms import ProjectPolicyForm
from sessions.models import Role


@login_required
@require_http_methods(["GET", "POST"])
def project_policy(request: HttpRequest, pk: int) -> HttpResponse:
    project = selectors.projects_for_user(request.user).filter(pk=pk).first()
    if project is None:
        raise Http404("No such project among yours")
    access.require_role(request.user, project, Role.ADMIN)
    initial = {
        "retention_days": project.retention_days,
        "mask_at_ingest": project.mask_at_ingest,
        "allow_external_models": project.allow_external_models,
        "judge_retention": project.judge_retention,
    }
    form = ProjectPolicyForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        services.project_policy_update(project=project, by=request.user, **form.cleaned_data)
        flash.success(request, "Policy saved.")
        return redirect("sessions:policy", pk=project.pk)
    return render(request, "sessions/policy.html", {"project": project, "form": form})
