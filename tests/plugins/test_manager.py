"""The plugin manager (``snapcore.plugins._manager``): real entry-point discovery,
duplicates, selection by name, built-ins declared like third-party plugins, misspelt
hooks, unavailable backends, lazy registries, and a third-party statistic
(examples/snapcore-rangecount) found, released, run from the command line and passing
the statistic suite.

Third-party plugins are written here as real distributions: a module and a
``*.dist-info`` folder with ``METADATA`` and ``entry_points.txt`` in a temporary
directory put on ``sys.path``, found by ``importlib.metadata`` exactly as an
installed package would be.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from fractions import Fraction
from pathlib import Path

import pytest
import tomllib
from fresh_pytest import run_fresh_pytest
from hypothesis import given, settings, strategies as st

import snapcore
import snapcore.plugins._manager
from snapcore import (
    BackendUnavailableError,
    ParameterError,
    PluginError,
    ReplaySource,
    SnappingMechanism,
    hookimpl,
)
from snapcore.data._columns import as_dataset
from snapcore.plugins._manager import BUILTIN_PLUGINS, get_registries, make_plugin_manager

ROOT = Path(__file__).resolve().parents[2]

# A correctly rounded backend on exact rationals, built on the independent reference's
# rounding and Ziv-checked logarithm: a genuine second implementation of Arithmetic.
REF_BACKEND = '''
from fractions import Fraction

import snapcore
import snapcore.randomness._draw
import snapref
from snapcore import Arithmetic, Backend, hookimpl


class RefArithmetic(Arithmetic):
    def __init__(self, precision):
        self.precision = precision

    def from_dyadic(self, m, e):
        q = Fraction(m) * Fraction(2) ** e
        if snapref.round_p(q, self.precision, "RZ") != q:
            raise ValueError("more than p bits")
        return q

    def convert(self, q):
        return snapref.round_p(Fraction(q), self.precision)

    def add(self, a, b):
        return snapref.round_p(a + b, self.precision)

    def sub(self, a, b):
        return snapref.round_p(a - b, self.precision)

    def mul(self, a, b):
        return snapref.round_p(a * b, self.precision)

    def div(self, a, b):
        return snapref.round_p(a / b, self.precision)

    def ln(self, a):
        return snapref.ln_rn(a, self.precision)

    def to_dyadic(self, a):
        if a == 0:
            return (0, 0)
        d = a.denominator
        return (a.numerator, -(d.bit_length() - 1))


class RefBackend(Backend):
    name = "{backend}"
    library = "fractions"
    install_hint = "nothing to install"

    @classmethod
    def is_available(cls):
        return True

    def version(self):
        return "test"

    def arithmetic(self, precision):
        return RefArithmetic(precision)


class ConstantSource(snapcore.RandomSource):
    """Always S = -1, U* = 3/4."""

    name = "{source}"

    def draw(self, precision):
        return snapcore.randomness._draw.draw_from_u(Fraction(3, 4), -1, precision)


class CountStatistic:
    name = "{statistic}"
    sensitivity = 1


@hookimpl
def snapcore_register_backends(registry):
    registry.add(RefBackend)


@hookimpl
def snapcore_register_sources(registry):
    registry.add("{source}", ConstantSource)


@hookimpl
def snapcore_register_statistics(registry):
    registry.add(CountStatistic())
'''

GHOST_BACKEND = """
import importlib.util

from snapcore import Backend, hookimpl


class GhostBackend(Backend):
    name = "ghost"
    library = "snapcore_ghost_library_xyz"
    install_hint = "pip install snapcore-ghost-library-xyz"

    @classmethod
    def is_available(cls):
        return importlib.util.find_spec("snapcore_ghost_library_xyz") is not None

    def version(self):
        import snapcore_ghost_library_xyz

        return snapcore_ghost_library_xyz.__version__

    def arithmetic(self, precision):
        import snapcore_ghost_library_xyz

        return snapcore_ghost_library_xyz.Arithmetic(precision)


