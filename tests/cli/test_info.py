"""``snapcore info`` (snapcore.cli._info): the backends and a calibration, as text and
JSON; errors name their flag before anything is printed."""

from __future__ import annotations

import json

from snapcore.cli import EXIT_USAGE


def test_info_json(cli):
    d = cli.json("info", "--json")
    assert {b["name"] for b in d["backends"]} >= {"mpfr"}
    d = cli.json("info", "--json", "--epsilon", "1", "--clamp-bounds", "0", "100")
    assert d["calibration"]["precision"] >= 53
    cli.error(EXIT_USAGE, "usage", "info", "--json", "--epsilon", "1")
    cli.error(EXIT_USAGE, "usage", "info", "--json", "--epsilon", "-1", "--clamp-bounds", "0", "1")


def test_info_refuses_before_printing_and_names_the_flag(cli):
    r = cli("info", "--epsilon", "-1", "--clamp-bounds", "0", "1")
    assert r.exit_code == EXIT_USAGE and r.stdout == "" and "--epsilon must be" in r.stderr
    r = cli("info", "--epsilon", "-1", "--clamp-bounds", "0", "1", "--json")
    err = json.loads(r.stdout)["error"]
    assert err["parameter"] == "--epsilon" and err["exit_code"] == EXIT_USAGE
