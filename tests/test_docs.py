"""The documentation: its examples run, and the site builds without a warning.

Examples in ``docs/*.md`` are ``>>>`` sessions (in ```` ```pycon ```` fences); each file
runs as one doctest session.  A page whose examples must not run starts with the line
``<!-- no-doctest -->``.  The site build needs the ``docs`` extra (it is also in
``test``); without Sphinx that test is skipped, saying why.
"""

from __future__ import annotations

import doctest
import importlib.util
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = sorted(DOCS.glob("*.md"))
FENCE = re.compile(r"^\s*(```|:::).*$", re.MULTILINE)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def test_docs_folder_has_the_site_pages():
    names = {p.stem for p in PAGES}
    assert {"index", "quickstart", "accuracy", "plugins", "sources", "api"} <= names
    assert (DOCS / "conf.py").is_file()


def _has_examples(page):
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return ">>>" in text and not text.startswith("<!-- no-doctest -->")


EXAMPLE_PAGES = [p for p in PAGES if _has_examples(p)]


def test_some_pages_have_examples():
    assert len(EXAMPLE_PAGES) >= 5, [p.name for p in EXAMPLE_PAGES]


@pytest.mark.parametrize("page", EXAMPLE_PAGES, ids=[p.name for p in EXAMPLE_PAGES])
def test_doc_examples_run(page):
    text = page.read_text(encoding="utf-8")
    if text.startswith("<!-- no-doctest -->"):
        pytest.skip(f"{page.name} opts out of doctests")
    # Code fences would read as expected output: blank them (line numbers are kept).
    text = FENCE.sub("", text)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {"__name__": page.stem}, page.name, str(page), 0)
    if not test.examples:
        pytest.skip(f"{page.name} has no >>> examples")
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    out: list[str] = []
    runner.run(test, out=out.append)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0, "".join(out)
    assert attempted == len(test.examples)


def _missing_docs_deps() -> list[str]:
    mods = ("sphinx", "furo", "myst_parser", "numpydoc", "matplotlib")
    return [m for m in mods if importlib.util.find_spec(m) is None]


@pytest.mark.skipif(bool(_missing_docs_deps()), reason="docs extra not installed")
def test_docs_build_without_warnings(tmp_path):
    env = dict(os.environ, PYTHONSAFEPATH="1")
    cmd = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-q",
        "-b",
        "html",
        "-d",
        str(tmp_path / "doctrees"),
        str(DOCS),
        str(tmp_path / "html"),
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    html = tmp_path / "html"
    for page in PAGES:
        assert (html / f"{page.stem}.html").is_file(), page.name
    index = (html / "index.html").read_text(encoding="utf-8")
    for page in PAGES:  # every page is reachable from the table of contents
        if page.stem != "index":
            assert f'href="{page.stem}.html"' in index, page.name
    _check_api_pages(html)
    for img in ("accuracy-vs-epsilon.png", "output-distribution.png", "accuracy-vs-gamma.png"):
        assert (html / "_images" / img).is_file() or (html / "_static" / img).is_file()


def public_packages() -> set[str]:
    """The packages and modules an API page is for: ``snapcore``, each public module
    or package directly in it, and the built-in plugin packages."""
    import snapcore

    names = {"snapcore", "snapcore.backends", "snapcore.statistics"}
    for info in pkgutil.iter_modules(snapcore.__path__, "snapcore."):
        if not info.name.rpartition(".")[2].startswith("_"):
            names.add(info.name)
    return names


def test_every_public_package_has_an_api_page():
    pages = {p.stem for p in (DOCS / "api").glob("*.md")}
    assert pages == public_packages(), "add or remove docs/api/<package>.md"


def _check_api_pages(html: Path) -> None:
    index = (html / "api.html").read_text(encoding="utf-8")
    for package in public_packages():
        assert f'href="api/{package}.html"' in index, package
    root = (html / "api" / "snapcore.html").read_text(encoding="utf-8")
    # The front door opens on release(), then Release.
    first = re.findall(r'<dt class="sig sig-object py" id="([^"]+)"', root)
    assert first[:2] == ["snapcore.release", "snapcore.Release"], first[:5]
    analysis = (html / "api" / "snapcore.analysis.html").read_text(encoding="utf-8")
    assert 'id="snapcore.analysis.epsilon_for_accuracy"' in analysis
    for page in (html / "api").glob("*.html"):
        text = page.read_text(encoding="utf-8")
        private = re.findall(r'id="(?:module-)?(snapcore[\w.]*\._[a-z][\w.]*)"', text)
        assert not private, f"{page.name} documents private paths: {private[:5]}"


def drawn_tree() -> set[str]:
    """The paths drawn in the tree of docs/architecture.md ("## The tree"): each line
    is a name after four columns of tree drawing per level."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"^## The tree\n.*?^```text\n(.*?)^```", text, re.S | re.M)
    assert block, "docs/architecture.md has no tree (a text block under '## The tree')"
    paths: set[str] = set()
    stack: list[str] = []
    for line in block.group(1).splitlines():
        name = line.lstrip("│├└─ ")
        depth = (len(line) - len(name)) // 4
        stack[depth:] = [name.split()[0].rstrip("/")]
        paths.add("/".join(stack))
    return paths


def test_architecture_draws_the_tree():
    root = DOCS.parent
    files = {
        str(p.relative_to(root))
        for folder in ("snapcore", "backends", "statistics")
        for p in (root / folder).rglob("*.py")
        if p.name != "__init__.py" or p.parent.name == "snapcore"
    }
    folders = {str(Path(f).parent) for f in files}
    missing = (files | folders) - drawn_tree()
    assert not missing, f"not drawn in docs/architecture.md: {sorted(missing)}"
    stale = {d for d in drawn_tree() if d.endswith(".py") and d not in files}
    assert not stale, f"drawn in docs/architecture.md but not in the package: {sorted(stale)}"


def test_every_hook_is_documented_in_the_plugin_guide():
    from snapcore.plugins import _hookspecs as hookspecs

    hooks = [n for n in dir(hookspecs) if n.startswith("snapcore_")]
    assert hooks
    text = (DOCS / "plugins.md").read_text(encoding="utf-8")
    for name in hooks:
        assert f"`{name}(registry)`" in text, f"hook {name} missing from docs/plugins.md"


def test_plot_commands_in_the_docs_are_real_subcommands(cli):
    text = "\n".join(p.read_text(encoding="utf-8") for p in PAGES)
    cmds = set(re.findall(r"snapcore plot (\w+)", text))
    assert {"accuracy", "distribution", "gamma"} <= cmds
    for cmd in cmds:
        res = cli("plot", cmd, "--help")
        assert res.exit_code == 0, (cmd, res.output)
