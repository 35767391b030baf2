"""``snapcore budget`` (snapcore.cli._budget): a ledger made, shown and spent from by
releases, as text and JSON; a ledger that was tampered with is refused untouched."""

from __future__ import annotations

import shutil
import sqlite3
from fractions import Fraction
from pathlib import Path

from snapcore import Budget
from snapcore._display import short
from snapcore.cli import EXIT_DATA, EXIT_OK, EXIT_REFUSED


def test_budget_session(cli, tmp_path: Path) -> None:
    path = str(tmp_path / "cli.ledger")
    r = cli("budget", "init", path, "--epsilon", "1")
    assert r.exit_code == EXIT_OK, r.output
    r = cli("budget", "init", path, "--epsilon", "1")
    assert r.exit_code != 0 and "already exists" in r.output
    release = ("release", "mean", "-c", "age", "-b", "0", "100", "-e", "0.2", "--ledger", path)
    for _ in range(5):
        r = cli(*release)
        assert r.exit_code == EXIT_OK, r.output
    # 5 x 0.2 is exactly 1 (--epsilon is read as an exact decimal): the next is refused.
    r = cli(*release)
    assert r.exit_code != 0 and "refused" in r.output and "released value" not in r.output
    shown = cli.json("budget", "show", path, "--json")
    assert shown["spent_exact"] == "1" and shown["remaining_exact"] == "0"  # as str(Fraction)
    assert [e["epsilon_exact"] for e in shown["entries"]] == ["1/5"] * 5
    r = cli("budget", "show", path)
    assert r.exit_code == EXIT_OK and "remaining  0" in r.output and "0.2" in r.output
    broken = tmp_path / "broken.ledger"
    shutil.copy(path, broken)
    with sqlite3.connect(broken) as conn:
        conn.execute("UPDATE meta SET value = '1/2' WHERE key = 'spent'")
    conn.close()
    for argv in (
        ["budget", "show", str(broken)],
        ["release", "count", "-e", "0.1", "--ledger", str(broken)],
    ):
        r = cli(*argv)
        assert r.exit_code != 0 and "refused" in r.output and "not modified" in r.output


def test_budget_ledger_json(cli, tmp_path: Path):
    led = str(tmp_path / "b.ledger")
    d = cli.json("budget", "init", led, "--epsilon", "1", "--json")
    assert (d["total"], d["total_exact"], d["spent_exact"], d["entries"]) == (1.0, "1", "0", [])
    cli.error(EXIT_DATA, "data", "budget", "init", led, "--epsilon", "1", "--json")
    d = cli.json("budget", "show", led, "--json")
    assert d["total_exact"] == "1" and d["entries"] == []
    cli.error(EXIT_DATA, "data", "budget", "show", str(tmp_path / "none.ledger"), "--json")
    # a release the ledger cannot cover: privacy refused, exit 4, nothing released
    args = ("release", "mean", "-c", "age", "-b", "0", "100", "--ledger", led, "--json")
    assert cli(*args, "-e", "0.75").exit_code == EXIT_OK
    msg = cli.error(EXIT_REFUSED, "privacy refused", *args, "-e", "0.5")
    assert "refused" in msg


def test_budget_show_uses_the_display_rule_of_the_ledger(cli, tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    assert cli("budget", "init", str(path), "--epsilon", "1").exit_code == EXIT_OK
    b = Budget.from_ledger(path)
    b.spend(Fraction(1, 3))
    r = cli("budget", "show", str(path))
    assert r.exit_code == EXIT_OK
    assert f"remaining  {short(Fraction(2, 3))}" in r.output and "≈0.666666666667" in r.output
    assert repr(b).endswith("remaining=≈0.666666666667)")
