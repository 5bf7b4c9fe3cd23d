"""Which layers each pipeline stage holds: Megatron's layout strings, its default even split, and
"the first/last stage get k layers".

A :class:`Layout` lists, per stage in model order, the items the stage holds: ``E`` the
embedding, ``t`` a transformer layer, ``m`` a multi-token-prediction layer, ``L`` the loss (the
LM head). Stage s of a ppviz schedule is model chunk s, wherever its placement puts it: with
Megatron's interleaved (looped) placement, string stage i runs on pipeline rank i mod p as
virtual stage i // p, exactly Megatron's rank map; a V-shaped schedule runs the same stages down
and back up the devices.

Layout strings follow Megatron-LM's ``--pipeline-model-parallel-layout``
(``megatron/core/transformer/pipeline_parallel_layer_layout.py``, ``parse_str_to_list``; the
user guide's "Custom Pipeline Model Parallel Layout"): stages are separated by ``|``, ``x*N``
repeats an item N times, ``(…)*N`` repeats a group (which may contain ``|``), commas anywhere
are cosmetic, and a stage may be empty (``E||t|L``). ``"Et*3|(tt|)*29,m|L"`` is DeepSeek-V3's 61
layers and one MTP layer on 32 stages (PP 16 × VPP 2). ppviz accepts exactly the strings
Megatron accepts except two that Megatron's regular expressions read oddly: a repetition of a
repetition (``t*2*3``: Megatron makes it ``ttt`` + ``t``… ; write ``t*6``) and nested
parentheses (which Megatron refuses too). A string is valid for a model when, as Megatron
checks (``validate_layer_layout``), ``E`` is the first item and ``L`` the last, each exactly
once, the ``t`` count is the model's layers and the ``m`` count its MTP layers, after every ``t``.

Megatron's default (no layout string) splits the transformer layers evenly over the p·v
stages (they must divide), the embedding on the first stage, the loss and the MTP layers on
the last; ``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers``
give the first and last stage k layers and split the rest evenly (with v = 1; Megatron applies
them to every virtual stage of the first and last rank, ppviz to model stages 0 and S−1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.errors import LayoutError, checked_arguments

ITEMS = {"E": "embedding", "t": "transformer layer", "m": "MTP layer", "L": "loss"}
#: Largest layout accepted, in items (layers plus stage separators), checked before expanding
MAX_ITEMS = 1_000_000
SYNTAX = ("write E (embedding), t (transformer layer), m (MTP layer) and L (loss), stages separated by '|', "
          "x*N to repeat an item and (...)*N a group, commas optional: e.g. 'Et*3|(tt|)*29,m|L'")


@checked_arguments
@dataclass(frozen=True)
class Layout:
    """The items (``E``, ``t``, ``m``, ``L``) each stage holds, stage 0 first; see the module docstring."""

    stages: tuple[str, ...]

    def __post_init__(self):
        # a string is refused, not read as one stage per character
        if not isinstance(self.stages, (list, tuple)):
            raise LayoutError(self.stages, "give a tuple of strings, one per stage (e.g. ('Et', 'tL')); "
                              "Layout.parse reads a layout string, Layout.from_counts layer counts",
                              reason=f"{type(self.stages).__name__} is not a list of stages")
        stages = tuple(self.stages)
        for s, items in enumerate(stages):
            if not isinstance(items, str) or any(c not in ITEMS for c in items):
                raise LayoutError(list(stages), "give each stage as a string of E, t, m and L",
                                  reason=f"stage {s} holds {items!r}")
        object.__setattr__(self, "stages", stages)

    # Constructors -----------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> "Layout":
        """A layout from Megatron's string syntax; a :class:`ppviz.LayoutError` names the
        position of a syntax error."""
        if not isinstance(text, str):
            raise LayoutError(text, SYNTAX, reason="a layout string is text")
        if len(text) > MAX_ITEMS:
            raise LayoutError(text, SYNTAX, reason=f"the string is longer than {MAX_ITEMS:,} characters; fold "
                              "repetitions with *N")
        expanded = _expand(text)
        return cls(tuple(expanded.split("|")))

    @classmethod
    def from_counts(cls, counts: Sequence[int], mtp_layers: int = 0) -> "Layout":
        """Transformer layers per stage; the embedding goes on the first stage, the MTP layers
        and the loss on the last."""
        counts = list(counts) if isinstance(counts, (list, tuple)) else counts
        if not isinstance(counts, list) or not counts or any(
                isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in counts):
            raise LayoutError(counts, "give a non-empty list of whole numbers >= 0, one per stage",
                              reason="not a list of layer counts")
        if sum(counts) + len(counts) > MAX_ITEMS:
            raise LayoutError(f"{len(counts)} stages of {sum(counts)} layers", f"give at most {MAX_ITEMS:,} layers "
                              "and stages", reason="too large")
        stages = ["t" * c for c in counts]
        stages[0] = "E" + stages[0]
        stages[-1] += "m" * mtp_layers + "L"
        return cls(tuple(stages))

    @classmethod
    def even(cls, layers: int, stages: int, mtp_layers: int = 0) -> "Layout":
        """Megatron's default: layers / stages on each stage (they must divide)."""
        if layers % stages:
            raise LayoutError(f"even split of {layers} layers", "give a layout string, layer counts per stage, "
                              "layout='balanced', or first_stage_layers / last_stage_layers",
                              reason=f"{layers} layers do not split evenly over {stages} stages (Megatron's "
                                     "default needs them to)")
        return cls.from_counts([layers // stages] * stages, mtp_layers)

    @classmethod
    def uneven(cls, layers: int, stages: int, first: int | None = None, last: int | None = None,
               mtp_layers: int = 0) -> "Layout":
        """The first and/or last stage get ``first`` / ``last`` layers, the others split the rest
        evenly (they must divide): Megatron's ``--decoder-first/last-pipeline-num-layers`` for v = 1."""
        if first is None and last is None:
            return cls.even(layers, stages, mtp_layers)
        for name, k in (("first_stage_layers", first), ("last_stage_layers", last)):
            if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= layers):
                raise LayoutError(k, f"give {name} as a whole number from 0 to {layers}", reason=f"{name} is out of range")
        if stages < 2:
            raise LayoutError(f"first/last of {stages} stage", "use first_stage_layers / last_stage_layers with "
                              "2 or more stages", reason="one stage is both first and last")
        rest = layers - (first or 0) - (last or 0)
        middle = stages - (first is not None) - (last is not None)
        if rest < 0 or (middle == 0 and rest) or (middle and rest % middle):
            raise LayoutError(f"first={first}, last={last}", f"choose them so that the other {middle} stages split "
                              f"the remaining layers evenly", reason=f"{rest} layers remain for {middle} stages")
        each = rest // middle if middle else 0
        counts = [each] * stages
        if first is not None:
            counts[0] = first
        if last is not None:
            counts[-1] = last
        return cls.from_counts(counts, mtp_layers)

    # Queries ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.stages)

    def counts(self, item: str = "t") -> list[int]:
        """How many of ``item`` each stage holds."""
        return [s.count(item) for s in self.stages]

    def layer_ids(self, stage: int, item: str = "t") -> list[int]:
        """The ids (0-based, in model order) of the ``item`` layers on ``stage``."""
        before = sum(s.count(item) for s in self.stages[:stage])
        return list(range(before, before + self.stages[stage].count(item)))

    def check(self, layers: int, mtp_layers: int = 0, stages: int | None = None) -> "Layout":
        """This layout, when it is valid for a model of ``layers`` (and ``mtp_layers``) on
        ``stages`` stages (Megatron's ``validate_layer_layout``); a LayoutError otherwise."""
        text = str(self)
        flat = "".join(self.stages)
        if stages is not None and len(self.stages) != stages:
            raise LayoutError(text, f"give {stages} stages (separated by '|'); the schedule's p·v stages are "
                              "the layout's, model chunk s on stage s", reason=f"it has {len(self.stages)} stages")
        for item, want in (("E", 1), ("L", 1), ("t", layers), ("m", mtp_layers)):
            if flat.count(item) != want:
                what = {"E": "the embedding once", "L": "the loss once", "t": f"the model's {layers} transformer layers",
                        "m": f"the model's {mtp_layers} MTP layers"}[item]
                raise LayoutError(text, f"give {what}", reason=f"it holds {flat.count(item)} × {item} ({ITEMS[item]})")
        if not flat.startswith("E") or not flat.endswith("L"):
            raise LayoutError(text, "put E (embedding) first and L (loss) last", reason="the embedding must come "
                              "first and the loss last")
        if "m" in flat and "t" in flat[flat.index("m"):]:
            raise LayoutError(text, "put the MTP layers after every transformer layer",
                              reason="a transformer layer follows an MTP layer")
        return self

    def __str__(self) -> str:
        """The layout in Megatron's syntax, with repetitions folded (``Et*3|(tt|)*29m|L``)."""
        return _fold(self.stages)

    def __repr__(self) -> str:
        return f"Layout({str(self)!r})"


# Parsing ---------------------------------------------------------------------------------------

def _error(text: str, position: int, what: str) -> LayoutError:
    near = text[max(0, position - 12):position]
    where = f"at position {position}" + (f" (after {near!r})" if near else "")
    return LayoutError(text, SYNTAX, reason=f"{what} {where}", position=position)


def _expand(text: str) -> str:
    """The string with every repetition unrolled, as Megatron's two substitutions do."""
    chars = [(i, c) for i, c in enumerate(text) if c != ","]  # commas are cosmetic, anywhere
    n = len(chars)
    k = 0
    out: list[str] = []
    total = 0

    def repeat(k: int) -> tuple[int, int]:
        """The count after an optional '*' at k (1 without one), and the next index."""
        if k < n and chars[k][1] == "*":
            start = k + 1
            end = start
            while end < n and chars[end][1].isdigit():
                end += 1
            if end == start:
                raise _error(text, chars[k][0], "'*' needs a count (x*N)")
            if end - start > 9:
                raise _error(text, chars[start][0], "the count is too large")
            if end < n and chars[end][1] == "*":
                raise _error(text, chars[end][0], "a repetition cannot be repeated again (write one count: t*6, "
                             "or (tt|)*3)")
            return int("".join(c for _, c in chars[start:end])), end
        return 1, k

    def grow(piece: str, count: int, position: int):
        nonlocal total
        total += len(piece) * count
        if total > MAX_ITEMS:
            raise _error(text, position, f"the layout unrolls to more than {MAX_ITEMS:,} items")
        out.append(piece * count)

    while k < n:
        pos, c = chars[k]
        if c in ITEMS or c == "|":
            count, k = repeat(k + 1)
            grow(c, count, pos)
        elif c == "(":
            group: list[str] = []
            j = k + 1
            size = 0
            while j < n and chars[j][1] != ")":
                jpos, g = chars[j]
                if g == "(":
                    raise _error(text, jpos, "parentheses cannot be nested")
                if g == "*":
                    raise _error(text, jpos, "'*' must follow E, t, m, L, '|' or ')'")
                if g not in ITEMS and g != "|":
                    raise _error(text, jpos, f"{g!r} is not a layer symbol")
                count, j = repeat(j + 1)
                size += count
                if size > MAX_ITEMS:
                    raise _error(text, jpos, f"the layout unrolls to more than {MAX_ITEMS:,} items")
                group.append(g * count)
            if j >= n:
                raise _error(text, pos, "'(' is never closed")
            if not group:
                raise _error(text, pos, "a group '()' is empty")
            if j + 1 >= n or chars[j + 1][1] != "*":
                raise _error(text, chars[j][0], "a group must be repeated: (...)*N")
            count, k = repeat(j + 1)
            grow("".join(group), count, pos)
        elif c == ")":
            raise _error(text, pos, "')' closes no '('")
        elif c == "*":
            raise _error(text, pos, "'*' must follow E, t, m, L, '|' or ')'")
        else:
            raise _error(text, pos, f"{c!r} is not a layer symbol")
    return "".join(out)


# Printing --------------------------------------------------------------------------------------

def _items(stage: str) -> str:
    """A stage's items with runs of three or more folded: ``Ettt`` → ``Et*3``."""
    out = []
    k = 0
    while k < len(stage):
        j = k
        while j < len(stage) and stage[j] == stage[k]:
            j += 1
        run = j - k
        out.append(stage[k] * run if run < 3 else f"{stage[k]}*{run}")
        k = j
    return "".join(out)


def _fold(stages: tuple[str, ...]) -> str:
    """Stages joined by '|', with runs of two or more equal stages before the last one as ``(x|)*N``."""
    parts = []
    k = 0
    last = len(stages) - 1
    while k <= last:
        j = k
        while j < last and stages[j] == stages[k]:
            j += 1
        run = j - k  # equal stages k..j-1, none of them the last stage
        if run >= 2 and stages[k]:
            parts.append(f"({_items(stages[k])}|)*{run}")
            k = j
            continue
        parts.append(_items(stages[k]) + ("|" if k < last else ""))
        k += 1
    return "".join(parts)
