"""The graph's layout: deterministic, bounded, and moving little when the graph changes."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("numpy", reason="the dashboard extra is not installed")

from toolcards.dashboard._layout import GraphLayout, force_layout


def ring(n: int) -> tuple[list[str], list[tuple[int, int]]]:
    return [f"e{i}" for i in range(n)], [(i, (i + 1) % n) for i in range(n)]


def test_the_same_graph_is_drawn_the_same_way() -> None:
    names, edges = ring(30)
    assert force_layout(names, edges) == force_layout(names, edges)
    assert force_layout([], []) == []


def test_related_entities_end_closer_than_unrelated_ones() -> None:
    names, edges = ring(40)
    points = force_layout(names, edges)
    related = sum(math.dist(points[a], points[b]) for a, b in edges) / len(edges)
    unrelated = sum(math.dist(points[i], points[(i + 20) % 40]) for i in range(40)) / 40
    assert related < unrelated / 2
    assert min(math.dist(points[a], points[b]) for a in range(40) for b in range(a + 1, 40)) > 0.05


def test_a_new_entity_moves_the_others_a_little_and_a_version_is_laid_out_once() -> None:
    names, edges = ring(40)
    pairs = [(names[a], names[b]) for a, b in edges]
    layout = GraphLayout()
    before = dict(layout.positions(1, names, pairs))
    assert layout.positions(1, names, pairs) is layout.positions(1, names, pairs)
    after = layout.positions(2, [*names, "new"], [*pairs, ("new", "e3")])
    assert math.dist(after["new"], after["e3"]) < 3
    moved = sum(math.dist(before[name], after[name]) for name in names) / len(names)
    spread = max(math.dist(before["e0"], point) for point in before.values())
    assert moved < spread / 4


def test_entities_too_far_apart_to_push_each_other_are_laid_out() -> None:
    points = force_layout(["a", "b"], [(0, 1)])
    assert len(points) == 2 and points[0] != points[1]
