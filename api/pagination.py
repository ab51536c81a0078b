"""The spec's pagination: `page` 1-indexed (default 1), `per_page` default 20 and at most 100, and the
`meta` object (current_page, per_page, total_pages, total_count) of paginated lists."""

from __future__ import annotations

from dataclasses import dataclass

from callscope.api.body import query_int
from callscope.api.schemas import Meta

DEFAULT_PER_PAGE = 20
MAX_PER_PAGE = 100


@dataclass(frozen=True)
class PageRequest:
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    @property
    def limit(self) -> int:
        return self.per_page

    def meta(self, total_count: int) -> Meta:
        total_pages = -(-total_count // self.per_page)  # ceiling division; 0 when there is nothing
        return Meta(current_page=self.page, per_page=self.per_page, total_pages=total_pages, total_count=total_count)


def page_request(req) -> PageRequest:
    """Read `page` and `per_page`; a per_page above the maximum is capped rather than refused."""
    page = query_int(req, "page", minimum=1) or 1
    per_page = query_int(req, "per_page", minimum=1) or DEFAULT_PER_PAGE
    return PageRequest(page=page, per_page=min(per_page, MAX_PER_PAGE))
