"""Personal data in the shapes developer sessions hold it, each case drawn from a real session
of the tuning half of benchmarks/pii_real.py (names and addresses here are made up): git's and
issue trackers' author lines, package manifests, made-up data near or far from a value, the
logins and class names that look like addresses, and test tokens that look like secrets."""

from __future__ import annotations

import pytest

from privacy.detect.pii import scan


def _levels(text: str, kind: str) -> dict[str, str]:
    return {d.value: d.level for d in scan(text) if d.kind == kind}


@pytest.mark.parametrize(
    ("text", "name"),
    [
        # "Paulo" is a first name, not only São Paulo's
        ("commit 8940cfb\nAuthor: Paulo Moreira <pm@linux.dev>\nDate: Wed Jun 3", "Paulo Moreira"),
        # an initial, where an author line marks the whole as a name
        ("Signed-off-by: Arun K <arunk@corp.io>\n", "Arun K"),
        ("Author: Lia M. Torres <lia.torres@corp.com.br>\n", "Lia M. Torres"),
        ("---\nname: overview\nauthor: Lia M. T.\nversion: v1\n---", "Lia M. T."),
        ("commit d1c098f\nAuthor:     KT Lam <ktlam@corp.io>\nAuthorDate: Tue Jul 7", "KT Lam"),
        # an issue tracker's owner and assignee, in its text view and its JSON
        (
            "◐ app-9vi [BUG] · Fix layout\nOwner: Lia M. Torres · Assignee: Rui Castro · Type: bug",
            "Rui Castro",
        ),
        (
            '{"status":"closed","assignee":"Lia M. Torres","owner":"lia@corp.com.br"}',
            "Lia M. Torres",
        ),
        # git config and TOML package authors
        ("[user]\n\tname = Rui Castro\n\temail = rui@gmail.com\n", "Rui Castro"),
        ('[package]\nname = "app"\nauthors = ["Rui Castro"]\nlicense = "MIT"', "Rui Castro"),
        ('authors = [\n  { name = "Rui Castro" }\n]', "Rui Castro"),
    ],
)
def test_a_name_a_developer_trace_marks_as_a_persons_is_a_finding(text: str, name: str) -> None:
    assert _levels(text, "person_name").get(name) == "finding"


@pytest.mark.parametrize(
    "text",
    [
        "the fallback is Plan B, and Maria A went home",  # an initial without a cue
        "we ran AB Testing on it",
        '"author": {\n    "name": "Entire Inc"\n  },',  # a company in a plugin manifest
        "tracking with Customer Data Platforms (CDP)",  # "customer" without a colon
        'placeholder="Dr. Full Name"',
        "CONTRIBUTING.md:Signed-off-by: Jane Smith <jane.smith@example.com>",  # a template
        '**To:** John Smith (+1234567890) / john@example.com\n\n"send a text to John"',
    ],
)
def test_companies_templates_and_placeholders_are_nobodys_names(text: str) -> None:
    assert "finding" not in _levels(text, "person_name").values()


def test_made_up_data_marks_reach_only_the_values_near_them() -> None:
    """A session exported as one Markdown file, or a config dump that lists "fixtures.ts",
    holds a mark of made-up data far from the user's own address; only a value near a mark
    is made up."""
    far = '"fixtures.ts"\n' + "x = 1\n" * 1_000 + '"emailAddress": "rui.castro@gmail.com"'
    near = 'mockUser = {"email": "rui.castro@gmail.com"}'
    assert _levels(far, "email") == {"rui.castro@gmail.com": "finding"}
    assert _levels(near, "email") == {"rui.castro@gmail.com": "info"}


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("scp -p -P 29418 ruicastro@gerrit.corp.org:hooks/commit-msg .git/hooks/", "info"),
        ("scp -p -P 29418 YOUR_USERNAME@gerrit.corp.org:hooks/commit-msg x", "info"),
        ("@/download@DownloadQueueDispatcher.kt @DownloadTask.kt", None),
        ("Author: kai <kai@Kais-MacBook-Pro.local>", "finding"),
        ("my mail is rui.castro@hotmail.com: thanks", "finding"),
        # JSON written out as text: its escaped "<" is no part of the address
        ('"message": "Co-authored-by: Rui Castro \\u003crui.castro@gmail.com\\u003e"', "finding"),
        ('"Co-authored-by: gen \\u003cacme-github-bot@corp.com\\u003e"', "info"),
        ("WIF_SERVICE_ACCOUNT: deploy@prod-1.iam.gserviceaccount.com", "info"),
    ],
)
def test_logins_class_names_and_addresses(text: str, level: str | None) -> None:
    assert set(_levels(text, "email").values()) == ({level} if level else set())


