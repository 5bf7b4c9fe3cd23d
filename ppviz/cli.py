"""Command line: ``ppviz run zb-h1 -p 4 -m 8`` prints a text Gantt chart and the metrics;
``ppviz compare 1f1b zb-h1 -p 8 -m 32`` a table of several schedules side by side."""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import sys
import textwrap
from typing import TYPE_CHECKING

from .core.errors import ConfigError, DeadlockError, PpvizError, did_you_mean
from .core.paths import unwritable

if TYPE_CHECKING:  # the commands import the library when they run
    from .analysis.search import Candidate, SearchResult

#: ``-p`` and ``-m`` when not given (None in the parsed arguments, so that a given one can be told apart)
DEFAULT_DEVICES, DEFAULT_MICROBATCHES = 4, 8


def _run(args) -> int:
    from .core.program import Program
    from .core.engine import simulate
    from .core.registry import lookup

    _check_outputs(args, _RUN_OUTPUTS)
    options = _config_options(args)
    _check_model_options(args, options)
    if args.program:
        if args.schedule not in (None, "custom"):
            raise _UsageError("give either a schedule name or --program FILE, not both")
        if args.model is not None:
            raise _UsageError("--model builds the costs of a registry schedule's stages; give a schedule name "
                              "instead of --program, or costs (--f, --b, --w) for your program")
        sizes = [flag for flag, value in (("-p", args.p), ("-m", args.m), ("-v", args.v),
                                          ("--group-size", args.group_size), ("--segments", args.segments))
                 if value is not None]
        if sizes:  # ignoring them would run another size than the one asked for, and say nothing
            raise _UsageError(f"{' and '.join(sizes)} cannot be given with --program: the program file sets the "
                              "devices, microbatches, stages per device and the order of the ops")
        program = Program.from_torch_csv(args.program) if args.program.endswith(".csv") else \
            Program.from_text(_read(args.program))
        result = simulate(program, label=os.path.basename(args.program), **options)
    else:
        if args.schedule is None:
            raise _UsageError("name a schedule (see `ppviz list`) or give --program FILE")
        if lookup(args.schedule).builder is None:  # the library's hint is a Python call
            raise _UsageError(f"{args.schedule} is a program of your own: give it with --program FILE "
                              "(a torch CSV, or text with one line of ops per device)")
        result = simulate(_config(args, args.schedule, options))
    columns = _terminal_width()
    print(_chart(result, args, columns))
    print()
    # the label is the --program file's name: a name holding an escape sequence is shown, not run
    print(_wrapped(_shown_lines(result.summary()), columns))  # escaped first: its length is printed
    return _report_written(_exports(result, args))


def _chart(result, args, columns: int) -> str:
    """The text Gantt chart ``run`` and ``search`` print: as wide as the terminal (or --width), the
    window --window asks for, in colour where the output is a terminal that takes it."""
    from .core.numbers import number
    from .io.text_gantt import Hints, text_gantt

    window = args.window
    if window is not None and window[0] is not None and window[0] >= result.makespan:
        raise _UsageError(f"--window {args.window_text} starts where the run has ended (at "
                          f"{number(result.makespan, result.config.time_unit)}); give a start before that")
    color = _color_depth(args.color)
    text = text_gantt(result, columns if args.width is None else args.width, window=window, color=color,
                      hints=Hints("--width {}", "--window {}:{}", "--window 0:"))
    # the chart holds no text of the user's (the time unit is letters, checked by Config), so its
    # colours' escapes are the only ones in it; without colour it is escaped like every output
    return text if color is not None else _shown_lines(text)


