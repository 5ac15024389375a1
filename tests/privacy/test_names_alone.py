"""A found person's names alone: once a text names Camila Nogueira Figueiredo for sure, her
surname alone is masked in every text of the project and her first name alone in every text
of her session, capitalised as written and never inside an identifier (``mariaDB``,
``maria_id``, ``Maria.tsx`` are not Maria). Another session's "Camila" is somebody else's
until that session finds her; another project knows nothing of her.
"""

from __future__ import annotations

import json
import logging

import pytest
from django.test import Client

from alerts import webhooks
from alerts.models import Alert
from compaction import pipeline
from privacy import masking, subjects
from privacy.detect import person_names
from privacy.log_masking import MaskPersonalData
from privacy.models import KnownName
from sessions.models import AgentSession, Project
from tests.factories import make_key, make_project, make_session, make_user, wire_message
from tests.infra import hang_guard

FOUND = "Sou Camila Nogueira Figueiredo, CPF 530.582.439-79. Meu pedido atrasou."
FIRST_ALONE = "Aqui é a Camila de novo, pode ver?"
SURNAME_ALONE = "A nota da Figueiredo saiu errada."


# --- the words: no database ------------------------------------------------------------------


def test_a_name_lends_its_first_word_and_its_surnames_without_particles() -> None:
    parts = person_names.name_parts("Ana Maria de Souza")
    assert parts == person_names.NameParts("ana", ("maria", "souza"))
    assert person_names.name_parts("Camila") is None


@pytest.mark.parametrize(
    "text",
    [
        "mariaDB",
        "MariaDB",
        "maria_id",
        "Maria_id",
        "Maria.tsx",
        "src/Maria.tsx",
        "Maria-api",
        "@Maria",
        "Maria()",
        "$Maria",
        "user.Maria",
    ],
)
def test_a_name_inside_an_identifier_is_never_a_name_alone(text: str) -> None:
    scope = masking.NameScope.known(surnames=["Maria"], firsts=["Maria"])
    assert masking.names_mask(text, scope) == text


def test_a_first_name_is_masked_only_capitalised_and_a_surname_also_in_capitals() -> None:
    scope = masking.NameScope.known(surnames=["Figueiredo"], firsts=["Camila"])
    masked = masking.names_mask(
        "Camila wrote. camila is a word here. CAMILA shouts. FIGUEIREDO, Figueiredo.", scope
    )
    assert masked == (
        "[person_name C***] wrote. camila is a word here. CAMILA shouts. "
        "[person_name F***], [person_name F***]."
    )


def test_without_a_scope_nothing_but_the_scan_is_masked() -> None:
    assert masking.names_mask("Camila Figueiredo") == "Camila Figueiredo"
    assert masking.names_mask("Camila", masking.NameScope.known(surnames=[])) == "Camila"


def test_the_word_pattern_reads_a_megabyte_of_its_worst_case_in_linear_time() -> None:
    """A backtracking pattern takes hours on these; a linear one, well under a second. The
    alarm guards against a hang and is minutes long, not a measure of speed."""
    with hang_guard("the name-alone pattern did not finish 1 MB"):
        for text in ("A" * 1_000_000 + "a", "Ab" * 500_000, "Aa." * 333_333, "Aaaa(" * 200_000):
            person_names.words_alone(text)


# --- the doors --------------------------------------------------------------------------------


def _analysed(project: Project, *texts: str, external_id: str | None = None) -> AgentSession:
    messages = [
        wire_message(seq, "user" if seq % 2 == 0 else "assistant", content=text)
        for seq, text in enumerate(texts)
    ]
    session = make_session(project, external_id=external_id, messages=messages)
    pipeline.session_analyse(session_id=session.pk)
    return session


@pytest.fixture
def project() -> Project:
    return make_project()


@pytest.fixture
def found(project: Project) -> AgentSession:
    return _analysed(project, FOUND, "Vou verificar.", FIRST_ALONE, "Rodei o mariaDB de Maria.tsx.")


