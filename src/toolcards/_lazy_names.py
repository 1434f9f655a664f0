"""Package doors that import a public name's module only when the name is first used, so that
``import toolcards`` (and each package door) stays light."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    namespace: dict[str, Any], modules: Mapping[str, str], find: Callable[[str], str | None] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose globals are ``namespace``.

    A name of ``modules`` (public name → the module defining it), or one ``find`` places, is
    imported on first use and kept in ``namespace``; any other name is an ``AttributeError``.
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = modules.get(name) or (find(name) if find is not None else None)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace["__all__"]))

    return __getattr__, __dir__
