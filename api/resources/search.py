"""/search: transcript segments across the calls, found by their words, by their meaning or both."""

from __future__ import annotations

from callscope.api import presenters
from callscope.api import schemas as s
from callscope.api.body import parse_query
from callscope.api.pagination import paging
from callscope.api.resources.base import Resource, principal_of
from callscope.api.routing import operation
from callscope.services import search


class Search(Resource):
    @operation("Search the calls' transcripts by words and by meaning", "read", response=s.SearchHitList,
               query=s.SearchQuery, errors=(401, 403, 422, 503),
               name="searchRecordings",
               description=("Transcript segments of the analysed calls, best first: each hit is one segment, with "
                            "its recording, times, speaker, text (the words sought marked in `highlights`), score and "
                            "a link to the recording's page that plays from the segment. `mode` keyword matches the "
                            "words (`q`'s syntax: words, `\"phrases\"`, `-excluded`, `OR`), meaning finds segments "
                            "that say what `q` says in other words, hybrid (the default) fuses both by reciprocal "
                            "rank (the best 1000 of each way). The filters narrow the search itself, so a page is "
                            "full whenever that many hits exist. A call is found once its analysis is stored, by its "
                            "stored (redacted) transcript."),
               scope="Finds only its own project's calls; project_id of another project is 403.",
               error_notes={403: "project_id names another project than the key's.",
                            422: "q is missing, blank, longer than 500 characters, holds control characters or no "
                                 "word to search for (or only excluded ones); goal_met without goal_id; a parameter "
                                 "is unknown or invalid.",
                            503: "mode meaning without the text embedding model (hybrid then matches words only)."})
    async def on_get(self, req, resp):
        query = parse_query(req, s.SearchQuery, only_known=True)
        page = paging(query)
        principal = principal_of(req)
        hits, total = await search.search(self.ctx, principal, query.q, query.mode, presenters.search_filters(query),
                                          page.offset, page.limit)
        resp.media = {"data": [presenters.search_hit(hit).model_dump(mode="json") for hit in hits],
                      "meta": page.meta(total).model_dump()}
