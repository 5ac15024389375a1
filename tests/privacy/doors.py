"""A project labelled with one person's data in every place a value can live, for the
every-door and erasure tests: what no role, key, export, alert, webhook, e-mail or log may
show in clear, and what an erasure must leave no copy of.

Beside her data, an API key and a database password (secrets: no role ever sees them, and no
reveal shows them) are in a prompt, the metadata and the summary.

The person is Camila Nogueira Figueiredo: her CPF, phone, e-mail and name are in the session's
external id, agent and metadata, in the first prompt (so the title), in tool inputs and
results, in a compaction's summary, its ``kept`` field and a failed compaction's error, in a
probe that the summary loses (so an alert quotes it), in a comment, a saved filter, a reveal's
reason, webhook deliveries (JSON and Slack) and an alert e-mail. Her first name alone and her
surname alone are in a later message of the session ("Aqui é a Camila de novo"), and her
surname alone in a second session of the project (``OTHER_SESSION``): once she is found, the
first is masked within her session, the second across the project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from alerts import webhooks
from alerts.models import Alert, AlertSettings
from compaction import pipeline
from compaction import services as compaction_services
from compaction.models import CompactionSpan, Experiment, ReplayRun
from privacy import reveal
from sessions import services
from sessions.models import AgentSession, Membership, Project, Role
from sessions.schemas import EventBatch
from team import selectors as team_selectors
from team import services as team_services
from team.models import SavedFilter

CPF = "530.582.439-79"
PHONE = "(11) 98765-4321"
EMAIL = "camila.figueiredo98@gmail.com"
NAME = "Camila Nogueira Figueiredo"
EXTERNAL_ID = f"cliente-{CPF}"
ADDRESS = "Rua das Flores, 1234"
FIRST_NAME_ALONE = "Aqui é a Camila de novo: o sobrenome na nota fiscal saiu Figueiredo, confira."
SURNAME_ALONE = "A nota da Figueiredo saiu com o endereço antigo; reemita."
OTHER_SESSION = "pedido-segunda-via"
# Secrets: masked at every door for every role, never revealed.
API_KEY = "sk-ant-api03-" + "Vq3sLw8N" * 11 + "-ZZ"
DB_PASSWORD = "Fg7#kQz92Lm"
DATABASE_URL = f"postgres://loja:{DB_PASSWORD}@db.interno:5432/loja"

# Every form a value could leak in: as typed, digits only, parts a mask never keeps, and
# escaped for HTML, JSON or a URL. A mask keeps the kind and the last two characters
# ("[cpf ***.***.***-79]", "[email c***@***.com]", "[person_name C*** N*** F***]").
RAW_FORMS = {
    "cpf": [CPF, "53058243979", "582.439", "58243979", "530.582", "530582"],
    "phone": ["98765-4321", "987654321", "11987654321", "98765"],
    "email": ["figueiredo98", "camila.figueiredo"],
    "name": ["Nogueira", "Figueiredo", "Camila"],
    "address": ["Flores, 1234", "Flores,1234"],
    "secret": ["Vq3sLw8N", "api03-Vq3", DB_PASSWORD, "Fg7%23kQz", "Fg7#kQz", "kQz92Lm"],
}
_FOLD = re.compile(r"&#0*64;|&#x0*40;|\\u0040|%40", re.IGNORECASE)


def leaks(text: str) -> list[str]:
    """The raw forms found in ``text`` (empty when nothing leaked); case-insensitive, with
    the usual escapes of ``@`` undone first."""
    folded = _FOLD.sub("@", text).lower()
    return [form for forms in RAW_FORMS.values() for form in forms if form.lower() in folded]


def _conversation() -> list[dict[str, Any]]:
    tool_input = {"cpf": CPF, "telefone": PHONE}
    record = (
        f'{{"nome": "{NAME}", "cpf": "{CPF}", "telefone": "{PHONE}", "email": "{EMAIL}", '
        '"pedido": "CA-2026-951676", "status": "em transporte"}'
    )
    turns: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": f"Sou {NAME}, CPF {CPF}, e-mail {EMAIL}. "
            f"Moro na {ADDRESS}. Meu pedido CA-2026-951676 está atrasado.",
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Vou localizar o seu cadastro."},
                {
                    "type": "tool_use",
                    "id": "toolu_door1",
                    "name": "buscar_cliente",
                    "input": tool_input,
                },
            ],
            "usage": {"input_tokens": 1200, "output_tokens": 40},
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_door1", "content": record}],
        },
    ]
    for n in range(6):
        turns += [
            {
                "role": "assistant",
                "content": f"Passo {n}: o pedido CA-2026-951676 segue em transporte.",
                "usage": {"input_tokens": 1400 + 300 * n, "output_tokens": 30},
            },
            {
                "role": "user",
                "content": f"Meu telefone é {PHONE}: não compartilhe."
                if n == 0
                else f"Use ANTHROPIC_API_KEY={API_KEY} e DATABASE_URL={DATABASE_URL}."
                if n == 1
                else FIRST_NAME_ALONE
                if n == 2
                else f"Pode verificar de novo? ({n})",
            },
        ]
    turns.append(
        {
            "role": "assistant",
            "content": "Chamado aberto com a transportadora.",
            "usage": {"input_tokens": 900, "output_tokens": 20},
        }
    )
    return [{"seq": seq, **turn} for seq, turn in enumerate(turns)]


def labelled_batch() -> dict[str, Any]:
    """One ingest batch holding the person's data in every field of the wire format."""
    messages = _conversation()
    return {
        "session": {
            "agent": f"suporte {EMAIL}",
            "model": "claude-haiku-4-5",
            "context_window": 8000,
            "metadata": {
                "titular": NAME,
                "telefone": PHONE,
                "canal": "chat",
                "deploy_token": API_KEY,
            },
        },
        "messages": messages,
        "compactions": [
            {
                "seq": 9,
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": 3000,
                "tokens_after": 900,
                "summary": f"Objetivo: atender {NAME} (CPF {CPF}, e-mail {EMAIL}) sobre o "
                "pedido CA-2026-951676 atrasado. Feito: cadastro localizado com a chave "
                f"{API_KEY} e o banco {DATABASE_URL}.",
                "replaced": {"from_seq": 1, "to_seq": 7},
                "kept": {"head": [0], "nota": f"titular {NAME}, CPF {CPF}"},
            },
            {
                "seq": 15,
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": 3200,
                "tokens_after": 3200,
                "summary": "",
                "error": f"summarizer timed out on the record of CPF {CPF}",
            },
        ],
        "probes": [{"seq": 4, "text": f"o telefone {PHONE} é privado"}],
    }


