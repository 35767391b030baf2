"""The neighbouring relations (snapcore.data._neighbouring.Neighbouring)."""

from __future__ import annotations

import pytest
from param_errors import raises_param

from snapcore.data._neighbouring import Neighbouring


def test_the_two_relations_and_their_descriptions():
    assert [r.value for r in Neighbouring] == ["replace", "add-remove"]
    # the descriptions say what each relation means for n and for a neighbour
    assert "n public" in Neighbouring.REPLACE.description
    assert "replaced" in Neighbouring.REPLACE.description
    assert "add or remove" in Neighbouring.ADD_REMOVE.description


@pytest.mark.parametrize("relation", list(Neighbouring))
def test_parse_takes_a_relation_or_its_value(relation):
    assert Neighbouring.parse(relation) is relation
    assert Neighbouring.parse(relation.value) is relation


@pytest.mark.parametrize("bad", ["swap", "REPLACE", "add_remove", None, 1], ids=repr)
def test_parse_refuses_anything_else_and_lists_the_choices(bad):
    with raises_param(["relation must be one of", "'replace'", "'add-remove'", repr(bad)]) as info:
        Neighbouring.parse(bad)
    assert info.value.parameter == "relation"
