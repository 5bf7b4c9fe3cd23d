"""Errors raised for bad input. Every one is a :class:`PpvizError`, so callers can catch ppviz's
refusals in one place; as Python's own conventions say, a wrong value is also a ``ValueError``
(:class:`ConfigError`, :class:`ProgramError` and theirs) and a wrong call (an argument a function
does not take, one it needs, too many) is also a ``TypeError`` (:class:`ArgumentError`)."""

from __future__ import annotations

import difflib
import functools
import inspect
import types


def shown_value(value) -> str:
    """A refused value as a message shows it: its repr, or its start when long (a 400-digit
    integer or a long list is named, not printed whole)."""
    shown = repr(value)
    return f"{shown[:60]}… ({len(shown)} characters)" if len(shown) > 80 else shown


class PpvizError(Exception):
    """Base class of every refusal: the message names what was wrong and what would be accepted."""


class ConfigError(PpvizError, ValueError):
    """A configuration field has a value ppviz cannot accept.

    The message names the field, the value given and what would be accepted.
    """

    def __init__(self, field: str, value, accepted: str, *, reason: str | None = None):
        self.field = field
        self.value = value
        self.accepted = accepted
        what = f"{field}={shown_value(value)}"
        text = f"{what}: {reason}; {accepted}" if reason else f"{what} is not accepted; {accepted}"
        super().__init__(text)


class UnknownScheduleError(ConfigError):
    """The schedule name matches no registry name or alias."""

    def __init__(self, name: str, suggestions: list[str], known: list[str]):
        self.suggestions = suggestions
        hint = f"did you mean {', '.join(repr(s) for s in suggestions)}? " if suggestions else ""
        super().__init__(
            "schedule",
            name,
            f"{hint}known schedules: {', '.join(known)}",
            reason="no schedule has this name",
        )


class ScheduleConstraintError(ConfigError):
    """The schedule exists but cannot run with these sizes (e.g. DualPipe with an odd device count)."""


class LayoutError(ConfigError):
    """A pipeline layout (Megatron's ``--pipeline-model-parallel-layout`` string, or layers per
    stage) cannot be read, or does not fit the model or the schedule's stage count.

    ``position`` is the 0-based offset in the string of a syntax error (None for other errors).
    """

    def __init__(self, value, accepted: str, *, reason: str, position: int | None = None):
        self.position = position
        super().__init__("layout", value, accepted, reason=reason)


class ProgramError(PpvizError, ValueError):
    """A program (per-device op lists) breaks a rule; the message names the device, position and rule."""

    def __init__(self, message: str, *, device: int | None = None, position: int | None = None):
        self.device = device
        self.position = position
        super().__init__(message)


class ParseError(ProgramError):
    """Text that should hold torch action strings could not be read."""


class DeadlockError(ProgramError):
    """The program's per-device orders can never all make progress.

    ``blocked`` maps each stuck device to (its next op, the op it waits for).
    """

    def __init__(self, message: str, blocked: dict[int, tuple[str, str]]):
        self.blocked = blocked
        super().__init__(message)


