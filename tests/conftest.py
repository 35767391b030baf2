"""Test-suite settings (this is tests/conftest.py; the repository root has none, so the
root folder ``statistics/`` never lands on ``sys.path``)."""

import json
import os
import random
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import settings

# No per-example deadline: exact arithmetic at hundreds of bits is slow on a loaded
# machine, and a timing failure says nothing about correctness.  In CI the examples
# are derived from the test names (derandomize), so a run is reproducible.
settings.register_profile("snapcore", deadline=None, print_blob=True)
settings.register_profile("ci", parent=settings.get_profile("snapcore"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "snapcore")

# The command line keeps calibrated timing quanta in a file under the user's cache
# (snapcore.padding.QuantaStore); tests that run it must not read or write that file.
os.environ["SNAPCORE_TIMING_STORE"] = "off"


# -- a sample of every slow test runs in the default suite ---------------------------
#
# Tests marked ``slow`` guard exactness at sizes too large for every run (the nightly
# run is ``pytest -m slow``, see docs/testing.md).  So that none of them rots unseen,
# the default run (``-m "not slow"``) also runs **one randomly chosen case** of each
# slow test function, at a reduced size: those that take a ``slow_size`` fixture with
# its reduced size, and hypothesis-driven ones with at most ``SLOW_SAMPLE_EXAMPLES``
# examples (their ``max_examples`` is ``slow_examples(full)`` from
# tests/helpers/slow_sample.py, which reads the hypothesis profile "slow-sample"
# registered here when the default run samples).  The choice is seeded; the seed is
# printed in the header and the sampled test ids in the summary, and
# ``SNAPCORE_SLOW_SAMPLE_SEED=<seed>`` replays the same choice.
# ``SNAPCORE_SLOW_SAMPLE=0`` turns the sample off.

SLOW_SAMPLE_EXAMPLES = 20


def _slow_sample_seed() -> int:
    env = os.environ.get("SNAPCORE_SLOW_SAMPLE_SEED")
    if env:
        return int(env)
    if os.environ.get("CI"):  # reproducible CI runs, as with hypothesis' derandomize
        return 0
    return random.SystemRandom().randrange(2**32)


_SEED = _slow_sample_seed()


def pytest_report_header(config: pytest.Config) -> str:
    return f"snapcore slow-test sample: SNAPCORE_SLOW_SAMPLE_SEED={_SEED}"


def _samples_slow_tests(config: pytest.Config) -> bool:
    """Whether this run deselects the slow tests (``-m "not slow"``) and samples them."""
    expr = (config.getoption("markexpr") or "").replace(" ", "")
    return expr == "notslow" and os.environ.get("SNAPCORE_SLOW_SAMPLE") != "0"


def pytest_configure(config: pytest.Config) -> None:
    # Before any test module is imported: slow hypothesis tests read it at decoration.
    if _samples_slow_tests(config):
        settings.register_profile("slow-sample", max_examples=SLOW_SAMPLE_EXAMPLES)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _samples_slow_tests(config):
        return
    groups: dict[tuple[str, str], list[pytest.Function]] = {}
    for item in items:
        if isinstance(item, pytest.Function) and item.get_closest_marker("slow"):
            groups.setdefault((str(item.path), item.originalname), []).append(item)
    rng = random.Random(_SEED)
    chosen = []
    for key in sorted(groups):
        item = rng.choice(groups[key])
        # Only the item's own (function and parameter) marks can say "slow" here.
        item.own_markers = [m for m in item.own_markers if m.name != "slow"]
        if item.get_closest_marker("slow"):  # marked on a class or module: leave it
            continue
        item.add_marker(pytest.mark.slow_sample)
        chosen.append(item.nodeid)
    config.stash[_CHOSEN] = chosen


_CHOSEN = pytest.StashKey[list]()


# -- the command line, run in-process ----------------------------------------------


class SnapcoreCli:
    """``snapcore ARGS`` run in-process by click's ``CliRunner``, with standard output
    and standard error kept apart (``result.stdout``, ``result.stderr``)."""

    def __call__(self, *args: str, input: str | bytes | None = None) -> Result:
        """Run ``snapcore ARGS`` (``input``: its standard input); click's result."""
        from snapcore.cli import main

        try:  # click < 8.2 mixes stderr into stdout unless told not to
            runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]
        except TypeError:
            runner = CliRunner()
        return runner.invoke(main, list(args), input=input)

    def json(self, *args: str, input: str | bytes | None = None) -> Any:
        """Run ``snapcore ARGS`` (ARGS include ``--json``) and parse its output; the
        test fails unless it exits with status 0."""
        result = self(*args, input=input)
        assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
        return json.loads(result.stdout)

    def error(self, code: int, kind: str, *args: str, input: str | bytes | None = None) -> str:
        """Run ``snapcore ARGS`` (ARGS include ``--json``); the message of the JSON error
        it reports.  The test fails unless it exits with status ``code`` and reports an
        error of kind ``kind``."""
        result = self(*args, input=input)
        assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
        err = json.loads(result.stdout)["error"]
        assert err["exit_code"] == code and err["kind"] == kind, err
        return str(err["message"])


@pytest.fixture
def cli() -> SnapcoreCli:
    """``cli(*args, input=None)``: ``snapcore ARGS`` run in-process (click's result);
    ``cli.json(*args)``: the parsed ``--json`` output of a run that succeeds;
    ``cli.error(code, kind, *args)``: the message of a ``--json`` run that fails."""
    return SnapcoreCli()


@pytest.fixture
def slow_size(request: pytest.FixtureRequest):
    """``slow_size(full, sample)``: ``sample`` when this test runs as the default
    suite's sample of a slow test, else ``full``."""
    sampled = request.node.get_closest_marker("slow_sample") is not None
    return lambda full, sample: sample if sampled else full


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    chosen = config.stash.get(_CHOSEN, [])
    if chosen:
        terminalreporter.write_line(
            f"slow tests sampled at reduced size (SNAPCORE_SLOW_SAMPLE_SEED={_SEED}): "
            + ", ".join(chosen)
        )
