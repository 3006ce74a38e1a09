"""Options every command of a command line shares, declared once: :func:`shared_options` adds them to a typer
command's signature (after the command's own options, so ``pobo-modeler run --url … --token …`` reads as
docs/design.md §6 writes it) and hands the command one object built from their values. Both command lines use it
for the connection options (``--url``, ``--token``)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

Command = TypeVar("Command", bound=Callable[..., Any])


def shared_options(name: str, options: dict[str, tuple[Any, Any]], build: Callable[..., Any]
                   ) -> Callable[[Command], Command]:
    """A decorator for typer commands: the command's parameter ``name`` is replaced, in the signature typer reads,
    by ``options`` (parameter name → (``Annotated`` typer option, default; ``inspect.Parameter.empty`` for a
    required one)); the command is then called with ``name=build(**values of options)``."""

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != name]
        added = [inspect.Parameter(option, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
                 for option, (annotation, default) in options.items()]

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {option: kwargs.pop(option) for option in options}
            return command(*args, **kwargs, **{name: build(**values)})

        wrapper.__signature__ = signature.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in [*own, *added]}
        return wrapper  # type: ignore[return-value]

    return decorate
