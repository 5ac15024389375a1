"""The tiny examples in the docstrings of the engine and of the personal data detector are
specifications too: run them."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import compaction.engine
import privacy.detect

MODULES = [
    "compaction.engine",  # the façade's own example
    *sorted(
        info.name
        for info in pkgutil.walk_packages(compaction.engine.__path__, "compaction.engine.")
    ),
    *sorted(
        info.name for info in pkgutil.walk_packages(privacy.detect.__path__, "privacy.detect.")
    ),
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
