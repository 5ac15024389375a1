"""Where a webhook may POST, and the POST itself: the one module that talks to receivers.

A destination is resolved once, every address it resolves to is checked, and the delivery
connects to the very address that was checked (the Host header and TLS SNI still carry the
name, and the certificate is verified against it), so a name that resolves to a public address
when checked and to 127.0.0.1 a moment later (DNS rebinding) cannot aim a delivery inside.
Refused: private, loopback, link-local, multicast, unspecified, reserved and other non-public
addresses, written any way (IPv4 in decimal, octal or hex forms like ``http://2130706433/`` or
``http://0x7f.1/``, IPv4-mapped, 6to4 and NAT64 IPv6), unless ``WEBHOOK_ALLOWED_NETWORKS``
allows the range; cloud metadata addresses are refused always.

Tests replace ``resolve`` (no real DNS), e.g. ``monkeypatch.setattr(webhook_destinations,
"resolve", fake)``.
"""

from __future__ import annotations

import http.client
import ipaddress
import re
import socket
import ssl
import urllib.parse
from dataclasses import dataclass

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Instance metadata and host agents of the clouds: credentials live there. Never a receiver,
# whatever WEBHOOK_ALLOWED_NETWORKS says.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean...
        "169.254.170.2",  # AWS ECS task credentials
        "169.254.169.253",  # AWS VPC DNS
        "fd00:ec2::254",  # AWS IPv6
        "fd00:ec2::253",
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
        "168.63.129.16",  # Azure wire server
    )
)
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_NUMBER = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


class DestinationError(ValueError):
    """A webhook's destination cannot be reached; the message names why."""


class DestinationRefused(DestinationError):
    """The destination is not one a webhook may reach (not retried: the answer will not
    change until the URL or WEBHOOK_ALLOWED_NETWORKS does)."""


class DestinationUnresolved(DestinationError):
    """The name did not resolve (may be temporary)."""


@dataclass(frozen=True)
class Destination:
    """A checked destination: connect to ``address``, speak to ``host``."""

    scheme: str
    host: str
    port: int
    target: str  # path and query, what goes on the request line
    address: str


