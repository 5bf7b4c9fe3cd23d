"""The schedule registry: names, aliases, constraints, builders and closed forms.

Each schedule family (a module of ``ppviz.schedules``) registers its specs when imported;
``import ppviz`` imports them all. Names are matched case-insensitively and ignoring ``-``,
``_``, spaces and torch's
``Schedule`` class prefix, so ``"ScheduleInterleaved1F1B"``, ``"interleaved_1f1b"`` and
``"Interleaved1F1B"`` all name the same schedule.
"""

from __future__ import annotations

import difflib
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from .closed_form import ClosedForm
from .errors import ConfigError, ScheduleConstraintError, UnknownScheduleError, checked_arguments
from .paths import exported
from .program import Program


@dataclass(frozen=True)
class ScheduleSpec:
    """What the registry knows about one schedule."""

    name: str
    summary: str
    reference: str
    # each takes the Config (which imports this module, so it is not named here)
    builder: Callable[..., Program] | None
    aliases: tuple[str, ...] = ()
    default_v: int = 1
    v_min: int = 1
    v_max: int | None = 1  # None: no upper bound
    v_step: int = 1  # 2: every other v from v_min (Hanayo's v = 2 × waves)
    constraints: str = ""
    validate: Callable[..., None] | None = None
    closed_form: Callable[..., ClosedForm] | None = None
    replicas: int = 1
    split_backward: bool = False
    #: an inference pipeline: forwards only (its programs are ``forward_only``)
    forward_only: bool = False
    #: accepts ``Config.segments`` > 1 (microbatches split into sequence segments)
    segmented: bool = False
    #: its published version overlaps communication with compute: transfers default to p2p="overlapped"
    overlapped_p2p: bool = False
    #: for a builder that lays its order out on a grid of slots per device first: (devices,
    #: microbatches) → the grid's cells, which the size budget counts too (they can far outnumber
    #: the ops: p × 6(p + m) for V-Half)
    grid_cells: Callable[[int, int], int] | None = None
    #: the spec whose program this one's builder also builds: the same order, read with other
    #: microbatch sizes (Chimera's backward halving is forward doubling's order over half-size
    #: microbatches). At one config both give one run, so ``ppviz.search``, the frontier and
    #: ``ppviz.plan`` try only that spec.
    same_program_as: str | None = None
    #: a schedule whose published version runs some pairs of consecutive ops braided, each one's
    #: tensor-parallel communication under the other's compute (STP's F&B, F&F and F&W units):
    #: program → the flat index of each such unit's first op (the second follows it), empty for a
    #: program that is not the schedule's own order. ``engine.op_costs`` costs them.
    braided_units: Callable[[Program], object] | None = None
    #: Vocabulary Parallelism: the all-reduce barriers its vocabulary passes end in (1 or 2; 0 for a
    #: schedule without them). ``Config.from_model`` then splits the output layer over the devices.
    vocab_barriers: int = 0
    #: and its output layer is one blocking collective step on every device (the interlaced
    #: pipeline's), not passes beside the pipeline on a stream of their own
    vocab_synchronous: bool = False

    @property
    def v_rule(self) -> str:
        """Accepted stages per device, e.g. ``"1"``, ``"2"``, ``">= 2"``, ``"any"``, ``"even, >= 2"``."""
        if self.v_max is None:
            rule = "any" if self.v_min <= 1 else f">= {self.v_min}"
        else:
            rule = str(self.v_min) if self.v_min == self.v_max else f"{self.v_min}..{self.v_max}"
        if self.v_step == 2 and self.v_min != self.v_max:
            return f"{'even' if self.v_min % 2 == 0 else 'odd'}, {rule}"
        return rule

    def v_or_default(self, v: int | None) -> int:
        """``v`` when this schedule accepts that many stages per device, else its default."""
        if v is None or v < self.v_min or (self.v_max is not None and v > self.v_max):
            return self.default_v
        return v

    def stage_count(self, devices: int, v: int) -> int | None:
        if self.builder is None:
            return None
        return devices * v  # replicas share stage numbers: DualPipe's and Chimera's v = 1 gives p

    def check(self, config) -> None:
        if self.validate is not None:
            self.validate(config)

    def build_program(self, config) -> Program:
        if self.builder is None:
            raise ConfigError(
                "schedule", config.schedule,
                "a custom schedule is a Program: build it with ppviz.Program.from_text(...) and call "
                "ppviz.simulate(program, config)")
        program = self.builder(config)
        program.name = config.schedule
        return program


