"""The OpenAPI document at /api/v1/openapi.json is valid OpenAPI, checked by
openapi-spec-validator (the validator Swagger UI's own users run), and holds no key twice: a
JSON object with a repeated key (two "200" answers) parses in Python but breaks Swagger UI."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from openapi_spec_validator import OpenAPIV31SpecValidator


def _strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"keys given twice in one object: {repeated} (object keys: {keys})")
    return dict(pairs)


def _served_document(client: Client) -> dict[str, Any]:
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    return json.loads(response.content, object_pairs_hook=_strict_object)


@pytest.mark.django_db
def test_openapi_document_is_valid(client: Client) -> None:
    document = _served_document(client)
    assert document["openapi"].startswith("3.1")
    errors = [
        f"{'/'.join(map(str, error.path))}: {error.message[:300]}"
        for error in OpenAPIV31SpecValidator(document).iter_errors()
    ]
    assert errors == []


@pytest.mark.django_db
def test_feedback_export_documents_one_200_answer_in_ndjson(client: Client) -> None:
    responses = _served_document(client)["paths"]["/api/v1/feedback/export"]["get"]["responses"]
    assert sorted(responses) == ["200", "401"]
    assert list(responses["200"]["content"]) == ["application/x-ndjson"]


def test_strict_loader_refuses_a_key_given_twice() -> None:
    with pytest.raises(ValueError, match=r"keys given twice in one object: \['200'\]"):
        json.loads('{"200": {}, "401": {}, "200": {}}', object_pairs_hook=_strict_object)