def _resolve_system(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


# (host, port) -> the addresses the name resolves to; raises OSError when it does not.
resolve = _resolve_system


def legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a host written as numbers means, in every form ``inet_aton`` and
    browsers accept (``2130706433``, ``0x7f.1``, ``0177.0.0.1``, ``127.1``); None for a name.

    >>> legacy_ipv4("0x7f.1")
    IPv4Address('127.0.0.1')
    """
    labels = host.lower().removesuffix(".").split(".")
    if not _NUMBER.match(labels[-1]):
        return None  # a name (a name's last label is never all digits)
    if len(labels) > 4 or not all(_NUMBER.match(label) for label in labels):
        raise DestinationRefused(f"{host!r} is neither a name nor a valid IPv4 address")
    numbers = []
    for label in labels:
        if label.startswith("0x"):
            numbers.append(int(label[2:] or "0", 16))
        elif len(label) > 1 and label.startswith("0"):
            if not set(label) <= set("01234567"):
                raise DestinationRefused(f"{host!r} is not a valid IPv4 address")
            numbers.append(int(label, 8))
        else:
            numbers.append(int(label))
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        raise DestinationRefused(f"{host!r} is not a valid IPv4 address")
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in net for net in _NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _kind(address: IPAddress) -> str:
    """What makes an address no place for a webhook ("" when it is public)."""
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_reserved:
        return "a reserved address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "a reserved address"
    return ""


def _allowed(address: IPAddress) -> bool:
    for cidr in settings.WEBHOOK_ALLOWED_NETWORKS:
        network = ipaddress.ip_network(cidr, strict=False)
        if network.version == address.version and address in network:
            return True
    return False


UNLESS_ALLOWED = "; webhooks reach public addresses only unless WEBHOOK_ALLOWED_NETWORKS allows it"


def address_check(address: IPAddress) -> str:
    """Why a webhook may not reach ``address`` ("" when it may).

    >>> address_check(ipaddress.ip_address("::ffff:169.254.169.254"))
    'a cloud metadata address (never allowed)'
    """
    if isinstance(address, ipaddress.IPv6Address):
        # ::ffff:10.0.0.1 is 10.0.0.1; a scope id (fe80::1%eth0) changes nothing.
        address = address.ipv4_mapped or ipaddress.IPv6Address(int(address))
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address (never allowed)"
    if _allowed(address):
        return ""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            why = address_check(embedded)
            return f"an IPv6 form of {embedded}, {why}" if why else ""
    kind = _kind(address)
    return kind + UNLESS_ALLOWED if kind else ""


def _shown(address: IPAddress) -> str:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return f"::ffff:{address.ipv4_mapped}"  # as written, not ::ffff:a00:1
    return str(address)


def destination_resolve(url: str) -> Destination:
    """Resolve ``url`` and check every address it names.

    Raises DestinationRefused (with a message naming the problem) or DestinationUnresolved.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise DestinationRefused(f"expected an http:// or https:// address, got {url!r}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise DestinationRefused(f"{url!r} has an invalid port") from None
    host = parts.hostname or ""
    if not host:
        raise DestinationRefused(f"{url!r} has no host")
    literal: IPAddress | None
    if ":" in host:
        try:
            literal = ipaddress.IPv6Address(host)
        except ValueError:
            raise DestinationRefused(f"{host!r} is not a valid IPv6 address") from None
    else:
        literal = legacy_ipv4(host)
    if literal is not None:
        why = address_check(literal)
        if why:
            raise DestinationRefused(f"{_shown(literal)} is {why}")
        host = str(literal)
        addresses = [host]
    else:
        try:
            found = resolve(host, port)
        except (OSError, UnicodeError) as exc:
            raise DestinationUnresolved(f"host {host!r} does not resolve ({exc})") from None
        if not found:
            raise DestinationUnresolved(f"host {host!r} does not resolve")
        addresses = []
        for text in found:
            try:
                address = ipaddress.ip_address(text)
            except ValueError:
                raise DestinationRefused(f"{host!r} resolves to {text!r}, not an address") from None
            why = address_check(address)
            if why:
                raise DestinationRefused(f"{host!r} resolves to {_shown(address)}, {why}")
            addresses.append(text)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return Destination(
        scheme=parts.scheme, host=host, port=port, target=target, address=addresses[0]
    )


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, destination: Destination, *, timeout: float) -> None:
        super().__init__(destination.host, destination.port, timeout=timeout)
        self.pinned = destination.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.pinned, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, destination: Destination, *, timeout: float) -> None:
        self.tls = ssl.create_default_context()
        super().__init__(destination.host, destination.port, timeout=timeout, context=self.tls)
        self.pinned = destination.address

    def connect(self) -> None:
        sock = socket.create_connection((self.pinned, self.port), self.timeout)
        # SNI and certificate check against the name, not the address connected to.
        self.sock = self.tls.wrap_socket(sock, server_hostname=self.host)


def post(
    destination: Destination, *, body: bytes, headers: dict[str, str], timeout: float
) -> tuple[int | None, str]:
    """One POST to the checked address: (status code or None, error text or "").

    A redirect is an answer, not an instruction: a signed POST is never re-sent elsewhere.
    """
    pinned = _PinnedHTTPSConnection if destination.scheme == "https" else _PinnedHTTPConnection
    connection = pinned(destination, timeout=timeout)
    try:
        connection.request("POST", destination.target, body=body, headers=headers)
        response = connection.getresponse()
        if response.status >= 300:
            text = response.read(200).decode("utf-8", "replace")
            return response.status, f"HTTP {response.status}: {text}"
        return response.status, ""
    except (OSError, http.client.HTTPException) as exc:
        return None, f"{type(exc).__name__}: {exc}"[:500]
    finally:
        connection.close()
