"""Reads the rows of `kernelbrain ablate` tables (bench/ablation-replay.sh's stdout): shared by
bench/ablation_ratios.py and bench/ablation_lopo.py."""
import re


def read_rows(paths):
    """Yields (problem, strategy, reached, device s to 5% or None) for every table row, in file order.
    The problem loses the " (budget)" that bench/ablation-replay.sh appends to it."""
    for f in paths:
        with open(f) as fh:
            for line in fh:
                if not line.startswith("| ") or line.startswith("| problem") or line.startswith("|---"):
                    continue
                c = [x.strip() for x in line.strip().strip("|").split("|")]
                yield re.sub(r" \(.*\)$", "", c[0]), c[1], c[3], (None if c[5] == "-" else float(c[5]))
