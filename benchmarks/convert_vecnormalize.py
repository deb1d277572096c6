"""Convert run folders' ``vecnormalize.pkl`` (SB3's pickle) to ``vec_normalize.json``, the one format the zoo reads.

``zoo train`` and ``zoo benchmark`` write the pickle-free ``vec_normalize.json`` that packaged agents keep too;
run folders written before kept SB3's pickle, which :func:`zoo.runs.load_run` refuses, naming this script.
Unpickling runs whatever code the file names, so convert only folders you made yourself (the ones under
``benchmarks/results/`` were made by this repository's benchmarks). Each pickle is read, written as
``vec_normalize.json`` (atomically), read back and compared, and only then deleted.

Usage: ``python benchmarks/convert_vecnormalize.py [FOLDER ...]``: every vecnormalize.pkl under each FOLDER
(default: ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from zoo.errors import ZooError
from zoo.runs import PICKLED_VEC_NORMALIZE, VEC_NORMALIZE_JSON, convert_pickled_stats

RESULTS = Path(__file__).resolve().parent / "results"


def convert(pickled: Path) -> Path:
    """Write ``vec_normalize.json`` beside ``pickled``, check that it reads back as the same statistics, and delete
    the pickle; return the JSON file."""
    target = convert_pickled_stats(pickled)
    pickled.unlink()
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, default=[RESULTS], help="folders searched recursively")
    args = parser.parse_args(argv)
    pickles = sorted(path for folder in args.folders for path in folder.rglob(PICKLED_VEC_NORMALIZE))
    for pickled in pickles:
        try:
            print(convert(pickled))
        except ZooError as error:  # one line, as the zoo's commands say it
            print(f"error: {error}", file=sys.stderr)
            return 2
    print(f"converted {len(pickles)} {PICKLED_VEC_NORMALIZE} to {VEC_NORMALIZE_JSON}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