@hookimpl
def snapcore_register_backends(registry):
    registry.add(GhostBackend)
"""


def one_hook(hook: str, body: str) -> str:
    return textwrap.dedent(
        f"""
        from snapcore import Backend, hookimpl
        import snapcore.randomness._sources


        @hookimpl
        def {hook}(registry):
            {body}
        """
    )


class Distributions:
    """Writes fake installed distributions and puts their folders on sys.path."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.paths: list[str] = []
        self.modules: list[str] = []

    def add(
        self, dist: str, module: str, source: str, ep_name: str | None = None, folder: str = "site"
    ) -> Path:
        where = self.tmp / folder
        where.mkdir(exist_ok=True)
        (where / f"{module}.py").write_text(source)
        info = where / f"{dist.replace('-', '_')}-1.0.dist-info"  # normalized, as pip writes
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[snapcore]\n{ep_name or dist} = {module}\n")
        if str(where) not in self.paths:
            self.paths.append(str(where))
            sys.path.append(str(where))
        self.modules.append(module)
        importlib.invalidate_caches()
        snapcore.plugins._manager.reset()
        return where

    def cleanup(self) -> None:
        for p in self.paths:
            while p in sys.path:
                sys.path.remove(p)
        for m in self.modules:
            sys.modules.pop(m, None)
        importlib.invalidate_caches()
        snapcore.plugins._manager.reset()


@pytest.fixture
def dists(tmp_path):
    d = Distributions(tmp_path)
    snapcore.plugins._manager.reset()
    yield d
    d.cleanup()


# -- discovery of a third-party plugin ---------------------------------------------------


def test_third_party_plugin_discovered_and_used(dists):
    src = REF_BACKEND.format(backend="refexact", source="constant", statistic="count-test")
    dists.add("snapcore-refexact", "snapcore_refexact_plugin", src, ep_name="refexact")
    reg = get_registries()
    assert "refexact" in reg.backends and "mpfr" in reg.backends
    assert reg.backends.origin("refexact") == "refexact"
    assert reg.backends.origin("mpfr") == "mpfr"
    assert "constant" in reg.sources and reg.sources.origin("constant") == "refexact"
    assert "count-test" in reg.statistics
    assert reg.statistics.get("count-test").sensitivity == 1
    # The plugin's distribution is what pluggy loaded it from.
    dist_names = {d.project_name for _, d in reg.plugin_manager.list_plugin_distinfo()}
    assert "snapcore-refexact" in dist_names

    m = SnappingMechanism(epsilon=1.0, clamp_bound=8.0, backend="refexact", source="constant")
    assert type(m.backend).__module__ == "snapcore_refexact_plugin"
    assert m.source.name == "constant"
    ref = SnappingMechanism(
        epsilon=1.0,
        clamp_bound=8.0,
        backend="mpfr",
        source=ReplaySource([(-1, Fraction(3, 4))] * 3),
    )
    assert m.release(1.0) == ref.release(1.0)
    # A second, independent backend agrees with MPFR bit for bit on varied draws.
    p = m.precision
    for u in (
        Fraction(3, 4),
        1 - Fraction(1, 2**p),
        Fraction(1, 2**900),
        Fraction(2**p - 3, 2 ** (p + 5)),
    ):
        for v in (0.3, -7.9, 3.0, 1e9):
            for s in (1, -1):
                assert m.transform(v, u, s) == ref.transform(v, u, s)


def test_discovery_goes_through_importlib_metadata(dists):
    dists.add("snapcore-ghost", "snapcore_ghost_plugin", GHOST_BACKEND, ep_name="ghost")
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="snapcore")}
    assert eps["ghost"] == "snapcore_ghost_plugin"
    assert "ghost" in get_registries().backends
    # Without entry points only the built-ins are there.
    from snapcore.plugins._manager import Registries

    assert "ghost" not in Registries(make_plugin_manager(entry_points=False)).backends


