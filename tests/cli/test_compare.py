"""``snapcore compare`` (snapcore.cli._compare): the backends' and statistics' tables,
as text and JSON; an unknown backend is a usage error naming ``--backend``."""

from __future__ import annotations

import json

from snapcore.cli import EXIT_OK, EXIT_USAGE, SUBCOMMANDS


def test_compare_is_the_registered_subcommand():
    from snapcore.cli._compare import compare

    assert SUBCOMMANDS["compare"]() is compare


def test_compare_one_backend(cli):
    res = cli(
        "compare", "--size", "200", "--seconds", "0.05", "--no-conformance", "--backend", "arb"
    )
    assert res.exit_code == EXIT_OK, res.output
    assert "arb" in res.output and "python-flint" in res.output and "not run" in res.output
    assert "mpmath" not in res.output.split("\n", 1)[1]


def test_compare_unknown_backend(cli):
    res = cli("compare", "--backend", "nope", "--size", "10")
    assert res.exit_code != 0
    assert "backend must be one of" in res.output


def test_compare_lists_statistics(cli):
    res = cli(
        "compare", "--size", "200", "--seconds", "0.05", "--no-conformance",
        "--backend", "arb", "--statistic", "histogram",
    )  # fmt: skip
    assert res.exit_code == EXIT_OK, res.output
    last = res.output.strip().splitlines()[-1]
    assert last.split()[:2] == ["histogram", "counting"] and "not run" in last


def test_compare_json(cli):
    r = cli(
        "compare", "--backend", "mpfr", "--size", "200", "--seconds", "0.01",
        "--no-conformance", "--json",
    )  # fmt: skip
    assert r.exit_code == EXIT_OK, r.stdout
    d = json.loads(r.stdout)
    assert d["backends"][0]["name"] == "mpfr" and d["conformance_failed"] is False
    assert r.stderr == ""  # no progress bar when not a terminal
    cli.error(EXIT_USAGE, "usage", "compare", "--backend", "nope", "--json")


def test_compare_names_its_backend_flag(cli):
    r = cli("compare", "--backend", "nope", "--json")
    err = json.loads(r.stdout)["error"]
    assert err["parameter"] == "--backend" and err["message"].startswith("--backend must be")
