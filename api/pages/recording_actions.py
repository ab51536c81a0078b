"""The recording page's actions, where the call is: share it (with a member, or with everyone in the account), its
tags, a re-analysis with the project's current settings, and its deletion (asked first). Each goes through the
service the REST API uses (callscope/services/shares.py, recordings.py, tags.py, analyses.py) and answers with the
recording's page saying what was done (POST, then 303 to the page), or the page again with why not beside the form
(422, 409).

Who may do what: every member of the recording's account may share it (a share tells a colleague; it gives no access
a member lacks); tags, re-analysis, deletion and removing a share change the call for everyone, so they are for the
account's admins, as the REST API asks a write or delete key. A member sees no button for them, and such a request
forged anyway is refused (403) before anything is read from its form but the CSRF token."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlencode

import falcon
from pydantic import BaseModel, ConfigDict
from sqlalchemy import select

from callscope import validation as v
from callscope.analysis.stages.scorecard import AnswerOverride
from callscope.api import scorecard_reviews
from callscope.api.body import parse_fields
from callscope.api.pages import web
from callscope.api.pages.listing import back_to_list
from callscope.api.schemas import TextInt
from callscope.catalog import jobs
from callscope.catalog.recordings import Found
from callscope.catalog.tables import Job, Recording
from callscope.errors import Conflict, ValidationFailed
from callscope.resources import Member, Project, Tag
from callscope.services import accounts, analyses, member_auth, recordings, scope, shares, tags
from callscope.services.context import Context, Principal
from callscope.services.member_auth import HOME_PATH, SignedIn
from callscope.statuses import FINISHED

EVERYONE = "everyone"  # the share form's choice of every member (no member's address is a bare word)
MAX_TAG_FIELDS = 1000  # one checkbox a tag of the project: more than read_form's 50 fields, still bounded
RESTRICTED = "This call's processing is restricted (GDPR): it is not analysed again."


@dataclass(frozen=True)
class Rights:
    share: bool  # every member of the recording's account
    manage: bool  # tags, re-analysis, deletion, removing a share: the account's admins


def rights_of(person: SignedIn, account: str) -> Rights:
    return Rights(share=True, manage=any(m.namespace == account and m.spec.role == "admin" for m in person.members))


@dataclass
class ActionsView:
    """What the page's actions show: the rights, who it can be shared with and the shares made, the project's tags
    (carried or not), whether a re-analysis may start or is under way, and the outcome of the last action."""

    rights: Rights
    page_url: str  # the recording page's address (a share's `url`), to pass on by hand
    back: str  # the list filters the page was opened with (`from`), passed on by every form
    members: list[Member] = field(default_factory=list)
    shares: list[shares.ShareView] = field(default_factory=list)
    tags: list[tuple[Tag, bool]] = field(default_factory=list)
    reanalysable: bool = False
    reanalysing: bool = False
    stage: str | None = None  # the re-analysis's, while it runs
    progress: int = 0
    restricted: bool = False
    notice: str | None = None
    problem: str | None = None
    problem_form: str | None = None  # the form `problem` is about: shown open, the message beside it
    sent: dict[str, object] = field(default_factory=dict)  # that form's values, shown again (nothing typed is lost)


def _analysing_again(session, recording_id: int) -> bool:
    return session.scalar(select(Job.id).where(Job.recording_id == recording_id, Job.state.in_(jobs.ACTIVE))
                          .limit(1)) is not None


async def analysing_again(ctx: Context, r: Recording) -> bool:
    """Whether a finished recording has a re-analysis queued or running (its results stay until it completes)."""
    return r.status in FINISHED and await ctx.catalog.read(_analysing_again, r.id)


# A finished call's stage until the dispatcher takes its re-analysis (which then reports "reanalyzing", then its own)
_FINISHED_STAGES = (None, "done", "failed", "reanalysis_failed")


def stage_of(r: Recording, reanalysing: bool) -> tuple[str | None, int]:
    """The stage and progress to show: a re-analysis still queued is waiting, not the last run's end."""
    if reanalysing and r.stage in _FINISHED_STAGES:
        return "reanalyzing", 0
    return r.stage, r.progress or 0


def _member_of(person: SignedIn, account: str) -> Member:
    return next(m for m in person.members if m.namespace == account)


def _share_notice(view: shares.ShareView, created: bool) -> str:
    if view.share.everyone:
        return ("Shared with everyone in the account: it is on each member's Shared with me list." if created
                else "This call was shared with everyone in the account already.")
    who = f"{view.member.spec.name} ({view.member.spec.email})" if view.member else view.share.member_email
    return f"Shared with {who}." if created else f"This call was shared with {who} already: nothing was sent."


