"""Plant, one at a time, the bug classes the test suite must catch, and report which it kills.

Each case is a small, realistic mistake a refactor could make (the list of the test-strength
issue): the script copies the checkout to a temporary folder (so the working tree is never
touched), edits one line there, runs the fast guarding tests and restores the line. Every case
must be KILLED. Run: python scripts/planted_bugs.py
"""

import pathlib
import shutil
import subprocess
import sys
import tempfile

CHECKOUT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ["tests/test_oracle.py", "tests/test_closed_form_grid.py", "tests/test_formats.py", "tests/test_messages.py",
         "tests/test_readers.py", "tests/test_core_edges.py"]
CASES = [
    ("bubble_fraction from the largest idle", "ppviz/core/result.py",
     "float(self.idle.sum() / (p * self.makespan))", "float(self.idle.max() / self.makespan)"),
    ("deadlock raised only when every device is stuck", "ppviz/core/engine.py",
     "if any(pos[d] < stop[d] for d in range(p)):", "if all(pos[d] < stop[d] for d in range(p)):"),
    ("per-stage b and w swapped", "ppviz/core/engine.py",
     'i[s] = over.get("b", i[s])\n        w[s] = over.get("w", w[s])',
     'i[s] = over.get("w", i[s])\n        w[s] = over.get("b", w[s])'),
    ("per-stage activation ignored", "ppviz/core/memory.py",
     'if "activation" in over and s < stages:', "if False:"),
    ("default w_share changed", "ppviz/core/config.py", "DEFAULT_W_SHARE = 32 / 34", "DEFAULT_W_SHARE = 0.9"),
    ("ZB-H1 closed form applies too widely", "ppviz/schedules/zero_bubble.py",
     "applies=uniform_costs(config) and m >= p and w <= min(f, b),\n    )\n\n\ndef zb_h2_closed_form",
     "applies=uniform_costs(config) and m >= p and w <= f,\n    )\n\n\ndef zb_h2_closed_form"),
    ("V placement wrong for v >= 3", "ppviz/core/placement.py",
     "mapping.append(k if lap % 2 == 0 else p - 1 - k)", "mapping.append(k if lap != 1 else p - 1 - k)"),
    ("text parser refuses a pair whose backward is an I", "ppviz/core/program.py",
     r'(\d+)([BI])(\d+)\)OVERLAP_F_B$")', r'(\d+)([B])(\d+)\)OVERLAP_F_B$")'),
    ("Program == ignores pairing", "ppviz/core/program.py",
     "and np.array_equal(self.pair, other.pair) and self.forward_only", "and self.forward_only"),
    ("Chrome trace memory counters not scaled", "ppviz/io/chrome_trace.py",
     "map(repr, (times[lo:lo + _BLOCK] * scale).tolist())", "map(repr, times[lo:lo + _BLOCK].tolist())"),
    ("CLI ignores --fb", "ppviz/cli.py", '("fb", args.fb),', ""),
]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "ppviz"
        shutil.copytree(CHECKOUT, root, symlinks=True, ignore=shutil.ignore_patterns(
            ".git", ".venv", "node_modules", "mutants", "scratch", "artifacts", "__pycache__", ".hypothesis"))
        return plant_each(root)


def plant_each(root: pathlib.Path) -> int:
    survived = 0
    for name, path, old, new in CASES:
        file = root / path
        source = file.read_text()
        if source.count(old) != 1:
            print(f"{name:50s} cannot plant: the line is not in {path} exactly once")
            survived += 1
            continue
        file.write_text(source.replace(old, new))
        try:
            run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *TESTS],
                                 cwd=root, capture_output=True, text=True)
        finally:
            file.write_text(source)
        killed = run.returncode != 0
        survived += not killed
        print(f"{name:50s} {'KILLED' if killed else 'SURVIVED'}  ({run.stdout.strip().splitlines()[-1]})")
    print(f"{len(CASES) - survived} of {len(CASES)} planted bugs killed")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