@dataclass
class Door:
    """The labelled project and everything in it; ``users`` by role."""

    project: Project
    session: AgentSession
    span: CompactionSpan
    replay: ReplayRun
    experiment: Experiment
    users: dict[str, AbstractBaseUser] = field(default_factory=dict)


def labelled_project(*, name: str = "casa-aurora") -> Door:
    """The project, analysed and replayed as a worker would, with one member per role."""
    project = Project.objects.create(name=name)
    users: dict[str, AbstractBaseUser] = {}
    for role in Role:
        user = get_user_model().objects.create_user(
            username=f"door-{role.value}", password="correct-horse-battery"
        )
        Membership.objects.create(user=user, project=project, role=role)
        users[role.value] = user
    users["superuser"] = get_user_model().objects.create_superuser(
        username="door-superuser", password="correct-horse-battery"
    )
    webhooks.webhook_create(
        project=project, url="https://hooks.example.net/json", secret="s" * 20, format="json"
    )
    webhooks.webhook_create(
        project=project, url="https://hooks.example.net/slack", secret="s" * 20, format="slack"
    )
    AlertSettings.objects.create(project=project, email_recipients="oncall@casa-aurora.com.br")

    session = services.events_ingest(
        project=project, external_id=EXTERNAL_ID, batch=EventBatch.model_validate(labelled_batch())
    ).session
    pipeline.session_analyse(session_id=session.pk)
    other = services.events_ingest(
        project=project,
        external_id=OTHER_SESSION,
        batch=EventBatch.model_validate(
            {"messages": [{"seq": 0, "role": "user", "content": SURNAME_ALONE}]}
        ),
    ).session
    pipeline.session_analyse(session_id=other.pk)
    span = CompactionSpan.objects.filter(session=session, replay=None).order_by("seq").first()
    assert span is not None

    replay = compaction_services.replay_run_start(
        session=session, policy={"soft_limit": 1500, "hard_limit": 2500, "keep_last": 1}
    )
    pipeline.replay_run_execute(run_id=replay.pk)
    experiment = compaction_services.experiment_start(
        project=project,
        name=f"grade para {EXTERNAL_ID}",
        policies=[{"soft_limit": 1500, "hard_limit": 2500, "keep_last": 1}],
        sessions=[session],
    )
    for run in experiment.runs.all():
        pipeline.replay_run_execute(run_id=run.pk)

    team_services.comment_create(
        session=session, author=users[Role.ENGINEER.value], body=f"Cliente {NAME}, CPF {CPF}."
    )
    for user in users.values():
        # As saved before filters refused personal data: rows a page and an erasure still meet.
        SavedFilter.objects.create(user=user, name=f"cliente {CPF}", query=f"q={CPF}")
    # verdict feedback: every fact of the compaction marked, with a note quoting the person
    for item in span.retention:
        team_services.fact_mark_set(
            span=span,
            fact_key=team_selectors.fact_key(str(item["text"])),
            author=users[Role.ENGINEER.value],
            mark="wrong",
            note=f"a cliente {NAME} (CPF {CPF}) disse outra coisa",
        )
    alert = Alert.objects.filter(session=session).exclude(rule="personal_data").first()
    if alert is not None:
        team_services.alert_mark_set(
            alert=alert, author=users[Role.ENGINEER.value], mark="right", note=f"CPF {CPF}"
        )
    reveal.value_reveal(
        user=users[Role.PRIVACY_REVIEWER.value],
        target=f"message:{session.pk}:0:0",
        index=0,
        reason=f"pedido de revisão da titular, CPF {CPF}",
    )
    return Door(
        project=project,
        session=session,
        span=span,
        replay=replay,
        experiment=experiment,
        users=users,
    )
