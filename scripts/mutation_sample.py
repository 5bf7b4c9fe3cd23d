"""Print a uniform random sample of mutant names, to pass to ``scripts/mutation-test``.

The core and the schedules hold about 13,600 mutants; at 2–10 s each a full run takes far longer
than a session. A sample of a few hundred estimates the score within a few points (300 mutants:
±2.7 points at 95 % for a score near 94 %). mutmut writes its mutants (``mutants/**/*.meta``) in
the first phase of a run, before any test; stop that first run once "Generating mutants" is done,
then:

    scripts/mutation-test --max-children 2 $(python scripts/mutation_sample.py 300 --seed 7)
"""

import argparse
import json
import pathlib
import random
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    names = sorted(name for meta in sorted((ROOT / "mutants").glob("**/*.meta"))
                   for name in json.loads(meta.read_text())["exit_code_by_key"])
    if not names:
        print("no mutants yet: start scripts/mutation-test once and stop it after 'Generating mutants'",
              file=sys.stderr)
        return 2
    print("\n".join(sorted(random.Random(args.seed).sample(names, min(args.count, len(names))))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
