"""Command line: ``ppviz run zb-h1 -p 4 -m 8`` prints a text Gantt chart and the metrics;
``ppviz compare 1f1b zb-h1 -p 8 -m 32`` a table of several schedules side by side."""

from __future__ import annotations

import argparse
import os
import sys

from .core.errors import PpvizError


def _run(args) -> int:
    from .core.config import Config
    from .core.program import Program
    from .core.engine import simulate

    _check_writable(args.trace, args.csv, args.html, args.svg, args.png)
    options = _config_options(args)
    if args.program:
        if args.schedule not in (None, "custom"):
            raise _UsageError("give either a schedule name or --program FILE, not both")
        program = Program.from_torch_csv(args.program) if args.program.endswith(".csv") else \
            Program.from_text(_read(args.program))
        options.pop("stages_per_device", None)
        options.pop("microbatch_group_size", None)
        result = simulate(program, label=os.path.basename(args.program), **options)
    else:
        if args.schedule is None:
            raise _UsageError("name a schedule (see `ppviz list`) or give --program FILE")
        result = simulate(Config(schedule=args.schedule, devices=args.p, microbatches=args.m, **options))
    # the label is the --program file's name: a name holding an escape sequence is shown, not run
    print(_shown_lines(result.to_text(args.width)))
    print()
    print(_shown_lines(result.summary()))
    written = []
    if args.trace:
        written.append(result.to_chrome_trace(args.trace))
    if args.csv:
        result.to_torch_csv(args.csv, comms=result.config.transfers)
        written.append(args.csv)
    if args.html:
        written.append(result.to_html(args.html))
    if args.svg:
        written.append(result.to_svg(args.svg))
    if args.png:
        written.append(result.to_png(args.png))
    return _report_written(written)


def _check_writable(*paths: str | None) -> None:
    """Refuse, before any work, an output file whose folder does not exist."""
    for path in paths:
        if path is not None:
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                raise _UsageError(f"cannot write {path}: there is no folder {folder}")


def _report_written(paths: list[str]) -> int:
    """Say which files were written, after the text; the command's exit code."""
    if paths:
        print()
        for path in paths:
            print(f"wrote {_shown(path)}")
    return 0


def _config_options(args) -> dict:
    """The Config keywords given on the command line (the others keep their defaults)."""
    return {k: v for k, v in (("f", args.f), ("b", args.b), ("w", args.w), ("comm", args.comm), ("fb", args.fb),
                              ("stages_per_device", args.v), ("microbatch_group_size", args.group_size),
                              ("w_share", args.w_share), ("params", args.params), ("time_unit", args.time_unit),
                              ("topology", args.topology), ("comm_bytes", args.comm_bytes), ("p2p", args.p2p))
            if v is not None}


#: ``ppviz compare --sort``: the column each key sorts by (ascending; ties keep the order given)
_SORT_KEYS = {"makespan": lambda r: (r.makespan, float(r.peak_memory.max())),
              "bubble": lambda r: (r.bubble_fraction, r.makespan),
              "memory": lambda r: (float(r.peak_memory.max()), r.makespan), "given": lambda r: 0}


def _compare(args) -> int:
    from .core.config import Config
    from .core.engine import simulate
    from .core.registry import list_schedules

    _check_writable(args.png, args.svg)
    options = _config_options(args)
    if args.all == bool(args.schedules):
        raise _UsageError("name two or more schedules to compare, or give --all for every one in the registry")
    names = [spec.name for spec in list_schedules() if spec.builder is not None and not spec.forward_only] \
        if args.all else args.schedules
    results, skipped, seen = [], [], set()
    for name in names:
        try:
            config = Config(schedule=name, devices=args.p, microbatches=args.m, **options)
        except PpvizError as exc:
            if not args.all:  # a schedule named on purpose that cannot run is an error, not a footnote
                raise
            skipped.append((name, str(exc)))
            continue
        if config.schedule not in seen:  # one row per schedule, however often (or by whichever alias) named
            seen.add(config.schedule)
            results.append(simulate(config))
    if not results:
        raise _UsageError("no schedule in the registry accepts these sizes and options: " +
                          "; ".join(f"{name}: {why}" for name, why in skipped))
    results.sort(key=_SORT_KEYS[args.sort])
    print(_shown_lines(_comparison_table(results)))
    if skipped:
        print()
        print(f"skipped {len(skipped)} that refuse these sizes or options:")
        for name, why in skipped:
            print(_shown(f"  {name}: {why}"))
    written = []
    if args.png or args.svg:
        from .charts import comparison_charts, to_png, to_svg
        from .io.files import write_file

        chart = comparison_charts(results)
        if args.png:
            written.append(write_file(args.png, to_png(chart)))
        if args.svg:
            written.append(write_file(args.svg, to_svg(chart)))
    return _report_written(written)


