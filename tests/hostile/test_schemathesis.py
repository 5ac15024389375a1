"""Schemathesis over the API's own OpenAPI schema, in the normal suite (so CI runs it): every
operation, generated inputs within and outside the schema, never a 5xx, and the answers fit
the documented responses. The example count per operation is bounded (SAWTOOTH_FUZZ_EXAMPLES,
default 30)."""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import status_code_conformance

from tests.factories import make_key, make_project

# Operations whose answer is documented as something else than JSON.
NOT_JSON = {("GET", "/api/v1/feedback/export"): "application/x-ndjson"}
EXAMPLES = int(os.environ.get("SAWTOOTH_FUZZ_EXAMPLES", "30"))

schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", get_wsgi_application())


@pytest.fixture
def key() -> str:
    return make_key(make_project(name="schemathesis"))


@pytest.fixture(autouse=True)
def _keep_the_test_connection() -> Any:
    # The WSGI handler closes the database connection after each request, which would end
    # the test's transaction; Django's own test client disconnects the same receivers.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_never_answers_5xx(case: Any, key: str) -> None:
    response = case.call(headers={"Authorization": f"Bearer {key}"})
    assert response.status_code < 500, (case.method, case.formatted_path, response.text[:500])
    content_type = response.headers.get("content-type") or response.headers.get("Content-Type")
    if isinstance(content_type, list):
        content_type = content_type[0] if content_type else ""
    documented = NOT_JSON.get((case.method, case.formatted_path))
    if documented and response.status_code == 200:
        assert str(content_type).startswith(documented), content_type
        return
    if not str(content_type or "").startswith("application/json"):
        # only a path no route matches (an id holding "/"), or a method the route does not
        # have, is answered outside the API's JSON
        assert response.status_code in (404, 405), (case.formatted_path, response.status_code)
        return
    case.validate_response(response, checks=[status_code_conformance])
    if response.status_code >= 400:
        assert isinstance(response.json().get("error"), str), response.text[:300]