_REGISTRY: dict[str, ScheduleSpec] = {}
_ALIASES: dict[str, str] = {}


def _normal(name: str) -> str:
    key = name.strip().lower()
    key = re.sub(r"^schedule", "", key) if key != "schedule" else key
    return re.sub(r"[\s_\-]+", "", key)


def register(spec: ScheduleSpec) -> ScheduleSpec:
    for alias in (spec.name, *spec.aliases):
        key = _normal(alias)
        if key in _ALIASES and _ALIASES[key] != spec.name:
            raise RuntimeError(f"alias {alias!r} already names {_ALIASES[key]!r}")
        _ALIASES[key] = spec.name
    _REGISTRY[spec.name] = spec
    return spec


def lookup(name: str) -> ScheduleSpec:
    key = _normal(name)
    if key in _ALIASES:
        return _REGISTRY[_ALIASES[key]]
    names = [s.name for s in all_specs()]
    candidates = {**{_normal(a): a for a in _ALIASES}, **{_normal(n): n for n in names}}
    close = difflib.get_close_matches(key, list(candidates), n=3, cutoff=0.5)
    suggestions = []
    for c in close:
        canonical = _ALIASES[c]
        if canonical not in suggestions:
            suggestions.append(canonical)
    raise UnknownScheduleError(name, suggestions, names)


def find(name: str) -> ScheduleSpec | None:
    """The spec a name or alias names, or None (:func:`lookup` without its suggestions)."""
    canonical = _ALIASES.get(_normal(name))
    return None if canonical is None else _REGISTRY[canonical]


def all_specs() -> list[ScheduleSpec]:
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(_REGISTRY.values(), key=lambda s: (rank.get(s.name, len(ORDER)), s.name))


#: The order of the registry's listing; schedules not named here come last. A schedule's place is also its
#: colour in every chart (charts/inputs.colors_for), so a new one goes at the end: placed before others it
#: would recolour them.
ORDER = ("gpipe", "1f1b", "interleaved-1f1b", "looped-bfs", "zb-h1", "zb-h2", "interleaved-zb", "zb-v",
         "v-half", "v-min", "dualpipe", "dualpipe-v", "dualpipe-v-unsplit", "chimera", "bitpipe", "hanayo",
         "1f1b-overlap", "interleaved-1f1b-overlap", "seq1f1b", "inference", "custom", "chimera-forward-doubling",
         "chimera-backward-halving", "stp", "vocab-1", "vocab-2", "interlaced")


def one_stage_per_device(alternative: str) -> Callable:
    """A spec's ``validate`` for schedules of one stage per device and no microbatch groups;
    ``alternative`` names what to use for more stages, e.g. ``"interleaved-1f1b for v >= 2"``."""
    def validate(config) -> None:
        require(config.stages_per_device == 1, config, "stages_per_device", f"use 1, or {alternative}",
                "holds one stage per device")
        no_microbatch_groups(config)

    return validate


def no_microbatch_groups(config) -> None:
    """Refuse ``microbatch_group_size``, which only interleaved schedules read."""
    require(config.microbatch_group_size is None, config, "microbatch_group_size",
            "leave it unset (it applies to interleaved schedules)", "has no microbatch groups")


def even_devices(config, why: str) -> None:
    """Two-replica schedules (Chimera, BitPipe): the two directions split the devices in halves,
    so p is even."""
    p = config.devices
    require(p % 2 == 0, config, "devices", "use " + " or ".join(map(str, sorted({max(2, p - 1), p + 1}))),
            f"{why}; got {p}")


def even_devices_whole_units(config, why_even: str, why_units: str) -> None:
    """:func:`even_devices`, and the schedule repeats a unit of p microbatches, so m is a multiple of p."""
    even_devices(config, why_even)
    p, m = config.devices, config.microbatches
    lower, upper = max(p, m - m % p), m - m % p + p
    require(m % p == 0, config, "microbatches",
            "use " + " or ".join(map(str, sorted({lower, upper}))) + " (a multiple of p)", f"{why_units}; got {m}")


def require(condition: bool, config, field: str, accepted: str, reason: str) -> None:
    """Raise a ScheduleConstraintError naming the schedule, the field and what would work."""
    if not condition:
        raise ScheduleConstraintError(field, getattr(config, field, None), accepted,
                                      reason=f"{config.schedule} {reason}")


