"""The graph's models are built at their first use, not when the card is imported.

A fresh interpreter is needed: in this one, other tests have long since built them.
"""

from __future__ import annotations

import subprocess
import sys

_FIRST_USE = """
import threading

from pydantic import ValidationError

from toolcards.knowledge_graph import _models
from toolcards.knowledge_graph._tool import KnowledgeGraphTool  # the card, as a server loads it

models = [value for value in vars(_models).values() if isinstance(value, type) and issubclass(value, _models.BaseModel)]
built = sorted(model.__name__ for model in models if model.__pydantic_complete__)
assert not built, f"built at import: {built}"

# The first uses come from several threads at once, as they do from a team's callers and
# its graph actor: every one must validate as the model says.
errors = []
start = threading.Barrier(8)

def use(index):
    try:
        start.wait()
        entity = _models.EntityCreate.model_validate(
            {"name": f"  svc-{index} ", "entity_type": "service", "observations": ["runs"]}
        )
        assert entity.name == f"svc-{index}", entity.name
        try:
            _models.EntityCreate.model_validate({"name": "x", "entity_type": "t", "typo": 1})
        except ValidationError as exc:
            assert "typo" in str(exc), exc
        else:
            raise AssertionError("an unknown field was accepted")
        stored = _models.Entity(name=f"svc-{index}", entity_type="service")
        assert _models.Entity.model_validate_json(stored.model_dump_json()) == stored
        assert "properties" in _models.SearchResult.model_json_schema()
    except BaseException as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=use, args=(index,)) for index in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
assert not errors, errors
"""


def test_graph_models_are_built_at_first_use_from_any_thread() -> None:
    done = subprocess.run([sys.executable, "-c", _FIRST_USE], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
