"""What looks like personal data and is not a person's: the ``info`` level of the scan.

A coding agent's trace is full of addresses nobody owns as a person: public DNS resolvers,
documentation and private ranges, a dev server's LAN address, ``noreply@`` and role
mailboxes, ``git@github.com``, example and test domains, the co-author trailer of a commit.
``pii.scan`` still reports them, at level ``info``: listed by the API, hidden by the review
queue by default, never masked, never alerted on. A person's own address stays a finding.

    >>> email_level("camila.figueiredo98@gmail.com"), email_level("noreply@anthropic.com")
    ('finding', 'info')
    >>> email_level("icon@2x.png") is None  # a file name, not an address
    True
    >>> ip_level(ipaddress.ip_address("8.8.8.8")), ip_level(ipaddress.ip_address("189.40.12.7"))
    ('info', 'finding')
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from privacy.detect.tlds import is_mail_tld

Level = Literal["finding", "info"]

# RFC 2606 and 6761: reserved for examples and tests, never anyone's mailbox.
_RESERVED_TLDS = frozenset({"example", "test", "invalid", "local", "localhost", "internal"})
_RESERVED_DOMAINS = frozenset({"example.com", "example.org", "example.net", "example.edu"})
# Registered domains used as placeholders in code and docs far more than as real mailboxes.
_PLACEHOLDER_DOMAINS = frozenset(
    {
        "test.com",
        "testing.com",
        "fake.com",
        "foo.com",
        "bar.com",
        "baz.com",
        "domain.com",
        "yourdomain.com",
        "mydomain.com",
        "yourcompany.com",
        "company.com",
        "acme.com",
        "email.example",
        "exemplo.com",
        "exemplo.com.br",
        "teste.com",
        "teste.com.br",
    }
)
# Role and no-reply mailboxes: an organisation's, not a person's.
_ROLE_LOCAL_PARTS = frozenset(
    {
        "noreply",
        "no-reply",
        "no_reply",
        "donotreply",
        "do-not-reply",
        "notifications",
        "notification",
        "support",
        "suporte",
        "help",
        "ajuda",
        "info",
        "contact",
        "contato",
        "admin",
        "administrator",
        "root",
        "security",
        "seguranca",
        "postmaster",
        "abuse",
        "webmaster",
        "hostmaster",
        "sales",
        "vendas",
        "billing",
        "financeiro",
        "hello",
        "ola",
        "team",
        "bot",
        "bots",
        "git",
        "mailer-daemon",
        "privacy",
        "privacidade",
        "legal",
        "juridico",
        "press",
        "jobs",
        "careers",
        "feedback",
        "newsletter",
        "marketing",
        "office",
        "release",
        "releases",
        "packages",
        "maintainers",
        "github-actions",
        "dependabot",
        # coding agents' own commit identities
        "claude",
        "openhands",
        "copilot",
        "devin",
        "codex",
        "cursoragent",
        "ci",
        "devnull",
        "test",
        "user",
        "you",
        "your.name",
        "your-email",
        "youremail",
        "seu.email",
        "seuemail",
    }
)
# Git makes up "login@machine.local" when no address is set: a person's login on their
# own machine, named the way machines are ("kairis-MacBook-Pro", "DESKTOP-GDG65J7").
_MACHINE_TLDS = frozenset({"local", "localdomain", "lan", "home"})
_MACHINE_WORDS = ("macbook", "imac", "mac-mini", "macmini", "desktop-", "laptop", "-pc", "thinkpad")
_NO_REPLY = ("noreply", "no-reply", "no_reply", "donotreply", "do-not-reply")
# File extensions that end "name@2x.png" or a pnpm store path, never a mail domain.
_FILE_EXTENSIONS_TEXT = (
    "png jpg jpeg gif svg webp ico bmp tif tiff heic js mjs cjs ts tsx jsx map css scss sass "
    "less json html htm vue svelte lock yml yaml toml ini cfg txt log csv pdf wasm woff woff2 "
    "ttf otf eot mp3 mp4 wav ogg webm gz tgz bz2 xz dylib so dll exe bin dat db sqlite md mdx"
)
_FILE_EXTENSIONS = frozenset(_FILE_EXTENSIONS_TEXT.split())
# Addresses documentation writes for "an address": "--vm-ip 1.2.3.4".
_PLACEHOLDER_IPS = frozenset({"1.2.3.4", "4.3.2.1", "5.6.7.8", "12.34.56.78", "123.45.67.89"})
# Resolvers and addresses every network reaches: nobody's machine.
_PUBLIC_INFRA = frozenset(
    {
        "8.8.8.8",
        "8.8.4.4",
        "1.1.1.1",
        "1.0.0.1",
        "9.9.9.9",
        "149.112.112.112",
        "208.67.222.222",
        "208.67.220.220",
        "4.2.2.2",
        "4.2.2.1",
        "2001:4860:4860::8888",
        "2001:4860:4860::8844",
        "2606:4700:4700::1111",
        "2606:4700:4700::1001",
    }
)
_DOCUMENTATION = (
    ipaddress.ip_network("192.0.2.0/24"),
    ipaddress.ip_network("198.51.100.0/24"),
    ipaddress.ip_network("203.0.113.0/24"),
    ipaddress.ip_network("2001:db8::/32"),
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT, like private space

# Names that stand for nobody in docs and examples.
PLACEHOLDER_NAMES = frozenset(
    {
        "john doe",
        "jane doe",
        "john smith",
        "jane roe",
        "richard roe",
        "joe bloggs",
        "max mustermann",
        "erika mustermann",
        "pinco pallino",
        "fulano de tal",
        "ciclano de tal",
        "beltrano de tal",
        "your name",
        "seu nome",
        "unknown",
    }
)


# A lower-case letter then a capital: how code names a class, never how a host is written.
_CAMEL_CASE = re.compile(r"[a-z][A-Z]")


def email_level(address: str) -> Level | None:
    """``finding`` for a mailbox a person may own, ``info`` for a role, no-reply, example or
    test mailbox, None for what only looks like an address (``icon@2x.png``)."""
    local, _, domain = address.lower().rpartition("@")
    labels = domain.split(".")
    if labels[-1] in _FILE_EXTENSIONS and (
        len(labels) == 2 or any(label.isdigit() for label in labels)
    ):
        return None  # "icon@2x.png", a pnpm store's "core@7.2.0.js"
    if labels[-1] in _MACHINE_TLDS and any(w in labels[0] for w in _MACHINE_WORDS):
        return "info" if local in _ROLE_LOCAL_PARTS else "finding"  # git's login@machine
    if _CAMEL_CASE.search(address, address.rfind("@")):
        return None  # a file mentioned by its class: "@/download@DownloadQueueDispatcher.kt"
    if (
        labels[-1] in _RESERVED_TLDS
        or domain in _RESERVED_DOMAINS
        or domain in _PLACEHOLDER_DOMAINS
        or domain.endswith(".example.com")
    ):
        return "info"
    if not is_mail_tld(labels[-1]) or any(label.isdigit() for label in labels):
        return None  # a decorator "@click.argument", a patch file "pkg@1.0.2.patch"
    if domain.endswith(".gserviceaccount.com"):
        return "info"  # a cloud service account: "deploy@project.iam.gserviceaccount.com"
    base = local.split("+", 1)[0]
    if base.startswith("your"):
        return "info"  # a placeholder: "YOUR_USERNAME@gerrit.example.org", "yourname@"
    if "bot" in re.split(r"[-_.]", base):
        return "info"  # a bot's identity: "aws-lc-github-bot@amazon.com"
    if any(word in base for word in _NO_REPLY) or base == labels[-2]:
        return "info"  # "npm-oidc-no-reply@", a service's own "venmo@venmo.com"
    if domain == "users.noreply.github.com":
        # "<id>+<login>@users.noreply.github.com" is one person's commit identity; a bot's
        # ("…+dependabot[bot]@…") or a bare role's is nobody's.
        login = local.split("+", 1)[-1]
        return "info" if "[bot]" in login or login in _ROLE_LOCAL_PARTS else "finding"
    return "info" if base in _ROLE_LOCAL_PARTS else "finding"


def ip_level(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> Level:
    """``info`` for addresses that name no one's machine on the internet: private, shared,
    documentation ranges and public resolvers; ``finding`` for the rest."""
    if (
        str(address) in _PUBLIC_INFRA
        or str(address) in _PLACEHOLDER_IPS
        or address.is_private
        or any(address in net for net in _DOCUMENTATION)
        or (address.version == 4 and address in _SHARED)
    ):
        return "info"
    return "finding"


def name_level(canonical: str) -> Level:
    return "info" if canonical in PLACEHOLDER_NAMES else "finding"
