"""Saved filters of the sessions list: per user, keeping only the list's own parameters."""

from __future__ import annotations

import pytest
from django.test import Client

from team import services
from team.models import SavedFilter
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_saved_filters_are_per_user_and_keep_only_list_parameters(
    client_in: Client, member, project
):
    client_in.post("/filters/", {"name": "hot", "query": "period=7d&min_fill=90&page=4&x=1"})
    saved = SavedFilter.objects.get()
    assert (saved.user, saved.query) == (member, "period=7d&min_fill=90")
    assert 'href="?period=7d&amp;min_fill=90"' in client_in.get("/").content.decode()
    stranger = Client()
    stranger.force_login(make_user(project=project))
    assert "hot" not in stranger.get("/").content.decode().split("Saved:")[-1][:200]
    assert not services.saved_filter_delete(user=make_user(project=project), filter_id=saved.pk)
    client_in.post(f"/filters/{saved.pk}/delete/")
    assert not SavedFilter.objects.exists()
