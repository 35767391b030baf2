"""Run pytest in a fresh interpreter, as a plugin or backend author would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_fresh_pytest(
    path_entry: Path,
    rootdir: Path,
    target: Path,
    junit: Path,
    cwd: Path,
    *select: str,
    timeout: int,
) -> subprocess.CompletedProcess[str]:
    """Run ``pytest -q`` on ``target`` in a child process with ``path_entry`` prepended to
    PYTHONPATH and PYTHONSAFEPATH set; ``select`` is passed before the target (e.g.
    ``"-k", expr``).  Writes a JUnit report to ``junit``; returns the finished process."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(path_entry), os.environ.get("PYTHONPATH", "")])
    )
    env["PYTHONSAFEPATH"] = "1"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--import-mode=importlib",
            f"--rootdir={rootdir}",
            f"--junitxml={junit}",
            *select,
            str(target),
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
