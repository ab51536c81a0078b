"""Fuzzing the form fields of POST /recordings: whatever text arrives, the answer is 2xx or 4xx in the spec's
shape, never 500, and a stored recording holds only what its columns take (on PostgreSQL the database
itself would refuse anything else; on SQLite the test checks the row)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import String, select

from callscope.catalog.tables import Recording
from callscope.validation import LANGUAGE_TAG
from tests.api.conftest import catalog_on_both

EXAMPLES = 40  # per catalog: a few seconds each


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_settings(request) -> dict:
    return catalog_on_both(request)


@pytest.fixture
def store_settings() -> dict:
    return {"store": "sqlite"}


# Any text, with what breaks databases and tables well represented: NUL and other control characters,
# lengths around the columns' sizes, characters outside the BMP.
# (surrogates left out: no client can encode them, so they never reach the server)
_char = st.characters(codec="utf-8")
_nasty = st.sampled_from(["\x00", "\x1b", "\n", "\t", "\x7f", "\x85", " ", "é", "😀", "-", "x"])
_text = st.one_of(
    st.text(_char, max_size=40),
    st.text(st.one_of(_nasty, _char), max_size=20),
    st.builds(lambda c, n, tail: c * n + tail, st.sampled_from(["a", "é", " "]),
              st.sampled_from([15, 16, 17, 35, 36, 37, 63, 64, 65, 254, 255, 256, 300]), st.text(_char, max_size=2)),
)
_language = st.one_of(st.sampled_from(["en", "EN-us", "zh-Hant-TW", "de-CH-1901", "zz-notalang-verylong"]), _text)
_fields = st.fixed_dictionaries({}, optional={
    "name": _text, "external_id": _text, "language": _language, "recording_source": _text,
    "called_at": st.one_of(st.sampled_from(["2026-01-01T10:00:00Z", "9999-12-31T23:59:59-23:59", ""]), _text),
    "operator_id": st.one_of(st.just("1"), _text), "conversation_id": _text,
    "tag_ids[]": st.lists(st.one_of(st.just("1"), _text), max_size=3),
})


def _column_violations(row: Recording) -> list[str]:
    out = []
    for column in Recording.__table__.columns:
        value = getattr(row, column.key)
        if isinstance(value, str):
            if "\x00" in value:
                out.append(f"{column.key} holds NUL")
            if isinstance(column.type, String) and column.type.length and len(value) > column.type.length:
                out.append(f"{column.key} is {len(value)} characters, its column {column.type.length}")
    return out


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(fields=_fields, filename=st.one_of(st.just("call.wav"), _text))
async def test_any_form_fields_give_a_4xx_or_a_row_the_database_takes(client, admin, wav, project, runtime,
                                                                        fields, filename):
    data = {"project_id": str(project["id"]), **fields}
    resp = await client.post("/recordings", data=data, headers=admin,
                             files={"file": (filename, wav.read_bytes(), "application/octet-stream")})
    assert resp.status_code < 500, resp.text
    body = resp.json()
    if resp.status_code == 422:
        assert set(body) == {"errors"} and body["errors"] and all(isinstance(e, str) for e in body["errors"])
    elif resp.status_code >= 400:
        assert set(body) == {"error"} and isinstance(body["error"], str)
    else:
        assert resp.status_code in (200, 201) and set(body) == {"data"}
        with runtime.catalog.session() as session:
            row = session.scalar(select(Recording).where(Recording.public_id == body["data"]["public_id"]))
        assert _column_violations(row) == []
        assert re.search(LANGUAGE_TAG, row.language), row.language
