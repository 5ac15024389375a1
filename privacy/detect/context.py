"""Whether a value found by ``pii.scan`` points at a person: the context rules of the level.

A check-digit-valid number or a public IP address is somebody's only in some places. Digits
pass a document's check digits by chance about one time in ten to a hundred: in a timestamp, a
column of ``ps`` output, a money amount or a British phone number they are nobody's document.
An address in a URL, a connection string or a server's configuration names a machine, not a
person; a client address in a request log, "my IP" or an address beside a user's e-mail does.

    >>> number_level("Meu documento é 52998224725", 16, 27, re.compile("cpf"))
    'finding'
    >>> number_level("backup_20221003040032.sql", 7, 21, re.compile("cnpj"))
    'info'
    >>> ip_level("DB_HOST=34.95.12.8", 8, 18), ip_level("client: 189.40.12.7", 8, 19)
    ('info', 'finding')

Every pattern here is searched inside a window of a few dozen characters around one value.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from privacy.detect.not_personal import Level, email_level

WINDOW = 48  # characters before a value searched for a cue


def mark_within(marks: Sequence[int], start: int, end: int, before: int, after: int) -> bool:
    """Whether one of ``marks`` (sorted starts of a text's marks: a test's, an example's)
    lies from ``before`` characters before the value at [start, end) to ``after`` after it.
    A binary search: a text's values cost a logarithm of its marks each, never a rescan.

    >>> mark_within([10, 500], 40, 45, 30, 5), mark_within([10, 500], 100, 105, 30, 5)
    (True, False)
    """
    i = bisect.bisect_left(marks, start - before)
    return i < len(marks) and marks[i] <= end + after


_AFTER = 16  # characters after a number searched for its document's name: "... (CPF)"

# Words of a Brazilian record around a bare number: "Meu documento é ...", "cliente-...".
_BR_RECORD = re.compile(
    r"(?<![a-z])(documento|inscri[çc][ãa]o|n[º°]|n[úu]mero d[oae]|titular|cadastro|contribuinte"
    r"|portador|benefici[áa]ri[oa]|cliente|segurad[oa]|paciente|eleitor|identifica[çc][ãa]o)"
    r"(?![a-z])",
    re.IGNORECASE,
)


def number_level(text: str, start: int, end: int, named: re.Pattern[str]) -> Level:
    """The level of a check-digit-valid number at [start, end) with neither its document's
    name before it nor its document's punctuation: ``finding`` when ``named`` (the
    document's keyword) follows it closely ("52998224725 (CPF)") or the words before it are a
    Brazilian record's; else ``info``."""
    if named.search(text, end, min(len(text), end + _AFTER)):
        return "finding"
    if _BR_RECORD.search(text, max(0, start - WINDOW), start):
        return "finding"
    return "info"


# A person's address: a client, a visitor, someone logging in, "my IP".
_PERSON_CUE = re.compile(
    r"(?<![a-z])(clients?|cliente|customer|visitor|visitante|usu[áa]rio|user[_ ]?ip|my ip|meu ip"
    r"|your ip|seu ip|ip|remote[_ ]?(?:addr(?:ess)?|ip|host)|x-forwarded-for|x-real-ip|forwarded"
    r"|logged in|log in|login|signed in|sign-in|accepted|failed password|invalid user"
    r"|connection from|request from|requested by|access from|acesso de)(?![a-z])",
    re.IGNORECASE,
)
# A machine's address: a server, a host in configuration, a command reaching a machine.
_MACHINE_CUE = re.compile(
    r"(?<![a-z])(servers?|servidor|hosts?|hostname|listen(?:ing)?|bind|endpoint|upstream|proxy"
    r"|dns|nameserver|gateway|database|db|redis|postgres(?:ql)?|mysql|mongo(?:db)?|ping|curl"
    r"|wget|ssh|scp|rsync|docker|container|node|cluster|inet|vps|ec2|droplet|instance|deploy"
    r"|release|url|api|tcp|udp|port|subnet|route|ftp|sftp|dig|nslookup|traceroute|nginx"
    r"|apache|address of|origin|cdn|load balancer|lb|ingress|egress|vpn)(?![a-z])",
    re.IGNORECASE,
)
# An access log line starts with the client's address: `189.40.12.7 - - [06/Dec/2026...`.
_ACCESS_LOG = re.compile(r"[ \t]{1,4}-[ \t]{1,4}(?:-|[^\s]{1,64})[ \t]{1,4}\[")
_EMAIL_NEAR = re.compile(r"[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}\.[A-Za-z]{2,24}")


def _last_end(pattern: re.Pattern[str], text: str, start: int, end: int) -> int:
    last = -1
    for match in pattern.finditer(text, start, end):
        last = match.end()
    return last


def ip_level(text: str, start: int, end: int) -> Level:
    """The level of a public address at [start, end) of ``text`` (private, documentation and
    resolver addresses are "info" before this is asked): ``finding`` when it points at a
    person, ``info`` when it names a machine or nothing says whose it is."""
    before = text[max(0, start - 3) : start]
    if before.endswith(("://", "@")):
        return "info"  # a URL's or a connection string's host, ssh user@host
    line_start = text.rfind("\n", 0, start) + 1
    if not text[line_start:start].strip() and _ACCESS_LOG.match(text, end):
        return "finding"  # an access log line: the client's address
    window = max(line_start, start - WINDOW)
    person = _last_end(_PERSON_CUE, text, window, start)
    machine = _last_end(_MACHINE_CUE, text, window, start)
    if person > machine:
        return "finding"
    if machine > person:
        return "info"
    line_end = text.find("\n", end)
    line_end = len(text) if line_end == -1 else line_end
    near = text[max(line_start, start - 120) : min(line_end, end + 120)]
    if "@" in near and any(
        email_level(m.group(0)) == "finding" for m in _EMAIL_NEAR.finditer(near)
    ):
        return "finding"  # beside a user's e-mail address
    return "info"
