"""The board reads a query's words with the package's case folding (``toolcards.core._words``),
as it reads the tasks' texts: a word that folds to other letters still finds its task."""

from __future__ import annotations

import pytest

from tests.planning.conftest import StartActor
from toolcards.planning import TaskCreate

WAIT = 10.0


@pytest.mark.parametrize("query", ["Straße", "STRASSE", "strasse", "ΟΔΟΣ", "οδος"])
def test_a_query_finds_a_task_whose_words_fold_alike(start: StartActor, query: str) -> None:
    proxy = start()
    proxy.update(
        "@Ann", create=[TaskCreate(description="Fix the Straße sign"), TaskCreate(description="Repaint ΟΔΟΣ signs")]
    ).get(timeout=WAIT)
    found = [hit.task.description for hit in proxy.search(query).get(timeout=WAIT)]
    assert found == ["Fix the Straße sign" if query.lower().startswith("str") else "Repaint ΟΔΟΣ signs"]
