"""toolcards: serializable capability cards for teams of LLM agents."""
