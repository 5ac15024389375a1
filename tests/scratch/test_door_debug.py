import re

import pytest

from tests.privacy.doors import _FOLD, RAW_FORMS, labelled_project
from tests.privacy.test_every_door import SEEDS, crawl, shape

pytestmark = pytest.mark.django_db


def test_debug(client):
    door = labelled_project()
    import os

    role = os.environ.get("ROLE", "admin")
    client.force_login(door.users[role])
    seeds = [s(door) for s in SEEDS] + (["/admin/"] if role == "superuser" else [])
    seen_ctx = {}
    forms = [f for fs in RAW_FORMS.values() for f in fs]
    for url, body in crawl(client, seeds, admin=role == "superuser"):
        folded = _FOLD.sub("@", body)
        for form in forms:
            for m in re.finditer(re.escape(form), folded, re.I):
                ctx = folded[max(0, m.start() - 90) : m.end() + 30].replace("\n", " ")
                key = re.sub(r"\d+", "N", ctx)
                if key not in seen_ctx:
                    seen_ctx[key] = (url, ctx)
    for key, (url, ctx) in seen_ctx.items():
        print(f"{shape(url):45} | {ctx}")