def did_you_mean(name: str, choices) -> str:
    """"did you mean 'x'? " for the one choice close to a misspelt name, else "": the start of the
    messages that refuse an unknown argument, field or option. ``choices`` may map the names
    matched to what is suggested for each (a command-line option by the field it sets:
    ``{"microbatches": "-m"}``)."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    if not close:
        return ""
    return f"did you mean {(choices[close[0]] if isinstance(choices, dict) else close[0])!r}? "


class ArgumentError(PpvizError, TypeError):
    """A public function, method or class was called with an argument it does not take, without
    one it needs, or with too many by position: the message names the call and every argument it
    takes. ``field`` and ``value`` name the unknown argument (``field`` the first missing one)."""

    def __init__(self, call: str, takes: list[str], *, unknown: tuple[str, object] | None = None,
                 missing: list[str] | None = None, detail: str | None = None):
        self.call, self.takes, self.missing = call, takes, missing or []
        accepted = f"{call} takes {', '.join(takes)}" if takes else f"{call} takes no arguments"
        self.accepted = accepted
        self.field: str | None
        self.value: object
        if unknown is not None:
            self.field, self.value = unknown
            text = f"{self.field}={shown_value(self.value)}: {call} has no such argument; {did_you_mean(self.field, takes)}{accepted}"
        else:
            # no value to show: the argument is absent, or the fault is in how many there are
            self.field, self.value = (self.missing[0] if self.missing else None), None
            reason = f"{call} needs {' and '.join(self.missing)}" if self.missing else detail
            text = f"{reason}; {accepted}"
        super().__init__(text)


def _argument_error(fn, name: str, method: bool, args: tuple, kwargs: dict) -> ArgumentError | None:
    """Why this call could not bind to ``fn``'s parameters (``method``: its first is self or cls),
    or None if it can (the TypeError came from inside)."""
    signature = inspect.signature(fn)
    try:
        signature.bind(*args, **kwargs)
        return None
    except TypeError:
        pass
    kinds = inspect.Parameter
    parameters = dict(signature.parameters)
    first = next(iter(parameters), None) if method else None
    listed = {p: spec for p, spec in parameters.items() if p != first}
    names = [p for p, spec in listed.items() if spec.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD)]
    given = args[1:] if method else args
    if any(spec.kind is kinds.VAR_KEYWORD for spec in listed.values()):
        names = names + ["keyword options"]
    else:
        for key, value in kwargs.items():
            if key not in listed or listed[key].kind is kinds.POSITIONAL_ONLY:
                return ArgumentError(name, names, unknown=(key, value))
    positional = [p for p, spec in listed.items() if spec.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    if len(given) > len(positional) and not any(spec.kind is kinds.VAR_POSITIONAL for spec in listed.values()):
        return ArgumentError(name, names, detail=f"{name} takes {len(positional)} argument"
                             f"{'' if len(positional) == 1 else 's'} by position, {len(given)} were given")
    twice = [p for p in positional[:len(given)] if p in kwargs]
    if twice:
        return ArgumentError(name, names, detail=f"{name} got {twice[0]} twice, by position and by name")
    try:
        bound = signature.bind_partial(*args, **kwargs).arguments
    except TypeError as error:
        return ArgumentError(name, names, detail=str(error))
    missing = [p for p, spec in listed.items() if p not in bound and spec.default is spec.empty and
               spec.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD)]
    return ArgumentError(name, names, missing=missing, detail=f"{name} cannot take these arguments")


def _checked_function(fn, name: str, method: bool = False):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        try:
            return fn(*args, **kwargs)
        except TypeError:
            # only on the error path: a TypeError raised inside fn binds fine and is raised as it was
            wrong = _argument_error(fn, name, method, args, kwargs)
            if wrong is None:
                raise
            raise wrong from None
    return call


def checked_arguments(target):
    """Turn a public function's (or a public class's methods') "unexpected keyword argument" /
    "missing argument" TypeErrors into :class:`ArgumentError`, a :class:`PpvizError` naming the
    argument and everything the call takes. A class: its ``__init__`` and the public methods,
    class methods and static methods it defines (inherited ones are checked where they are
    defined). Calls that bind cost nothing more than one Python call."""
    if not isinstance(target, type):
        return _checked_function(target, f"{target.__name__}()")
    for attribute, member in list(vars(target).items()):
        if attribute.startswith("_") and attribute != "__init__":
            continue
        name = f"{target.__name__}()" if attribute == "__init__" else f"{target.__name__}.{attribute}()"
        if isinstance(member, classmethod):
            setattr(target, attribute, classmethod(_checked_function(member.__func__, name, method=True)))
        elif isinstance(member, staticmethod):
            setattr(target, attribute, staticmethod(_checked_function(member.__func__, name)))
        elif isinstance(member, types.FunctionType):
            setattr(target, attribute, _checked_function(member, name, method=True))
    return target