# -- unavailable backends --------------------------------------------------------------


def test_unavailable_backend_raises_with_install_hint(dists):
    dists.add("snapcore-ghost", "snapcore_ghost_plugin", GHOST_BACKEND, ep_name="ghost")
    reg = get_registries()
    assert "ghost" in reg.backends.names()
    assert "ghost" not in reg.backends.available()
    assert "mpfr" in reg.backends.available()
    with pytest.raises(BackendUnavailableError) as info:
        SnappingMechanism(epsilon=1.0, clamp_bound=8.0, backend="ghost")
    err = info.value
    assert isinstance(err, ImportError) and isinstance(err, snapcore.SnapcoreError)
    msg = str(err)
    assert "'ghost'" in msg and "snapcore_ghost_library_xyz" in msg
    assert "pip install snapcore-ghost-library-xyz" in msg


def test_unavailable_backend_listed_by_cli(dists, cli):
    dists.add("snapcore-ghost", "snapcore_ghost_plugin", GHOST_BACKEND, ep_name="ghost")
    out = cli("info")
    assert out.exit_code == 0, (out.stdout, out.stderr)
    line = next(ln for ln in out.stdout.splitlines() if ln.strip().startswith("ghost"))
    assert "unavailable" in line and "pip install snapcore-ghost-library-xyz" in line


# -- duplicates -------------------------------------------------------------------------


def test_duplicate_backend_name_names_both_plugins(dists):
    body = (
        "registry.add(type('Imposter', (Backend,), {'name': 'mpfr', 'library': 'x', "
        "'install_hint': 'x', 'is_available': classmethod(lambda c: True), "
        "'version': lambda s: 'x', 'arithmetic': lambda s, p: None}))"
    )
    dists.add(
        "snapcore-imposter",
        "snapcore_imposter",
        one_hook("snapcore_register_backends", body),
        ep_name="imposter",
    )
    with pytest.raises(PluginError) as info:
        get_registries()
    msg = str(info.value)
    assert "'mpfr'" in msg and "imposter" in msg and "by mpfr" in msg


def test_duplicate_source_name_names_both_plugins(dists):
    body = "registry.add('system', snapcore.randomness._sources.SystemSource)"
    dists.add(
        "snapcore-twin",
        "snapcore_twin",
        one_hook("snapcore_register_sources", body),
        ep_name="twin",
    )
    with pytest.raises(PluginError, match=r"source 'system' is registered twice: by .*"):
        get_registries()
    with pytest.raises(PluginError) as info:
        get_registries()
    assert "sources" in str(info.value) and "twin" in str(info.value)


def test_duplicate_statistic_between_two_third_party_plugins(dists):
    stat = "registry.add(type('S', (), {'name': 'median-test'})())"
    dists.add(
        "snapcore-stat-a",
        "snapcore_stat_a",
        one_hook("snapcore_register_statistics", stat),
        ep_name="stat-a",
    )
    dists.add(
        "snapcore-stat-b",
        "snapcore_stat_b",
        one_hook("snapcore_register_statistics", stat),
        ep_name="stat-b",
    )
    with pytest.raises(PluginError) as info:
        get_registries()
    msg = str(info.value)
    assert "'median-test'" in msg and "stat-a" in msg and "stat-b" in msg


def test_third_party_entry_point_cannot_take_a_builtin_plugin_name(dists):
    """A third-party distribution declaring an entry point named like a built-in
    plugin ("sources") must not silently replace the built-in."""
    body = "registry.add('other', snapcore.randomness._sources.SystemSource)"
    dists.add(
        "snapcore-squatter",
        "snapcore_squatter",
        one_hook("snapcore_register_sources", body),
        ep_name="sources",
        folder="first",
    )
    # Put the squatter ahead of the real installation on sys.path.
    sys.path.remove(dists.paths[0])
    sys.path.insert(0, dists.paths[0])
    with pytest.raises(PluginError) as info:
        get_registries()
    msg = str(info.value)
    assert "'sources'" in msg and "snapcore (built-in)" in msg and "snapcore-squatter" in msg


