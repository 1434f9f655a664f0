"""A card for the stdio server's tests: it prints to stdout, starts a child that does, sleeps,
and reports which heavy modules its process has loaded."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import ClassVar

from toolcards import TOOL_CALL, BaseToolParam, Channels, ToolCard, capability

HEAVY = ("mcp", "mcp_types", "anyio", "starlette", "httpx2", "uvicorn")
"""What the stdio server must not import."""


class ProbeParam(BaseToolParam):
    expose: set[Channels] = {TOOL_CALL}


class StdioProbeTool(ToolCard):
    """Misbehaving and introspecting tools for the stdio tests."""

    kind: ClassVar[str] = "test_stdio_probe"

    noisy: ProbeParam | bool = True
    nap: ProbeParam | bool = True
    heavy: ProbeParam | bool = True

    @capability("noisy", name="noisy")
    def print_everywhere(self, text: str) -> str:
        """Print to stdout, and start a child that prints to stdout and reads stdin.

        Args:
            text: What to print.
        """
        print(f"stray print: {text}")
        sys.stdout.flush()
        subprocess.run(["sh", "-c", f"echo child says {text}; cat"], check=True)
        return text

    @capability("nap", name="nap")
    def sleep_a_while(self, seconds: float) -> str:
        """Sleep, then answer.

        Args:
            seconds: How long.
        """
        time.sleep(seconds)
        return f"slept {seconds}"

    @capability("heavy", name="heavy")
    def heavy_modules(self) -> list[str]:
        """The heavy modules this process has imported."""
        return sorted(name for name in sys.modules if name.split(".")[0] in HEAVY)
