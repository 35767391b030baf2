"""The conformance suite over every registered backend (mpfr, mpmath, arb, plugins).

The suite itself lives in the package (snapcore.testing.conformance) so that a
third-party backend runs exactly the same tests; see docs/backends.md.
"""

from snapcore.testing.conformance import RegisteredBackendsConformance


class TestConformance(RegisteredBackendsConformance):
    """Every test of the suite, once per registered backend (ids are the names)."""
