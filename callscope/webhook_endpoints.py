"""Which webhook endpoints may be sent to, and the signed POST to one: the rule that delivery (workers/webhooks.py)
applies to every attempt, that saving an endpoint (callscope/services/webhook_settings.py) applies before it is
stored, and that a test event uses. Only ``https://`` and public addresses unless the development settings
(CALLSCOPE_WEBHOOK_ALLOW_HTTP, CALLSCOPE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES) allow, and the checked address is the one
connected to; the URL is parsed with `validation.endpoint`, which checked it when it was saved."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time

import httpx

from callscope import validation, webhook_signing
from callscope.config import Settings

USER_AGENT = "Callscope-Webhooks/1"
EXCERPT = 500  # characters of the endpoint's answer kept with each attempt and shown for a test event


class Refused(Exception):
    """The endpoint may not be sent to (scheme, address, missing secret); the message says why. `retry`: it may be
    allowed later without a change of the URL (a name that does not resolve yet, a Secret not made yet)."""

    def __init__(self, message: str, retry: bool = False) -> None:
        super().__init__(message)
        self.retry = retry


def address_allowed(address: str, allow_private: bool) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if allow_private:
        return not (ip.is_multicast or ip.is_unspecified)
    return ip.is_global and not (ip.is_multicast or ip.is_reserved)


async def resolve_checked(url: str, settings: Settings) -> tuple[str, str]:
    """(URL with the host replaced by a checked IP address, the host name); Refused when not allowed. The URL is
    parsed with `validation.endpoint`, the function every webhook URL was checked with when it was saved."""
    try:
        parts = validation.endpoint(url)
    except ValueError as exc:  # saved before the check existed (the outbox keeps the URL of each event)
        raise Refused(f"not an http(s) URL that can be delivered to: {exc}: {url}") from None
    if parts.scheme == "http" and not settings.webhook_allow_http:
        raise Refused("only https:// endpoints are delivered to (CALLSCOPE_WEBHOOK_ALLOW_HTTP allows http://)")
    host = parts.host
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, parts.connect_port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise Refused(f"cannot resolve {host}: {exc.strerror}", retry=True) from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))  # typeshed: str | int
    denied = [a for a in addresses if not address_allowed(a, settings.webhook_allow_private_addresses)]
    if denied or not addresses:
        raise Refused(f"{host} resolves to a loopback, link-local, private or reserved address ({denied[0]}); "
                      "CALLSCOPE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES allows it for development" if denied
                      else f"{host} has no address")
    address = addresses[0]
    netloc = f"[{address}]" if ":" in address else address
    if parts.port:
        netloc += f":{parts.port}"
    return f"{parts.scheme}://{netloc}{parts.path}", host


async def post(client: httpx.AsyncClient, url: str, body: bytes, secrets: list[str], message_id: str,
               settings: Settings) -> httpx.Response:
    """POST `body` to the endpoint, signed with `secrets` (Standard Webhooks), connecting to the checked address
    (Refused when not allowed) with the URL's own host name for TLS and the `Host` header."""
    target, host = await resolve_checked(url, settings)
    headers = webhook_signing.headers(secrets, message_id, int(time.time()), body)
    headers["host"] = validation.endpoint(url).authority
    headers["user-agent"] = USER_AGENT
    return await client.post(target, content=body, headers=headers, extensions={"sni_hostname": host})


async def refusal(url: str, settings: Settings) -> Refused | None:
    """Why delivery would refuse `url` now, None when it would send: checked where an endpoint is saved (Settings →
    Webhooks, the reconciler's WebhookEndpoint condition for applied YAML), so that one delivery can never make is
    not saved silently. A `retry` refusal (a name that does not resolve yet) is a warning there, not an error: the
    DNS record may be made after the webhook, and delivery retries until it is."""
    try:
        await resolve_checked(url, settings)
    except Refused as exc:
        return exc
    return None