@pytest.mark.django_db
def test_finding_a_person_stores_her_name_parts_by_keyed_hash_only(found: AgentSession) -> None:
    rows = set(KnownName.objects.filter(session=found).values_list("part", "digest"))
    assert rows == {
        ("first", masking.name_digest("Camila")),
        ("surname", masking.name_digest("Nogueira")),
        ("surname", masking.name_digest("Figueiredo")),
    }
    assert not any("camila" in digest.lower() for _, digest in rows)


@pytest.mark.django_db
def test_a_name_of_seed_data_lends_nothing(project: Project) -> None:
    seeded = _analysed(project, 'seed.ts: { "full_name": "Sandra Webb" }')
    assert not KnownName.objects.filter(session=seeded).exists()


@pytest.mark.django_db
def test_the_session_page_masks_her_first_name_and_surname_alone(
    client: Client, project: Project, found: AgentSession
) -> None:
    client.force_login(make_user(project=project))
    body = client.get(f"/sessions/{found.pk}/").content.decode()
    assert "Aqui é a [person_name C***] de novo" in body
    assert "Camila" not in body
    assert "mariaDB" in body
    assert "Maria.tsx" in body


@pytest.mark.django_db
def test_her_surname_is_masked_in_another_session_of_the_project_and_her_first_name_is_not(
    client: Client, project: Project, found: AgentSession
) -> None:
    other = _analysed(project, f"{SURNAME_ALONE} Falei com a Camila do suporte.")
    client.force_login(make_user(project=project))
    body = client.get(f"/sessions/{other.pk}/").content.decode()
    assert "A nota da [person_name F***] saiu errada." in body
    assert "Figueiredo" not in body
    assert "a Camila do suporte" in body  # a first name alone is only hers in her session


@pytest.mark.django_db
def test_another_project_knows_nothing_of_her(
    client: Client, project: Project, found: AgentSession
) -> None:
    elsewhere = make_project()
    other = _analysed(elsewhere, SURNAME_ALONE)
    client.force_login(make_user(project=elsewhere))
    body = client.get(f"/sessions/{other.pk}/").content.decode()
    assert SURNAME_ALONE in body


@pytest.mark.django_db
def test_the_api_masks_her_names_alone_in_messages_and_search(
    client: Client, project: Project, found: AgentSession
) -> None:
    other = _analysed(project, SURNAME_ALONE, external_id="segunda-via")
    key = make_key(project)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    mine = client.get(f"/api/v1/sessions/{found.external_id}/messages", **auth).content.decode()
    theirs = client.get(f"/api/v1/sessions/{other.external_id}/messages", **auth).content.decode()
    assert "[person_name C***] de novo" in mine
    assert "Camila" not in mine
    assert "[person_name F***] saiu errada" in theirs
    assert "Figueiredo" not in theirs
    search = client.get("/api/v1/search?q=nota", **auth).content.decode()
    assert "[person_name F***]" in search
    assert "Figueiredo" not in search


@pytest.mark.django_db
def test_search_pages_mask_each_hit_by_its_own_session(
    client: Client, project: Project, found: AgentSession
) -> None:
    _analysed(project, "Camila pediu a nota de novo.")  # someone else's Camila
    client.force_login(make_user(project=project))
    body = client.get("/search/?q=novo").content.decode()
    assert "Aqui é a [person_name C***] de <mark>novo" in body  # hers, in her session
    assert "Camila pediu a nota" in body  # another session's: not known to be her


@pytest.mark.django_db
def test_webhook_bodies_mask_her_names_alone_outside_any_request(found: AgentSession) -> None:
    """A delivery is built by a worker, with no request around it: it takes the alert's own
    session for its scope."""
    alert = Alert.objects.create(
        project=found.project,
        session=found,
        rule="lost_constraint",
        severity="warning",
        title="Camila asked twice; Figueiredo's order lost",
        evidence={"lost": ["Camila wants the invoice again"]},
    )
    for format in ("json", "slack"):
        body = json.dumps(webhooks.payload(alert=alert, event="opened", format=format))
        assert "Camila" not in body, body
        assert "Figueiredo" not in body, body
        assert "[person_name C***]" in body


