"""docs/statistics.md: every built-in statistic and relation documented; examples run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import snapcore
from snapcore.data._neighbouring import Neighbouring
from snapcore.plugins._manager import get_registries

DOC = Path(__file__).resolve().parents[2] / "docs" / "statistics.md"


def test_every_builtin_statistic_and_relation_documented():
    text = DOC.read_text(encoding="utf-8")
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    assert prose.count("\n# ") == 0 and prose.startswith("# ")  # one H1
    reg = get_registries().statistics
    for name in reg.names():
        if reg.origin(name) in ("counting", "moments"):
            assert f"### {name}" in text, name
    for rel in Neighbouring:
        assert rel.value in text and rel.description in text


def test_python_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    ns: dict[str, object] = {}
    exec(blocks[0], ns)  # the release example
    grouped = next(b for b in blocks if "by=" in b)
    exec(grouped, ns)  # the group-by example
    assert ns["g"].epsilon_spent == 1 and list(ns["g"]) == ["north", "south"]
    budget_block = next(b for b in blocks if "Budget(" in b).splitlines()
    *ok, last, _comment = budget_block
    exec("\n".join(ok), ns)
    with pytest.raises(snapcore.BudgetExceededError):
        exec(last, ns)
