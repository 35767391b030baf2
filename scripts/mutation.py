"""Mutation testing of one privacy-carrying module with mutmut 3 (``tox -e mutation``).

Usage::

    python scripts/mutation.py MODULE [--max-children N] [--keep]

``MODULE`` is one of the keys of :data:`TESTS` (``dyadic``, ``params``, ``pipeline``,
``budget``, ``sources``, ``draw``, ``chacha``, ``statistic``, ``engine``, and the
built-in statistics ``counting`` and ``moments``), or ``planted``:
plant each defect of :data:`PLANTED` (the classes that once survived the default
suite) in turn and check that its tests fail.  The script lays
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
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The tests that matter for each module: a failure in any of them kills a mutant.
REF = "tests/pipeline/test_reference.py"
FAST = "tests/pipeline/test_engine.py"
KERNEL = "tests/pipeline/test_kernel.py"
CERTIFICATE = "tests/pipeline/test_engine_certificate.py"
#: The tests of the byte format through the sources (a failure kills a mutant of the
#: draw's decoder as well as one of a source).
SAMPLER = [
    "tests/randomness/test_draw.py",
    "tests/randomness/test_sources.py",
    "tests/randomness/test_fork.py",
]
TESTS: dict[str, list[str]] = {
    "dyadic": [
        "tests/exact/test_dyadic.py",
        "tests/exact/test_add_nearest.py",
        "tests/pipeline/test_stages.py",
        f"{REF}::test_round_fraction_matches_reference",
        f"{REF}::test_add_rounds_the_exact_sum_once",
        f"{REF}::test_reference_rounding_hand_cases",
    ],
    "params": [
        f"{REF}::test_transform_matches_reference",
        f"{REF}::test_extreme_draws",
        "tests/calibration/test_params.py",
        "tests/mechanism/test_mechanism.py",
        "tests/exact/test_dyadic.py",
    ],
    "pipeline": [
        REF,
        "tests/exact/test_dyadic.py",
        "tests/pipeline/test_stages.py",
    ],
    "budget": ["tests/releases/test_budget.py", "tests/releases/test_budget_schedules.py"],
    "sources": [
        *SAMPLER,
        "tests/mechanism/test_mechanism.py",
    ],
    "draw": [
        *SAMPLER,
        f"{FAST}::test_bulk_decoding_equals_scalar_decoding",
        f"{FAST}::test_bulk_decoding_seeded_stream_position",
        "tests/mechanism/test_mechanism.py",
    ],
    "chacha": [
        "tests/randomness/test_sources.py",
        "tests/randomness/test_fork.py",
        "tests/randomness/test_chacha.py",
    ],
    "statistic": [
        "tests/plugins/test_statistic.py",
        "tests/statistics/test_builtin.py",
        "tests/plugins/test_manager.py",
    ],
    "counting": [
        "tests/statistics/test_counting.py",
        "tests/statistics/test_builtin.py",
        "tests/statistics/test_suite.py",
        "tests/plugins/test_statistic.py",
    ],
    "moments": [
        "tests/statistics/test_moments.py",
        "tests/statistics/test_builtin.py",
        "tests/statistics/test_suite.py",
        "tests/plugins/test_statistic.py",
    ],
    "engine": [
        FAST,
        KERNEL,
        "tests/pipeline/test_compiled.py",
        "tests/pipeline/test_engine_limits.py",
        CERTIFICATE,
        "tests/pipeline/test_engine_drivers.py",
        "tests/randomness/test_draw.py",
    ],
}

#: Functions left unmutated in the scratch copy (``# pragma: no mutate block``): numba
#: compiles them (``njit``) and cannot compile mutmut's trampolines.  The fast path's
#: kernel (``snapcore/pipeline/_kernel.py``) and compiled loops (``_compiled.py``) are
#: not mutated at all: numba compiles them, or they run only at import (``make_kernel``
#: builds the kernel once), where mutmut never activates a mutant.  Their defects are
#: planted by hand instead (:data:`PLANTED`).
NO_MUTATE: dict[str, list[str]] = {"draw": ["row_fields"]}

#: Modules whose workers are forked from a clean fork server rather than from mutmut's
#: main process, which has run the tests: the statistic suite leaves threads behind
#: (a worker can deadlock on a lock one of them held), and the fast path caches its
#: engines (``engine_for``), so a worker forked from a warm process would never run
#: the mutated ``FastEngine.__init__``.
FORKSERVER = {"counting", "moments", "statistic", "engine"}

#: A line that is only a string literal (a continuation of a message or a derivation
#: text): not mutated with ``--skip-text``.
TEXT_LINE = r'^\s*[rfbu]{0,2}"[^"]*"[\s,)]*(#.*)?$'

#: Where each module lives in the installed shape (``src/snapcore/...``): the built-in
#: statistics are the ``statistics`` folder, installed as ``snapcore.statistics``.
MODULE_PATHS: dict[str, str] = {
    "dyadic": "exact/_dyadic",
    "params": "calibration/_params",
    "pipeline": "pipeline/_stages",
    "budget": "releases/_budget",
    "sources": "randomness/_sources",
    "draw": "randomness/_draw",
    "chacha": "randomness/_chacha",
    "statistic": "plugins/_statistic",
    "engine": "pipeline/_engine",
    "counting": "statistics/counting",
    "moments": "statistics/moments",
}

#: The defects that once survived the whole default suite (one per class), planted
#: one at a time by ``--planted``: each must make its tests fail.  Several sit in
#: code mutmut does not mutate (decorated functions such as ``Budget.reserve``).
PLANTED: list[tuple[str, str, str, str, list[str]]] = [
    (
        "budget ignores open reservations",
        "snapcore/releases/_budget.py",
        "left = self.total - self._spent - self._reserved",
        "left = self.total - self._spent",
        ["tests/releases/test_budget_schedules.py"],
    ),
    (
        "budget accepts a negative epsilon",
        "snapcore/releases/_budget.py",
        'eps = check_real("epsilon", epsilon, positive=True)',
        'eps = check_real("epsilon", epsilon)',
        ["tests/releases/test_budget_schedules.py"],
    ),
    (
        "SystemSource re-serves a byte to the next read",
        "snapcore/randomness/_sources.py",
        "        self._pos = end\n        return out\n\n\ndef _after_fork",
        "        self._pos = end - 1\n        return out\n\n\ndef _after_fork",
        ["tests/randomness/test_sources.py"],
    ),
    (
        "SystemSource keeps stale bytes across a refill",
        "snapcore/randomness/_sources.py",
        "self._buf = rest + self._reader(",
        "self._buf = self._buf[-8:] + self._reader(",
        ["tests/randomness/test_sources.py"],
    ),
    (
        "ChaCha20 re-serves a byte after a refill",
        "snapcore/randomness/_chacha.py",
        "        self._pos = n\n        return self._buf[:n]",
        "        self._pos = n - 1\n        return self._buf[:n]",
        ["tests/randomness/test_sources.py"],
    ),
    (
        "granularity doubles when lambda is a power of two",
        "snapcore/calibration/_params.py",
        "e + m.bit_length() - (1 if m & (m - 1) == 0 else 0)",
        "e + m.bit_length()",
        [f"{REF}::test_transform_matches_reference"],
    ),
    (
        "k = ±kmax takes the grid path",
        "snapcore/pipeline/_stages.py",
        "if -kmax < k < kmax:",
        "if -kmax <= k <= kmax:",
        [f"{REF}::test_transform_matches_reference"],
    ),
    (
        "round_ratio ties away from zero",
        "snapcore/exact/_dyadic.py",
        "if twice > d2 or (twice == d2 and q & 1):",
        "if twice >= d2:",
        ["tests/exact/test_dyadic.py"],
    ),
    (
        "round_dyadic ties away from zero",
        "snapcore/exact/_dyadic.py",
        "if r > half or (r == half and q & 1):",
        "if r >= half:",
        ["tests/exact/test_dyadic.py"],
    ),
    (
        "no endpoint rule for a clamped z'",
        "snapcore/pipeline/_stages.py",
        "if zm and dyadic_cmp(abs(zm), ze, bm, be) == 0:",
        "if False:",
        ["tests/exact/test_dyadic.py"],
    ),
    (
        "fast path's safety factor halved",
        "snapcore/pipeline/_kernel.py",
        "err = 2.0 * (eln",
        "err = 1.0 * (eln",
        [KERNEL],
    ),
    # The fast path's kernel is a closure built once at import (and compiled by
    # numba), and its compiled loops are numba's, so mutmut never runs their mutants:
    # these are their defects, planted.
    (
        "fast path decides k without the distance to the integer above",
        "snapcore/pipeline/_kernel.py",
        "ok = (dist0 > err) & (dist1 > err) & (err < 0.25)",
        "ok = (dist0 > err) & (err < 0.25)",
        [FAST],
    ),
    (
        "fast path does not correct k when t is an integer and t_lo < 0",
        "snapcore/pipeline/_kernel.py",
        "k = fl - select(zero & (sl < 0.0), 1.0, 0.0)",
        "k = fl",
        [FAST],
    ),
    (
        "fast path's ln error without its per-exponent term",
        "snapcore/pipeline/_kernel.py",
        "eln = ERR_LN_ABS + ERR_LN_PER_E * (e + 2.0)",
        "eln = ERR_LN_ABS",
        [KERNEL],
    ),
    (
        "fast path's ln error constant halved",
        "snapcore/pipeline/_kernel.py",
        "ERR_LN_ABS = 2.0**-73",
        "ERR_LN_ABS = 2.0**-74",
        [KERNEL],
    ),
    (
        "fast path's bound without its exponent cap",
        "snapcore/pipeline/_kernel.py",
        "& (abs(sh) < 2.0**52) & (e <= MAX_E)",
        "& (abs(sh) < 2.0**52)",
        [f"{FAST}::test_deep_tail"],
    ),
    (
        "fused output stage trusts a sum with one inexact low part",
        "snapcore/pipeline/_compiled.py",
        "exact_sum = (u2 == 0.0) and (t2 == 0.0)",
        "exact_sum = (u2 == 0.0) or (t2 == 0.0)",
        [CERTIFICATE],
    ),
    (
        "fused output stage's half gap 2**106 too wide",
        "snapcore/pipeline/_compiled.py",
        "half_gap = math.ldexp(0.25 if m == 0.5 else 0.5, ex - 53)",
        "half_gap = math.ldexp(0.25 if m == 0.5 else 0.5, ex + 53)",
        [CERTIFICATE],
    ),
    (
        "fused output stage's half gap below a power of two too wide",
        "snapcore/pipeline/_compiled.py",
        "half_gap = math.ldexp(0.25 if m == 0.5 else 0.5, ex - 53)",
        "half_gap = math.ldexp(0.5, ex - 53)",
        [CERTIFICATE],
    ),
    (
        "fused output stage certifies an inexact sum that rounds to zero",
        "snapcore/pipeline/_compiled.py",
        "cert = cert and (r != 0.0 or exact_sum)",
        "cert = cert",
        [CERTIFICATE],
    ),
    (
        "fast path's far test one-sided",
        "snapcore/pipeline/_kernel.py",
        "fr = abs(d1) > far",
        "fr = d1 > far",
        [KERNEL],
    ),
    (
        "TwoSum drops b's rounding error",
        "snapcore/pipeline/_kernel.py",
        "err = (a - (s - bb)) + (b - bb)",
        "err = a - (s - bb)",
        [f"{KERNEL}::test_error_free_transformations_are_exact"],
    ),
    (
        "fast path's log reduction loses the low product",
        "snapcore/pipeline/_kernel.py",
        "z = (q1 - 1.0) + q2  #",
        "z = (q1 - 1.0)  #",
        [FAST],
    ),
]


def _layout(
    scratch: Path,
    module: str,
    max_examples: int = 100,
    skip_text: bool = False,
    tests: list[str] | None = None,
) -> None:
    src = scratch / "src" / "snapcore"
    shutil.copytree(ROOT / "snapcore", src, ignore=shutil.ignore_patterns("__pycache__"))
    for sub in ("backends", "statistics"):
        shutil.copytree(ROOT / sub, src / sub, ignore=shutil.ignore_patterns("__pycache__"))
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "tests", scratch / "tests", ignore=ignore)
    # The third-party statistic's tests install the example plugin from examples/.
    shutil.copytree(ROOT / "examples", scratch / "examples", ignore=ignore)
    target = src / f"{MODULE_PATHS.get(module, module)}.py"
    if module in NO_MUTATE:
        target.write_text(_no_mutate(target.read_text("utf-8"), NO_MUTATE[module]), "utf-8")
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    text = re.sub(r"\n\[tool\.mutmut\][^\[]*", "\n", text)
    selected = ", ".join(f'"{t}"' for t in (tests or TESTS[module]))
    text += (
        "\n[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f'only_mutate = ["src/snapcore/{MODULE_PATHS.get(module, module)}.py"]\n'
        f"pytest_add_cli_args_test_selection = [{selected}]\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]\n'
        "use_git_change_detection = false\n"
        'also_copy = ["examples"]\n'
    )
    if module in FORKSERVER:
        text += 'process_isolation = "forkserver"\n'
    if skip_text:
        text += f"do_not_mutate_patterns = ['{TEXT_LINE}']\n"  # a TOML literal string
    (scratch / "pyproject.toml").write_text(text, "utf-8")
    # The scratch copy's conftest caps every hypothesis test's examples (mutmut runs the
    # selected tests once per mutant) and derandomises them, so that a mutant's verdict
    # does not depend on the run: killed and survived are reproducible.
    if max_examples:
        with (scratch / "tests" / "conftest.py").open("a", encoding="utf-8") as f:
            f.write(_CAP_PLUGIN.format(cap=max_examples))


_CAP_PLUGIN = """

