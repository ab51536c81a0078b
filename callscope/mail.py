"""Outgoing email: the message of a new share, and the machinery that delivers it.

* :class:`Email` is one message; :func:`share_email` writes the one sent when a recording is shared with a person,
  :func:`sign_in_email` the one-time sign-in link of the members' web pages, :func:`invitation_email` the first one
  a member an admin added gets.
* A :class:`Mailer` delivers an email: :class:`SmtpMailer` through an SMTP server (aiosmtplib), :class:`OutboxMailer`
  as an RFC 5322 ``.eml`` file in a folder (the embedded default when no SMTP server is configured).
* :class:`MailQueue` sends in the background, so the HTTP request that caused an email never waits for it or fails
  because of it: a failed send is logged and retried with exponential backoff, and after the last retry (or at once
  for a permanent SMTP 5xx refusal) the email is written to the ``failed/`` folder as an ``.eml`` for an operator.
* :func:`build_mail_queue` picks the mailer from the settings.
"""

from __future__ import annotations

import asyncio
import html
import itertools
import os
import re
import tempfile
import time
import uuid
from datetime import UTC, datetime
from email.header import Header
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import EmailPolicy
from email.utils import format_datetime, getaddresses, make_msgid, parseaddr
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import aiosmtplib
import structlog
from pydantic import BaseModel, field_validator

from callscope.private_files import private_dir
from callscope.validation import MEMBER_EMAIL

if TYPE_CHECKING:
    from callscope.config import Settings

log = structlog.get_logger()

MAX_MESSAGE_CHARS = 1000
"""Longest personal message of a share (the public API's limit); longer text is cut (the API rejects it first)."""

_SUBJECT_NAME_CHARS = 120
_NEWLINES = re.compile(r"[\r\n]")
_WHITESPACE = re.compile(r"\s+")
_ADDRESS = re.compile(MEMBER_EMAIL)  # what an address to send to must be: a member's, as the resources check it


class Email(BaseModel):
    """One email. ``to``/``reply_to`` are addresses, optionally with a display name (``Ana <ana@example.com>``)."""

    to: str
    subject: str
    text: str
    html: str | None = None
    reply_to: str | None = None

    @field_validator("to", "subject", "reply_to")
    @classmethod
    def _single_line(cls, value: str | None) -> str | None:
        # Header values: a line break would let text smuggle in headers of its own.
        if value is not None and _NEWLINES.search(value):
            raise ValueError("must not contain line breaks")
        return value

    @field_validator("to", "reply_to")
    @classmethod
    def _checked_address(cls, value: str | None) -> str | None:
        """The header value rebuilt from its two parts, the address checked: whatever text came in, a header is only
        ever written from an address of the members' rule (no quote, `<`, `>`, space or non-ASCII character in
        it) and a display name Python's header code quotes or encodes. A second address in the text is dropped."""
        if value is None:
            return None
        name, address = parseaddr(value)
        if not _ADDRESS.fullmatch(address):
            raise ValueError("must be an email address such as ana@example.com")
        header = str(Address(display_name=name, addr_spec=address)) if name else address
        if parseaddr(header) != (name, address):  # read back as it was meant, or not at all
            raise ValueError("must be an email address such as ana@example.com")
        return header


def _one_line(value: str) -> str:
    return _WHITESPACE.sub(" ", value).strip()


