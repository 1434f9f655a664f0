"""Mode ``auto``: the strongest backend this host can run, probed in a fixed order.

Order: ``bwrap`` (namespaces) → ``seatbelt`` (macOS profile) → ``docker`` (a daemon that
answers and has the image) → ``local``. Falling back to ``local`` logs one warning per
process, because ``local`` isolates neither files nor network.

Each probe is a module-level function looked up when :func:`choose_mode` runs, so tests
replace them with ``monkeypatch.setattr(probe, "probe_bwrap", ...)``. Probes are cached
where they spawn anything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from toolcards.sandbox._bwrap import bwrap_available
from toolcards.sandbox._docker import docker_available
from toolcards.sandbox._models import DockerOptions
from toolcards.sandbox._seatbelt import seatbelt_available

__all__ = ["PROBE_ORDER", "choose_mode", "probe_bwrap", "probe_docker", "probe_seatbelt"]

logger = logging.getLogger(__name__)

PROBE_ORDER: tuple[str, ...] = ("bwrap", "seatbelt", "docker")
"""Modes tried by ``auto`` before falling back to ``local``."""

_warned_local = False


def probe_bwrap() -> bool:
    """bubblewrap is installed and can create namespaces (spawns it once)."""
    return bwrap_available()


def probe_seatbelt() -> bool:
    """This is macOS with ``sandbox-exec``."""
    return seatbelt_available()


def probe_docker(image: str = DockerOptions().image) -> bool:
    """A docker daemon answers and has ``image``."""
    return docker_available("docker", image)


def choose_mode(*, docker_image: str = DockerOptions().image) -> str:
    """The first mode of :data:`PROBE_ORDER` whose probe passes, else ``"local"``.

    Blocks while probes run (a few ms to a few seconds, once per process).
    """
    global _warned_local

    def docker() -> bool:
        return probe_docker(docker_image)

    probes: dict[str, Callable[[], bool]] = {"bwrap": probe_bwrap, "seatbelt": probe_seatbelt, "docker": docker}
    for mode in PROBE_ORDER:
        if probes[mode]():
            return mode
    if not _warned_local:
        _warned_local = True
        logger.warning(
            "sandbox mode auto: no bwrap, seatbelt or docker available; using local, which "
            "limits processes but does not isolate files or network"
        )
    return "local"