@checked_arguments
class ScheduleTable(tuple):
    """The registry as returned by ``ppviz.list_schedules()``: a tuple of specs that prints as a table."""

    def __repr__(self) -> str:
        return self._text(100)

    def to_text(self, path=None, *, width: int | None = None) -> str | None:
        """The table as text: name, accepted stages per device, every alias and what the schedule
        is, with its constraints under the description. With ``width``, aliases and descriptions
        wrap within their columns so that no line is longer (``ppviz list`` prints it 100 columns
        wide); aliases wrap between names and descriptions between words, never inside one (a
        name is never broken: the aliases' column is as wide as the longest), and a comparison
        (``m >= 2p``) stays on one line."""
        return exported(path, self._text(width))

    def _text(self, width: int | None) -> str:
        header = ("name", "v", "aliases", "what it is")
        v_cells = [s.v_rule.split(", ") for s in self]
        widths = [max(len(header[0]), *(len(s.name) for s in self)),
                  max(len(header[1]), *(len(line) for cell in v_cells for line in cell))]
        descriptions = [[s.summary] + ([f"constraints: {s.constraints}"] if s.constraints else []) for s in self]
        if width is None:
            widths.append(max(len(header[2]), *(len(", ".join(s.aliases)) for s in self)))
            widths.append(max(len(line) for lines in descriptions for line in lines))
        else:
            # names, v and each alias are never broken: the aliases' column holds the longest (with
            # its comma), and the descriptions need the longest word they hold
            longest_alias = max([len(header[2]), *(len(a) + 1 for s in self for a in s.aliases)])
            longest_word = max(len(word) for lines in descriptions for line in lines for word in line.split())
            least = widths[0] + widths[1] + longest_alias + 6 + max(24, longest_word + 2)  # three gaps of two spaces
            if isinstance(width, bool) or not isinstance(width, int) or width < least:
                raise ConfigError("width", width, f"give a whole number of columns, at least {least}",
                                  reason=f"the names, v and the longest alias alone take "
                                         f"{widths[0] + widths[1] + longest_alias + 4}")
            room = width - widths[0] - widths[1] - 6
            widths.append(longest_alias)
            widths.append(room - widths[2])

        def wrap(text: str, w: int, indent: str = "") -> list[str]:
            if width is None:
                return [text]
            glued = re.sub(r" (>=|<=|=|<|>) ", "\u00a0\\1\u00a0", text)  # no break around a comparison
            return [line.replace("\u00a0", " ") for line in
                    textwrap.wrap(glued, w, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False)]

        rows = [[[header[0]], [header[1]], [header[2]], [header[3]]]]
        for s, v, lines in zip(self, v_cells, descriptions):
            what = wrap(lines[0], widths[3]) + [line for extra in lines[1:] for line in wrap(extra, widths[3], "  ")]
            rows.append([[s.name], v, wrap(", ".join(s.aliases), widths[2]) or [""], what or [""]])
        out = []
        for cells in rows:
            for k in range(max(map(len, cells))):
                parts = [cell[k] if k < len(cell) else "" for cell in cells]
                out.append("  ".join(part.ljust(w) for part, w in zip(parts, widths)).rstrip())
        return "\n".join(out)

    def _repr_html_(self) -> str:
        """The table in a notebook: a narrow cell wraps the prose, never a name (a browser breaks
        ``interleaved-1f1b`` at its hyphen): each name, alias and v rule is kept on one line."""
        from html import escape

        def whole(text: str) -> str:
            return f'<code style="white-space: nowrap">{escape(text)}</code>'

        head = "<tr><th>name</th><th>v</th><th>aliases</th><th>what it is</th><th>reference</th><th>constraints</th></tr>"
        body = "".join(
            f"<tr><td>{whole(s.name)}</td><td style=\"white-space: nowrap\">{escape(s.v_rule)}</td>"
            f"<td>{', '.join(whole(a) for a in s.aliases)}</td>"
            f"<td>{escape(s.summary)}</td><td>{escape(s.reference)}</td><td>{escape(s.constraints)}</td></tr>"
            for s in self
        )
        return f"<table>{head}{body}</table>"

    def names(self) -> list[str]:
        return [s.name for s in self]


@checked_arguments
def list_schedules() -> ScheduleTable:
    """The registry: every schedule's name, aliases, constraints and a one-line description."""
    return ScheduleTable(all_specs())
