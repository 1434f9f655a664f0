"""pydantic-ai adapter: attach a factory's cards to an ``Agent`` with one toolset."""

from toolcards.pydantic_ai.toolset import CardToolset

__all__ = ["CardToolset"]
