"""Mutation testing of one privacy-carrying module with mutmut 3 (``tox -e mutation``).

Usage::

    python scripts/mutation.py MODULE [--max-children N] [--keep]

``MODULE`` is one of the keys of :data:`TESTS` (``dyadic``, ``params``, ``pipeline``,
``budget``, ``sources``, ``chacha``, ``statistic``, ``fastpath``).  The script lays
out a scratch copy of the package in its installed shape (``src/snapcore`` with
``backends`` and ``statistics`` inside), writes a ``[tool.mutmut]`` section that
mutates only that module and runs only the tests that matter for it, runs
``mutmut run`` there and prints the results and the score (killed / (killed +
survived); timeouts count as killed, as mutmut does).  Nothing in the repository
is modified.  See docs/testing.md for how to read a survivor.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The tests that matter for each module: a failure in any of them kills a mutant.
TESTS: dict[str, list[str]] = {
    "dyadic": [
        "tests/test_pipeline_reference.py",
        "tests/test_dyadic_rules.py",
        "tests/test_exact.py",
    ],
    "params": [
        "tests/test_pipeline_reference.py",
        "tests/test_validation.py",
        "tests/test_dyadic_rules.py",
    ],
    "pipeline": [
        "tests/test_pipeline_reference.py",
        "tests/test_dyadic_rules.py",
        "tests/test_smoke.py",
    ],
    "budget": ["tests/test_budget.py"],
    "sources": ["tests/test_sources_values.py", "tests/test_sampler.py"],
    "chacha": ["tests/test_sources_values.py"],
    "statistic": ["tests/test_statistics_builtin.py", "tests/test_thirdparty_statistic.py"],
    "fastpath": ["tests/test_fastpath.py"],
}


def _layout(scratch: Path, module: str) -> None:
    src = scratch / "src" / "snapcore"
    shutil.copytree(ROOT / "snapcore", src, ignore=shutil.ignore_patterns("__pycache__"))
    for sub in ("backends", "statistics"):
        shutil.copytree(ROOT / sub, src / sub, ignore=shutil.ignore_patterns("__pycache__"))
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "tests", scratch / "tests", ignore=ignore)
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    text = re.sub(r"\n\[tool\.mutmut\][^\[]*", "\n", text)
    tests = ", ".join(f'"{t}"' for t in TESTS[module])
    text += (
        "\n[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f'only_mutate = ["src/snapcore/{module}.py"]\n'
        f"pytest_add_cli_args_test_selection = [{tests}]\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]\n'
        "use_git_change_detection = false\n"
    )
    (scratch / "pyproject.toml").write_text(text, "utf-8")


def _score(results: str) -> tuple[int, int, int]:
    killed = survived = other = 0
    for line in results.splitlines():
        status = line.rsplit(":", 1)[-1].strip()
        if status in ("killed", "timeout"):
            killed += 1
        elif status == "survived":
            survived += 1
        elif status:
            other += 1
    return killed, survived, other


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("module", choices=sorted(TESTS))
    ap.add_argument("--max-children", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = ap.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix=f"snapcore-mutation-{args.module}-"))
    try:
        _layout(scratch, args.module)
        env = dict(os.environ, PYTHONSAFEPATH="1")
        mutmut = [sys.executable, "-m", "mutmut"]
        run = subprocess.run(
            [*mutmut, "run", "--max-children", str(args.max_children)], cwd=scratch, env=env
        )
        results = subprocess.run(
            [*mutmut, "results", "--all", "true"],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
        ).stdout
        print(results)
        killed, survived, other = _score(results)
        total = killed + survived
        score = 100.0 * killed / total if total else 100.0
        print(
            f"mutation score {args.module}: {killed}/{total} killed ({score:.1f}%), "
            f"{survived} survived, {other} not run or skipped"
        )
        for line in results.splitlines():
            if line.rstrip().endswith(": survived"):
                name = line.split(":", 1)[0].strip()
                diff = subprocess.run(
                    [*mutmut, "show", name], cwd=scratch, env=env, capture_output=True, text=True
                ).stdout
                print(diff)
        return run.returncode
    finally:
        if args.keep:
            print(f"scratch directory kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
