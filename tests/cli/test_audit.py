"""``snapcore audit`` (snapcore.cli._audit): the exact privacy loss, the output that
attains it and the verdict, as text and JSON; a mechanism that is not private is
refused with status 4."""

from __future__ import annotations

import json

from snapcore.cli import EXIT_OK, EXIT_REFUSED, EXIT_USAGE


def test_audit_reports_loss_output_and_verdict(cli):
    res = cli("audit", "--epsilon", "1", "--clamp-bound", "8", "--value", "0", "--neighbour", "1")
    assert res.exit_code == EXIT_OK, res.output
    # docs/semantics.md [SD]: loss = epsilon - 2.8e-34 for this example
    assert "privacy loss: 0.999999999999999999999999999999999720" in res.output
    assert "(loss - epsilon = -2.79" in res.output
    assert "attained at output: 6.0" in res.output
    assert "verdict: private" in res.output
    res = cli(
        "audit", "--epsilon", "1", "--clamp-bounds", "-8", "8", "--value", "0",
        "--sampler-precision", "53",
    )  # fmt: skip
    assert res.exit_code == EXIT_REFUSED, res.output
    assert "DEMONSTRATION" in res.output and "NOT PRIVATE" in res.output
    res = cli("audit", "--epsilon", "8", "--clamp-bound", "1e6", "--value", "0")
    assert res.exit_code == EXIT_USAGE and "max_outputs = 32768" in res.output


def test_audit_json_and_refusal(cli):
    assert cli.json("audit", "--epsilon", "1", "--clamp-bound", "8", "--value", "0", "--json")[
        "private"
    ]
    # the double-sampler demonstration is not private: privacy refused, status 4
    r = cli(
        "audit", "--epsilon", "1", "--clamp-bound", "8", "--value", "0",
        "--sampler-precision", "20", "--json",
    )  # fmt: skip
    assert r.exit_code == EXIT_REFUSED and json.loads(r.stdout)["private"] is False
    cli.error(EXIT_USAGE, "usage", "audit", "--epsilon", "1", "--value", "0", "--json")


def test_audit_statistic_audits_the_mechanism_the_release_uses(cli, tmp_path):
    csv = tmp_path / "d.csv"
    csv.write_text("x\n" + "\n".join(str(v) for v in range(10)) + "\n")
    rel = cli.json(
        "release",
        "mean",
        str(csv),
        "-c",
        "x",
        "-b",
        "0",
        "100",
        "-e",
        "0.5",
        "--seed",
        "1",
        "--json",
    )
    out = cli.json(
        "audit",
        "--statistic",
        "mean",
        "--n",
        "10",
        "--data-bounds",
        "0",
        "100",
        "--epsilon",
        "0.5",
        "--value",
        "4.5",
        "--json",
    )
    assert out["clamp_bounds"] == rel["clamp_bounds"]
    assert out["sensitivity"] == rel["sensitivity"] == 10.0
    assert out["neighbour"] == 14.5 and out["private"] is True


def test_audit_statistic_and_a_clamp_interval_conflict(cli):
    r = cli(
        "audit",
        "--statistic",
        "mean",
        "--n",
        "10",
        "--data-bounds",
        "0",
        "100",
        "--epsilon",
        "1",
        "--value",
        "4",
        "--clamp-bounds",
        "0",
        "1",
    )
    assert r.exit_code == 2 and "leave out --clamp-bounds" in r.stderr
