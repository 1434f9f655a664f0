"""Small programs that run offline, shipped with the package so the docs' samples import them.

* :mod:`toolcards.examples.quickstart` — a card with one tool, one system prompt and one
  command, driven by a scripted pydantic-ai model: ``python -m toolcards.examples.quickstart``.
* :mod:`toolcards.examples.team` — a lead hires two builders, delegates by message, hears
  back and fires one: ``python -m toolcards.examples.team``.
* :mod:`toolcards.examples.models` — two scripted models for a ``ModelTool`` roster: one
  switches to the other when a request asks for care.

Scripted ``FunctionModel``s stand in for LLMs, so neither needs a network or an API key.
Importing this package loads nothing else.
"""
