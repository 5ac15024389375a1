"""Which sentences count as rules that must survive a compaction."""

from __future__ import annotations

import pytest

from compaction.engine.text import constraint_sentences


@pytest.mark.parametrize(
    ("text", "rules"),
    [
        (
            "One rule for the whole task: Do not change the public API of the billing module.",
            ["Do not change the public API of the billing module."],
        ),
        ("We must never log the CPF.", ["We must never log the CPF."]),
        ("Only touch files under billing/.", ["Only touch files under billing/."]),
        ("Não mande nada por e-mail.", ["Não mande nada por e-mail."]),
        ("Por favor, nunca compartilhe meus dados.", ["Por favor, nunca compartilhe meus dados."]),
        ("Você deve usar o CEP novo.", ["Você deve usar o CEP novo."]),
    ],
)
def test_rules_are_extracted_from_the_clause_that_states_them(text: str, rules: list[str]) -> None:
    assert constraint_sentences(text) == rules


@pytest.mark.parametrize(
    "text",
    [
        "We can't coordinate a release with three teams this quarter.",
        "Keep going.",
        "Não tem portaria aqui, é uma casa de vila!",
        "Eu não sei o CEP.",
        "Should I only update the client?",
        "Só esperar?",
        "This is commonly done in a migration.",
    ],
)
def test_narration_and_questions_are_not_rules(text: str) -> None:
    assert constraint_sentences(text) == []
