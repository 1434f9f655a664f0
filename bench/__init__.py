"""Benchmarks: ``python -m bench [name ...]`` prints one table of medians.

Each module here exposes ``run() -> list[tuple[str, float, str]]``: rows of
(measurement, median in milliseconds, note). Benchmarks are not tests: nothing here
asserts a time.
"""
