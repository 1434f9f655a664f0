"""The knowledge graph as text a model reads: batch reports, search results, the summary.

Pure functions of the graph's data (:mod:`toolcards.knowledge_graph._models`), so the actor,
the card and tests render the same way. Every output is bounded: a report names at most ten
items per kind of change, a search lists its hits with a capped number of neighbours, and
the summary's size does not grow with the graph.

A search shows the facts that hold (now, or at its ``as_of``); with ``include_invalid``
also those that no longer did, each marked with who said so, when and why.

**Disagreement**, decided mechanically (:func:`disputes`): an observation that holds
*re-asserts* an earlier one of the same entity with the same text that a member other than
its author said no longer holds (superseded or invalidated). Both sides are shown, each
with its author: the re-asserted observation, and the replacement it contradicts while that
replacement holds too (else the invalidation's author and reason). A member who takes back
what they themselves said, or repeats their own retracted fact, is not in disagreement.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime

from toolcards.knowledge_graph._models import (
    Entity,
    EntityPage,
    EntityView,
    GraphPath,
    MergeReport,
    Neighbour,
    Observation,
    Provenance,
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
    "disputes",
    "no_longer",
    "path_text",
    "relation_text",
    "render_entities",
    "render_graph_page",
    "render_graph_summary",
    "render_merge_report",
    "render_search_result",
    "render_update_report",
    "shown_observations",
]

SUMMARY_TOP = 10
"""Entity types, relation types and roots named in the summary; the rest are counted."""


def relation_text(relation: Relation | RelationCreate | RelationDelete) -> str:
    """``from -[type]-> to``."""
    return f"{relation.from_entity} -[{relation.relation_type}]-> {relation.to_entity}"


def _when(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M}"


def no_longer(fact: Provenance) -> str:
    """``no longer holds since 2026-03-01 10:00, @B: reason``."""
    assert fact.invalid_at is not None
    who = f", {fact.invalidated_by}" if fact.invalidated_by else ""
    why = f": {fact.reason}" if fact.reason else ""
    return f"no longer holds since {_when(fact.invalid_at)}{who}{why}"


def _no_longer_at(fact: Provenance, as_of: datetime | None) -> bool:
    return fact.invalid_at is not None and (as_of is None or fact.invalid_at <= as_of)


def render_update_report(report: UpdateReport, merge_tool: str | None = "merge_entities") -> str:
    """What a batch applied and skipped, or every refused part and why (a batch is all or nothing).

    Created entities whose names are close to existing ones are listed with a hint to call
    ``merge_tool`` (omitted when ``None``) if they are the same.
    """
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
    if report.invalidated:
        lines.append(f"No longer holding (kept as history): {listed_names(report.invalidated)}.")
    if report.skipped_relations:
        skipped = [relation_text(r) for r in report.skipped_relations]
        lines.append(f"Skipped existing relations: {listed_names(skipped)}.")
    if report.similar_names:
        pairs = listed_names([f"{new!r} ~ {old!r}" for new, old in report.similar_names])
        hint = f" If one is the same as the other, call {merge_tool}." if merge_tool else ""
        lines.append(f"Similar names exist (nothing merged): {pairs}.{hint}")
    return "\n".join(lines)


def render_merge_report(report: MergeReport) -> str:
    """What a merge did, or would do (a dry run), or why nothing was merged."""
    if report.errors:
        return "\n".join(["Nothing was merged. Fix this and call again:", *(f"- {e}" for e in report.errors)])
    done = not report.dry_run

    def verb(present: str, past: str) -> str:
        return past if done else present

    parts = [f"{verb('move', 'moved')} {plural(report.moved_observations, 'observation')}"]
    if report.folded_observations:
        parts.append(f"{verb('fold', 'folded')} {report.folded_observations} that {report.into} already held")
    parts.append(f"{verb('re-point', 're-pointed')} {plural(len(report.moved_relations), 'relation')}")
    if report.dropped_relations:
        dropped = listed_names([relation_text(r) for r in report.dropped_relations])
        count = plural(len(report.dropped_relations), "relation")
        parts.append(f"{verb('drop', 'dropped')} {count} between them or already on {report.into} ({dropped})")
    if report.aliases:
        parts.append(f"{verb('add', 'added')} aliases {listed_names(report.aliases)}")
    if report.descriptions:
        parts.append(f"{verb('keep', 'kept')} {plural(len(report.descriptions), 'description')} as observations")
    if report.dropped_types:
        parts.append(f"{verb('drop', 'dropped')} types {listed_names(report.dropped_types)}")
    sources = ", ".join(report.sources)
    if report.dry_run:
        return f"Merging {sources} into {report.into} would {'; '.join(parts)}. Nothing was changed."
    head = (
        f"This call was already applied (graph change {report.seq}); nothing was written again.\n"
        if report.replayed
        else ""
    )
    return f"{head}Merged {sources} into {report.into}: {'; '.join(parts)}."


def shown_observations(entity: Entity, as_of: datetime | None, include_invalid: bool) -> list[Observation]:
    """The observations a search at ``as_of`` (``None``: now) shows, in the order added."""
    if as_of is None:
        return list(entity.observations) if include_invalid else entity.current_observations()
    if include_invalid:
        return [o for o in entity.observations if o.created_at is None or o.created_at <= as_of]
    return [o for o in entity.observations if o.held_at(as_of)]


def disputes(entity: Entity, as_of: datetime | None = None) -> dict[str, str]:
    """Observation id → who disagrees with it, for the observations of ``entity`` that hold
    (now, or at ``as_of``) and are in disagreement (see the module docstring)."""

    def holds(o: Observation) -> bool:
        return o.current if as_of is None else o.held_at(as_of)

    retracted: dict[str, list[Observation]] = {}
    by_id: dict[str, Observation] = {}
    for o in entity.observations:
        by_id[o.id] = o
        if o.invalid_at is not None and (as_of is None or o.invalid_at <= as_of):
            retracted.setdefault(o.text, []).append(o)
    if not retracted:
        return {}
    notes: dict[str, str] = {}
    for o in entity.observations:
        if not holds(o):
            continue
        for past in retracted.get(o.text, ()):
            who = past.invalidated_by
            if not who or who == o.created_by or past.id == o.id:
                continue
            replacement = by_id.get(past.superseded_by or "")
            if replacement is not None and holds(replacement):
                notes[o.id] = f"{o.created_by or 'unknown'}; disputed by {who}: {replacement.text!r}"
                notes[replacement.id] = f"{replacement.created_by or 'unknown'}; disputed by {o.created_by}: {o.text!r}"
            else:
                why = f": {past.reason}" if past.reason else ""
                notes[o.id] = f"{o.created_by or 'unknown'}; {who} said it no longer holds{why}"
    return notes


def _neighbour_text(neighbour: Neighbour) -> str:
    """``-[type]-> name [entity_type]`` or ``<-[type]- name [entity_type]``."""
    kind = neighbour.relation_type
    arrow = f"-[{kind}]->" if neighbour.outgoing else f"<-[{kind}]-"
    return f"{arrow} {neighbour.name} [{neighbour.entity_type}]"


def _entity_text(
    view: EntityView, head: str, as_of: datetime | None, include_invalid: bool, *, outgoing_only: bool = False
) -> str:
    """An entity as a few indented lines: ``head``, aliases, description, observations, neighbours."""
    entity = view.entity
    root = " root" if entity.is_root else ""
    lines = [f"{head}{entity.name} [{entity.entity_type}{root}]"]
    if _no_longer_at(entity, as_of):
        lines[0] += f" ({no_longer(entity)})"
    if entity.aliases:
        lines.append(f"   aka {', '.join(entity.aliases)}")
    if entity.description:
        lines.append(f"   {entity.description}")
    notes = disputes(entity, as_of)
    observations = shown_observations(entity, as_of, include_invalid)
    chosen = view.shown if isinstance(view, SearchHit) else None
    if chosen is not None:
        by_id = {observation.id: observation for observation in observations}
        hidden = len(observations) - len(chosen)
        observations = [by_id[i] for i in chosen if i in by_id]
    for observation in observations:
        line = f"   - {observation.text}"
        if _no_longer_at(observation, as_of):
            line += f" ({no_longer(observation)})"
        elif observation.id in notes:
            line += f" ({notes[observation.id]})"
        lines.append(line)
    if chosen is not None and hidden > 0:
        lines.append(f"   (+{hidden} more observations: get_entities)")
    neighbours = [n for n in view.neighbours if n.outgoing] if outgoing_only else view.neighbours
    if neighbours:
        lines.append("   neighbours: " + "; ".join(_neighbour_text(n) for n in neighbours))
        if view.more_neighbours:
            lines[-1] += f" (+{view.more_neighbours} more)"
    return "\n".join(lines)


def _hit_text(hit: SearchHit, rank: int, as_of: datetime | None, include_invalid: bool) -> str:
    """The hit as a few indented lines: header with the score, then the entity's lines."""
    text = _entity_text(hit, f"{rank}. ", as_of, include_invalid)
    first, _, rest = text.partition("\n")
    return f"{first} {hit.score:.2f}" + (f"\n{rest}" if rest else "")


