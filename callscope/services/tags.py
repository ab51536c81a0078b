"""Tags: per project, unique by name case-insensitively, coloured from a fixed palette."""

from __future__ import annotations

import asyncio

from callscope.errors import Conflict, ValidationFailed
from callscope.resources import Tag, TagSpec, TagStatus
from callscope.resources.meta import PROJECT_LABEL
from callscope.services import scope
from callscope.services.context import Context, Principal
from callscope.services.indexes import TAG_NAME, holders
from callscope.services.objects import create_with_id
from callscope.services.recordings import remove_tag_everywhere
from callscope.store.interface import AlreadyExists

# Ten colours that stay distinguishable on light and dark backgrounds.
PALETTE = (
    "#2563EB", "#16A34A", "#DC2626", "#D97706", "#7C3AED",
    "#DB2777", "#0891B2", "#65A30D", "#EA580C", "#4B5563",
)


def project_tags(ctx: Context, account: str, project_name: str) -> list[Tag]:
    return [t for t in scope.all_of(ctx, Tag, account) if t.spec.project == project_name]


def next_color(existing: list[Tag]) -> str:
    """The first palette colour no tag of the project uses; once all ten are used, cycle by count."""
    used = {t.status.color for t in existing}
    for color in PALETTE:
        if color not in used:
            return color
    return PALETTE[len(existing) % len(PALETTE)]


def list_tags(ctx: Context, principal: Principal, project_id: int | None) -> list[Tag]:
    project = scope.project_for_request(ctx, principal, project_id)
    return sorted(project_tags(ctx, principal.account, project.name),
                  key=lambda t: (t.spec.name.casefold(), t.status.id))


async def create_tag(ctx: Context, principal: Principal, name: str | None, project_id: int | None) -> tuple[Tag, bool]:
    """The tag and whether it was created (False: an existing tag of that name, returned unchanged)."""
    project = scope.project_for_request(ctx, principal, project_id)
    name = (name or "").strip()
    if not name:
        raise ValidationFailed("name is required")
    async with ctx.exclusive(principal.account):
        for tag in holders(ctx.store, Tag, TAG_NAME, (principal.account, project.name, name.casefold())):
            return tag, False
        existing = project_tags(ctx, principal.account, project.name)
        try:
            tag = await create_with_id(
                ctx, Tag, principal.account, name, TagSpec(name=name, project=project.name),
                TagStatus(color=next_color(existing)), labels={PROJECT_LABEL: project.name},
                unique=(project.name, name.casefold()),
            )
        except AlreadyExists:  # made a moment ago by another API process: that tag is the answer
            return await _named(ctx, principal.account, project.name, name), False
        return tag, True


async def _named(ctx: Context, account: str, project: str, name: str) -> Tag:
    """The tag another process created, once its id is written (a moment after the object)."""
    for _ in range(40):
        await ctx.store.sync()
        found = [t for t in holders(ctx.store, Tag, TAG_NAME, (account, project, name.casefold()))
                 if t.status.id is not None]
        if found:
            return found[0]
        await asyncio.sleep(0.05)
    raise Conflict(f"Tag {name!r} is being created by another request; retry")


async def delete_tag(ctx: Context, principal: Principal, tag_id: int) -> None:
    tag = scope.visible_tag(ctx, principal, tag_id)
    await ctx.store.delete(Tag, tag.namespace, tag.name)
    await remove_tag_everywhere(ctx, principal.account, tag_id)
