"""The wire contract of the privacy endpoints (privacy/api.py)."""

from __future__ import annotations

from ninja import Schema
from pydantic import Field


class FindingOut(Schema):
    kind: str = Field(
        ...,
        description="cpf, cnpj, pis, cnh, titulo_eleitor, cns, credit_card, "
        "email, phone, cep, rg, ip, pix_key, person_name, street_address or secret.",
    )
    where: str = Field(
        ...,
        description="message, summary, metadata, or session (its external id, agent, model "
        "or title).",
    )
    seq: int | None = Field(
        ..., description="The message's seq, or for a summary its compaction's seq."
    )
    masked: str = Field(..., description="A masked preview; the value itself is never sent.")
    copied_from_raw: bool = Field(
        ..., description="A summary finding whose value was already in the raw history."
    )
    summary_delta: str = Field(
        "",
        description="For a summary finding: carried (copied from the raw history as written), "
        "introduced (in the summary, not in the history before it) or reworded (the same value "
        "written another way); empty elsewhere. copied_from_raw is summary_delta != introduced.",
    )
    status: str = Field(..., description="open, confirmed, false_positive or redacted.")
    level: str = Field(
        "finding",
        description="finding: personal data; info: looks like it and is nobody's (a public "
        "resolver, a reserved or example domain, a role or no-reply mailbox), listed here and "
        "hidden by the review queue by default.",
    )


class FindingList(Schema):
    items: list[FindingOut]