class _MutationExampleCap:
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        from hypothesis import settings as _settings

        for item in items:
            wrapped = getattr(item, "obj", None)
            current = getattr(wrapped, "_hypothesis_internal_use_settings", None)
            if getattr(wrapped, "hypothesis", None) is not None and current is not None:
                small = min(current.max_examples, {cap})
                wrapped._hypothesis_internal_use_settings = _settings(
                    current, max_examples=small, derandomize=True
                )


def pytest_configure(config):
    config.pluginmanager.register(_MutationExampleCap(), "snapcore-mutation-cap")
"""


def _no_mutate(text: str, names: list[str]) -> str:
    """Mark the top-level functions ``names`` ``# pragma: no mutate block`` (on the line
    that ends the signature)."""
    lines = text.split("\n")
    for name in names:
        start = next(i for i, ln in enumerate(lines) if ln.startswith(f"def {name}("))
        end = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith(":"))
        lines[end] = lines[end].rstrip() + "  # pragma: no mutate block"
    return "\n".join(lines)


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


def run_planted(scratch: Path) -> int:
    """Plant each defect of :data:`PLANTED` in turn; report whether its tests fail."""
    _layout(scratch, "budget", max_examples=0)
    env = dict(os.environ, PYTHONSAFEPATH="1", PYTHONPATH=str(scratch / "src"))
    missed = 0
    for title, rel, old, new, tests in PLANTED:
        path = scratch / "src" / rel
        original = path.read_text("utf-8")
        if original.count(old) != 1:
            print(f"STALE  {title}: the text to mutate is not in {rel} exactly once")
            missed += 1
            continue
        path.write_text(original.replace(old, new), "utf-8")
        try:
            cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
            proc = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True)
        finally:
            path.write_text(original, "utf-8")
        failed = [ln for ln in proc.stdout.splitlines() if ln.startswith("FAILED")]
        if proc.returncode == 1 and failed:
            print(f"KILLED {title}: {failed[0][:150]}")
        else:
            print(f"ALIVE  {title}: pytest exit {proc.returncode}")
            missed += 1
    print(f"planted defects: {len(PLANTED) - missed}/{len(PLANTED)} killed")
    return 1 if missed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("module", choices=[*sorted(TESTS), "planted"])
    ap.add_argument("--max-children", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="GLOB",
        help=(
            "run only the mutants whose names match "
            "(e.g. 'snapcore.calibration._params.x_calibrate*')"
        ),
    )
    ap.add_argument(
        "--max-examples",
        type=int,
        default=100,
        help="cap every hypothesis test at this many examples (derandomised); default 100",
    )
    ap.add_argument(
        "--skip-text",
        action="store_true",
        help="do not mutate lines that are only a string literal (message and derivation "
        "texts, which no test pins word for word)",
    )
    ap.add_argument(
        "--tests",
        action="append",
        default=[],
        metavar="PATH",
        help="run these tests instead of the module's selection (e.g. to re-check the "
        "survivors of a run, named with --only, against the tests written for them)",
    )
    ap.add_argument(
        "--time-budget",
        type=float,
        default=None,
        help="stop mutmut after this many seconds and score the mutants checked so far",
    )
    args = ap.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix=f"snapcore-mutation-{args.module}-"))
    try:
        if args.module == "planted":
            return run_planted(scratch)
        _layout(scratch, args.module, args.max_examples, args.skip_text, args.tests)
        # The default suite's sample of slow tests is not wanted here.
        env = dict(os.environ, PYTHONSAFEPATH="1", SNAPCORE_SLOW_SAMPLE="0")
        mutmut = [sys.executable, "-m", "mutmut"]
        cmd = [*mutmut, "run", "--max-children", str(args.max_children), *args.only]
        proc = subprocess.Popen(cmd, cwd=scratch, env=env, start_new_session=True)
        try:
            returncode = proc.wait(timeout=args.time_budget)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
            returncode = 0
            print(f"time budget of {args.time_budget:g} s reached: scoring what was checked")
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
        return returncode
    finally:
        if args.keep:
            print(f"scratch directory kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