def _color_depth(asked: bool | None) -> str | None:
    """The text chart's colours: None (plain text) with --no-color, or by default when the output
    is not a terminal, TERM is dumb or NO_COLOR is set (https://no-color.org); else 24-bit where
    COLORTERM says the terminal takes it, 256 colours otherwise. --color asks for them anyway
    (into ``less -R``, say)."""
    if asked is False:
        return None
    if asked is None and (os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb" or not _is_terminal()):
        return None
    return "truecolor" if os.environ.get("COLORTERM", "").lower() in ("truecolor", "24bit") else "256"


def _exports(result, args) -> list[str]:
    """Write the exports ``run`` and ``search`` take (--trace, --csv, --html, --svg, --png); the paths written."""
    exports = (("trace", lambda path: result.to_chrome_trace(path)),
               ("csv", lambda path: result.to_torch_csv(path, comms=result.config.transfers)),
               ("html", result.to_html), ("svg", result.to_svg), ("png", result.to_png))
    written = []
    for option, export in exports:
        path = getattr(args, option)
        if path:
            export(path)
            written.append(str(path))
    return written


def _search(args) -> int:
    from .analysis.search import DEFAULT_EFFORT, search

    _check_outputs(args, _RUN_OUTPUTS)
    options = _config_options(args)
    _check_model_options(args, options)
    if "microbatch_group_size" in options:
        raise _UsageError("--group-size sets an interleaved schedule's microbatch groups; the search builds its own "
                          "orders: drop it")
    # -v keeps the search to that many stages per device; the config's schedule only has to accept
    # them (a model's stage costs are laid out for them), and the search does not run it
    v = options.pop("stages_per_device", None)
    config = _config(args, "looped-bfs", {**options, "stages_per_device": v or 1})
    found = search(config, _memory_limit(args.max_memory), stages_per_device=v,
                   effort=_given(args.effort, DEFAULT_EFFORT))
    columns = _terminal_width()
    print(_chart(found, args, columns))
    print()
    print(_wrapped(_shown_lines(found.summary()), columns))
    print()
    print(_candidates_table(found))
    return _report_written(_exports(found, args))


def _memory_limit(text: str | None):
    """--max-memory as search takes it: a number of activation units, or a size in bytes ('40GiB')."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return text


#: ``ppviz search`` lists this many of the candidates that fit, fastest first, and of those that do not
_SHOWN_CANDIDATES = 5


def _candidates_table(found: SearchResult) -> str:
    """The fastest candidates the search ranked that fit and that do not, one line each and the
    fastest of each kind (the automatic scheduler's variants, the capped warm-ups: what comes
    before a name's brackets): makespan, the busiest device's peak activation and, with a
    capacity, its peak memory. One unit system: ms and GiB with a model's bytes, else the run's
    time unit and activation units; every column says its unit under its name."""
    from .core.numbers import number

    c = found.config
    unit_bytes = c.activation_bytes
    memory = (lambda x: number(x * unit_bytes / 2**30)) if unit_bytes else number
    memory_unit = "(GiB)" if unit_bytes else "(activations)"
    capacity = c.memory_capacity is not None
    first: dict[tuple[bool, str], Candidate] = {}
    for cand in found.candidates:  # fitting first, then fastest first
        first.setdefault((cand.fits, cand.name.split(" (")[0]), cand)
    fit = [cand for (fits, _), cand in first.items() if fits]
    over = [cand for (fits, _), cand in first.items() if not fits]
    header = [("candidate", ""), ("makespan", f"({c.time_unit or 'time units'})"), ("peak activation", memory_unit),
              *((("peak memory", memory_unit),) if capacity else ()), ("fits", "")]
    rows = [tuple(name for name, _ in header), tuple(unit for _, unit in header)]
    rows += [(cand.name, number(cand.makespan), memory(cand.peak_activation),
              *((memory(cand.peak_memory),) if capacity else ()), "yes" if cand.fits else "no")
             for cand in fit[:_SHOWN_CANDIDATES] + over[:_SHOWN_CANDIDATES]]
    fitting = sum(cand.fits for cand in found.candidates)
    return _shown_lines(f"{number(len(found.candidates))} candidates, {number(fitting)} fit; the fastest of each "
                        f"kind, up to {_SHOWN_CANDIDATES} that fit and {_SHOWN_CANDIDATES} that do not:\n"
                        + _aligned(rows))


def _aligned(rows) -> str:
    from .analysis.comparison import aligned

    return "\n".join(aligned(rows))


def _given(value, default):
    return default if value is None else value


#: each output option: its attribute, what it writes and the file name endings that say so
_OUTPUTS = {"--trace": ("trace", "a Chrome trace (JSON)", (".json",)), "--csv": ("csv", "CSV", (".csv",)),
            "--html": ("html", "HTML", (".html", ".htm")), "--svg": ("svg", "SVG", (".svg",)),
            "--png": ("png", "PNG", (".png",))}
_RUN_OUTPUTS = ("--trace", "--csv", "--html", "--svg", "--png")
_COMPARE_OUTPUTS = ("--png", "--svg")
#: endings that name another format: a file so named would hold the wrong one (no ending is fine)
_FORMAT_ENDINGS = {ending for _, _, endings in _OUTPUTS.values() for ending in endings} | \
    {".jpg", ".jpeg", ".gif", ".webp", ".pdf", ".txt"}


def _check_outputs(args, flags) -> None:
    """Refuse, before any work, an output name that could not be written or would hold the wrong
    format: the work can take minutes, and the error would come after the text."""
    for flag in flags:
        attr, what, endings = _OUTPUTS[flag]
        path = getattr(args, attr)
        if path is None:
            continue
        if not path:
            raise _UsageError(f"{flag} needs a file name, e.g. {flag} run{endings[0]}; got an empty one")
        ending = os.path.splitext(path)[1].lower()
        if ending in _FORMAT_ENDINGS and ending not in endings:
            other = next((f for f in flags if ending in _OUTPUTS[f][2]), None)
            instead = f", or use {other} for {_OUTPUTS[other][1]}" if other else ""
            raise _UsageError(f"{flag} {path}: {flag} writes {what}, not {ending}; give a name ending in "
                              f"{' or '.join(endings)} (or no ending){instead}")
        problem = unwritable(path, endings[0])
        if problem is not None:
            raise _UsageError(f"{flag} {path}: {problem[0]}; {problem[1]}")


def _report_written(paths: list[str]) -> int:
    """Say which files were written, after the text; the command's exit code."""
    if paths:
        print()
        for path in paths:
            print(f"wrote {_shown(path)}")
    return 0


#: what --model sets from the model and the machine: these options are refused beside it
_FROM_MODEL = ("f", "b", "w", "params", "w_share", "time_unit", "memory_capacity", "activation_bytes")
#: the options that only mean something with --model
_MODEL_ONLY = (("--hardware", "hardware"), ("--tensor-parallel", "tensor_parallel"),
               ("--data-parallel", "data_parallel"), ("--zero-stage", "zero_stage"), ("--layout", "layout"),
               ("--offload", "offload"))


def _config(args, schedule: str, options: dict):
    """The Config of ``schedule`` at the command line's sizes: from the model and the machine
    with --model, else from the costs given."""
    from .core.config import Config

    sizes = dict(schedule=schedule, devices=_given(args.p, DEFAULT_DEVICES),
                 microbatches=_given(args.m, DEFAULT_MICROBATCHES))
    if args.model is None:
        return Config(**sizes, **options)
    from .model import Hardware, Transformer

    training = {key: getattr(args, key) for _, key in _MODEL_ONLY
                if key != "hardware" and getattr(args, key) is not None}
    return Config.from_model(Transformer.preset(args.model), Hardware.preset(args.hardware or "h100-sxm"),
                             **sizes, **training, **options)


def _check_model_options(args, options: dict) -> None:
    """Refuse, before any work, options that --model sets itself or that need --model."""
    if args.model is None:
        given = [flag for flag, key in _MODEL_ONLY if getattr(args, key) is not None]
        if given:
            raise _UsageError(f"{' and '.join(given)} describe{'s' if len(given) == 1 else ''} the training of a "
                              "model: give --model NAME too (see --help for the presets)")
        return
    clash = [_FLAGS[key] for key in _FROM_MODEL if key in options]
    if clash:
        raise _UsageError(f"{' and '.join(clash)} cannot be given with --model: the model and the hardware set "
                          "them (times in ms, memory in GiB, the capacity of the device); drop "
                          f"{'it' if len(clash) == 1 else 'them'}, or drop --model")


def _config_options(args) -> dict:
    """The Config keywords given on the command line (the others keep their defaults)."""
    return {k: v for k, v in (("f", args.f), ("b", args.b), ("w", args.w), ("comm", args.comm), ("fb", args.fb),
                              ("stages_per_device", args.v), ("microbatch_group_size", args.group_size),
                              ("w_share", args.w_share), ("params", args.params), ("time_unit", args.time_unit),
                              ("topology", args.topology), ("comm_bytes", args.comm_bytes), ("p2p", args.p2p),
                              ("memory_capacity", args.memory_capacity), ("activation_bytes", args.activation_bytes),
                              ("recompute", args.recompute),
                              ("segments", args.segments))
            if v is not None}


#: ``ppviz run`` wraps its summary to the terminal's width, or to this many columns when its
#: output is not a terminal (a pipe, a file) or the terminal says no width
DEFAULT_COLUMNS = 80
#: the summary is not wrapped narrower than this, however narrow the terminal
_LEAST_COLUMNS = 40


def _is_terminal() -> bool:
    """Whether the output goes to a terminal (not a pipe or a file)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # no stdout, or a closed one
        return False


def _terminal_width() -> int:
    """The columns of the terminal the output goes to; :data:`DEFAULT_COLUMNS` when it goes elsewhere."""
    if not _is_terminal():
        return DEFAULT_COLUMNS
    return max(_LEAST_COLUMNS, shutil.get_terminal_size((DEFAULT_COLUMNS, 24)).columns)


#: a summary line's label: its indent, then words separated by single spaces, then two spaces or more
_LABEL = re.compile(r"( +)\S+(?: \S+)*  +")


def _wrapped(text: str, width: int) -> str:
    """``text`` with each line longer than ``width`` wrapped at spaces, its continuation lines
    indented to where the value after its label starts (``  makespan         ...``), or two
    columns deeper than the line when it has no label."""
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        label = _LABEL.match(line)
        indent = label.end() if label and label.end() <= width // 2 else len(line) - len(line.lstrip(" ")) + 2
        out.extend(textwrap.wrap(line, width, subsequent_indent=" " * indent, break_on_hyphens=False))
    return "\n".join(out)


def _compare(args) -> int:
    from .analysis.comparison import compare
    from .core.registry import list_schedules, lookup

    _check_outputs(args, _COMPARE_OUTPUTS)
    options = _config_options(args)
    _check_model_options(args, options)
    # --segments splits the microbatches of the schedules built for it; refusing it for the others
    # would leave nothing to compare seq1f1b against
    segments = options.pop("segments", None)
    if args.all and args.schedules:
        raise _UsageError(f"--all compares every schedule in the registry and takes no names; "
                          f"drop {' '.join(args.schedules)} or --all")
    if not args.all and len(args.schedules) < 2:
        got = f"; got only {args.schedules[0]} (ppviz run {args.schedules[0]} shows one)" if args.schedules else ""
        raise _UsageError(f"name two or more schedules to compare, or give --all for every one in the registry{got}")
    names = [spec.name for spec in list_schedules() if spec.builder is not None and not spec.forward_only] \
        if args.all else args.schedules
    configs, skipped, seen = [], [], set()
    for name in names:
        try:
            segmented = {"segments": segments} if segments is not None and lookup(name).segmented else {}
            config = _config(args, name, {**options, **segmented})
        except PpvizError as exc:
            if not args.all:  # a schedule named on purpose that cannot run is an error, not a footnote
                raise
            skipped.append((name, _message(exc)))
            continue
        if config.schedule not in seen:  # one row per schedule, however often (or by whichever alias) named
            seen.add(config.schedule)
            configs.append(config)
    if not args.all and len(configs) < 2:
        raise _UsageError(f"{', '.join(args.schedules)}: each names {configs[0].schedule}; "
                          "name two or more different schedules to compare")
    if not configs:
        raise _UsageError("no schedule in the registry accepts these sizes and options: " +
                          "; ".join(f"{name}: {why}" for name, why in skipped))
    split = [config.schedule for config in configs if config.segments > 1]
    if segments is not None and segments > 1 and not split:
        raise _UsageError(f"--segments {segments}: none of {', '.join(c.schedule for c in configs)} splits "
                          "microbatches into sequence segments; add seq1f1b, or drop --segments")
    comparison = compare(configs)
    width = _terminal_width()
    heading, _, rest = comparison.summary(order=args.sort).partition("\n")
    print(_wrapped(_shown(heading), width))  # the heading only: a table's rows stay whole, however wide
    print(_shown_lines(rest))
    if split:
        print()
        print(_wrapped(f"--segments {segments}: {', '.join(split)} split{'s' if len(split) == 1 else ''} each "
                       f"microbatch into {segments} sequence segments; the others run whole microbatches", width))
    if skipped:
        print()
        print(f"skipped {len(skipped)} that refuse these sizes or options:")
        for name, why in skipped:
            print(_shown(f"  {name}: {why}"))
    written = []
    if args.png or args.svg:
        from .charts import to_png, to_svg

        chart = comparison.chart()
        for path, export in ((args.png, to_png), (args.svg, to_svg)):
            if path:
                export(chart, path)
                written.append(str(path))
    return _report_written(written)


def _orders() -> dict:
    from .analysis.comparison import ORDERS

    return ORDERS


def _shown(text: str) -> str:
    """Text for the terminal: control characters (escape sequences) shown as escapes, not run."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def _shown_lines(text: str) -> str:
    """:func:`_shown` line by line, keeping the line breaks."""
    return "\n".join(_shown(line) for line in text.split("\n"))


#: the option that sets each Config field, for errors in the words of the command line
_FLAGS = {"devices": "-p", "microbatches": "-m", "stages_per_device": "-v", "microbatch_group_size": "--group-size",
          "f": "--f", "b": "--b", "w": "--w", "comm": "--comm", "fb": "--fb", "w_share": "--w-share",
          "params": "--params", "time_unit": "--time-unit", "topology": "--topology", "comm_bytes": "--comm-bytes",
          "p2p": "--p2p", "width": "--width", "memory_capacity": "--memory-capacity",
          "activation_bytes": "--activation-bytes", "recompute": "--recompute", "segments": "--segments",
          "model": "--model", "hardware": "--hardware", "tensor_parallel": "--tensor-parallel",
          "data_parallel": "--data-parallel", "zero_stage": "--zero-stage", "layout": "--layout",
          "max_memory": "--max-memory", "effort": "--effort"}
#: the library's advice that names a Python call, as the command line says it
_ADVICE = {"ppviz.set_budget(max_ops=...)": "the environment variable PPVIZ_MAX_OPS (a number of ops)",
           "give a layout string, layer counts per stage, layout='balanced', or first_stage_layers / "
           "last_stage_layers": "give --layout balanced, or a layout string with --layout",
           "(Config.from_model does)": "(--model does)",
           "layout='balanced'": "--layout balanced"}


def _message(exc: PpvizError) -> str:
    """An error's message with the Config fields it names written as the options that set them
    (``devices=0`` → ``-p 0``): the user typed options, not keywords."""
    text = str(exc)
    if isinstance(exc, ConfigError) and exc.field in _FLAGS and text.startswith(f"{exc.field}="):
        head = f"{exc.field}={exc.value!r}"
        if exc.value is None and text.startswith(f"{head}: "):
            text = f"{_FLAGS[exc.field]} not given" + text[len(head):]
        else:
            text = f"{_FLAGS[exc.field]} " + text[len(exc.field) + 1:]
    if isinstance(exc, ConfigError):
        # only the multi-word names: "f", "b" or "devices" are also plain words in the advice
        for field, flag in _FLAGS.items():
            if "_" in field:
                text = re.sub(rf"\b{field}\b", flag, text)
        for call, option in _ADVICE.items():
            text = text.replace(call, option)
    return text


def _error_text(exc: Exception) -> str:
    """An error as printed: one line, but a deadlock keeps its line per device (the library
    lays those out; their op names are checked text, not the user's)."""
    if isinstance(exc, DeadlockError):
        return "\n  ".join(_shown(line) for line in _message(exc).split("\n"))
    return _shown(_message(exc) if isinstance(exc, PpvizError) else str(exc))


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise _UsageError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise _UsageError(f"cannot read {path}: it is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


class _UsageError(Exception):
    pass


def _list(args) -> int:
    from .core.registry import list_schedules

    print(list_schedules().to_text(width=LIST_WIDTH))
    return 0


#: ``ppviz list`` wraps its table to this many columns
LIST_WIDTH = 100


_EXAMPLES = """examples:
  ppviz list                                     the schedules, their aliases and constraints
  ppviz run 1f1b -p 4 -m 8                       a text Gantt chart and the metrics
  ppviz run zb-h1 -p 8 -m 32 --b 2 --w 1         unequal backward halves
  ppviz run interleaved-1f1b -p 8 -m 32 -v 2 --window 18:36 --trace run.json --html run.html
  ppviz run --program my_schedule.csv --comm 0.1   your own program (torch CSV or text)
  ppviz compare 1f1b zb-h1 v-half -p 8 -m 32     a table of makespan, bubble and memory
  ppviz compare --all -p 8 -m 32 --sort memory --png all.png   the whole registry, and its charts
  ppviz compare 1f1b zb-h1 v-half -p 4 -m 16 --model llama-3-8b   ms and GiB: which fits an H100?
  ppviz compare 1f1b zb-h1 --model llama-3-8b --topology dgx-h100 --offload 1   PCIe offload
  ppviz search -p 8 -m 32 --b 1.2 --w 0.8 --max-memory 6   the fastest order within 6 activations
  ppviz search -p 4 -m 16 --model llama-3-8b     the fastest order that fits an H100 (80 GiB)
  ppviz search -p 4 -m 16 --model llama-3-8b --max-memory 30GiB --html found.html
"""


class _HelpFormatter(argparse.HelpFormatter):
    """Descriptions wrapped to the terminal, the examples as written (each is one command line,
    none wider than 100 columns)."""

    def _fill_text(self, text, width, indent):
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class _Parser(argparse.ArgumentParser):
    """Usage mistakes as one line (``ppviz: error: ...``) and exit code 2, like every other error;
    an option no command takes with the nearest one it does (``--microbatches`` → ``-m``), by name
    or by the Config field it sets (argparse suggests only from Python 3.12, and not options)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {_shown(message)} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            # a command's unknown options reach the top parser: the command's parser knows its options
            parser = next((action.choices[parsed.command] for action in self._actions
                           if isinstance(action, argparse._SubParsersAction)
                           and getattr(parsed, "command", None) in action.choices), self)
            option = next((word for word in unknown if word.startswith("-")), None)
            hint = "" if option is None else parser.nearest_option(option)
            parser.error(f"unrecognized arguments: {' '.join(unknown)}" + (f"; {hint.strip()}" if hint else ""))
        return parsed

    def nearest_option(self, word: str) -> str:
        """"did you mean '-m'? " for the option nearest ``word`` (``--microbatches=8``), else ""."""
        options = [flag for action in self._actions for flag in action.option_strings if flag not in ("-h", "--help")]
        names = {flag.lstrip("-").replace("-", "_"): flag for flag in options}
        names.update({field: flag for field, flag in _FLAGS.items() if flag in options})
        return did_you_mean(word.split("=")[0].lstrip("-").replace("-", "_").lower(), names)


def _model_presets() -> list[str]:
    from .model import Transformer

    return list(Transformer.presets())


def _hardware_presets() -> list[str]:
    from .model import Hardware

    return list(Hardware.presets())


def _whole(what: str):
    def parse(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"give a whole number of {what}, e.g. 8; got {text!r}") from None
    return parse


class _Window(argparse.Action):
    """``--window START:END``: the span of the run the text chart draws, in its time unit."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, "window", _window(values))
        setattr(namespace, "window_text", values)


def _window(text: str) -> tuple[float | None, float | None]:
    start, colon, end = text.partition(":")
    try:
        if not colon:
            raise ValueError
        lo, hi = (None if not x.strip() else float(x) for x in (start, end))
        if any(x is not None and not (math.isfinite(x) and x >= 0) for x in (lo, hi)):
            raise ValueError
    except ValueError:
        raise argparse.ArgumentError(None, f"--window {text!r}: give START:END, times in the run's unit from 0, "
                                           "e.g. 0:20 (either may be left out: 40: is from 40 to the end)") from None
    if lo is not None and hi is not None and lo >= hi:
        raise argparse.ArgumentError(None, f"--window {text}: the start must come before the end")
    return lo, hi


def _add_chart_arguments(parser) -> None:
    """How ``run`` and ``search`` draw the text chart."""
    parser.add_argument("--width", type=_whole("columns"), default=None,
                        help="width of the text chart (default: the terminal's, 80 when the output is not a terminal)")
    parser.add_argument("--window", metavar="START:END", action=_Window, default=None,
                        help="the span of the run the chart draws, in its time unit (default: the whole run where "
                             "its ops fit the width, else a readable window from 0; 0: is the whole run)")
    parser.set_defaults(window_text=None)
    parser.add_argument("--color", action=argparse.BooleanOptionalAction, default=None,
                        help="the chart's ops in the widget's colours (default: on a terminal, unless NO_COLOR "
                             "is set; --color also into a pipe)")


def _add_config_arguments(parser, segments_help: str) -> None:
    """The sizes, costs and memory options, as ``run`` and ``compare`` both take them."""
    parser.add_argument("-p", type=_whole("devices"), default=None, help=f"devices (default {DEFAULT_DEVICES})")
    parser.add_argument("-m", type=_whole("microbatches"), default=None,
                        help=f"microbatches (default {DEFAULT_MICROBATCHES})")
    parser.add_argument("-v", type=_whole("stages per device"), default=None,
                        help="stages per device (default: the schedule's)")
    parser.add_argument("--f", type=float, default=None, help="forward time per 1/p of the model (default 1)")
    parser.add_argument("--b", type=float, default=None, help="backward-for-inputs time (default 1)")
    parser.add_argument("--w", type=float, default=None, help="backward-for-weights time (default 1)")
    parser.add_argument("--comm", type=float, default=None, help="latency of a cross-device dependency (default 0)")
    parser.add_argument("--fb", type=float, default=None, help="time of an overlapped F&B pair (default f+b+w)")
    parser.add_argument("--group-size", type=_whole("microbatches"), default=None,
                        help="interleaved microbatch group size (default p)")
    parser.add_argument("--w-share", type=float, default=None, help="share of the activation W keeps after I")
    parser.add_argument("--params", type=float, default=None,
                        help="static memory per 1/p of the model, activation units")
    parser.add_argument("--time-unit", default=None, help="the unit of the times: s, ms, us, ns (needed by a preset)")
    parser.add_argument("--topology", metavar="PRESET", default=None,
                        help="simulate communication as transfers over a system's links: dgx-h100, dgx-a100, "
                             "roce-h100")
    parser.add_argument("--comm-bytes", type=float, default=None, help="bytes of one transfer (with --topology)")
    parser.add_argument("--p2p", choices=("blocking", "overlapped"), default=None,
                        help="whether a transfer also holds its devices (default: the schedule's)")
    parser.add_argument("--memory-capacity", metavar="X", type=float, default=None,
                        help="memory per device in activation units (default none)")
    parser.add_argument("--activation-bytes", metavar="B", type=float, default=None,
                        help="bytes in one activation unit, to report memory in GiB too (default none)")
    parser.add_argument("--recompute", choices=("full", "selective"), default=None,
                        help="activation recomputation (default none)")
    parser.add_argument("--segments", metavar="K", type=_whole("segments"), default=None, help=segments_help)
    model = parser.add_argument_group(
        "from a model and a machine", "costs in ms and memory in GiB from a transformer and an accelerator "
        "(Config.from_model); they replace --f, --b, --w, --params, --w-share, --time-unit, "
        "--memory-capacity and --activation-bytes, and a --topology then carries the model's hidden states")
    model.add_argument("--model", metavar="NAME", default=None,
                       help="a transformer preset: " + ", ".join(_model_presets()))
    model.add_argument("--hardware", metavar="NAME", default=None,
                       help="an accelerator preset (default h100-sxm): " + ", ".join(_hardware_presets()))
    model.add_argument("--tensor-parallel", metavar="T", type=_whole("devices"), default=None,
                       help="tensor-parallel size (default 1; sequence parallel when > 1)")
    model.add_argument("--data-parallel", metavar="D", type=_whole("replicas"), default=None,
                       help="data-parallel size, which ZeRO shards over (default 1)")
    model.add_argument("--zero-stage", type=int, choices=(0, 1, 2), default=None,
                       help="ZeRO stage: 1 shards the optimizer state, 2 also the gradients (default 0)")
    model.add_argument("--layout", metavar="L", default=None,
                       help="layers per stage: even (default), balanced, or a Megatron layout string "
                            "such as 'Et*7|t*8|t*8|t*9L' (llama-3-8b's 32 layers on 4 stages)")
    model.add_argument("--offload", metavar="SHARE", type=float, default=None,
                       help="share of each activation copied to host memory after its forward and back before "
                            "its backward, over the accelerator's PCIe link (0 to 1; default none)")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="ppviz", description="Simulate pipeline-parallel training schedules.", epilog=_EXAMPLES,
                     formatter_class=_HelpFormatter)
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="simulate one schedule and print a text Gantt chart and its metrics",
                         description="Simulate one schedule (or your program) and print a text Gantt chart and "
                                     "its metrics; optionally write exports.",
                         epilog=_EXAMPLES, formatter_class=_HelpFormatter)
    run.add_argument("schedule", nargs="?", help="registry name or alias, e.g. 1f1b, zb-h1, Interleaved1F1B")
    run.add_argument("--program", metavar="FILE",
                     help="simulate your own program: a torch CSV (.csv) or text, one device per line; it sets "
                          "the sizes, so -p, -m, -v, --group-size and --segments are refused with it")
    _add_config_arguments(run, "segments per microbatch, > 1 for seq1f1b (default 1)")
    _add_chart_arguments(run)
    run.add_argument("--trace", metavar="FILE", help="also write a Chrome trace (open in Perfetto)")
    run.add_argument("--csv", metavar="FILE", help="also write the program as a torch compute_only CSV "
                     "(with --topology, the compute_comms CSV with its sends and receives)")
    run.add_argument("--html", metavar="FILE", help="also write the interactive chart as a standalone offline page")
    run.add_argument("--svg", metavar="FILE", help="also write the Gantt chart as SVG")
    run.add_argument("--png", metavar="FILE", help="also write the Gantt chart as PNG (2x scale)")
    run.set_defaults(handler=_run)
    compare = sub.add_parser("compare", help="simulate several schedules and print a table side by side",
                             description="Simulate several schedules at the same sizes and costs and print their "
                                         "makespan, bubble and peak activation (with the published closed forms); "
                                         "optionally write the comparison's charts.",
                             epilog=_EXAMPLES, formatter_class=_HelpFormatter)
    compare.add_argument("schedules", nargs="*",
                         help="two or more registry names or aliases, e.g. 1f1b zb-h1 v-half (none with --all)")
    compare.add_argument("--all", action="store_true",
                         help="every training schedule in the registry instead of names (those that refuse the "
                              "sizes are listed as skipped)")
    _add_config_arguments(compare, "segments per microbatch for the schedules that split microbatches "
                                   "(seq1f1b); the others run whole ones (default 1)")
    compare.add_argument("--sort", choices=tuple(_orders()), default="makespan",
                         help="order of the rows (default makespan; given: as named)")
    compare.add_argument("--png", metavar="FILE", help="also write the comparison's charts as PNG (2x scale)")
    compare.add_argument("--svg", metavar="FILE", help="also write the comparison's charts as SVG")
    compare.set_defaults(handler=_compare)
    find = sub.add_parser("search", help="find the fastest order within a memory limit",
                          description="Search for the fastest schedule whose every device stays within a memory "
                                      "limit (ppviz.search): the library's schedules, the zero-bubble authors' "
                                      "automatic scheduler and a local search; print it as run does, with the "
                                      "candidates it ranked, and optionally write exports.",
                          epilog=_EXAMPLES, formatter_class=_HelpFormatter)
    find.add_argument("--max-memory", metavar="LIMIT", default=None,
                      help="each device's peak activation limit: activation units, or with --model a size such "
                           "as 40GiB; with a memory capacity (--model has the device's) the answer also fits it, "
                           "and the limit may be left out")
    find.add_argument("--effort", type=_whole("ops"), default=None,
                      help="ops the local search may evaluate (default 400,000; about 0.7 µs each)")
    _add_config_arguments(find, "segments per microbatch (the search takes whole microbatches: 1)")
    _add_chart_arguments(find)
    find.add_argument("--trace", metavar="FILE", help="also write a Chrome trace (open in Perfetto)")
    find.add_argument("--csv", metavar="FILE", help="also write the program found as a torch compute_only CSV")
    find.add_argument("--html", metavar="FILE", help="also write the interactive chart as a standalone offline page")
    find.add_argument("--svg", metavar="FILE", help="also write the Gantt chart as SVG")
    find.add_argument("--png", metavar="FILE", help="also write the Gantt chart as PNG (2x scale)")
    find.set_defaults(handler=_search)
    lst = sub.add_parser("list", help="show the schedule registry", description="The schedule registry: names, "
                         "aliases, stages per device, what each schedule is and its constraints.")
    lst.set_defaults(handler=_list)
    args = parser.parse_args(argv)
    try:
        code = args.handler(args)
        sys.stdout.flush()  # here, so that a closed pipe is noticed inside this try
        return code
    except BrokenPipeError:  # output piped into head & co., which has read what it wanted
        _silence_stdout()
        return 0
    except (PpvizError, _UsageError) as exc:
        print(f"ppviz: error: {_error_text(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"ppviz: error: {_shown(exc.filename or '')}: {exc.strerror}", file=sys.stderr)
        return 2


class _Version(argparse.Action):
    """``--version``: looked up only when asked for (reading the installed metadata takes a moment)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog} {_version()}")
        parser.exit(0)


def _version() -> str:
    """The installed distribution's version (the module ``ppviz`` comes from ``pp-schedule-viz``),
    else the module's own, for a checkout on the path without an install."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pp-schedule-viz")
    except PackageNotFoundError:
        from . import __version__

        return __version__


def _silence_stdout() -> None:
    """Point stdout at /dev/null: Python flushes it again at exit, and would report the closed pipe."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # not a real file (tests capture it)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
