"""What every members' page shares: templates, the session cookie, CSRF tokens, form bodies, security headers,
static assets, and errors shown as HTML pages (the JSON error bodies of api/errors.py are for API clients)."""

from __future__ import annotations

import functools
import gzip
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import falcon
from jinja2 import Environment, FileSystemLoader, select_autoescape

from callscope.errors import BadRequest, CallscopeError, NotFound, PayloadTooLarge
from callscope.services import member_auth, member_settings
from callscope.services.context import Context
from callscope.services.member_auth import SignedIn
from callscope.statuses import stage_name

HERE = Path(__file__).parent
SESSION_COOKIE = "callscope_session"
NONCE_COOKIE = "callscope_signin_nonce"  # CSRF of the forms shown before sign-in (double submit, HMAC-bound)
MAX_FORM_BYTES = 16_384
_CSRF_DOMAIN = b"callscope-page-csrf-v1\x00"
_TITLES = {400: "Bad request", 401: "Sign-in needed", 403: "Not allowed", 404: "Not found", 409: "Not possible",
           413: "Too large", 422: "Not accepted", 429: "Too many attempts", 503: "Unavailable for a moment"}


def _clock(ms: int | float | None) -> str:
    """Milliseconds as m:ss, or h:mm:ss from an hour."""
    seconds = int((ms or 0) // 1000)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


TEMPLATES = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]),
                        trim_blocks=True, lstrip_blocks=True)
TEMPLATES.filters["clock"] = _clock
TEMPLATES.filters["stage_name"] = stage_name


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str
    version: str  # in the URL (`?v=`): a changed file is a new URL, so browsers may cache each for long


ASSETS = {path.name: Asset(path.read_bytes(), {".css": "text/css; charset=utf-8",
                                               ".js": "text/javascript; charset=utf-8"}[path.suffix],
                           hashlib.sha256(path.read_bytes()).hexdigest()[:12])
          for path in sorted((HERE / "static").iterdir()) if path.suffix in (".css", ".js")}
TEMPLATES.globals["asset"] = lambda name: f"/static/{name}?v={ASSETS[name].version}"


def secure_cookies(ctx: Context) -> bool:
    configured = ctx.settings.session_cookie_secure
    return ctx.settings.base_url.startswith("https://") if configured is None else configured


def _security_headers(resp, media_origin: str | None = None) -> None:
    media = "'self'" + (f" {media_origin}" if media_origin else "")
    resp.set_header("Content-Security-Policy", f"default-src 'none'; script-src 'self'; style-src 'self'; "
                    f"img-src 'self' data:; media-src {media}; connect-src 'self'; form-action 'self'; "
                    "frame-ancestors 'none'; base-uri 'none'")
    resp.set_header("X-Frame-Options", "DENY")  # frame-ancestors' forerunner: the one older browsers read
    resp.set_header("X-Content-Type-Options", "nosniff")
    resp.set_header("Referrer-Policy", "no-referrer")  # sign-in tokens travel in query strings
    resp.set_header("Cache-Control", "no-store")


def allow_inline_styles(resp) -> None:
    """The page's Content-Security-Policy with style attributes and elements allowed (scripts stay the page's own)."""
    resp.set_header("Content-Security-Policy", resp.get_header("Content-Security-Policy").replace(
        "style-src 'self'", "style-src 'self' 'unsafe-inline'"))


def render(req, resp, template: str, *, status: int = 200, media_origin: str | None = None, **values) -> None:
    resp.status = status
    resp.content_type = falcon.MEDIA_HTML
    html = TEMPLATES.get_template(template).render(**values).encode()
    resp.set_header("Vary", "Accept-Encoding")
    if len(html) > 1024 and "gzip" in (req.get_header("Accept-Encoding") or ""):  # a long call's page: 400 -> 60 kB
        html = gzip.compress(html, compresslevel=5)
        resp.set_header("Content-Encoding", "gzip")
    resp.data = html
    _security_headers(resp, media_origin)


def origin_of(url: str) -> str | None:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else None


def page(responder):
    """A page responder: the typed errors of the services become an HTML page with their status."""

    @functools.wraps(responder)
    async def wrapped(self, req, resp, **params):
        req.context.has_page = callable(getattr(self, "on_get", None))  # where sign-in can lead back (require_person)
        try:
            await responder(self, req, resp, **params)
        except CallscopeError as exc:
            if exc.retry_after is not None:
                resp.set_header("Retry-After", str(exc.retry_after))
            if req.client_prefers(["text/html", "application/json"]) == "application/json":  # a page's script
                resp.status, resp.media = exc.status, {"error": exc.message}
                resp.set_header("Cache-Control", "no-store")
                return
            render(req, resp, "error.html", status=exc.status, title=_TITLES.get(exc.status, "Error"),
                   message=exc.message,
                   person=getattr(req.context, "person", None))
    return wrapped


def route_not_found(page_prefixes: tuple[str, ...], api_handler):
    """The error handler of a URL no route matches (a page's id that is no number, or past the catalog's BIGINT,
    matches none): the pages' own 404 page under `page_prefixes`, `api_handler`'s JSON body anywhere else."""

    async def handle(req, resp, exc: falcon.HTTPRouteNotFound, params, ws=None) -> None:
        if resp is None or not any(req.path == p or req.path.startswith(p + "/") for p in page_prefixes):
            await api_handler(req, resp, exc, params, ws=ws)  # a WebSocket handshake has no page either
            return
        render(req, resp, "error.html", status=404, title=_TITLES[404], message="There is no page here.", person=None)
    return handle


# ----- sessions and CSRF --------------------------------------------------------------------------