def _comparison_table(results) -> str:
    """One line per run: makespan, bubble and peak activation, simulated and (in brackets) the
    published closed form where one applies."""
    unit = results[0].config.time_unit or ""
    static = any(r.static_memory.any() for r in results)  # then the peaks include the static memory
    header = ("schedule", "v", f"makespan{f' ({unit})' if unit else ''}", "bubble",
              "peak memory" if static else "peak activation")
    rows = [header]
    for r in results:
        cf = r.closed_form if r.closed_form is not None and r.closed_form.applies else None
        peak = float(r.peak_memory.max())
        closed_peak = max(cf.peak_activation) if cf is not None and cf.peak_activation and not static else None
        rows.append((
            r.config.display_name,
            f"{r.program.stages_per_device:g}",
            f"{r.makespan:.6g}" + (f" ({cf.makespan:.6g})" if cf is not None else ""),
            f"{r.bubble_fraction:.1%}" + (f" ({cf.bubble_fraction:.1%})" if cf is not None else ""),
            f"{peak:.4g}" + (f" ({closed_peak:.4g})" if closed_peak is not None else ""),
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             .rstrip() for row in rows]
    p, m = results[0].devices, results[0].program.whole_microbatches
    return "\n".join([f"{len(results)} schedules at p={p} m={m}; in brackets: the published closed form where "
                      "its assumptions hold", "", *lines])


def _shown(text: str) -> str:
    """Text for the terminal: control characters (escape sequences) shown as escapes, not run."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def _shown_lines(text: str) -> str:
    """:func:`_shown` line by line, keeping the line breaks."""
    return "\n".join(_shown(line) for line in text.split("\n"))


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
  ppviz list                                    the schedules, their aliases and constraints
  ppviz run 1f1b -p 4 -m 8                      a text Gantt chart and the metrics
  ppviz run zb-h1 -p 8 -m 32 --b 2 --w 1        unequal backward halves
  ppviz run interleaved-1f1b -p 8 -m 32 -v 2 --trace run.json --html run.html
  ppviz run --program my_schedule.csv --comm 0.1    your own program (torch CSV or text)
  ppviz compare 1f1b zb-h1 v-half -p 8 -m 32    a table of makespan, bubble and memory
  ppviz compare --all -p 8 -m 32 --sort memory --png all.png    the whole registry, and its charts
"""


class _Parser(argparse.ArgumentParser):
    """Usage mistakes as one line (``ppviz: error: ...``) and exit code 2, like every other error."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {_shown(message)} (see {self.prog} --help)\n")


def _whole(what: str):
    def parse(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"give a whole number of {what}, e.g. 8; got {text!r}") from None
    return parse


def _add_config_arguments(parser) -> None:
    """The sizes and costs, as ``run`` and ``compare`` both take them."""
    parser.add_argument("-p", type=_whole("devices"), default=4, help="devices (default 4)")
    parser.add_argument("-m", type=_whole("microbatches"), default=8, help="microbatches (default 8)")
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


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="ppviz", description="Simulate pipeline-parallel training schedules.", epilog=_EXAMPLES,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="simulate one schedule and print a text Gantt chart and its metrics",
                         description="Simulate one schedule (or your program) and print a text Gantt chart and "
                                     "its metrics; optionally write exports.",
                         epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("schedule", nargs="?", help="registry name or alias, e.g. 1f1b, zb-h1, Interleaved1F1B")
    run.add_argument("--program", metavar="FILE",
                     help="simulate your own program: a torch CSV (.csv) or text, one device per line")
    _add_config_arguments(run)
    run.add_argument("--width", type=_whole("columns"), default=80, help="width of the text chart (default 80)")
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
                             epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    compare.add_argument("schedules", nargs="*", help="registry names or aliases, e.g. 1f1b zb-h1 v-half")
    compare.add_argument("--all", action="store_true",
                         help="every training schedule in the registry (those that refuse the sizes are listed "
                              "as skipped)")
    _add_config_arguments(compare)
    compare.add_argument("--sort", choices=tuple(_SORT_KEYS), default="makespan",
                         help="order of the rows (default makespan; given: as named)")
    compare.add_argument("--png", metavar="FILE", help="also write the comparison's charts as PNG (2x scale)")
    compare.add_argument("--svg", metavar="FILE", help="also write the comparison's charts as SVG")
    compare.set_defaults(handler=_compare)
    lst = sub.add_parser("list", help="show the schedule registry", description="The schedule registry: names, "
                         "aliases, stages per device and what each schedule is.")
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
        print(f"ppviz: error: {_shown(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"ppviz: error: {_shown(exc.filename or '')}: {exc.strerror}", file=sys.stderr)
        return 2


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
