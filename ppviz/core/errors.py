"""Errors raised for bad input. Every one is a ``ValueError`` so callers can catch bad input in one place."""

from __future__ import annotations


class PpvizError(ValueError):
    """Base class: the input was understood but is not acceptable."""


class ConfigError(PpvizError):
    """A configuration field has a value ppviz cannot accept.

    The message names the field, the value given and what would be accepted.
    """

    def __init__(self, field: str, value, accepted: str, *, reason: str | None = None):
        self.field = field
        self.value = value
        self.accepted = accepted
        shown = repr(value)
        if len(shown) > 80:  # a 400-digit integer or a long list is named, not printed whole
            shown = f"{shown[:60]}… ({len(shown)} characters)"
        what = f"{field}={shown}"
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


class ProgramError(PpvizError):
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
