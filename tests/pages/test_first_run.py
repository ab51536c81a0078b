"""A fresh install's sign-in page says how the first admin is made (no one can sign in before that, and the page
is the first thing a new user opens); once anyone is a member, the page says nothing of it."""

from __future__ import annotations

from callscope.services import accounts


async def test_the_sign_in_page_of_a_fresh_install_says_how_to_make_the_first_admin(runtime, pages) -> None:
    fresh = await pages.get("/sign-in")
    assert fresh.status_code == 200 and 'id="first-run"' in fresh.text
    assert "callscope members add --email you@example.com" in fresh.text and "--role admin" in fresh.text

    await accounts.add_member(runtime.ctx, "default", "ada@example.com", "Ada", "admin")
    assert 'id="first-run"' not in (await pages.get("/sign-in")).text

