"""Option types for numbers: ``type=`` of an ``argparse`` option, refusing a bad value in words."""

from __future__ import annotations

import argparse

__all__ = ["port_number", "positive_integer", "positive_number"]


def port_number(text: str) -> int:
    """A TCP port, 0 to 65535 (0: the system picks a free one)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: use 0 to 65535 (0 picks a free one)")
    return port


def positive_number(text: str) -> float:
    """A number above 0 (seconds, bytes per second)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number: use one like 10 or 0.5")
    return value


def positive_integer(text: str) -> int:
    """A whole number above 0 (an option's ``type``)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value