def test_two_third_party_entry_points_with_one_name(dists):
    """pluggy would keep whichever comes first on sys.path and drop the other."""
    body = "registry.add('x-{}', snapcore.randomness._sources.SystemSource)"
    dists.add(
        "snapcore-one",
        "snapcore_one",
        one_hook("snapcore_register_sources", body.format(1)),
        ep_name="same",
        folder="one",
    )
    dists.add(
        "snapcore-two",
        "snapcore_two",
        one_hook("snapcore_register_sources", body.format(2)),
        ep_name="same",
        folder="two",
    )
    with pytest.raises(PluginError) as info:
        get_registries()
    assert "'same'" in str(info.value)
    assert "snapcore-one" in str(info.value) and "snapcore-two" in str(info.value)


# -- selection is by name, never by load order --------------------------------------


def test_selection_by_name_not_load_order(dists):
    a = REF_BACKEND.format(backend="alpha", source="const-a", statistic="stat-a")
    b = REF_BACKEND.format(backend="beta", source="const-b", statistic="stat-b")
    dists.add("snapcore-alpha", "snapcore_alpha", a, ep_name="alpha", folder="a")
    dists.add("snapcore-beta", "snapcore_beta", b, ep_name="beta", folder="b")
    seen = []
    for order in (dists.paths, dists.paths[::-1]):
        for p in order:
            sys.path.remove(p)
        sys.path[0:0] = order
        importlib.invalidate_caches()
        snapcore.plugins._manager.reset()
        reg = get_registries()
        loaded = [n for n, _ in reg.plugin_manager.list_name_plugin() if n in ("alpha", "beta")]
        seen.append(loaded)
        assert reg.backends.get("alpha").__module__ == "snapcore_alpha"
        assert reg.backends.get("beta").__module__ == "snapcore_beta"
        m = SnappingMechanism(epsilon=1.0, clamp_bound=8.0, backend="beta", source="const-a")
        assert type(m.backend).__module__ == "snapcore_beta"
        assert type(m.source).__module__ == "snapcore_alpha"
        # The default stays MPFR whatever else is installed.
        assert SnappingMechanism(epsilon=1.0, clamp_bound=8.0).backend.name == "mpfr"
        assert reg.backends.names() == sorted(reg.backends.names())
    assert seen[0] != seen[1], "both orders should really have been exercised"


def test_unknown_names_list_the_choices():
    with pytest.raises(ParameterError, match=r"backend must be one of \[.*'mpfr'.*\], got 'MPFR'"):
        get_registries().backends.get("MPFR")
    with pytest.raises(ParameterError, match="source must be one of"):
        get_registries().sources.get("urandom")


# -- built-ins are declared as entry points --------------------------------------------


def test_builtin_plugins_match_pyproject_entry_points():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = data["project"]["entry-points"]["snapcore"]
    assert declared == BUILTIN_PLUGINS


def test_builtin_plugins_match_installed_entry_points():
    eps = importlib.metadata.entry_points(group="snapcore")
    ours = {ep.name: ep.value for ep in eps if ep.dist is not None and ep.dist.name == "snapcore"}
    assert ours == BUILTIN_PLUGINS, (
        "the installed metadata is stale: reinstall with pip install -e ."
    )


def test_builtin_modules_import_and_register_under_their_names():
    pm = make_plugin_manager(entry_points=False)
    for name, modname in BUILTIN_PLUGINS.items():
        assert pm.get_plugin(name) is importlib.import_module(modname)
    pm2 = make_plugin_manager(entry_points=True)
    for name, modname in BUILTIN_PLUGINS.items():
        assert pm2.get_plugin(name) is importlib.import_module(modname)


# -- misspelt hooks ------------------------------------------------------------------