NOTICES = {"unshared": "The share was removed.",
           "scorecard": "Scorecard saved.",
           "tags": "Tags saved.",
           "reanalysis": "Queued to be analysed again with the project's current settings. This page follows it."}


async def actions_view(ctx: Context, person: SignedIn, principal: Principal, found: Found, req, *,
                       problem: str | None = None, problem_form: str | None = None,
                       back: str | None = None, sent: dict[str, object] | None = None) -> ActionsView:
    """`back`: the list's filters a form passed on (else the page's own `from`); `sent`: the refused form's values."""
    r = found.recording
    account = principal.account
    rights = rights_of(person, account)
    view = ActionsView(rights, shares.recording_page_url(ctx, r.public_id), back or req.get_param("from") or "",
                       restricted=r.processing_restricted, problem=problem, problem_form=problem_form,
                       sent=sent or {})
    view.members = [m for m in accounts.list_members(ctx, account)
                    if not m.spec.locked and m.spec.email.lower() != person.email.lower()]
    view.shares = await shares.list_shares(ctx, principal, r.public_id)
    project = scope.by_id(ctx, Project, account, r.project_id)
    if project is not None:
        carried = set(found.tag_ids)
        view.tags = [(t, t.status.id in carried) for t in sorted(tags.project_tags(ctx, account, project.name),
                                                                 key=lambda t: t.spec.name.casefold())]
    view.reanalysing = await analysing_again(ctx, r)
    view.stage, view.progress = stage_of(r, view.reanalysing)
    view.reanalysable = r.status in FINISHED and not r.processing_restricted and not view.reanalysing
    done, share_id = req.get_param("done"), req.get_param_as_int("share")
    if done in ("shared", "shared-before") and share_id is not None:
        shown = next((s for s in view.shares if s.share.id == share_id), None)
        view.notice = _share_notice(shown, done == "shared") if shown else None
    elif done == "reanalysis" and not view.reanalysing:
        view.notice = None  # done meanwhile: the page shows the new results
    else:
        view.notice = NOTICES.get(done or "")
    return view


def page_after(public_id: str, back: str, **done: str | int) -> str:
    """The recording page saying what was done, with the list's filters it was opened with."""
    params = {k: str(val) for k, val in done.items()}
    if back:
        params["from"] = back
    return f"{HOME_PATH}/{public_id}?{urlencode(params)}"


# ----- the forms --------------------------------------------------------------------------------------------------

class ActionForm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    csrf: str
    back: str = ""  # the list's filters (`from`), checked where used (listing.back_to_list)


class ShareForm(ActionForm):
    to: v.Line  # a member's address, or EVERYONE
    message: v.Text = ""
    notify: Literal["on"] | None = None  # a ticked checkbox sends `on`


class UnshareForm(ActionForm):
    share_id: TextInt


class TagsForm(ActionForm):
    tag_id: list[TextInt] = []
    new_tag: v.DisplayLine = ""


class DeleteForm(ActionForm):
    confirmed: Literal["yes"] | None = None


class ReviewForm(ActionForm):
    """A review of one of the call's scorecards: an answer overridden (with why), and/or the call marked reviewed."""

    scorecard_id: TextInt
    question_id: v.Line = ""
    answer: v.Line = ""
    comment: v.Text = ""
    reviewed: Literal["yes"] | None = None


class RecordingAction(abc.ABC):
    """One action's POST on /recordings/{id}/<name>: the person and the recording (404 outside their accounts, as
    the page), the CSRF token, the right, then the action."""

    name = ""
    lists_of: tuple[str, ...] = ()  # fields sent once per item (the tags' checkboxes), read as lists

    def __init__(self, ctx: Context, show):
        self.ctx = ctx
        self.show = show  # renders the recording page (recording.RecordingPage.show)

    @web.page
    async def on_post(self, req, resp, id: str):
        person = await web.require_person(self.ctx, req)
        principal, found = await member_auth.open_recording(self.ctx, person, id)
        raw = await web.read_form_lists(req, MAX_TAG_FIELDS if self.lists_of else 50)
        form: dict[str, str | list[str]] = {k: vals if k in self.lists_of else vals[-1] for k, vals in raw.items()}
        web.check_session_csrf(person, {"csrf": str(form.get("csrf", ""))})
        try:
            await self.act(req, resp, person, principal, found, form)
        except (ValidationFailed, Conflict) as exc:  # the page again, with why beside the form
            await self.show(req, resp, person, principal, found, status=exc.status, problem=exc.message,
                            problem_form=self.name, back=str(form.get("back", "")), sent=form)

    @abc.abstractmethod
    async def act(self, req, resp, person: SignedIn, principal: Principal, found: Found, form) -> None:
        """The action itself, on the form's values; a ValidationFailed or Conflict shows the page again with why."""

    @staticmethod
    def manager(person: SignedIn, principal: Principal) -> Principal:
        """The admin as the caller of a write (Forbidden, 403, to a member who is no admin of the account)."""
        return person.admin_principal(principal.account)


