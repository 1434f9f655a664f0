"""Mode auto: the probe order, the one warning on falling back to local, real probes on fakes."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from toolcards.sandbox import _probe as probe
from toolcards.sandbox._actor import BwrapSandboxActor, DockerSandboxActor, LocalSandboxActor, sandbox_actor_class
from toolcards.sandbox._bwrap import bwrap_available


@dataclass
class FakeProbes:
    answers: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(("bwrap", "seatbelt", "docker"), False))
    asked: list[str] = field(default_factory=list)

    def probe(self, name: str) -> Callable[..., bool]:
        def answer(*_: object) -> bool:
            self.asked.append(name)
            return self.answers[name]

        return answer


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> FakeProbes:
    """Every probe replaced by a switch that records when it is asked."""
    fakes = FakeProbes()
    for name in ("bwrap", "seatbelt", "docker"):
        monkeypatch.setattr(probe, f"probe_{name}", fakes.probe(name))
    monkeypatch.setattr(probe, "_warned_local", False)
    return fakes


def test_bwrap_wins_when_available(probes: FakeProbes) -> None:
    probes.answers.update(bwrap=True, docker=True)
    assert probe.choose_mode() == "bwrap"
    assert probes.asked == ["bwrap"]


def test_order_is_bwrap_seatbelt_docker(probes: FakeProbes) -> None:
    probes.answers["docker"] = True
    assert probe.choose_mode() == "docker"
    assert probes.asked == ["bwrap", "seatbelt", "docker"]
    probes.answers["seatbelt"] = True
    assert probe.choose_mode() == "seatbelt"


def test_fallback_to_local_warns_once(probes: FakeProbes, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolcards.sandbox._probe"):
        assert probe.choose_mode() == "local"
        assert probe.choose_mode() == "local"
    warnings = [record for record in caplog.records if "no bwrap, seatbelt or docker" in record.message]
    assert len(warnings) == 1
    assert "does not isolate files or network" in warnings[0].message


def test_auto_resolves_to_a_registered_class(probes: FakeProbes) -> None:
    assert sandbox_actor_class("auto") is LocalSandboxActor
    probes.answers["docker"] = True
    assert sandbox_actor_class("auto") is DockerSandboxActor
    probes.answers["bwrap"] = True
    assert sandbox_actor_class("auto") is BwrapSandboxActor


def _fake_bwrap(tmp_path: Path, exit_code: int) -> str:
    exe = tmp_path / f"bwrap{exit_code}"
    exe.write_text(f"#!/bin/sh\nexit {exit_code}\n")
    exe.chmod(0o755)
    return str(exe)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bwrap is Linux only")
def test_bwrap_probe_runs_the_executable(tmp_path: Path) -> None:
    assert bwrap_available(_fake_bwrap(tmp_path, 0))
    assert not bwrap_available(_fake_bwrap(tmp_path, 1))
    assert not bwrap_available(str(tmp_path / "missing"))