def test_misspelt_hook_in_a_plugin_object_fails_loudly():
    class Throwaway:
        @hookimpl
        def snapcore_register_backend(self, registry):  # missing "s"
            raise AssertionError("never called")

    with pytest.raises(PluginError, match="snapcore_register_backend'") as info:
        make_plugin_manager(entry_points=False, plugins=[Throwaway()])
    assert "snapcore_register_backends" in str(info.value)  # the hooks that exist


def test_misspelt_hook_in_an_installed_plugin_fails_loudly(dists):
    dists.add(
        "snapcore-typo",
        "snapcore_typo_plugin",
        one_hook("snapcore_register_statistic", "pass"),
        ep_name="typo",
    )
    with pytest.raises(PluginError, match="snapcore_register_statistic'"):
        get_registries()


# -- lazy registries ---------------------------------------------------------------------


def test_builtin_declarations_are_what_the_builtins_register():
    """BUILTIN_PROVIDES (names known without importing) against an eager load of every
    built-in through its hooks."""
    from snapcore.plugins._manager import BUILTIN_PROVIDES, Registries

    reg = Registries(make_plugin_manager(entry_points=False))
    registered: dict[str, dict[str, tuple[str, ...]]] = {}
    for kind in ("backends", "sources", "statistics"):
        r = getattr(reg, kind)
        for name in r.names():
            registered.setdefault(r.origin(name), {}).setdefault(kind, ())
            registered[r.origin(name)][kind] += (name,)
    assert registered == BUILTIN_PROVIDES
    # the lazy registries hold what an eager load of the same plugins (the built-ins and
    # any installed through entry points) registers
    full = Registries(make_plugin_manager())
    lazy = get_registries()
    for kind in ("backends", "sources", "statistics"):
        assert getattr(lazy, kind).names() == getattr(full, kind).names()
        assert set(getattr(reg, kind).names()) <= set(getattr(lazy, kind).names())


