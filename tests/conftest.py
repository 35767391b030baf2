"""Test-suite settings (this is tests/conftest.py; the repository root has none, so the
root folder ``statistics/`` never lands on ``sys.path``)."""

import os

from hypothesis import settings

# No per-example deadline: exact arithmetic at hundreds of bits is slow on a loaded
# machine, and a timing failure says nothing about correctness.  In CI the examples
# are derived from the test names (derandomize), so a run is reproducible.
settings.register_profile("snapcore", deadline=None, print_blob=True)
settings.register_profile("ci", parent=settings.get_profile("snapcore"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "snapcore")