@pytest.mark.parametrize(
    "text",
    [
        # Go tests: a test's helpers and its package mark its tokens as fixtures
        'if err := m.SaveCoreToken(tokens.TokenSet{AccessToken: "core-tok9"}); err != nil {\n'
        '\t\tt.Fatalf("SaveCoreToken: %v", err)',
        'func TestStore(t *testing.T) {\n\twant := TokenSet{\n\t\tRefreshToken: "refresh-tok9",',
        'srv := httptest.NewServer(h)\nwriteBody(w, `{"access_token":"at-19x8","x":1}`)',
        "export CPOLAR_PASSWORD=你的密码",  # "your password", in Chinese
        'api_key = "sk_this_is_a_very_bad_idea_12345"',  # a sentence written as a value
        'ts := TokenSet{AccessToken: "leak-me-if-you-can"}',
        '- API Secret Token: "invalid"',
        # a secret manager's references and a template, not values
        '--set-secrets="DB_PASSWORD=db-prod-password:latest,API_KEY=api-key:3"',
        'CLICKHOUSE_PASSWORD="clickhouse-${{ env.ENVIRONMENT }}-ro-password"',
        'permissions:\n  contents: "read"\n  id-token: "write"',
    ],
)
def test_test_tokens_and_placeholders_are_no_secrets(text: str) -> None:
    assert "finding" not in _levels(text, "secret").values()


@pytest.mark.parametrize(
    "text",
    [
        'DB_PASSWORD="Vq7#pLz9!mR2"',
        'senha="Maçã2024!"',
        "AUTH_PASSWORD=admin:123456",  # a user and password, no secret manager's reference
        'password="xK-a_is9Zq-be_Pq81"',  # a random key whose pieces spell "a" and "be"
    ],
)
def test_a_real_looking_password_stays_a_secret(text: str) -> None:
    assert set(_levels(text, "secret").values()) == {"finding"}


PAT = "github_pat_11ABCDEFG0abcdefghijKL_mnopqrstuvwxyzABCDEFGHIJ0123456789abcdefghijklmnopqrs"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # a key in a remote's URL ends where its shape does, not at the URL's end
        (f"origin https://x-access-token:{PAT}@github.com/acme/app.git", PAT),
        # a scoped key of a published prefix
        (
            "TESTSPRITE_API_KEY=sk-user-Ab12Cd34Ef56Gh78Ij90_kLmNoPqRsTu-vWxYz0123",
            "sk-user-Ab12Cd34Ef56Gh78Ij90_kLmNoPqRsTu-vWxYz0123",
        ),
        # a value ends at a full-width sign of the Chinese sentence around it
        (
            "SUPABASE_SECRET_KEY=sb_secret_Ab12Cd34Ef56Gh78Ij90kLmNo。 有一个问题",
            "sb_secret_Ab12Cd34Ef56Gh78Ij90kLmNo",
        ),
    ],
)
def test_a_keys_value_is_the_key_alone(text: str, value: str) -> None:
    assert _levels(text, "secret") == {value: "finding"}


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("rg -n -C 8 '10703774|2026' /tmp/builds.html", "rg"),  # ripgrep, not an RG
        ("https://doi.org/10.13140/RG.2.1.4773.5363", "rg"),  # a DOI
        ("deploy-agent-chat.sh --vm-ip 1.2.3.4 --tag 0.2.0", "ip"),  # documentation's address
    ],
)
def test_commands_dois_and_sample_addresses_are_no_documents(text: str, kind: str) -> None:
    assert "finding" not in _levels(text, kind).values()


def test_the_new_patterns_read_a_megabyte_of_their_worst_case_in_linear_time() -> None:
    """Each pattern added for developer traces, fed 1 MB that starts it everywhere and never
    lets it finish; the alarm guards against a hang and is minutes long."""
    from privacy.detect import not_personal, person_names, pii
    from tests.infra import hang_guard

    mb = 1_000_000
    with hang_guard("a developer-trace pattern did not finish 1 MB"):
        not_personal._CAMEL_CASE.search("a" * mb)
        person_names._HAS_INITIAL.search(" A" * (mb // 2) + "a")
        person_names._EXAMPLE_ADDRESS.search("@example" * (mb // 8))
        pii._KEYWORDS["rg"].search("rg -" * (mb // 4))
        pii._ESCAPED_SIGN.search("u00a" * (mb // 4))
