"""Benchmarks: ``python -m bench [group ...]`` runs every group (or those named) and prints one table.

Each module here is a group exposing ``run() -> list[Case]`` (:class:`bench.timing.Case`):
a label, the median (or the one figure) in the case's unit, a note, and where they apply
the 95th percentile, the target and which way is better. A group that needs something
absent raises :class:`bench.timing.Skip`. Benchmarks are not tests: nothing here asserts
a time. ``bench/peer`` (the side-by-side comparison with akgentic-tool) is run by hand:
``python -m bench.peer``.
"""
