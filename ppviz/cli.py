"""Command line: ``ppviz run zb-h1 -p 4 -m 8`` prints a text Gantt chart and the metrics."""

from __future__ import annotations

import argparse
import os
import sys

from .core.errors import PpvizError


def _run(args) -> int:
    from .core.config import Config
    from .core.program import Program
    from .core.engine import simulate

    options = {k: v for k, v in (("f", args.f), ("b", args.b), ("w", args.w), ("comm", args.comm), ("fb", args.fb),
                                 ("stages_per_device", args.v), ("microbatch_group_size", args.group_size),
                                 ("w_share", args.w_share), ("params", args.params), ("time_unit", args.time_unit),
                                 ("topology", args.topology), ("comm_bytes", args.comm_bytes), ("p2p", args.p2p))
               if v is not None}
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
    if written:
        print()
        for path in written:
            print(f"wrote {_shown(path)}")
    return 0


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
    run.add_argument("-p", type=_whole("devices"), default=4, help="devices (default 4)")
    run.add_argument("-m", type=_whole("microbatches"), default=8, help="microbatches (default 8)")
    run.add_argument("-v", type=_whole("stages per device"), default=None,
                     help="stages per device (default: the schedule's)")
    run.add_argument("--f", type=float, default=None, help="forward time per 1/p of the model (default 1)")
    run.add_argument("--b", type=float, default=None, help="backward-for-inputs time (default 1)")
    run.add_argument("--w", type=float, default=None, help="backward-for-weights time (default 1)")
    run.add_argument("--comm", type=float, default=None, help="latency of a cross-device dependency (default 0)")
    run.add_argument("--fb", type=float, default=None, help="time of an overlapped F&B pair (default f+b+w)")
    run.add_argument("--group-size", type=_whole("microbatches"), default=None,
                     help="interleaved microbatch group size (default p)")
    run.add_argument("--w-share", type=float, default=None, help="share of the activation W keeps after I")
    run.add_argument("--params", type=float, default=None, help="static memory per 1/p of the model, activation units")
    run.add_argument("--time-unit", default=None, help="the unit of the times: s, ms, us, ns (needed by a preset)")
    run.add_argument("--topology", metavar="PRESET", default=None,
                     help="simulate communication as transfers over a system's links: dgx-h100, dgx-a100, roce-h100")
    run.add_argument("--comm-bytes", type=float, default=None, help="bytes of one transfer (with --topology)")
    run.add_argument("--p2p", choices=("blocking", "overlapped"), default=None,
                     help="whether a transfer also holds its devices (default: the schedule's)")
    run.add_argument("--width", type=_whole("columns"), default=80, help="width of the text chart (default 80)")
    run.add_argument("--trace", metavar="FILE", help="also write a Chrome trace (open in Perfetto)")
    run.add_argument("--csv", metavar="FILE", help="also write the program as a torch compute_only CSV "
                     "(with --topology, the compute_comms CSV with its sends and receives)")
    run.add_argument("--html", metavar="FILE", help="also write the interactive chart as a standalone offline page")
    run.add_argument("--svg", metavar="FILE", help="also write the Gantt chart as SVG")
    run.add_argument("--png", metavar="FILE", help="also write the Gantt chart as PNG (2x scale)")
    run.set_defaults(handler=_run)
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