def test_a_release_imports_only_the_plugins_it_uses():
    code = textwrap.dedent(
        """
        import sys
        import snapcore
        from snapcore.plugins._manager import get_registries
        m = snapcore.SnappingMechanism(epsilon=1.0, clamp_bound=4.0, timing="off")
        m.release(1.0)
        reg = get_registries()
        names = (reg.backends.names(), reg.statistics.names(), reg.sources.names())
        from snapcore.plugins._manager import BUILTIN_PLUGINS
        mods = lambda: sorted(m for m in BUILTIN_PLUGINS.values() if m in sys.modules)
        print(mods())
        print(names)
        assert reg.backends.get("mpmath").name == "mpmath"
        assert reg.statistics.get("count").name == "count"
        print(mods())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    # the plugin modules loaded by the names a release uses.
    assert out[0] == "['snapcore.backends.mpfr', 'snapcore.plugins._chacha20']"
    assert "'arb'" in out[1] and "'histogram'" in out[1] and "'seeded'" in out[1]
    assert out[2] == (
        "['snapcore.backends.mpfr', 'snapcore.backends.mpmath_backend', "
        "'snapcore.plugins._chacha20', 'snapcore.statistics.counting']"
    )


def test_a_declared_name_the_plugin_does_not_register_is_an_error():
    from snapcore.plugins._manager import Registries

    pm = make_plugin_manager(entry_points=False, builtins=False)
    reg = Registries(pm, {"mpfr": ("snapcore.backends.mpfr", {"backends": ("mpfr", "ghost")})})
    assert reg.backends.names() == ["ghost", "mpfr"] and not reg.backends.loaded("mpfr")
    with pytest.raises(PluginError, match=r"'mpfr' declares backends \['ghost'\]"):
        reg.backends.get("mpfr")


# -- the entry-point scan reads only the distributions that declare snapcore's group ----

PLAIN_PLUGIN = textwrap.dedent(
    """
    from snapcore import hookimpl
    """
)


def _full_scan_paths() -> list[str]:
    """The metadata folders declaring the snapcore group, by importlib.metadata alone."""
    return [
        str(d._path)  # type: ignore[attr-defined]
        for d in importlib.metadata.distributions()
        if any(ep.group == "snapcore" for ep in d.entry_points)
    ]


@pytest.fixture
def standard_finders(monkeypatch):
    """Only the standard library's distribution finder (a library imported by another
    test, such as the importlib_metadata backport, may add its own, which makes the
    narrow scan defer to importlib.metadata: tested below)."""
    from importlib.machinery import PathFinder

    kept = [f for f in sys.meta_path if f is PathFinder or not hasattr(f, "find_distributions")]
    monkeypatch.setattr(sys, "meta_path", kept)
    if not hasattr(PathFinder, "find_distributions"):  # the backport took it away
        finder = importlib.metadata.MetadataPathFinder.find_distributions
        monkeypatch.setattr(PathFinder, "find_distributions", finder, raising=False)


def test_narrow_scan_finds_what_importlib_metadata_finds_in_its_order(
    dists, tmp_path, standard_finders
):
    from snapcore.plugins._manager import _check_entry_point_names, _declaring_distributions

    # Declaring and non-declaring distributions, names that group together after
    # normalization, another group whose text mentions snapcore, an *.egg-info folder
    # and an EGG-INFO folder inside an *.egg folder on sys.path.
    dists.add("zeta-plugin", "zeta_plugin_mod", PLAIN_PLUGIN, ep_name="zeta")
    dists.add("alpha.plugin", "alpha_plugin_mod", PLAIN_PLUGIN, ep_name="alpha")
    where = dists.add("Alpha_Plugin", "alpha2_plugin_mod", PLAIN_PLUGIN, ep_name="alpha2")
    other = where / "unrelated-2.0.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: unrelated\nVersion: 2.0\n")
    (other / "entry_points.txt").write_text("[console_scripts]\nsnapcore-x = unrelated:main\n")
    bare = where / "bare-1.0.dist-info"
    bare.mkdir()
    (bare / "METADATA").write_text("Metadata-Version: 2.1\nName: bare\nVersion: 1.0\n")
    legacy = where / "legacy_plugin.egg-info"
    legacy.mkdir()
    (legacy / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: legacy-plugin\nVersion: 1\n")
    (legacy / "entry_points.txt").write_text("[snapcore]\nlegacy = alpha_plugin_mod\n")
    egg = tmp_path / "eggy_plugin-1.0-py3.11.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: eggy\nVersion: 1\n")
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[snapcore]\neggy = zeta_plugin_mod\n")
    sys.path.append(str(egg))
    dists.paths.append(str(egg))
    importlib.invalidate_caches()

    narrow = _declaring_distributions()
    assert narrow is not None
    # It may keep a distribution whose file only mentions snapcore (read, then skipped).
    got = [str(d._path) for d in narrow if any(ep.group == "snapcore" for ep in d.entry_points)]
    assert got == _full_scan_paths()
    names = {Path(p).name for p in got}
    assert {"zeta_plugin-1.0.dist-info", "alpha.plugin-1.0.dist-info"} <= names
    assert {"Alpha_Plugin-1.0.dist-info", "legacy_plugin.egg-info", "EGG-INFO"} <= names
    assert not names & {"unrelated-2.0.dist-info", "bare-1.0.dist-info"}
    found = _check_entry_point_names()
    for name in ("zeta", "alpha", "alpha2", "legacy", "eggy"):
        assert name in found


def test_narrow_scan_gives_the_full_scans_names_and_errors(dists, monkeypatch, standard_finders):
    import snapcore.plugins._manager as plugins

    assert plugins._declaring_distributions() is not None

    dists.add("snapcore-one", "snapcore_one_mod", PLAIN_PLUGIN, ep_name="one")
    narrow = plugins._check_entry_point_names()
    monkeypatch.setattr(plugins, "_declaring_distributions", lambda: None)
    assert plugins._check_entry_point_names() == narrow
    monkeypatch.undo()
    assert narrow["one"] == "snapcore_one_mod"

    # Two distributions declaring one name with different targets: the same message
    # either way, naming both distributions.
    dists.add("snapcore-two", "snapcore_two_mod", PLAIN_PLUGIN, ep_name="one", folder="later")
    message = (
        "plugin name 'one' is declared twice: by snapcore-one (snapcore_one_mod) and by "
        "snapcore-two (snapcore_two_mod)"
    )
    with pytest.raises(PluginError) as narrow_error:
        plugins._check_entry_point_names()
    assert str(narrow_error.value) == message
    monkeypatch.setattr(plugins, "_declaring_distributions", lambda: None)
    with pytest.raises(PluginError) as full_error:
        plugins._check_entry_point_names()
    assert str(full_error.value) == message


def test_a_plugin_named_like_a_built_in_is_refused_by_name(dists):
    dists.add("snapcore-evil", "snapcore_evil_mod", PLAIN_PLUGIN, ep_name="sources")
    with pytest.raises(PluginError) as exc:
        get_registries()
    assert str(exc.value) == (
        "plugin name 'sources' is declared twice: by snapcore (built-in) and by "
        "snapcore-evil (snapcore_evil_mod)"
    )


def test_plugin_installed_after_a_scan_is_found(dists):
    where = dists.add("snapcore-early", "snapcore_early_mod", PLAIN_PLUGIN, ep_name="early")
    assert "late" not in snapcore.plugins._manager._check_entry_point_names()
    get_registries()
    # Installed into a folder already on sys.path, after the registries were built.
    src = REF_BACKEND.format(backend="latecomer", source="late-src", statistic="late-count")
    assert dists.add("snapcore-late", "snapcore_late_mod", src, ep_name="late") == where
    assert snapcore.plugins._manager._check_entry_point_names()["late"] == "snapcore_late_mod"
    reg = get_registries()  # dists.add reset the process-wide registries
    assert "latecomer" in reg.backends and reg.backends.origin("latecomer") == "late"


class _OtherFinder:
    """A meta-path finder that also supplies distributions (as zipapp tools do)."""

    @staticmethod
    def find_spec(*args, **kwargs):
        return None

    @staticmethod
    def find_distributions(*args, **kwargs):
        return iter(())


def test_narrow_scan_defers_to_importlib_metadata_when_it_cannot_follow_it(
    monkeypatch, tmp_path, standard_finders
):
    from snapcore.plugins._manager import _declaring_distributions

    assert _declaring_distributions() is not None
    standard = sys.meta_path
    monkeypatch.setattr(sys, "meta_path", [*standard, _OtherFinder()])
    assert _declaring_distributions() is None
    monkeypatch.setattr(sys, "meta_path", standard)
    archive = tmp_path / "plugins.zip"
    import zipfile

    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zipped-1.0.dist-info/entry_points.txt", "[snapcore]\nzipped = zipped\n")
        zf.writestr("zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(archive)])
    assert _declaring_distributions() is None
    assert snapcore.plugins._manager._check_entry_point_names()["zipped"] == "zipped"
    monkeypatch.setattr(sys, "path", sys.path[:-1])
    assert _declaring_distributions() is not None
    from importlib.machinery import PathFinder

    monkeypatch.delattr(PathFinder, "find_distributions")  # importlib.metadata finds none
    assert _declaring_distributions() is None


# -- a third-party statistic: examples/snapcore-rangecount -------------------------------
# Copied into a temporary directory with a ``*.dist-info`` declaring its entry point,
# that directory put on ``sys.path`` and the registries rebuilt: exactly what
# ``pip install`` of the plugin gives.

EXAMPLE = ROOT / "examples" / "snapcore-rangecount"


@pytest.fixture
def installed_plugin(tmp_path: Path):
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(EXAMPLE / "snapcore_rangecount.py", site)
    dist = site / "snapcore_rangecount-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: snapcore-rangecount\nVersion: 0.1.0\n"
    )
    (dist / "entry_points.txt").write_text("[snapcore]\nrangecount = snapcore_rangecount\n")
    sys.path.insert(0, str(site))
    snapcore.plugins._manager.reset()
    try:
        yield get_registries()
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("snapcore_rangecount", None)
        snapcore.plugins._manager.reset()


def test_third_party_statistic_discovered_through_entry_point(installed_plugin):
    reg = installed_plugin.statistics
    assert "range_count" in reg.names()
    assert reg.origin("range_count") == "rangecount"  # the entry-point name
    assert {"count", "mean", "histogram"} <= set(reg.names())  # built-ins still there


def test_release_with_the_third_party_statistic(installed_plugin):
    ages = [15.0, 22.0, 29.0, 30.0, 31.0, 64.0, 18.0]
    r = snapcore.release(
        "range_count", ages, epsilon=1, low=18, high=30, source=snapcore.SeededSource(5)
    )
    assert r.statistic == "range_count" and r.sensitivity == 1 and r.value_range == (0, 7)
    lo, hi = r.clamp_bounds
    assert lo <= r.value <= hi
    with pytest.raises(ParameterError, match="unknown option"):
        snapcore.release("range_count", ages, epsilon=1, low=1, high=2, width=3)
    with pytest.raises(ParameterError, match="needs both options"):
        snapcore.release("range_count", ages, epsilon=1, low=1)


@settings(max_examples=60, deadline=None)
@given(
    xs=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=40),
    new=st.floats(allow_nan=False, allow_infinity=False),
    i=st.integers(0, 39),
    low=st.floats(-1e6, 1e6),
    width=st.floats(0, 1e6),
)
def test_plugin_sensitivity_property(xs, new, i, low, width):
    # The plugin is ordinary code: import it from the example directory.
    sys.path.insert(0, str(EXAMPLE))
    try:
        import snapcore_rangecount as rc
    finally:
        sys.path.remove(str(EXAMPLE))
    stat = rc.RangeCount()
    ys = list(xs)
    ys[i % len(xs)] = new
    hi = low + width
    for rel, n in ((snapcore.Neighbouring.REPLACE, None), (snapcore.Neighbouring.ADD_REMOVE, 30)):
        p = stat.prepare(as_dataset(xs), data_bounds=None, n=n, relation=rel, low=low, high=hi)
        q = stat.prepare(as_dataset(ys), data_bounds=None, n=n, relation=rel, low=low, high=hi)
        assert abs(Fraction(p.values[0]) - Fraction(q.values[0])) <= p.sensitivity == 1
        assert 0 <= p.values[0] <= p.b_prime
        if rel is snapcore.Neighbouring.REPLACE:
            assert p.values[0] == sum(low <= x <= hi for x in xs)


def test_plugin_from_the_cli(cli, installed_plugin):
    r = cli("release", "range_count", "-c", "age", "-o", "low=18", "-o", "high=30", "-e", "1")
    assert r.exit_code == 0, r.stderr
    assert "range_count" in r.stdout and "released value" in r.stdout


def test_the_plugin_passes_the_statistic_suite_from_its_own_tests(tmp_path):
    # The example's tests/ holds one line, `TestRangeCount = statistic_suite(RangeCount)`;
    # run them as the plugin's author would, in a fresh pytest.
    junit = tmp_path / "out.xml"
    proc = run_fresh_pytest(
        EXAMPLE, EXAMPLE, EXAMPLE / "tests", junit, tmp_path, "-m", "not slow", timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    # 7 default tests x 2 option sets x 2 relations (the slow one deselected)
    assert len(cases) == 7 * 2 * 2, [c.get("name") for c in cases]
    assert not [c for c in cases if len(c)], "a test did not pass"
    # the suite's markers are registered by snapcore's pytest plugin (entry point)
    assert "PytestUnknownMarkWarning" not in proc.stdout + proc.stderr
