"""No action shown to a role that cannot take it.

As each role, every page of test_every_page's PAGES is opened, and every page linked from
them (same site, one hop further, up to a bound); each form that posts, each htmx post and each
link is then taken as a user would take it (a form with the values it is shown with), and none
may answer 403. A page the role may not open is fine as long as nothing it sees links there.

Django's test client, not Chromium: what is tested is the HTML each role is served, and what
the server answers to each thing in it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from sessions.models import Membership, Role
from tests.browser.test_every_page import ANONYMOUS, PAGES, Site, site  # noqa: F401

ROLES = [Role.VIEWER, Role.ENGINEER, Role.PRIVACY_REVIEWER, Role.ADMIN]
MAX_PAGES = 150  # per role: PAGES plus one hop, message permalinks folded into their page
# taken last, so what they remove cannot turn an earlier action into a 404
DESTRUCTIVE = ("delete", "remove", "revoke", "erase", "redact", "/subjects/")
NOT_TAKEN = {"/logout/"}  # signing out is every role's, and would end the walk


@dataclass
class Form:
    action: str
    method: str
    fields: list[tuple[str, str]] = field(default_factory=list)


class Actions(HTMLParser):
    """Links, forms (with the values a user would send unchanged) and htmx posts of a page."""

    def __init__(self, base: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base = base
        self.links: list[str] = []
        self.forms: list[Form] = []
        self._form: Form | None = None
        self._select: str | None = None
        self._select_value: str | None = None
        self._textarea: str | None = None
        self._text = ""

    def _url(self, value: str | None) -> str:
        return urljoin(self.base, value or self.base)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "hx-post" in a and tag != "form":
            self.forms.append(Form(self._url(a["hx-post"]), "post"))
        if tag == "a" and a.get("href", "").startswith(("/", "?")):
            self.links.append(self._url(a["href"]))
        elif tag == "form":
            method = "post" if "hx-post" in a else a.get("method", "get").lower()
            action = a.get("hx-post") or a.get("action")
            self._form = Form(self._url(action), method)
            self.forms.append(self._form)
        elif self._form is None:
            return
        elif tag == "input" and a.get("name"):
            kind = a.get("type", "text").lower()
            if kind in ("checkbox", "radio") and "checked" not in a:
                return
            if kind in ("submit", "button", "file", "image", "reset"):
                return
            self._form.fields.append(
                (a["name"], a.get("value", "on" if kind == "checkbox" else ""))
            )
        elif tag == "select" and a.get("name"):
            self._select, self._select_value = a["name"], None
        elif tag == "option" and self._select is not None:
            if self._select_value is None or "selected" in a:
                self._select_value = a.get("value", "")
        elif tag == "textarea" and a.get("name"):
            self._textarea, self._text = a["name"], ""
        elif tag == "button" and a.get("formaction"):
            self.forms.append(Form(self._url(a["formaction"]), "post", list(self._form.fields)))

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "select" and self._form is not None and self._select is not None:
            self._form.fields.append((self._select, self._select_value or ""))
            self._select = None
        elif tag == "textarea" and self._form is not None and self._textarea is not None:
            self._form.fields.append((self._textarea, self._text))
            self._textarea = None
        elif tag == "form":
            self._form = None


def _page_key(url: str) -> str:
    # message permalinks (?seq=N) and sort orders are the same page
    parts = urlsplit(url)
    return (
        parts.path
        if "seq=" in parts.query or "sort=" in parts.query
        else f"{parts.path}?{parts.query}"
    )


def _is_html_page(path: str) -> bool:
    return not path.startswith(("/static/", "/api/", "/admin/")) and not path.endswith(
        (".csv", ".json", ".jsonl")
    )


@pytest.mark.parametrize("role", ROLES)
def test_no_action_shown_answers_403(client: Client, site: Site, role: str) -> None:  # noqa: F811
    user = get_user_model().objects.create_user(username=f"walker-{role}")
    Membership.objects.create(user=user, project=site.project, role=role)
    client.force_login(user)
    origin = "http://testserver"
    seeds = [f"{origin}{path(site)}" for name, path in PAGES.items() if name not in ANONYMOUS]
    queue: deque[tuple[str, str | None]] = deque((url, None) for url in seeds)
    seen: set[str] = set()
    forms: dict[str, tuple[Form, str]] = {}  # one per address: the first page showing it
    refused: list[str] = []
    opened = 0
    while queue and opened < MAX_PAGES:
        url, shown_on = queue.popleft()
        key = _page_key(url)
        if key in seen:
            continue
        seen.add(key)
        parts = urlsplit(url)
        target = f"{parts.path}?{parts.query}" if parts.query else parts.path
        response = client.get(target)
        opened += 1
        if response.status_code == 403:
            if shown_on is not None:
                refused.append(f"link to {target} on {shown_on}")
            continue
        if shown_on is not None and not _is_html_page(parts.path):
            continue
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        parser = Actions(url)
        parser.feed(response.content.decode())
        for link in parser.links:
            link_parts = urlsplit(link)
            if link_parts.netloc != urlsplit(origin).netloc:
                continue
            if shown_on is None or _is_html_page(link_parts.path):
                queue.append((link, target))
            elif _page_key(link) not in seen:  # a download two hops away: only its answer
                seen.add(_page_key(link))
                if client.get(link_parts.path).status_code == 403:
                    refused.append(f"link to {link_parts.path} on {target}")
        for form in parser.forms:
            if form.method == "get":
                queue.append((form.action, target))
            else:
                forms.setdefault(urlsplit(form.action).path, (form, target))

    def destructive_last(item: tuple[Form, str]) -> tuple[bool, bool]:
        path = urlsplit(item[0].action).path
        # removing a member may remove the walker: that comes last of all
        return any(word in path for word in DESTRUCTIVE), "/members/" in path

    taken = 0
    for form, shown_on in sorted(forms.values(), key=destructive_last):
        path = urlsplit(form.action).path
        if path in NOT_TAKEN:
            continue
        data: dict[str, list[str]] = {}
        for name, value in form.fields:
            data.setdefault(name, []).append(value)
        taken += 1
        status = client.post(path, data).status_code
        if status == 403 or status >= 500:
            refused.append(f"form posting to {path} on {shown_on}: {status}")

    assert opened > len(seeds) // 2, "the walk opened the pages"
    assert taken > 0, "the walk took some action"
    assert refused == [], f"as {role}, shown but refused: {refused}"
