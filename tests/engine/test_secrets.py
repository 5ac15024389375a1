"""Secrets as their own kind: what the detector finds (privacy/detect/secrets.py through
``pii.scan``), how it is masked (never a character of the value), what it leaves alone, and that
each of its patterns (and the street address patterns, privacy/detect/addresses.py) reads 1 MB
of its worst case in linear time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from privacy.detect import addresses, pii, secrets
from tests.infra import hang_guard

ANTHROPIC = "sk-ant-api03-" + "Qx7vB2mZ" * 11 + "-AA"
OPENAI = "sk-proj-" + "h4Kd9LmQ" * 6
GITHUB = "ghp_" + "Z8yX3wV7uT6sR5qP4oN2mL1kJ0iH9gF8eD7c"
GITHUB_PAT = "github_pat_11ABCDEFG0" + "abcDEF123456" * 6
AWS = "AKIAZ3KQ7P2M4N5R6S7T"
SLACK = "xoxb-2048123456-7654321098-AbCdEfGhIjKlMnOpQrStUvWx"
GOOGLE = "AIzaSyD3kFj8Hq2mNp9Lx4Rt7Vw1Yz6Bc5Gd0Ke"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvYW8ifQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLez"
    "\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMg"
    "\n-----END RSA PRIVATE KEY-----"
)


def secret_values(text: str) -> list[tuple[str, str]]:
    return [(d.value, d.level) for d in pii.scan(text) if d.kind == "secret"]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (f"export ANTHROPIC_API_KEY={ANTHROPIC}", ANTHROPIC),
        (f'client = OpenAI(api_key="{OPENAI}")', OPENAI),
        (f"git remote set-url origin https://{GITHUB}@github.com/acme/app.git", GITHUB),
        (f"GH_TOKEN={GITHUB_PAT} gh pr list", GITHUB_PAT),
        (f"aws_access_key_id = {AWS}", AWS),
        (f"SLACK_BOT_TOKEN: {SLACK}", SLACK),
        (f"maps?key={GOOGLE}&q=x", GOOGLE),
        (f"Authorization: Bearer {JWT}", JWT),
        (f"cat ~/.ssh/id_rsa\n{PEM}\n", PEM),
        ("DATABASE_URL=postgres://app_user:Xk9#mQ2vL@db.internal:5432/shop", "Xk9#mQ2vL"),
        ("redis://:s3cr3tPass@cache:6379/0", "s3cr3tPass"),
        ('{"username": "bruno", "password": "hunter22!"}', "hunter22!"),
        ("DB_PASSWORD=Tr0ub4dor3", "Tr0ub4dor3"),
        ("Log in with admin and my password is Tr0ub4dor&3 please.", "Tr0ub4dor&3"),
        ("a senha do painel é Casa@2024!", "Casa@2024!"),
    ],
)
def test_each_kind_of_secret_is_found_as_a_finding(text: str, value: str) -> None:
    assert secret_values(text) == [(value, "finding")]


def test_a_secret_is_masked_by_its_published_prefix_and_length_only() -> None:
    text = f"key {ANTHROPIC} and postgres://u:Xk9mQ2vLp@db/x"
    masked = pii.mask(text)
    assert masked == (
        f"key [secret sk-ant-… {len(ANTHROPIC)} chars] and postgres://u:[secret … 9 chars]@db/x"
    )
    assert "Qx7v" not in masked
    assert "Xk9" not in masked


def test_the_password_before_an_at_sign_is_a_secret_not_an_email() -> None:
    found = pii.scan("mysql://root:Pw0rd2024@db.acme.com.br/app")
    assert [(d.kind, d.value) for d in found] == [("secret", "Pw0rd2024")]


@pytest.mark.parametrize(
    "text",
    [
        "password = request.POST['password']",
        "def login(username: str, password: str) -> None:",
        "api_key=settings.ANTHROPIC_API_KEY",
        "DB_PASSWORD=${DB_PASSWORD}",
        '"max_tokens": 4096, "input_tokens": 1200',
        "token: 1234",
        "the password is required",
        "pip install scikit-learn; sk-learn docs",
        "task-runner and desk-sk-ant",
        '"password": ""',
        "SECRET_KEY = os.environ['SECRET_KEY']",
        # from the real sessions of benchmarks/pii_real.py (tuning half)
        "# Only check cpolar auth if password is available\\n            if self.config",
        "server_password = None\\n                if not can_connect:",
        "var refreshToken = request?.RefreshToken;",
        "$ ACCESS_TOKEN=`curl \\\n  http://metadata.google.internal/`",
        "`iss` | Issuer | The issuer of the OIDC token: `https://token.actions.githubusercontent.com`",
    ],
)
def test_code_and_words_about_secrets_are_not_secrets(text: str) -> None:
    assert secret_values(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        'OPENAI_API_KEY="sk-your-key-here-xxxxxxxxxxxxxxxxxxxx"',
        "postgres://user:${DB_PASS}@localhost/db",
        "password: changeme123",
        "DB_USER=admin\nDB_PASSWORD=admin123\nDB_HOST=postgres",
        "export DATABASE_URL=postgresql://trading_bot:dev_password_123@localhost:5432/bot",
        "LOCAL_OPENAI_PROXY_API_KEY=local-proxy, LOCAL_OPENAI_PROXY_MODEL=gpt-5.5",
        'KEY="-----BEGIN PRIVATE KEY-----\\nREPLACE_WITH_LOCAL_KEY\\n-----END PRIVATE KEY-----"',
    ],
)
def test_documentation_placeholders_are_info_and_never_masked(text: str) -> None:
    found = secret_values(text)
    assert found
    assert all(level == "info" for _, level in found)
    assert pii.mask(text) == text


@pytest.mark.parametrize(
    "text",
    [
        'jira:\n  endpoint: "https://jira.example.com"\n  token: "jira-token-k7Qz9"',
        'endpoint: "https://user:Zx81qpLm@jira.example.com"',
        '#[test]\nfn test_full_config() {\n    let yaml = r#"\nsquash:\n  password: "Zx81qpLm"',
        "def test_login(client):\n    client.post('/login', data={'password': 'Zx81qpLm'})",
    ],
)
def test_a_credential_for_an_example_host_or_in_test_code_is_info(text: str) -> None:
    found = secret_values(text)
    assert found
    assert all(level == "info" for _, level in found)


@pytest.mark.parametrize(
    "text",
    [
        "function keypair(): { publicKey: Uint8Array; privateKey: Uint8Array } {",
        "  return { privateKey: ed25519Seed, publicKey: ed25519PublicKey };",
        "    file_ipns_private_key: &zeroize::Zeroizing<Vec<u8>>,",
        "    let ipns_private_key = Zeroizing::new(unwrap(&k))?;",
        "    let private_key = vec![0u8; 32];",
        "PASSWORD=*** (redacted)",
    ],
)
def test_code_after_a_secrets_key_is_not_a_secret(text: str) -> None:
    assert [v for v, level in secret_values(text) if level == "finding"] == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("DB_PASSWORD=Zx81qpLm\nDB_USER=app", "Zx81qpLm"),
        ("Host=db;Username=app;Password=Zx81qpLm;SslMode=Require", "Zx81qpLm"),
        ("database:\n  password: Zx81qpLm\n", "Zx81qpLm"),
    ],
)
def test_an_unquoted_password_in_configuration_is_still_a_finding(text: str, value: str) -> None:
    assert (value, "finding") in secret_values(text)


def test_the_same_credential_in_a_projects_own_configuration_is_a_finding() -> None:
    text = 'jira:\n  endpoint: "https://jira.acme.io"\n  token: "jira-token-k7Qz9"'
    assert secret_values(text) == [("jira-token-k7Qz9", "finding")]


def test_personal_data_beside_a_secret_is_still_found() -> None:
    found = pii.scan(f"CPF 529.982.247-25 token={GITHUB}")
    assert [d.kind for d in found] == ["cpf", "secret"]


# --- linear time: every pattern fed 1 MB of its worst case -------------------------------

MB = 1_000_000


def worst_cases() -> Iterator[tuple[str, str]]:
    """(name, text): for each pattern, a megabyte that starts it everywhere and never lets it
    finish, or lets it run its longest class to the end before failing."""
    yield "keys", ("sk-ant-" + "a" * 19 + " ") * (MB // 27)
    yield "key runs", "sk-" * (MB // 3)
    yield "jwt", ("eyJ" + "a" * 20 + ".") * (MB // 24)
    yield "jwt run", "eyJ" + "a" * MB
    yield "pem", "-----BEGIN RSA PRIVATE KEY-----" + "A" * MB
    yield "pem headers", "-----BEGIN PRIVATE KEY-----" * (MB // 27)
    yield "url", "postgres://" + "u" * MB
    yield "urls", ("a://" + "b" * 100 + ":") * (MB // 105)
    yield "assigned", "password=" * (MB // 9)
    yield "assigned spaces", ("api_key" + " " * 3 + ":") * (MB // 11)
    yield "said", "my password is " * (MB // 15)
    yield "bearer", ("Bearer " + "a" * 19 + " ") * (MB // 27)
    yield "colons", ":" * MB
    yield "example marks", ("assert password=Zx81qpLm " + "example.com ") * (MB // 37)
    yield "streets", "Rua " * (MB // 4)
    yield "street names", "Rua " + "Flores de " * (MB // 10)
    yield "dev values", ("password=" + "a-" * 127 + "b ") * (MB // 265)
    yield "escaped values", ("password=" + "a\\" * 127 + " ") * (MB // 264)
    yield "numbered streets", ("12 Baker " * 4 + "Street ") * (MB // 43)
    yield "scoped keys", ("sk-user-" + "a-" * 150 + " ") * (MB // 309)
    yield "references", ("password=" + "a" * 200 + ":" + "1" * 50 + " ") * (MB // 261)
    yield "escaped signs", "\\u003c" * (MB // 6) + "@a.com"


@pytest.mark.parametrize(("name", "text"), list(worst_cases()), ids=lambda v: str(v)[:15])
def test_each_pattern_reads_a_megabyte_of_its_worst_case_in_linear_time(
    name: str, text: str
) -> None:
    """A backtracking pattern takes hours on these inputs; a linear one, well under a second.
    The alarm is a guard against a hang, not a measure of speed: it is minutes long."""
    with hang_guard(f"{name}: the secret patterns did not finish 1 MB"):
        secrets.find(text)
        addresses.find(text)
