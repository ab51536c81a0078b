"""Pagination helpers of the spec's Limits (used by the recordings list)."""

from __future__ import annotations

import falcon.testing
import pytest

from callscope.api.pagination import PageRequest, page_request
from callscope.errors import ValidationFailed


def request(query: str):
    return falcon.testing.create_asgi_req(path="/x", query_string=query)


@pytest.mark.parametrize(("query", "page", "per_page"), [
    ("", 1, 20), ("page=3", 3, 20), ("per_page=50", 1, 50), ("per_page=100", 1, 100), ("per_page=1000", 1, 100),
    ("page=2&per_page=5", 2, 5),
])
def test_defaults_and_cap(query, page, per_page):
    assert page_request(request(query)) == PageRequest(page, per_page)


@pytest.mark.parametrize(("query", "message"), [
    ("page=0", "page must be greater than or equal to 1"),
    ("page=-1", "page must be greater than or equal to 1"),
    ("page=x", "page must be an integer"),
    ("per_page=0", "per_page must be greater than or equal to 1"),
    ("per_page=abc", "per_page must be an integer"),
])
def test_invalid_values_are_422(query, message):
    with pytest.raises(ValidationFailed) as exc:
        page_request(request(query))
    assert exc.value.errors == [message]


@pytest.mark.parametrize(("total", "per_page", "pages"), [(0, 20, 0), (1, 20, 1), (20, 20, 1), (21, 20, 2),
                                                          (100_000, 100, 1000)])
def test_meta(total, per_page, pages):
    meta = PageRequest(page=2, per_page=per_page).meta(total)
    assert meta.model_dump() == {"current_page": 2, "per_page": per_page, "total_pages": pages, "total_count": total}


def test_offset_and_limit():
    assert (PageRequest(3, 25).offset, PageRequest(3, 25).limit) == (50, 25)
