"""Outgoing email (callscope.mail) against a real local SMTP server (aiosmtpd), the outbox folder, and the
background queue's retries and failed/ folder."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default as default_policy

import pytest
from aiosmtpd.controller import Controller

from callscope.config import Settings
from callscope.mail import (
    Email,
    Mailer,
    MailQueue,
    OutboxMailer,
    SmtpMailer,
    build_mail_queue,
    build_message,
    invitation_email,
    share_email,
    sign_in_email,
)

URL = "https://callscope.example.com/recordings/0b6f3c1e-8a5e-4a43-9d55-3f0c2c9d7e11"
SENDER = "Callscope <noreply@callscope.example.com>"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Collector:
    """aiosmtpd handler keeping every accepted message; ``delay`` seconds before answering DATA; ``reply``
    replaces the usual 250 answer (e.g. a 5xx refusal)."""

    def __init__(self, delay: float = 0.0, reply: str | None = None) -> None:
        self.delay = delay
        self.reply = reply
        self.messages: list[tuple[str, list[str], EmailMessage]] = []

    async def handle_DATA(self, server, session, envelope) -> str:  # aiosmtpd's hook name
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.reply:
            return self.reply
        msg = message_from_bytes(envelope.original_content or envelope.content, policy=default_policy)
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), msg))
        return "250 Message accepted for delivery"


def start_server(handler: Collector) -> Controller:
    controller = Controller(handler, hostname="127.0.0.1", port=free_port(), ready_timeout=5)
    controller.start()
    return controller


@pytest.fixture
def smtp() -> Iterator[tuple[Collector, int]]:
    handler = Collector()
    controller = start_server(handler)
    yield handler, controller.port
    controller.stop()


@pytest.fixture
def slow_smtp() -> Iterator[tuple[Collector, int]]:
    handler = Collector(delay=0.6)
    controller = start_server(handler)
    yield handler, controller.port
    controller.stop()


def smtp_mailer(port: int) -> SmtpMailer:
    return SmtpMailer(
        host="127.0.0.1", port=port, username=None, password=None, starttls=False, use_tls=False,
        sender=SENDER, timeout=5,
    )


def body(msg: EmailMessage, subtype: str) -> str:
    part = msg.get_body(preferencelist=(subtype,))
    assert part is not None, f"no text/{subtype} part"
    return part.get_content()


def sample(message: str | None = "Listen from 02:10 — the <script>alert(1)</script> part & the price.") -> Email:
    return share_email(
        recipient_name="Ana Souza",
        recipient_email="ana@example.com",
        sharer_name="Bob Stone",
        recording_name='Acme <b>renewal</b> call "Q3"',
        url=URL,
        message=message,
    )


# --- the share email itself -------------------------------------------------------------------------------------


def test_share_email_reads_well_and_escapes_html():
    email = sample()
    assert email.to == "Ana Souza <ana@example.com>"
    assert email.subject == 'Bob Stone shared a call recording with you: Acme <b>renewal</b> call "Q3"'
    assert email.text.startswith("Hi Ana Souza,")
    assert URL in email.text
    assert "> Listen from 02:10 — the <script>alert(1)</script> part & the price." in email.text
    assert email.html is not None
    assert "<script>" not in email.html and "&lt;script&gt;alert(1)&lt;/script&gt;" in email.html
    assert "<b>renewal</b>" not in email.html and "&lt;b&gt;renewal&lt;/b&gt;" in email.html
    assert "&amp; the price" in email.html
    assert f'href="{URL}"' in email.html


def test_share_email_without_message_or_names():
    email = share_email("", "ana@example.com", "", "Weekly sync", URL, None)
    assert email.text.startswith("Hi,\n")
    assert "Someone shared" in email.text and "wrote:" not in email.text
    assert email.html is not None and "blockquote" not in email.html
    assert share_email("Ana", "ana@example.com", "Bob", "x", URL, "   \n ").text.count("wrote:") == 0


def test_share_email_cannot_inject_headers():
    email = share_email("Ana\r\nBcc: evil@example.com", "ana@example.com", "Bob\nX: y", "Call\r\nBcc: e@x", URL, "hi")
    assert "\n" not in email.to and "\n" not in email.subject
    with pytest.raises(ValueError):
        Email(to="ana@example.com", subject="Hi\r\nBcc: evil@example.com", text="x")


@pytest.mark.parametrize("address", ['"><i>q@x.test', "r<b>@x.test", "jö@x.test", "ana smith@x.test", "ana@",
                                     "ana@x.test\x00"])
def test_no_header_is_built_from_an_address_that_is_not_one(address):
    """Every email's To: is rebuilt from a checked address (the members' rule), never written as it came in."""
    with pytest.raises(ValueError, match="email address"):
        Email(to=address, subject="Hi", text="x")
    with pytest.raises(ValueError, match="email address"):
        share_email("Ana", address, "Bob", "Call", URL, None)
    with pytest.raises(ValueError, match="email address"):
        sign_in_email(address, URL, 15)
    with pytest.raises(ValueError, match="email address"):
        Email(to="ana@example.com", reply_to=address, subject="Hi", text="x")


def test_the_to_header_holds_the_one_checked_address():
    assert Email(to="Bob <bob@x.test>, eve@evil.test", subject="Hi", text="x").to == "Bob <bob@x.test>"
    assert Email(to='"Ana, <Souza>" <ana@x.test>', subject="Hi", text="x").to == '"Ana, <Souza>" <ana@x.test>'
    msg = build_message(share_email('Ana "<i>" Souza', "ana@x.test", "Bob", "Call", URL, None), SENDER)
    assert msg["To"].addresses[0].addr_spec == "ana@x.test" and len(msg["To"].addresses) == 1


def test_long_message_is_cut_to_the_limit():
    email = share_email("Ana", "ana@example.com", "Bob", "Call", URL, "x" * 5000)
    quoted = [line for line in email.text.splitlines() if line.startswith("> ")]
    assert len(quoted[0]) - 2 <= 1000


# --- SMTP ---------------------------------------------------------------------------------------------------------


async def test_smtp_mailer_delivers_to_a_real_smtp_server(smtp):
    handler, port = smtp
    mailer = smtp_mailer(port)
    assert isinstance(mailer, Mailer)
    await mailer.send(sample())

    assert len(handler.messages) == 1
    mail_from, rcpt_tos, msg = handler.messages[0]
    assert mail_from == "noreply@callscope.example.com"
    assert rcpt_tos == ["ana@example.com"]
    assert msg["To"] == "Ana Souza <ana@example.com>"
    assert msg["From"] == SENDER
    assert msg["Subject"] == 'Bob Stone shared a call recording with you: Acme <b>renewal</b> call "Q3"'
    assert msg["Date"] and msg["Message-ID"].endswith("@callscope.example.com>")
    assert msg.get_content_type() == "multipart/alternative"
    text = body(msg, "plain")
    assert URL in text and "the <script>alert(1)</script> part & the price." in text
    html = body(msg, "html")
    assert "<script>" not in html and "&lt;script&gt;" in html and URL in html


async def test_smtp_mailer_text_only_email(smtp):
    handler, port = smtp
    await smtp_mailer(port).send(Email(to="ana@example.com", subject="Plain", text="Just text ✓", reply_to="b@x.org"))
    _, _, msg = handler.messages[0]
    assert msg.get_content_type() == "text/plain"
    assert msg.get_content().strip() == "Just text ✓"
    assert msg["Reply-To"] == "b@x.org"


async def test_submit_returns_at_once_while_the_server_is_slow(slow_smtp, tmp_path):
    handler, port = slow_smtp
    queue = MailQueue(smtp_mailer(port), tmp_path / "failed")
    started = time.perf_counter()
    queue.submit(sample())
    elapsed = time.perf_counter() - started
    assert elapsed < 0.05, f"submit took {elapsed:.3f}s"
    assert queue.pending == 1 and not handler.messages

    assert await queue.drain(timeout=10)
    assert len(handler.messages) == 1 and queue.pending == 0
    assert not (tmp_path / "failed").exists()


async def test_refusing_server_ends_in_failed_folder_without_raising(tmp_path):
    failed = tmp_path / "failed"
    queue = MailQueue(smtp_mailer(free_port()), failed, retries=2, backoff=0.01)
    queue.submit(sample())  # nothing raises here ...
    assert await queue.drain(timeout=10)  # ... nor here

    files = sorted(failed.glob("*.eml"))
    assert len(files) == 1
    assert not [p for p in failed.iterdir() if p.suffix != ".eml"]  # no temporary files left
    msg = message_from_bytes(files[0].read_bytes(), policy=default_policy)
    assert msg["To"] == "Ana Souza <ana@example.com>"
    assert msg["X-Callscope-Attempts"] == "3"
    assert "Connect" in msg["X-Callscope-Failure"] or "refused" in msg["X-Callscope-Failure"].lower()
    assert URL in body(msg, "plain")


async def test_permanent_refusal_is_not_retried(tmp_path):
    handler = Collector(reply="550 5.1.1 No such user")
    controller = start_server(handler)
    try:
        queue = MailQueue(smtp_mailer(controller.port), tmp_path / "failed", retries=3, backoff=5)
        queue.submit(sample())
        assert await queue.drain(timeout=3)  # a retry would wait 5 s
    finally:
        controller.stop()
    [path] = (tmp_path / "failed").glob("*.eml")
    msg = message_from_bytes(path.read_bytes(), policy=default_policy)
    assert msg["X-Callscope-Attempts"] == "1"


class Flaky:
    sender = SENDER

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0
        self.sent: list[Email] = []

    async def send(self, email: Email) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError("temporarily down")
        self.sent.append(email)


async def test_retries_then_succeeds(tmp_path):
    mailer = Flaky(failures=2)
    queue = MailQueue(mailer, tmp_path / "failed", retries=3, backoff=0.01)
    queue.submit(sample())
    assert await queue.drain(timeout=5)
    assert mailer.calls == 3 and len(mailer.sent) == 1
    assert not (tmp_path / "failed").exists()


async def test_drain_timeout_and_close_keep_unsent_email(tmp_path):
    class Stuck:
        sender = SENDER

        async def send(self, email: Email) -> None:
            await asyncio.sleep(60)

    queue = MailQueue(Stuck(), tmp_path / "failed")
    queue.submit(sample())
    assert await queue.drain(timeout=0.05) is False
    await queue.close(timeout=0.05)
    assert queue.pending == 0
    [path] = (tmp_path / "failed").glob("*.eml")
    assert "cancelled" in message_from_bytes(path.read_bytes(), policy=default_policy)["X-Callscope-Failure"]


def test_submit_without_a_loop_does_not_raise(tmp_path):
    queue = MailQueue(Flaky(failures=0), tmp_path / "failed")
    queue.submit(sample())
    assert len(list((tmp_path / "failed").glob("*.eml"))) == 1


# --- outbox -------------------------------------------------------------------------------------------------------


async def test_outbox_mailer_writes_parseable_eml_files_in_time_order(tmp_path):
    outbox = tmp_path / "outbox"
    mailer = OutboxMailer(outbox, sender=SENDER)
    await mailer.send(sample())
    await mailer.send(Email(to="carl@example.com", subject="Second", text="two"))

    files = sorted(outbox.iterdir())
    assert [p.suffix for p in files] == [".eml", ".eml"]  # no temporary files left
    first = message_from_bytes(files[0].read_bytes(), policy=default_policy)
    second = message_from_bytes(files[1].read_bytes(), policy=default_policy)
    assert b"\r\n" in files[0].read_bytes()
    assert first["To"] == "Ana Souza <ana@example.com>" and first["From"] == SENDER
    assert first["Date"] and first["Message-ID"]
    assert URL in body(first, "plain") and "&lt;script&gt;" in body(first, "html")
    assert second["Subject"] == "Second"


# --- settings -----------------------------------------------------------------------------------------------------


def test_build_mail_queue_picks_outbox_without_smtp_host(tmp_path):
    queue = build_mail_queue(Settings(data_dir=tmp_path, smtp_host=None))
    assert isinstance(queue.mailer, OutboxMailer)
    assert queue.mailer.folder == tmp_path / "outbox"
    assert queue.failed_dir == tmp_path / "outbox" / "failed"
    assert queue.mailer.sender == "Callscope <callscope@localhost>"


def test_build_mail_queue_picks_smtp_with_a_host(tmp_path):
    settings = Settings(
        data_dir=tmp_path, smtp_host="smtp.example.com", smtp_port=465, smtp_username="u", smtp_password="p",
        smtp_tls=True, mail_from="Calls <calls@example.com>",
    )
    queue = build_mail_queue(settings)
    mailer = queue.mailer
    assert isinstance(mailer, SmtpMailer)
    assert (mailer.host, mailer.port, mailer.username, mailer.password) == ("smtp.example.com", 465, "u", "p")
    assert mailer.use_tls and not mailer.starttls  # implicit TLS wins over STARTTLS
    assert mailer.sender == "Calls <calls@example.com>"
    assert queue.failed_dir == tmp_path / "outbox" / "failed"


async def test_outbox_queue_end_to_end(tmp_path):
    queue = build_mail_queue(Settings(data_dir=tmp_path))
    queue.submit(sample(message=None))
    assert await queue.drain(timeout=5)
    [path] = (tmp_path / "outbox").glob("*.eml")
    assert URL in body(message_from_bytes(path.read_bytes(), policy=default_policy), "plain")


@pytest.fixture(autouse=True)
def _no_mail_env(monkeypatch):
    for name in ("SMTP_HOST", "SMTP_PORT", "SMTP_USERNAME", "SMTP_PASSWORD", "SMTP_STARTTLS", "SMTP_TLS", "MAIL_FROM"):
        monkeypatch.delenv(f"CALLSCOPE_{name}", raising=False)


async def test_non_ascii_names_survive_smtp(smtp):
    handler, port = smtp
    email = share_email("Zoë Ångström", "zoe@example.com", "José Müller", "Café “Q3” <review>", URL, "Olá 👋")
    await smtp_mailer(port).send(email)
    _, rcpt_tos, msg = handler.messages[0]
    assert rcpt_tos == ["zoe@example.com"]
    assert msg["To"].addresses[0].display_name == "Zoë Ångström"
    assert msg["Subject"] == "José Müller shared a call recording with you: Café “Q3” <review>"
    assert "Olá 👋" in body(msg, "plain") and "&lt;review&gt;" in body(msg, "html")


def test_an_invitation_says_who_invited_whom_where_and_what_to_do_once_the_link_expired():
    email = invitation_email("Ana", "ana@example.com", "Bob Stone", "Acme <Support>", "member", URL, 15,
                             "https://callscope.example/sign-in")
    assert email.to == "Ana <ana@example.com>"
    assert email.subject == "Bob Stone invited you to Acme <Support> on Callscope"
    assert "Bob Stone added you to Acme <Support> on Callscope, as a member." in email.text and URL in email.text
    assert "expires in 15 minutes; after that, ask for a new one at https://callscope.example/sign-in" in email.text
    assert "Acme &lt;Support&gt;" in email.html and "<Support>" not in email.html
    assert "as an admin." in invitation_email("", "a@x.test", "", "", "admin", URL, 15, URL).text
