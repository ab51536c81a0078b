"""Trackers: a project's saved searches (`spec.trackers`: a name, a query in search's syntax and a mode, keyword or
meaning). Each analysed call records which of its project's trackers it matched and where (the segments), written
with its search entries in the analysis' transaction (workers/outcomes.py); the Trends page charts the share of calls
that matched each.

A tracker added, changed or removed applies to the calls analysed before it: each call is stamped with the digest of
the trackers it was matched against, and the tracker pass (:func:`match_projects`, a background loop every
CALLSCOPE_TRACKER_INTERVAL_SECONDS, and `callscope reindex`) matches again, a batch per transaction, the calls of
each project whose stamp is not its current digest. A request that changes a project never waits for it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from callscope.catalog import tracker_stamps
from callscope.catalog import trackers as tracker_rows
from callscope.catalog.trackers import Matcher, Moment
from callscope.resources import Project, ProjectSpec
from callscope.resources.kinds import Tracker
from callscope.search.syntax import parse
from callscope.services.context import Context

log = structlog.get_logger()

BATCH = 200  # calls matched per transaction: a pass over a large project holds no lock for long


@dataclass(frozen=True)
class Prepared:
    """A project's trackers ready to match, and their digest (None: no tracker)."""

    matchers: list[Matcher]
    digest: str | None


async def prepare(ctx: Context, trackers: Sequence[Tracker]) -> Prepared:
    """The trackers parsed, each meaning tracker's query embedded (as meaning search embeds a query). The digest
    says what the matches depend on: the trackers, the least similarity that counts, and whether each meaning
    tracker could be embedded (calls matched without the model are matched again once it loads)."""
    if not trackers:
        return Prepared([], None)
    matchers = []
    for t in trackers:
        query = parse(t.query)
        meaning = t.mode == "meaning"
        vector = await ctx.embedder.embed_query(query.text) if meaning and ctx.embedder is not None else None
        matchers.append(Matcher(t.name, query, meaning, vector))
    said = [ctx.settings.search_min_similarity,
            sorted([m.name, t.mode, t.query, m.vector is not None] for m, t in zip(matchers, trackers, strict=True))]
    return Prepared(matchers, hashlib.sha256(json.dumps(said).encode()).hexdigest()[:32])


async def of_project(ctx: Context, spec: ProjectSpec | None) -> Prepared:
    """The project's trackers ready to match (a call of a project no longer known: none)."""
    return await prepare(ctx, spec.trackers if spec is not None else [])


async def match_project(ctx: Context, project: Project, settled: str | None) -> int:
    """Match the project's calls not matched against its current trackers; how many were. `settled`: the digest
    the catalog says every call of the project was matched against (None: not known)."""
    account, project_id = project.namespace, project.status.id
    if project_id is None or project.metadata.deletion_timestamp is not None:
        return 0
    prepared = await of_project(ctx, project.spec)
    if settled == (prepared.digest or tracker_stamps.NONE):
        return 0
    matched, after = 0, None
    min_similarity = ctx.settings.search_min_similarity
    while batch := await ctx.catalog.read(tracker_stamps.stale, account, project_id, prepared.digest, after, BATCH):
        matched += len(await ctx.catalog.write(tracker_rows.record, [rid for _, rid in batch], prepared.matchers,
                                               prepared.digest, min_similarity))
        after = batch[-1]
    await ctx.catalog.write(tracker_stamps.settle, account, project_id, prepared.digest)
    if matched:
        log.info("trackers_matched", account=account, project_id=project_id, recordings=matched)
    return matched


async def match_projects(ctx: Context) -> int:
    """The tracker pass over every project of every account: how many calls were matched again."""
    settled = await ctx.catalog.read(tracker_stamps.settled)
    matched = 0
    for project in list(ctx.store.cached_list(Project)):
        try:
            matched += await match_project(ctx, project, settled.get((project.namespace, project.status.id or 0)))
        except Exception:  # one project's failure holds up no other; the next pass tries it again
            log.exception("trackers_failed", account=project.namespace, project=project.name)
    return matched


async def matched(ctx: Context, recording_id: int) -> dict[str, list[Moment]]:
    """The trackers the recording matched, by name, each with its moments in time order."""
    found: dict[str, list[Moment]] = {}
    for moment in await ctx.catalog.read(tracker_rows.of_recording, recording_id):
        found.setdefault(moment.tracker, []).append(moment)
    return found
