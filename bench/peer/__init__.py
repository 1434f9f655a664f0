"""Side by side with akgentic-tool 1.12.0, the closest peer: ``python -m bench.peer`` (see ``__main__``).

Run by hand; ``python -m bench`` does not collect this package. ``fixtures.py`` is what both
drivers build and how they time it; ``toolcards_driver.py`` runs in the project's venv,
``akgentic_driver.py`` in the peer's own venv.
"""
