import pytest
from tests.privacy.test_every_door import crawl, SEEDS, ROLES
from tests.privacy.doors import labelled_project

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("role", ROLES)
def test_count(client, role):
    door = labelled_project()
    client.force_login(door.users[role])
    seeds = [s(door) for s in SEEDS] + (["/admin/"] if role == "superuser" else [])
    n = sum(1 for _ in crawl(client, seeds, admin=role == "superuser"))
    print("COUNT", role, n)
