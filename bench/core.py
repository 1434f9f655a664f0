"""The pipeline's overhead per call.

Target on the reference machine: pipeline overhead <= 30 µs median for a sync tool
without guards. The cost of ``import toolcards`` is ``bench/import.py``.
"""

from __future__ import annotations

from typing import ClassVar

import pykka

from bench.timing import median_ms
from toolcards import COMMAND, TOOL_CALL, BaseToolParam, Channels, Tool, ToolCard, ToolFactory, capability


class PingParam(BaseToolParam):
    expose: set[Channels] = {TOOL_CALL, COMMAND}


class PingCard(ToolCard):
    kind: ClassVar[str] = "bench_ping"
    ping: PingParam | bool = True

    @capability("ping", name="ping")
    def ping_tool(self, x: int) -> int:
        """Add one."""
        return x + 1


class PingActor(pykka.ThreadingActor):
    def ping(self, x: int) -> int:
        return x + 1


def ping(x: int) -> int:
    """Add one."""
    return x + 1


def run() -> list[tuple[str, float, str]]:
    direct = median_ms(lambda: ping(1), repeat=20000)
    bare = Tool.from_function(ping)
    pipeline = median_ms(lambda: bare.call_sync({"x": 1}), repeat=20000)
    factory = ToolFactory([PingCard()])
    command = factory.get_commands()[PingParam]
    via_factory = median_ms(lambda: command(x=1), repeat=20000)
    recorded = ToolFactory([PingCard()])
    recorded.subscribe(lambda record: None)
    recorded_command = recorded.get_commands()[PingParam]
    with_record = median_ms(lambda: recorded_command(x=1), repeat=20000)
    ref = PingActor.start()
    proxy = ref.proxy()
    try:
        actor = median_ms(lambda: proxy.ping(1).get(), repeat=5000)
    finally:
        ref.stop()
    return [
        ("direct function call", direct, "baseline"),
        ("Tool.call_sync, no guards", pipeline, f"overhead {1000 * (pipeline - direct):.1f} µs (target <= 30 µs)"),
        ("factory command (records on)", via_factory, "records built only with a sink: here the factory's"),
        ("factory command + subscriber", with_record, "one ToolExecutionRecord per call"),
        ("bare pykka ask (proxy.ping().get())", actor, "for scale: an actor round trip"),
    ]
