"""A :class:`~toolcards.core._tool.Tool` as a plain callable, for code that wants functions.

Three shapes, one per channel, each running the whole pipeline:

* :func:`tool_function` — for ``Agent(tools=...)``: the tool's name, description and exact
  parameter schemas on a plain function; errors come back as text (or as the framework's
  retry exception), never as a raw exception in the agent loop;
* :func:`prompt_function` — a zero-argument callable rendering a system-prompt section;
* :func:`command_function` — for orchestrator code: channel COMMAND, errors raised.

``ToolCard.get_tools()``/``get_system_prompts()``/``get_commands()`` and the factory's
methods of the same names build on these.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Annotated, Any

from toolcards.core._channels import Channels
from toolcards.core._tool import Tool
from toolcards.errors import RetriableError, ToolcardsError, ToolFailed

__all__ = ["command_function", "prompt_function", "tool_function"]

logger = logging.getLogger("toolcards.factory")


def tool_function(tool: Tool, retry_exception: type[Exception] | None = None) -> Callable[..., Any]:
    """A plain function with ``tool``'s name, signature and docstring that runs the pipeline.

    A sync handler gives a sync function (frameworks run those in a worker thread, so actor
    asks never block the event loop); an async handler gives an async function.
    A ``RetriableError`` is raised as ``retry_exception`` when given, otherwise returned as
    text; a ``ToolFailed`` (``ApprovalRequired`` included) is returned as text, so no raw
    exception reaches the agent loop.
    """

    def failure(exc: ToolcardsError) -> str:
        if isinstance(exc, RetriableError) and retry_exception is not None:
            raise retry_exception(str(exc)) from exc
        return f"Error: {exc}"

    if tool.is_async:

        async def run_async(**kwargs: Any) -> Any:
            try:
                return await tool.call(kwargs, channel=Channels.TOOL_CALL)
            except (RetriableError, ToolFailed) as exc:
                return failure(exc)

        function: Callable[..., Any] = run_async
    else:

        def run_sync(**kwargs: Any) -> Any:
            try:
                return tool.call_sync(kwargs, channel=Channels.TOOL_CALL)
            except (RetriableError, ToolFailed) as exc:
                return failure(exc)

        function = run_sync
    return _dress(function, tool)


def prompt_function(tool: Tool) -> Callable[[], str | None]:
    """A zero-argument callable rendering ``tool`` as a system prompt section.

    A failure never breaks the agent's run: it renders as one line saying the section is
    unavailable, and is logged.
    """

    def render() -> str | None:
        try:
            result = tool.call_sync({}, channel=Channels.SYSTEM_PROMPT)
        except (RetriableError, ToolFailed) as exc:
            logger.warning("system prompt %s failed: %s", tool.name, exc)
            return f"({tool.name} is unavailable: {exc})"
        return None if result is None else str(result)

    render.__name__ = tool.name
    render.__qualname__ = tool.name
    return render


def command_function(tool: Tool) -> Callable[..., Any]:
    """A callable for orchestrator code: same pipeline, channel COMMAND, errors raised."""

    def run(**kwargs: Any) -> Any:
        return tool.call_sync(kwargs, channel=Channels.COMMAND)

    return _dress(run, tool)


def _dress(function: Callable[..., Any], tool: Tool) -> Callable[..., Any]:
    """Give ``function`` the tool's name, description and a signature that yields its exact schema.

    A framework that builds a tool's schema from the function's signature (pydantic-ai's
    ``Agent(tools=...)``) would rebuild it from the handler's types: titles, ``$defs``, model
    docstrings and ``anyOf``-null unions would come back. Each parameter is therefore
    annotated with the tool's own JSON schema for it (``WithJsonSchema``), so both ways of
    attaching a card send the same compact schema. Validation stays the pipeline's: the
    annotation's type is ``Any``.
    """
    from pydantic import Field, WithJsonSchema

    properties = tool.parameters_schema.get("properties", {})
    parameters = []
    for name, parameter in tool.args.signature.parameters.items():
        schema = properties.get(name, {})
        annotation = Annotated[Any, WithJsonSchema(schema), Field(json_schema_extra=_keep_only(schema))]
        parameters.append(parameter.replace(annotation=annotation))
    signature = inspect.Signature(parameters, return_annotation=tool.args.signature.return_annotation)
    functools.update_wrapper(function, tool.handler, assigned=(), updated=())
    function.__name__ = tool.name
    function.__qualname__ = tool.name
    function.__doc__ = tool.description
    function.__signature__ = signature  # type: ignore[attr-defined]
    function.__annotations__ = {
        **{parameter.name: parameter.annotation for parameter in parameters},
        "return": signature.return_annotation,
    }
    function.__toolcards_tool__ = tool  # type: ignore[attr-defined]
    return function


def _keep_only(schema: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    """A ``json_schema_extra`` that drops the ``default`` pydantic adds when ``schema`` has none."""

    def adjust(generated: dict[str, Any]) -> None:
        if "default" not in schema:
            generated.pop("default", None)

    return adjust