def _clip(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


def _address(name: str, email: str) -> str:
    name = _one_line(name)
    email = email.strip()
    try:
        return str(Address(display_name=name, addr_spec=email))
    except Exception:  # noqa: BLE001 - an address the header parser cannot take apart: plain form
        return email


def share_email(
    recipient_name: str,
    recipient_email: str,
    sharer_name: str,
    recording_name: str,
    url: str,
    message: str | None,
) -> Email:
    """The email telling ``recipient`` that ``sharer`` shared a recording, with the sharer's optional plain-text
    message (at most :data:`MAX_MESSAGE_CHARS`) and the link to the recording's page (sign-in required)."""
    recipient = _one_line(recipient_name)
    sharer = _one_line(sharer_name) or "Someone"
    recording = _one_line(recording_name) or "a call recording"
    note = (message or "").replace("\r\n", "\n").replace("\r", "\n").strip()
    note = _clip(note, MAX_MESSAGE_CHARS) if note else ""

    subject = f"{sharer} shared a call recording with you: {_clip(recording, _SUBJECT_NAME_CHARS)}"
    greeting = f"Hi {recipient}," if recipient else "Hi,"

    lines = [greeting, "", f'{sharer} shared the call recording "{recording}" with you on Callscope.', ""]
    if note:
        lines += [f"{sharer} wrote:", ""]
        lines += [f"> {line}" if line else ">" for line in note.split("\n")]
        lines += [""]
    lines += [
        "Open the recording:",
        url,
        "",
        "You'll be asked to sign in. You can listen to the call and read its transcript; the recording is "
        "read-only for you.",
        "",
        "— Callscope",
        "",
    ]
    text = "\n".join(lines)

    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html><body style="font-family: sans-serif; line-height: 1.5; color: #222;">',
        f"<p>{e(greeting)}</p>",
        f"<p>{e(sharer)} shared the call recording <strong>{e(recording)}</strong> with you on Callscope.</p>",
    ]
    if note:
        parts += [
            f"<p>{e(sharer)} wrote:</p>",
            '<blockquote style="margin: 0 0 1em 0; padding: 0.5em 1em; border-left: 3px solid #ccc; '
            f'white-space: pre-wrap;">{e(note)}</blockquote>',
        ]
    parts += [
        f'<p><a href="{e(url, quote=True)}">Open the recording</a></p>',
        f'<p style="color: #666; font-size: 0.9em;">Or paste this link into your browser: {e(url)}<br>'
        "You'll be asked to sign in. You can listen to the call and read its transcript; the recording is "
        "read-only for you.</p>",
        "<p>— Callscope</p>",
        "</body></html>",
        "",
    ]
    return Email(to=_address(recipient, recipient_email), subject=subject, text=text, html="\n".join(parts))


def sign_in_email(recipient_email: str, url: str, minutes: int) -> Email:
    """The one-time sign-in link of the members' web pages."""
    text = "\n".join([
        "Hi,", "", "Use this link to sign in to Callscope:", url, "",
        f"It works once and expires in {minutes} minutes. If you did not ask for it, ignore this email.", "",
        "— Callscope", ""])
    e = html.escape
    body = "\n".join([
        "<!DOCTYPE html>", '<html><body style="font-family: sans-serif; line-height: 1.5; color: #222;">',
        "<p>Hi,</p>", f'<p><a href="{e(url, quote=True)}">Sign in to Callscope</a></p>',
        f'<p style="color: #666; font-size: 0.9em;">Or paste this link into your browser: {e(url)}<br>'
        f"It works once and expires in {minutes} minutes. If you did not ask for it, ignore this email.</p>",
        "<p>— Callscope</p>", "</body></html>", ""])
    return Email(to=recipient_email.strip(), subject="Your Callscope sign-in link", text=text, html=body)


def invitation_email(recipient_name: str, recipient_email: str, inviter_name: str, account_name: str, role: str,
                     url: str, minutes: int, sign_in_url: str) -> Email:
    """The email a member an admin just added gets: who invited them to which account and as what, and a first
    one-time sign-in link (and where to ask for another once it has expired)."""
    recipient, inviter = _one_line(recipient_name), _one_line(inviter_name) or "An admin"
    account = _clip(_one_line(account_name), _SUBJECT_NAME_CHARS) or "an account"
    greeting = f"Hi {recipient}," if recipient else "Hi,"
    what = f"{inviter} added you to {account} on Callscope, as {'an admin' if role == 'admin' else 'a member'}."
    later = (f"This link works once and expires in {minutes} minutes; after that, ask for a new one at "
             f"{sign_in_url} with this address.")
    text = "\n".join([greeting, "", what, "Sign in to see the call recordings shared with you:", url, "", later, "",
                      "— Callscope", ""])
    e = html.escape
    body = "\n".join([
        "<!DOCTYPE html>", '<html><body style="font-family: sans-serif; line-height: 1.5; color: #222;">',
        f"<p>{e(greeting)}</p>", f"<p>{e(what)}</p>",
        f'<p><a href="{e(url, quote=True)}">Sign in to Callscope</a></p>',
        f'<p style="color: #666; font-size: 0.9em;">Or paste this link into your browser: {e(url)}<br>{e(later)}</p>',
        "<p>— Callscope</p>", "</body></html>", ""])
    return Email(to=_address(recipient, recipient_email), subject=f"{inviter} invited you to {account} on Callscope",
                 text=text, html=body)


