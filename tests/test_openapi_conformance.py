"""Schemathesis over the OpenAPI document against a real `callscope serve`: no 500s, and no response
(status, content type, body) that the document does not describe."""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.live import start_server

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = start_server(tmp_path_factory.mktemp("schemathesis") / "data", virtual_number_purchase_paused="false")
    key = server.new_key("fuzz")
    headers = {"Authorization": f"Bearer {key}"}
    base = f"{server.url}/api/v1/public"
    # Some objects to find, so that generated ids hit real ones as well as missing ones.
    project = httpx.post(f"{base}/projects", json={"name": "Fuzz", "language": "en"}, headers=headers).json()["data"]
    httpx.post(f"{base}/operators", json={"name": "Fuzz Op", "project_id": project["id"]}, headers=headers)
    httpx.post(f"{base}/tags", json={"name": "fuzz", "project_id": project["id"]}, headers=headers)
    candidate = httpx.get(f"{base}/virtual_numbers/available", headers=headers).json()["data"][0]
    httpx.post(f"{base}/virtual_numbers/purchase", json={"phone_number": candidate["phone_number"]}, headers=headers)
    yield server, headers
    server.stop()


def test_every_operation_conforms_to_the_document(live):
    server, headers = live
    schema = schemathesis.openapi.from_url(f"{server.url}/api/v1/public/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    operations.sort(key=lambda op: op.method.upper() == "DELETE")  # destroy the seeded objects last
    assert len(operations) >= 22
    failures: dict[str, str] = {}
    for operation in operations:

        @given(case=operation.as_strategy(), existing=st.booleans())
        @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def run(case, existing):
            if existing and case.path_parameters and "id" in case.path_parameters:
                case.path_parameters["id"] = 1  # the first object of every kind exists (made above)
            case.call_and_validate(base_url=server.url, headers=headers, checks=CHECKS)

        try:
            run()
        except Exception as exc:  # collect every operation's failure, then report them together
            failures[operation.label] = str(exc)[:2000]
    assert not failures, "\n\n".join(f"{label}:\n{text}" for label, text in failures.items())
