"""The knowledge graph as text a model reads: batch reports, search results, the summary.

Pure functions of the graph's data (:mod:`toolcards.knowledge_graph.models`), so the actor,
the card and tests render the same way. Every output is bounded: a report names at most ten
items per kind of change, a search lists its hits with a capped number of neighbours, and
the summary's size does not grow with the graph.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from toolcards.knowledge_graph.models import (
    GraphPath,
    Neighbour,
    Relation,
    RelationCreate,
    RelationDelete,
    SearchHit,
    SearchResult,
    UpdateReport,
    listed_names,
    plural,
)

__all__ = [
    "SUMMARY_TOP",
    "path_text",
    "relation_text",
    "render_graph_summary",
    "render_search_result",
    "render_update_report",
]

SUMMARY_TOP = 10
"""Entity types, relation types and roots named in the summary; the rest are counted."""


def relation_text(relation: Relation | RelationCreate | RelationDelete) -> str:
    """``from -[type]-> to``."""
    return f"{relation.from_entity} -[{relation.relation_type}]-> {relation.to_entity}"


def render_update_report(report: UpdateReport) -> str:
    """What a batch applied and skipped, or every refused part and why (a batch is all or nothing)."""
    if report.errors:
        count = len(report.errors)
        head = (
            f"Nothing was applied (a batch is all or nothing). Fix {'these' if count > 1 else 'this'} "
            "and send the whole batch again:"
        )
        return "\n".join([head, *(f"- {error}" for error in report.errors)])
    lines = []
    if report.replayed:
        lines.append(f"This call was already applied (graph change {report.seq}); nothing was written again.")
    lines.append(f"Applied: {report.summary_line()}." if report.changed else "No changes applied.")
    if report.skipped_relations:
        skipped = [relation_text(r) for r in report.skipped_relations]
        lines.append(f"Skipped existing relations: {listed_names(skipped)}.")
    return "\n".join(lines)


def _neighbour_text(neighbour: Neighbour) -> str:
    """``-[type]-> name [entity_type]`` or ``<-[type]- name [entity_type]``."""
    kind = neighbour.relation_type
    arrow = f"-[{kind}]->" if neighbour.outgoing else f"<-[{kind}]-"
    return f"{arrow} {neighbour.name} [{neighbour.entity_type}]"


def _hit_text(hit: SearchHit, rank: int) -> str:
    """The hit as a few indented lines: header, description, observations, neighbours."""
    entity = hit.entity
    root = " root" if entity.is_root else ""
    lines = [f"{rank}. {entity.name} [{entity.entity_type}{root}] {hit.score:.2f}"]
    if entity.description:
        lines.append(f"   {entity.description}")
    lines.extend(f"   - {observation}" for observation in entity.observations)
    if hit.neighbours:
        lines.append("   neighbours: " + "; ".join(_neighbour_text(n) for n in hit.neighbours))
        if hit.more_neighbours:
            lines[-1] += f" (+{hit.more_neighbours} more)"
    return "\n".join(lines)


def path_text(path: GraphPath) -> str:
    """``A -[works_at]-> B <-[owns]- C``: arrows keep each relation's direction."""
    out = [path.nodes[0]]
    for previous, node, relation in zip(path.nodes, path.nodes[1:], path.relations, strict=False):
        forward = relation.from_entity == previous and relation.to_entity == node
        arrow = f"-[{relation.relation_type}]->" if forward else f"<-[{relation.relation_type}]-"
        out.append(f"{arrow} {node}")
    return " ".join(out)


def render_search_result(result: SearchResult) -> str:
    """Note, hits, then edges and paths if they were requested."""
    lines: list[str] = []
    if result.note:
        lines.append(f"Note: {result.note}")
    if not result.hits:
        lines.append(f"No entities match {result.query!r}.")
        return "\n".join(lines)
    lines.append(f"{plural(len(result.hits), 'hit')} for {result.query!r} ({result.mode}):")
    lines.extend(_hit_text(hit, rank) for rank, hit in enumerate(result.hits, start=1))
    if result.edges is not None:
        if result.edges:
            lines.append("Edges:")
            lines.extend(
                f"- {relation_text(r)}" + (f": {r.description}" if r.description else "") for r in result.edges
            )
            if result.more_edges:
                lines.append(f"(+{result.more_edges} more edges)")
        else:
            lines.append("Edges: none.")
    if result.paths is not None:
        if result.paths:
            lines.append("Paths:")
            lines.extend(f"- {path_text(path)}" for path in result.paths)
        else:
            lines.append(f"Paths: none within {result.max_path_length} hops between the top hits.")
    return "\n".join(lines)


def render_graph_summary(
    *,
    entity_count: int,
    relation_count: int,
    entity_types: Counter[str],
    relation_types: Counter[str],
    first_roots: Iterable[tuple[str, str]],
    root_count: int,
    search_tool: str | None,
) -> str:
    """A few lines for a system prompt whose size does not grow with the graph.

    Counts, the :data:`SUMMARY_TOP` most common entity and relation types with their counts
    (ties by name), the first roots (``(name, entity_type)``, at most :data:`SUMMARY_TOP`),
    and a hint to call ``search_tool`` (omitted when ``None``). An empty graph gives one
    sentence.
    """
    if not entity_count:
        return "The knowledge graph is empty."
    lines = [f"Knowledge graph: {entity_count} entities, {relation_count} relations."]
    lines.append(f"Entity types: {_top_counts(entity_types)}.")
    if relation_types:
        lines.append(f"Relation types: {_top_counts(relation_types)}.")
    if root_count:
        roots = [f"{name} [{entity_type}]" for name, entity_type in first_roots]
        more = f" (+{root_count - SUMMARY_TOP} more)" if root_count > SUMMARY_TOP else ""
        lines.append(f"Root entities: {', '.join(roots)}{more}.")
    if search_tool:
        lines.append(f"Use {search_tool} to find entities, their observations and relations.")
    return "\n".join(lines)


def _top_counts(counts: Counter[str]) -> str:
    import heapq

    top = heapq.nsmallest(SUMMARY_TOP, counts.items(), key=lambda item: (-item[1], item[0]))
    text = ", ".join(f"{name} {count}" for name, count in top)
    if len(counts) > SUMMARY_TOP:
        text += f" (+{len(counts) - SUMMARY_TOP} more types)"
    return text
