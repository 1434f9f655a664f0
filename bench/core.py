"""The pipeline's overhead per call.

Targets on the reference machine: pipeline overhead <= 30 µs median for a sync tool
without guards; a slash command through ``CommandRegistry.dispatch`` <= 4 µs; the function
``get_tools()`` makes costs <= 1 µs over ``Tool.call_sync`` on the same tool. The cost of
``import toolcards`` is ``bench/import.py``.
"""

from __future__ import annotations

from typing import ClassVar

import pykka

from bench.timing import Case, Stats, measure
from toolcards import COMMAND, TOOL_CALL, BaseToolParam, Channels, Tool, ToolCard, ToolFactory, capability
from toolcards.actors._caller_runs import CallerRunsActor


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


class CallerRunsPingActor(CallerRunsActor):
    def ping(self, x: int) -> int:
        return x + 1


def _ask(actor_class: type[PingActor] | type[CallerRunsPingActor]) -> Stats:
    """An ask of a method that does nothing, through a proxy: the actor round trip."""
    ref = actor_class.start()
    proxy = ref.proxy()
    try:
        return measure(lambda: proxy.ping(1).get(), repeat=5000)
    finally:
        ref.stop()


def ping(x: int) -> int:
    """Add one."""
    return x + 1


def run() -> list[Case]:
    direct = measure(lambda: ping(1), repeat=20000)
    bare = Tool.from_function(ping)
    pipeline = measure(lambda: bare.call_sync({"x": 1}), repeat=20000)
    factory = ToolFactory([PingCard()])
    command = factory.get_commands()[PingParam]
    via_factory = measure(lambda: command(x=1), repeat=20000)
    recorded = ToolFactory([PingCard()])
    recorded.subscribe(lambda record: None)
    recorded_command = recorded.get_commands()[PingParam]
    with_record = measure(lambda: recorded_command(x=1), repeat=20000)
    registry = factory.command_registry()
    dispatch = measure(lambda: registry.dispatch("/ping 1"), repeat=20000)
    tool = factory.tools(Channels.TOOL_CALL)[0]
    function = factory.get_tools()[0]
    tool_call = measure(lambda: tool.call_sync({"x": 1}, channel=Channels.TOOL_CALL), repeat=20000)
    via_function = measure(lambda: function(x=1), repeat=20000)
    actor, caller_runs = _ask(PingActor), _ask(CallerRunsPingActor)
    overhead = pipeline.median - direct.median
    function_overhead = via_function.median - tool_call.median
    return [
        Case.timed("direct function call", direct, "baseline"),
        Case.timed("Tool.call_sync, no guards", pipeline, f"overhead {1000 * overhead:.1f} µs over the direct call"),
        Case("pipeline overhead, sync tool, no guards", overhead, "Tool.call_sync minus the direct call", target=0.030),
        Case.timed("factory command (records on)", via_factory, "records built only with a sink: here the factory's"),
        Case.timed("factory command + subscriber", with_record, "one ToolExecutionRecord per call"),
        Case.timed(
            "CommandRegistry.dispatch /ping",
            dispatch,
            "parse the command line, then the pipeline; akgentic-tool: 8.5 µs",
            target=0.004,
        ),
        Case.timed("Tool.call_sync on the tool-call channel", tool_call, "the tool get_tools() wraps"),
        Case.timed("function from get_tools()", via_function, "what Agent(tools=...) calls"),
        Case(
            "get_tools() function over Tool.call_sync",
            function_overhead,
            "difference of the two medians above",
            target=0.001,
        ),
        Case.timed("bare pykka ask (proxy.ping().get())", actor, "for scale: an actor round trip"),
        Case.timed(
            "CallerRunsActor ask (proxy.ping().get())",
            caller_runs,
            "the base of the planning, graph and workspace actors: the waiting caller runs the message",
        ),
    ]