def build_message(email: Email, sender: str) -> EmailMessage:
    """The MIME message of ``email`` from ``sender``: Date and Message-ID headers, text/plain, and
    multipart/alternative (text first, then HTML) when the email has HTML."""
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = email.to
    if email.reply_to:
        msg["Reply-To"] = email.reply_to
    msg["Subject"] = email.subject
    msg["Date"] = format_datetime(datetime.now(UTC))
    domain = parseaddr(sender)[1].rpartition("@")[2] or "localhost"
    msg["Message-ID"] = make_msgid(domain=domain)
    msg.set_content(email.text)
    if email.html is not None:
        msg.add_alternative(email.html, subtype="html")
    return msg


def _simple_fold(name: str, value: object, limit: int | None, linesep: str) -> str | None:
    """Subject folded at spaces, as RFC 5322 describes, for plain ASCII text, or as RFC 2047 encoded words
    for other text; None for other headers (Python folds those).

    Python's own folder puts the whole of some ASCII subjects (one with ``<b>`` and ``"x"`` in it, say) on a
    continuation line after an empty ``Subject:``, which parsers (Python's among them) read with a leading space."""
    text = str(value)
    if name.lower() != "subject" or not text or any(ord(c) < 32 or ord(c) == 127 for c in text):
        return None
    if not text.isascii():
        # Python's folder can drop the space between an ASCII word and an encoded word ("you:Café"); encode
        # the whole subject as RFC 2047 words instead: spaces inside them survive.
        encoded = Header(text, "utf-8", maxlinelen=limit or 76, header_name=name).encode(linesep=linesep)
        return f"{name}: {encoded}{linesep}"
    if "=?" in text or text != text.strip() or "  " in text:  # "=?": would read as an encoded word
        return None
    words = text.split(" ")
    lines: list[str] = []
    line = f"{name}: {words[0]}"
    for word in words[1:]:
        if limit and len(line) + 1 + len(word) > limit:
            lines.append(line)
            line = f" {word}"
        else:
            line += f" {word}"
    lines.append(line)
    return linesep.join(lines) + linesep


class _WirePolicy(EmailPolicy):
    """``email.policy.SMTP`` (CRLF, 78-character lines) with :func:`_simple_fold` for the subject."""

    def fold(self, name, value):  # type: ignore[no-untyped-def]
        folded = _simple_fold(name, value, self.max_line_length, self.linesep)
        return folded if folded is not None else super().fold(name, value)

    def fold_binary(self, name, value):  # type: ignore[no-untyped-def]
        folded = _simple_fold(name, value, self.max_line_length, self.linesep)
        return folded.encode("ascii") if folded is not None else super().fold_binary(name, value)


WIRE_POLICY = _WirePolicy(linesep="\r\n")
"""Policy of the bytes that go to the SMTP server and into ``.eml`` files."""


def message_bytes(msg: EmailMessage) -> bytes:
    """``msg`` as RFC 5322 bytes (CRLF line ends, 7-bit: non-ASCII text is encoded)."""
    return msg.as_bytes(policy=WIRE_POLICY)


def _envelope(msg: EmailMessage) -> tuple[str, list[str]]:
    sender = parseaddr(str(msg["From"]))[1]
    recipients = [addr for _, addr in getaddresses([str(v) for v in msg.get_all("To", [])]) if addr]
    return sender, recipients


@runtime_checkable
class Mailer(Protocol):
    async def send(self, email: Email) -> None:
        """Deliver ``email``; raise when it could not be delivered."""
        ...


