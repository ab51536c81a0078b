"""The spec's pagination: `page` 1-indexed (default 1), `per_page` default 20 and at most 100, and the
`meta` object (current_page, per_page, total_pages, total_count) of paginated lists. The query's own
bounds (page at most MAX_PAGE, so that the offset fits the catalog's BIGINT) live in schemas.PageQuery."""

from __future__ import annotations

from dataclasses import dataclass

from callscope.api.body import parse_query
from callscope.api.schemas import DEFAULT_PER_PAGE, MAX_PER_PAGE, Meta, PageQuery


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


def paging(query: PageQuery) -> PageRequest:
    """A per_page above the maximum is capped rather than refused."""
    return PageRequest(page=query.page, per_page=min(query.per_page, MAX_PER_PAGE))


def page_request(req) -> PageRequest:
    return paging(parse_query(req, PageQuery))
