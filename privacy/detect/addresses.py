"""Street addresses with a house number: the ``street_address`` kind of ``pii.scan``.

A street's type word (Brazilian or English), its name in capitalised words, and a number:
"Rua das Flores, 123", "Av. Paulista, nº 1578", "221B Baker Street", "1600 Pennsylvania
Avenue". A street named without a number (a neighbourhood, a route) is nobody's address.

    >>> [(a.value) for a in find("Entregar na Rua das Flores, 123 - apto 45, CEP 01310-100")]
    ['Rua das Flores, 123']
    >>> [(a.value) for a in find("Ship to 1600 Pennsylvania Avenue NW")]
    ['1600 Pennsylvania Avenue']
    >>> find("a rua principal e a Avenida Brasil estão fechadas")
    []

Each pattern starts at a literal word and runs bounded classes: linear time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_UPPER = "A-ZÁÉÍÓÚÂÊÔÃÕÇÀÜ"
_LOWER = "a-záéíóúâêôãõçàü"
_NAME_WORD = rf"(?:[{_UPPER}0-9][{_LOWER}{_UPPER}0-9.'\-]{{0,24}}|d[aeo]s?|de|e|of|the)"
_BR = re.compile(
    rf"(?<![{_LOWER}{_UPPER}])(?:Rua|R\.|Avenida|Av\.?|Travessa|Tv\.|Alameda|Al\.|Praça|Pça\.?"
    rf"|Estrada|Rodovia|Largo|Servidão)[ \t]{{1,3}}{_NAME_WORD}(?:[ \t]{{1,3}}{_NAME_WORD}){{0,6}}"
    r",?[ \t]{0,3}(?:n[º°o]\.?[ \t]{0,3}|número[ \t]{1,3})?[0-9]{1,5}(?![0-9])"
)
_EN = re.compile(
    rf"(?<![0-9A-Za-z])[0-9]{{1,5}}[A-Z]?[ \t]{{1,3}}[{_UPPER}][{_LOWER}]{{1,24}}"
    rf"(?:[ \t]{{1,3}}[{_UPPER}][{_LOWER}]{{1,24}}){{0,3}}[ \t]{{1,3}}"
    r"(?:Street|St\.|Avenue|Ave\.|Road|Rd\.|Lane|Ln\.|Boulevard|Blvd\.|Drive|Dr\.|Court|Ct\."
    r"|Place|Pl\.|Terrace|Way)(?![A-Za-z])"
)
# One search says whether a street's word is in the text at all: a capital letter, then the rest
# of a street type (Rua, Av., Travessa, ..., Street, St., Avenue, Road, ...). Thirty substring
# searches would cost more than the rest of the address scan.
_HINT = re.compile(
    r"[RATPELSDBCW](?:ua |v|ravessa|lameda|l\.|raça|ça|strada|odovia|argo|ervid|treet|t\.|venue"
    r"|oad|d\.|ane|n\.|oulevard|lvd\.|rive|r\.|ourt|lace|errace|ay|\.)"
)


@dataclass(frozen=True)
class Address:
    start: int
    end: int
    value: str


def find(text: str) -> list[Address]:
    """The street addresses with a number in ``text``, in order."""
    if _HINT.search(text) is None:
        return []
    found = [Address(m.start(), m.end(), m.group(0)) for m in _BR.finditer(text)]
    found += [Address(m.start(), m.end(), m.group(0)) for m in _EN.finditer(text)]
    return sorted(found, key=lambda a: a.start)


def normalized(value: str) -> str:
    """How two mentions compare: lowercase, single spaces, no commas.

    >>> normalized("Rua  das Flores, 123")
    'rua das flores 123'
    """
    return " ".join(value.replace(",", " ").lower().split())