class SmtpMailer:
    """Sends through an SMTP server. ``use_tls``: implicit TLS (SMTPS); else ``starttls`` requires STARTTLS."""

    def __init__(
        self,
        host: str,
        port: int = 587,
        username: str | None = None,
        password: str | None = None,
        starttls: bool = True,
        use_tls: bool = False,
        sender: str = "Callscope <callscope@localhost>",
        timeout: float = 30.0,
    ) -> None:
        self.host = host
        self.port = port
        self.username = username or None
        self.password = password if self.username else None
        self.use_tls = use_tls
        self.starttls = starttls and not use_tls
        self.sender = sender
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"SmtpMailer(host={self.host!r}, port={self.port}, tls={self.use_tls}, starttls={self.starttls})"

    async def send(self, email: Email) -> None:
        msg = build_message(email, self.sender)
        sender, recipients = _envelope(msg)
        await aiosmtplib.send(
            message_bytes(msg),
            sender=sender,
            recipients=recipients,
            hostname=self.host,
            port=self.port,
            username=self.username,
            password=self.password,
            use_tls=self.use_tls,
            start_tls=self.starttls,
            timeout=self.timeout,
        )


_counter = itertools.count()


def write_eml(folder: Path, msg: EmailMessage) -> Path:
    """Write ``msg`` into ``folder`` as an RFC 5322 ``.eml`` file (CRLF line ends), atomically: a hidden temporary
    file in the same folder, then a rename. Names sort by time (``<ns since epoch>-<seq>-<random>.eml``)."""
    private_dir(folder)  # sign-in links and shared recordings: the service's user only (the files are mkstemp's 0600)
    data = message_bytes(msg)
    name = f"{time.time_ns():020d}-{next(_counter) % 1_000_000:06d}-{uuid.uuid4().hex[:8]}.eml"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        path = folder / name
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


class OutboxMailer:
    """Writes each email as an ``.eml`` file into ``folder`` (the embedded stand-in for an SMTP server)."""

    def __init__(self, folder: Path, sender: str = "Callscope <callscope@localhost>") -> None:
        self.folder = private_dir(Path(folder))  # on start: narrowed when an earlier version made it wider
        self.sender = sender

    def __repr__(self) -> str:
        return f"OutboxMailer(folder={str(self.folder)!r})"

    async def send(self, email: Email) -> None:
        msg = build_message(email, self.sender)
        path = await asyncio.to_thread(write_eml, self.folder, msg)
        log.info("mail.written", to=email.to, path=str(path))


def _permanent(exc: BaseException) -> bool:
    """An SMTP 5xx answer (bad address, refused sender, failed authentication): retrying will not help."""
    if isinstance(exc, aiosmtplib.SMTPRecipientsRefused):
        return bool(exc.recipients) and all(500 <= r.code < 600 for r in exc.recipients)
    if isinstance(exc, aiosmtplib.SMTPResponseException):
        return 500 <= exc.code < 600
    return False


def _describe(exc: BaseException) -> str:
    return _one_line(f"{type(exc).__name__}: {exc}")[:500]