def render_entities(page: EntityPage) -> str:
    """``get_entities``: each entity found, then the names not found."""
    lines = [_entity_text(view, "", None, False) for view in page.entities]
    if page.missing:
        lines.append(f"No entity named {', '.join(repr(name) for name in page.missing)}; search_graph finds by words.")
    return "\n".join(lines)


def render_graph_page(page: EntityPage) -> str:
    """``read_graph``: the page's entities with their outgoing relations, and where the next page starts."""
    if not page.total:
        return "The knowledge graph is empty."
    if not page.entities:
        count = f"{page.total} {'entity' if page.total == 1 else 'entities'}"
        return f"No entities from offset {page.offset}: the graph has {count}."
    end = page.offset + len(page.entities)
    lines = [f"Entities {page.offset + 1}-{end} of {page.total}, by name:"]
    lines.extend(_entity_text(view, "", None, False, outgoing_only=True) for view in page.entities)
    if end < page.total:
        lines.append(f"{page.total - end} more; next offset {end}.")
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
    moment = "" if result.as_of is None else f", as of {_when(result.as_of)} UTC"
    lines.append(f"{plural(len(result.hits), 'hit')} for {result.query!r} ({result.mode}{moment}):")
    lines.extend(
        _hit_text(hit, rank, result.as_of, result.include_invalid) for rank, hit in enumerate(result.hits, start=1)
    )
    if result.more:
        lines.append(f"{result.more} more match; raise top_k to see them.")
    if result.edges is not None:
        if result.edges:
            lines.append("Edges:")
            lines.extend(
                f"- {relation_text(r)}"
                + (f": {r.description}" if r.description else "")
                + (f" ({no_longer(r)})" if _no_longer_at(r, result.as_of) else "")
                for r in result.edges
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