class ShareAction(RecordingAction):
    name = "share"

    async def act(self, req, resp, person, principal, found, form) -> None:
        share = parse_fields(ShareForm, form)
        everyone = share.to == EVERYONE
        member = _member_of(person, principal.account)
        view, created = await shares.create_share(
            self.ctx, principal, found.recording.public_id, None if everyone else share.to, everyone or None,
            share.message or None, share.notify == "on", by=shares.Sharer(member.spec.name, member.metadata.uid or ""))
        raise falcon.HTTPSeeOther(page_after(found.recording.public_id, share.back,
                                             done="shared" if created else "shared-before", share=view.share.id))


class UnshareAction(RecordingAction):
    name = "unshare"

    async def act(self, req, resp, person, principal, found, form) -> None:
        admin = self.manager(person, principal)
        unshare = parse_fields(UnshareForm, form)
        await shares.delete_share(self.ctx, admin, found.recording.public_id, unshare.share_id)
        raise falcon.HTTPSeeOther(page_after(found.recording.public_id, unshare.back, done="unshared"))


class TagsAction(RecordingAction):
    name = "tags"
    lists_of = ("tag_id",)

    async def act(self, req, resp, person, principal, found, form) -> None:
        admin = self.manager(person, principal)
        chosen = parse_fields(TagsForm, form)
        ids = list(chosen.tag_id)
        if chosen.new_tag:
            tag, _ = await tags.create_tag(self.ctx, admin, chosen.new_tag, found.recording.project_id)
            ids.append(tag.status.id)
        await recordings.update_recording(self.ctx, admin, found.recording.public_id, {"tag_ids": ids})
        raise falcon.HTTPSeeOther(page_after(found.recording.public_id, chosen.back, done="tags"))


class ReanalyseAction(RecordingAction):
    name = "reanalyse"

    async def act(self, req, resp, person, principal, found, form) -> None:
        self.manager(person, principal)
        back = parse_fields(ActionForm, form).back
        r = found.recording
        if r.processing_restricted:
            raise Conflict(RESTRICTED)
        if not await analyses.reanalyze(self.ctx, [r.id]):
            raise Conflict("This call is being analysed already: it can be analysed again once that is done.")
        raise falcon.HTTPSeeOther(page_after(r.public_id, back, done="reanalysis"))


class DeleteAction(RecordingAction):
    """Deletion, asked first: the form without `confirmed` answers a page that says what goes and asks again."""

    name = "delete"

    async def act(self, req, resp, person, principal, found, form) -> None:
        admin = self.manager(person, principal)
        delete = parse_fields(DeleteForm, form)
        r = found.recording
        if delete.confirmed is None:
            web.render(req, resp, "recording_delete.html", person=person, account=principal.account, r=r,
                       back=delete.back, page=page_after(r.public_id, delete.back).rstrip("?"))
            return
        await recordings.delete_recording(self.ctx, admin, r.public_id)
        listed = back_to_list(delete.back)
        raise falcon.HTTPSeeOther(f"{listed}{'&' if '?' in listed else '?'}deleted=1")


class ScorecardAction(RecordingAction):
    """A reviewer's override or review mark, through the service of PATCH /recordings/{id}/scorecard (403 to a member
    who is neither reviewer nor admin of the account)."""

    name = "scorecard"

    async def act(self, req, resp, person, principal, found, form) -> None:
        review = parse_fields(ReviewForm, form)
        if not review.question_id and review.reviewed is None:
            raise ValidationFailed("Choose an answer to change, or mark the call reviewed")
        answers = [parse_fields(AnswerOverride, {"question_id": review.question_id, "answer": review.answer,
                                                 "comment": review.comment})] if review.question_id else []
        await scorecard_reviews.review_as_member(
            self.ctx, person, found.recording.public_id,
            scorecard_reviews.Review(review.scorecard_id, answers, review.reviewed == "yes"))
        raise falcon.HTTPSeeOther(page_after(found.recording.public_id, review.back, done="scorecard")
                                  + f"#scorecard-{review.scorecard_id}")


ACTIONS = (ShareAction, UnshareAction, TagsAction, ReanalyseAction, DeleteAction, ScorecardAction)