@pytest.mark.django_db
def test_the_session_list_masks_each_title_by_its_own_session(
    client: Client, project: Project
) -> None:
    """A title is its session's first prompt: her first name alone in it is hers once a later
    message of that session found her, and somebody else's in another session."""
    hers = _analysed(project, "Camila aqui, pode ver o pedido?", "Vou ver.", FOUND)
    _analysed(project, "Camila do suporte pediu a nota.")
    client.force_login(make_user(project=project))
    body = client.get("/").content.decode()
    assert "[person_name C***] aqui, pode ver o pedido?" in body, hers.title
    assert "Camila do suporte pediu a nota." in body


@pytest.mark.django_db
def test_the_alert_queue_and_page_mask_her_first_name_by_the_alerts_session(
    client: Client, project: Project, found: AgentSession
) -> None:
    alert = Alert.objects.create(
        project=project,
        session=found,
        rule="lost_constraint",
        severity="warning",
        title="Camila asked for the invoice twice",
        evidence={"items": ["Camila wants the invoice again"], "numbers": {}},
    )
    client.force_login(make_user(project=project))
    for url in ("/alerts/", f"/alerts/{alert.pk}/"):
        body = client.get(url).content.decode()
        assert "[person_name C***] asked for the invoice twice" in body, url
        assert "Camila" not in body, url


@pytest.mark.django_db
def test_the_api_session_list_masks_each_title_by_its_own_session(
    client: Client, project: Project
) -> None:
    _analysed(project, "Camila aqui, pode ver o pedido?", "Vou ver.", FOUND, external_id="dela")
    _analysed(project, "Camila do suporte pediu a nota.", external_id="outra")
    key = make_key(project)
    body = client.get("/api/v1/sessions", HTTP_AUTHORIZATION=f"Bearer {key}").json()
    titles = {item["external_id"]: item["title"] for item in body["sessions"]}
    assert titles["dela"] == "[person_name C***] aqui, pode ver o pedido?"
    assert titles["outra"] == "Camila do suporte pediu a nota."


@pytest.mark.django_db
def test_the_log_filter_never_queries_and_masks_names_a_request_has_read(
    found: AgentSession, django_assert_num_queries
) -> None:
    def logged(message: str) -> str:
        record = logging.LogRecord("x", logging.WARNING, __file__, 1, message, (), None)
        MaskPersonalData().filter(record)
        return record.getMessage()

    token = masking.names_scope_begin(project_ids=[found.project_id])
    try:
        with django_assert_num_queries(0):  # the database may be what the line is about
            assert logged("Figueiredo failed") == "Figueiredo failed"
        masking.text_mask("Figueiredo")  # the page reads the scope
        assert logged("Figueiredo failed") == "[person_name F***] failed"
    finally:
        masking.names_scope_end(token)


@pytest.mark.django_db
def test_a_subjects_excerpts_mask_her_names_alone(project: Project) -> None:
    session = _analysed(
        project, FOUND, "Vou verificar.", "Camila de novo: o CPF 530.582.439-79 está certo?"
    )
    report = subjects.subject_find(
        project=project, subject=subjects.subject_parse(identifier="530.582.439-79")
    )
    excerpts = [
        e
        for s in report["sessions"]
        if s["session_id"] == session.pk
        for p in s["places"]
        for e in p["excerpts"]
    ]
    assert any(e.startswith("[person_name C***] de novo") for e in excerpts), excerpts
    assert not any("Camila" in e for e in excerpts), excerpts


def test_the_one_word_author_pattern_reads_a_megabyte_of_its_worst_case_in_linear_time() -> None:
    """Author lines that never reach their address, and one address-less run: each start reads a
    bounded number of characters."""
    with hang_guard("the one-word author pattern did not finish 1 MB"):
        for text in (
            "\nAuthor: " + "a" * 38 + " <" + "b" * 64 + "@" + "c" * 200 + " " + "<@",
            ("\nAuthor: Ab <x" + "@" + "y" * 10) * 40_000,
            "\nAuthor: " * 100_000 + "<@",
        ):
            person_names.find(text * (1_000_000 // len(text) or 1))