class MailQueue:
    """Sends emails in the background on the running event loop.

    ``submit`` returns at once; each email gets up to ``1 + retries`` attempts, waiting ``backoff * 2**n`` seconds
    before retry ``n + 1``; after the last failure the email is saved to ``failed_dir`` (with ``X-Callscope-*``
    headers saying why) and logged. Nothing ever raises into the caller of ``submit``.
    """

    def __init__(
        self,
        mailer: Mailer,
        failed_dir: Path,
        retries: int = 3,
        backoff: float = 0.5,
        *,
        max_concurrency: int = 4,
    ) -> None:
        self.mailer = mailer
        self.failed_dir = Path(failed_dir)
        self.retries = max(0, retries)
        self.backoff = max(0.0, backoff)
        self._tasks: set[asyncio.Task[None]] = set()
        self._max_concurrency = max(1, max_concurrency)
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def pending(self) -> int:
        """Emails submitted and not yet sent or saved as failed."""
        return len(self._tasks)

    def submit(self, email: Email) -> None:
        """Schedule ``email`` for sending and return immediately. From a thread without a running loop, it is
        handed to the loop the queue last ran on; with none known, it is saved to ``failed_dir`` and logged."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        try:
            if loop is not None:
                self._spawn(loop, email)
            elif self._loop is not None and self._loop.is_running() and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._spawn, self._loop, email)
            else:
                self._save_failed(email, "no running event loop to send it on", attempts=0)
        except Exception:  # never into the request
            log.exception("mail.submit_failed", to=email.to)

    def _spawn(self, loop: asyncio.AbstractEventLoop, email: Email) -> None:
        if self._loop is not loop:
            self._loop = loop
            self._semaphore = asyncio.Semaphore(self._max_concurrency)
        task = loop.create_task(self._deliver(email), name=f"mail to {email.to}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, email: Email) -> None:
        assert self._semaphore is not None
        attempts = 0
        error = "not sent"
        try:
            async with self._semaphore:
                while True:
                    attempts += 1
                    try:
                        await self.mailer.send(email)
                    except Exception as exc:  # noqa: BLE001 - logged; retried unless permanent
                        error = _describe(exc)
                        permanent = _permanent(exc)
                        last = permanent or attempts > self.retries
                        log.warning(
                            "mail.send_failed", to=email.to, attempt=attempts, error=error, permanent=permanent,
                            will_retry=not last,
                        )
                        if last:
                            break
                        await asyncio.sleep(self.backoff * 2 ** (attempts - 1))
                    else:
                        if attempts > 1:
                            log.info("mail.sent_after_retry", to=email.to, attempts=attempts)
                        return
        except asyncio.CancelledError:
            # Shutdown (close() ran out of time): keep the email for an operator, then let the cancel through.
            self._save_failed(email, "cancelled at shutdown", attempts)
            raise
        except Exception as exc:  # noqa: BLE001 - a bug above; still keep the email
            error = _describe(exc)
        await asyncio.to_thread(self._save_failed, email, error, attempts)

    def _save_failed(self, email: Email, error: str, attempts: int) -> Path | None:
        sender = getattr(self.mailer, "sender", None) or "Callscope <callscope@localhost>"
        try:
            msg = build_message(email, sender)
            msg["X-Callscope-Failure"] = error
            msg["X-Callscope-Attempts"] = str(attempts)
            path = write_eml(self.failed_dir, msg)
        except Exception:
            log.exception("mail.failed_not_saved", to=email.to, error=error, attempts=attempts)
            return None
        log.error("mail.failed", to=email.to, error=error, attempts=attempts, path=str(path))
        return path

    async def drain(self, timeout: float | None = None) -> bool:
        """Wait until every submitted email is sent or saved as failed (emails submitted meanwhile included).
        True when nothing is left in flight; False when ``timeout`` seconds passed first (tasks keep running)."""
        deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
        while pending := {task for task in self._tasks if not task.done()}:
            remaining = None if deadline is None else deadline - asyncio.get_running_loop().time()
            if remaining is not None and remaining <= 0:
                return False
            await asyncio.wait(pending, timeout=remaining)
        return True

    async def close(self, timeout: float = 10.0) -> None:
        """Shutdown: drain for up to ``timeout`` seconds, then cancel what is left (saved to ``failed_dir``)."""
        if await self.drain(timeout):
            return
        tasks = set(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def build_mail_queue(settings: Settings) -> MailQueue:
    """SMTP when ``settings.smtp_host`` is set, else ``.eml`` files in ``<data_dir>/outbox``; failures in
    ``<data_dir>/outbox/failed``."""
    outbox = Path(settings.data_dir) / "outbox"
    mailer: Mailer
    if settings.smtp_host:
        password = settings.smtp_password.get_secret_value() if settings.smtp_password is not None else None
        mailer = SmtpMailer(
            host=settings.smtp_host,
            port=settings.smtp_port,
            username=settings.smtp_username,
            password=password,
            starttls=settings.smtp_starttls,
            use_tls=settings.smtp_tls,
            sender=settings.mail_from,
            timeout=settings.smtp_timeout,
        )
    else:
        mailer = OutboxMailer(outbox, sender=settings.mail_from)
    return MailQueue(mailer, outbox / "failed")
