"""The catalog search both tool searches share, and the factory's hooks for it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from toolcards import BaseToolParam, RetriableError, Tool, ToolCard, ToolFactory, capability
from toolcards.core._catalog import CatalogEntry, CatalogTool, ToolCatalog


def fetch_page(url: str) -> str:
    """Fetch a web page as text."""
    return url


TOOLS = {
    "fetch_page": Tool.from_function(fetch_page),
    "convert_currency": CatalogTool(name="convert_currency", description="Convert money between currencies."),
}


class Entries:
    def __init__(self) -> None:
        self.value: tuple[CatalogEntry, ...] = (
            CatalogEntry(
                name="invoice-check",
                description="Check an invoice's totals.",
                tool="use_skill",
                arguments={"name": "invoice-check"},
                tools=("read_skill_file",),
            ),
        )
        self.calls = 0

    def __call__(self) -> Sequence[CatalogEntry]:
        self.calls += 1
        return self.value


def test_tools_of_any_kind_are_searched_and_described() -> None:
    catalog = ToolCatalog(TOOLS)
    assert catalog.search("convert euros to dollars money")[0]["name"] == "convert_currency"
    assert catalog.describe("convert_currency")["input_schema"] == {}
    with pytest.raises(RetriableError, match="Did you mean fetch_page"):
        catalog.resolve("fetch_pages")


def test_an_entry_is_found_as_its_tool_and_arguments() -> None:
    catalog = ToolCatalog(TOOLS, Entries())
    [hit] = [hit for hit in catalog.search("check the totals of an invoice") if "arguments" in hit]
    assert hit["name"] == "use_skill" and hit["arguments"] == {"name": "invoice-check"}
    assert hit["summary"] == "Check an invoice's totals."
    entry = catalog.entry_of(hit)
    assert entry is not None and entry.tools == ("read_skill_file",)
    assert catalog.entry_of({"name": "fetch_page"}) is None


def test_the_index_follows_the_entries_when_they_change() -> None:
    entries = Entries()
    catalog = ToolCatalog(TOOLS, entries)
    catalog.search("invoice")
    entries.value = (CatalogEntry(name="expense-report", description="File an expense report.", tool="use_skill"),)
    assert catalog.search("expense report")[0]["summary"] == "File an expense report."
    with pytest.raises(RetriableError, match="No tool matches"):
        catalog.search("invoice totals")


class Offering(ToolCard):
    kind = "test_offering"
    ping: BaseToolParam | bool = True

    @capability("ping")
    def do_ping(self, text: str) -> str:
        """Echo."""
        return text

    def catalog_entries(self) -> Sequence[CatalogEntry]:
        return ENTRY

    def context_tools(self) -> frozenset[str]:
        return frozenset({"ping", "not_a_tool"})


ENTRY = (CatalogEntry(name="thing", description="A thing.", tool="ping"),)


def test_the_factory_gathers_entries_and_context_tools() -> None:
    factory = ToolFactory([Offering()])
    assert factory.catalog_entries() == ENTRY
    assert factory.catalog_entries() is factory.catalog_entries()  # the same tuple while unchanged
    assert factory.context_tools() == {"ping"}  # only tools the model can call
    assert factory.model_selector() is None
