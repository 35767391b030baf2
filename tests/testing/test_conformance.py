"""The conformance suite catches what it claims to catch.

Three deliberately broken backends (tests/helpers/broken_backends.py) have a
faithful but not correctly rounded LN.  The suite, run exactly as a third-party
author runs it, must report failures for each; two of them are wrong only near
rounding midpoints, so only the hard-to-round cases (and U* next to 1) expose them.
"""

from __future__ import annotations

import random
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from broken_backends import BROKEN, DoubleRoundedLnBackend, MpmathLogBackend
from fresh_pytest import run_fresh_pytest

from snapcore.testing import run_conformance
from snapcore.testing.checks import check_ln, hard_ln_cases, random_operands

HELPERS = Path(__file__).parents[1] / "helpers"


@pytest.mark.parametrize("backend", BROKEN, ids=lambda b: b.name)
def test_quick_conformance_fails_broken_backends(backend):
    report = run_conformance(backend)
    assert not report.passed
    assert all("ln" in f for f in report.failures), report.failures[:3]
    assert "reproduce:" in report.failures[0]


@pytest.mark.parametrize("backend", BROKEN, ids=lambda b: b.name)
def test_every_precision_has_a_hard_case_that_catches_it(backend):
    be = backend()
    for p in (53, 64, 118, 200, 400):
        wrong = 0
        for a, want, _, _ in hard_ln_cases(p):
            try:
                check_ln(be.arithmetic(p), a, be.name, want)
            except AssertionError:
                wrong += 1
        assert wrong >= 3, (backend.name, p, wrong)


@pytest.mark.parametrize(
    "backend", [DoubleRoundedLnBackend, MpmathLogBackend], ids=lambda b: b.name
)
def test_random_inputs_alone_would_miss_subtle_breakage(backend):
    # Why the hard cases exist: 2,000 random U* per precision do not expose these two.
    be = backend()
    rng = random.Random(5)
    for p in (53, 118):
        arith = be.arithmetic(p)
        for m, _ in random_operands(rng, p, 1000, positive=True):
            check_ln(arith, (m, -p - rng.randrange(0, 8)), be.name)


def _run_suite(tmp_path, backend_name: str, select: str, module: str = "broken_backends"):
    """Run the packaged suite on a backend in a fresh pytest, as a third party would;
    returns the outcome per test."""
    (tmp_path / "test_third_party.py").write_text(
        textwrap.dedent(
            f"""
            from {module} import {backend_name}
            from snapcore.testing import conformance_suite

            TestBroken = conformance_suite({backend_name}, pipeline_draws=2000, random_inputs=100)
            """
        )
    )
    junit = tmp_path / "out.xml"
    proc = run_fresh_pytest(
        HELPERS, tmp_path, tmp_path, junit, tmp_path, "-k", select, timeout=600
    )
    assert junit.exists(), proc.stdout + proc.stderr
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        status = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                status = child.tag
        out[case.get("name")] = status
    assert proc.returncode == (1 if "failure" in out.values() else 0), proc.stdout[-2000:]
    return out


def test_packaged_suite_fails_truncated_ln(tmp_path):
    out = _run_suite(tmp_path, "TruncatedLnBackend", "ln or pipeline or op_random")
    for p in (53, 64, 118, 200, 400):
        assert out[f"test_ln_hard_cases[{p}]"] == "failure"
        assert out[f"test_ln_random[{p}]"] == "failure"
    assert out["test_pipeline[symmetric]"] == "failure"
    # The other primitives of this backend are MPFR's: those tests pass.
    assert out["test_op_random[118-add]"] == "passed"


def test_packaged_suite_fails_double_rounded_ln(tmp_path):
    out = _run_suite(tmp_path, "DoubleRoundedLnBackend", "ln_hard or ln_random")
    assert {out[f"test_ln_hard_cases[{p}]"] for p in (53, 64, 118, 200, 400)} == {"failure"}


def test_packaged_suite_passes_a_good_backend(tmp_path):
    # The same harness on the unbroken MPFR backend passes: the failures above come
    # from the broken LN, not from the harness.
    out = _run_suite(tmp_path, "MPFRBackend", "ln_hard or ln_random", "snapcore.backends.mpfr")
    assert len(out) == 10 and set(out.values()) == {"passed"}
