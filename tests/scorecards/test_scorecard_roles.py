"""Who may review a call's scorecard as a member (the recording page's review, api/scorecard_reviews.py): a reviewer
or an admin of the recording's account; a plain member is refused (403, the spec's message), a member of another
account finds no recording (404); the history names the member by email. `callscope members add --role reviewer`
makes one."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from callscope.analysis.stages.scorecard import AnswerOverride
from callscope.api.scorecard_reviews import REVIEWERS_ONLY, Review, review_as_member
from callscope.cli import main
from callscope.errors import Forbidden, NotFound
from callscope.services import accounts
from callscope.services.member_auth import SignedIn, memberships
from tests.scorecards.conftest import FORM


@pytest.fixture
def person(runtime):
    async def sign_in(email: str, role: str, account: str = "default") -> SignedIn:
        await accounts.add_member(runtime.ctx, account, email, "Sam Lee", role)  # type: ignore[arg-type]
        await runtime.store.sync()
        members = tuple(memberships(runtime.ctx, email))
        return SignedIn("session", email, members, account, "csrf")
    return sign_in


@pytest.fixture
async def scored(client, admin, project, call) -> tuple[str, int]:
    made = await client.post("/scorecards", json={"name": "QA", "project_ids": [project["id"]], "sections": FORM},
                             headers=admin)
    return await call(project["id"], goals={1: True, 2: False}), made.json()["data"]["id"]


def no_greeting(form_id: int) -> Review:
    return Review(form_id, [AnswerOverride(question_id="greeting", answer="no", comment="No name given.")], True)


@pytest.mark.parametrize("role", ["reviewer", "admin"])
async def test_a_reviewer_or_an_admin_overrides_an_answer(runtime, client, admin, person, scored, role):
    public_id, form_id = scored
    card = await review_as_member(runtime.ctx, await person("sam@example.com", role), public_id, no_greeting(form_id))
    greeting = next(a for a in card.answers if a.question_id == "greeting")
    assert (greeting.answer, greeting.automatic, greeting.overridden) == ("no", "yes", True)
    assert greeting.history[0].by == "sam@example.com" and card.reviewed_by == "sam@example.com"
    shown = (await client.get(f"/recordings/{public_id}/scorecard", headers=admin)).json()["data"][0]
    assert shown["reviewed_by"] == "sam@example.com" and shown["score"] == card.score == 0.0


async def test_a_member_without_the_role_is_refused(runtime, person, scored):
    public_id, form_id = scored
    with pytest.raises(Forbidden) as refused:
        await review_as_member(runtime.ctx, await person("sam@example.com", "member"), public_id, no_greeting(form_id))
    assert refused.value.message == REVIEWERS_ONLY


async def test_a_reviewer_of_another_account_finds_no_recording(runtime, person, scored):
    public_id, form_id = scored
    with pytest.raises(NotFound):
        await review_as_member(runtime.ctx, await person("eve@example.com", "reviewer", account="other"), public_id,
                               no_greeting(form_id))


def test_the_cli_adds_a_reviewer(settings, monkeypatch):
    for key, value in {"CALLSCOPE_DATA_DIR": str(settings.data_dir), "CALLSCOPE_STORE": "sqlite"}.items():
        monkeypatch.setenv(key, value)
    done = CliRunner().invoke(main, ["members", "add", "--account", "default", "--email", "rita@example.com",
                                     "--name", "Rita", "--role", "reviewer"])
    assert done.exit_code == 0, done.output
    assert "as reviewer" in done.output