def session_token(req) -> str | None:
    values = req.get_cookie_values(SESSION_COOKIE)
    return values[0] if values else None


async def person_of(ctx: Context, req) -> SignedIn | None:
    req.context.person = await member_auth.signed_in(ctx, session_token(req))
    return req.context.person


def sign_in_url(next_path: str) -> str:
    return f"{member_auth.SIGN_IN_PATH}?next={quote(next_path, safe='/')}"


def _back_after_sign_in(req) -> str:
    """Where sign-in leads back to: the page asked for; for a form sent signed out (its session ended meanwhile), the
    page that shows the form: its own address where a GET opens one there, else the page above (a member's row
    action of /settings/members, a delivery's Redeliver). Never an address only a POST answers (405)."""
    if req.method in ("GET", "HEAD") or getattr(req.context, "has_page", True):
        return req.relative_uri
    return req.path.rsplit("/", 1)[0] or "/"


async def require_person(ctx: Context, req) -> SignedIn:
    """The signed-in person, or a redirect to the sign-in page that comes back here (to a signed-out visitor of any
    page, Settings included: an admin following a bookmark wants to sign in, and the redirect tells nothing that the
    sign-in page does not)."""
    person = await person_of(ctx, req)
    if person is None:
        raise falcon.HTTPSeeOther(sign_in_url(_back_after_sign_in(req)))
    return person


async def require_account(ctx: Context, req) -> tuple[SignedIn, str]:
    """The signed-in person and the account they are in; one who belongs to several chooses first."""
    person = await require_person(ctx, req)
    if person.account is None:
        raise falcon.HTTPSeeOther("/accounts")
    return person, person.account


async def require_admin(ctx: Context, req) -> tuple[SignedIn, str]:
    """The signed-in admin and the account they administer. To anyone else signed in the Settings pages do not
    exist (404, as for a page that is not there): a member never learns what an admin could do. A signed-out visitor
    is sent to sign in (require_person), and after it gets the page, or the 404."""
    person, account = await require_account(ctx, req)
    if not person.is_admin:
        raise NotFound(member_settings.NO_PAGE)
    return person, account


def set_session_cookie(ctx: Context, resp, token: str) -> None:
    resp.set_cookie(SESSION_COOKIE, token, max_age=ctx.settings.session_ttl_seconds, path="/",
                    secure=secure_cookies(ctx), http_only=True, same_site="Lax")


def clear_session_cookie(resp) -> None:
    resp.unset_cookie(SESSION_COOKIE, path="/", same_site="Lax")


def _nonce_token(ctx: Context, nonce: str) -> str:
    return hmac.new(ctx.url_secret, _CSRF_DOMAIN + nonce.encode(), hashlib.sha256).hexdigest()


def _nonce(req) -> str | None:
    """The browser's nonce cookie; a value we never made (NUL, non-ASCII, huge) counts as none sent."""
    values = req.get_cookie_values(NONCE_COOKIE)
    return values[0] if values and member_auth.is_token(values[0]) else None


def nonce_csrf(ctx: Context, req, resp) -> str:
    """The CSRF token of a form shown before sign-in, bound to a random cookie of this browser."""
    nonce = _nonce(req)
    if nonce is None:
        nonce = secrets.token_urlsafe(24)
        resp.set_cookie(NONCE_COOKIE, nonce, path=member_auth.SIGN_IN_PATH, secure=secure_cookies(ctx),
                        http_only=True, same_site="Strict")
    return _nonce_token(ctx, nonce)


def _check_csrf(form: dict[str, str], expected: str | None) -> None:
    # As bytes: compare_digest refuses str with anything but ASCII in it, and a form may send any text.
    if expected is None or not hmac.compare_digest(form.get("csrf", "").encode(), expected.encode()):
        raise BadRequest("This form has expired. Go back, reload the page and try again.")


def check_nonce_csrf(ctx: Context, req, form: dict[str, str]) -> None:
    nonce = _nonce(req)
    _check_csrf(form, _nonce_token(ctx, nonce) if nonce is not None else None)


def check_session_csrf(person: SignedIn, form: dict[str, str]) -> None:
    _check_csrf(form, person.csrf_token)


async def read_form(req) -> dict[str, str]:
    """An application/x-www-form-urlencoded body (last value of each field), at most MAX_FORM_BYTES."""
    return {name: values[-1] for name, values in (await read_form_lists(req, max_fields=50)).items()}


async def read_form_lists(req, max_fields: int) -> dict[str, list[str]]:
    """An application/x-www-form-urlencoded body with every value of each field (a checkbox per item sends one
    name many times), at most MAX_FORM_BYTES and `max_fields` values."""
    if (req.content_length or 0) > MAX_FORM_BYTES:
        raise PayloadTooLarge("Form too large")
    body = await req.bounded_stream.read(MAX_FORM_BYTES + 1)
    if len(body) > MAX_FORM_BYTES:
        raise PayloadTooLarge("Form too large")
    try:
        return parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=max_fields)
    except (UnicodeDecodeError, ValueError):
        raise BadRequest("Malformed form") from None


class Static:
    """The pages' CSS and JavaScript, shipped in the package (no build step)."""

    async def on_get(self, req, resp, name: str):
        asset = ASSETS.get(name)
        if asset is None:
            raise falcon.HTTPNotFound()
        serve_asset(req, resp, asset)


def serve_asset(req, resp, asset: Asset) -> None:
    resp.content_type = asset.content_type
    resp.data = asset.body
    resp.set_header("Cache-Control", "public, max-age=31536000, immutable" if req.get_param("v") == asset.version
                    else "public, max-age=300")
    resp.set_header("X-Content-Type-Options", "nosniff")
