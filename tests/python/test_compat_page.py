"""docs/compatibility.md is tools/compat_page.py's output for compat_matrix.yaml, and the
generator's pieces (version order, specifier sets, joining rows, the routed set) are right."""
import importlib.util
import os

import pytest
import yaml

from conftest import MATRIX_PATH, RNG, SOURCE

PAGE_PATH = os.path.join(SOURCE, "docs", "compatibility.md")
SCRIPT_PATH = os.path.join(SOURCE, "tools", "compat_page.py")


def _load_script():
    spec = importlib.util.spec_from_file_location("compat_page_under_test", SCRIPT_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cp = _load_script()


# ---------------------------------------------------------------------------------------------
# The page itself

def test_page_is_generated_from_the_matrix():
    expected = cp.render(cp.load_matrix(MATRIX_PATH))
    with open(PAGE_PATH, encoding="utf-8") as f:
        current = f.read()
    assert current == expected, (
        f"docs/compatibility.md is not what tools/compat_page.py makes of compat_matrix.yaml; "
        f"regenerate it: cd {SOURCE} && {cp.REGENERATE}")


def test_routed_table_describes_what_the_extension_routes():
    extension, why = cp.extension_routed()
    if extension is None:
        pytest.skip(f"the aiter_compat extension is not importable ({why}): ROUTED is used as it is")
    problem = cp.routed_mismatch(extension)
    assert not problem, problem


def test_page_names_every_op_and_quirk_of_the_matrix():
    matrix = cp.load_matrix(MATRIX_PATH)
    page = cp.render(matrix)
    for op in {op for r in matrix["releases"] for op in r.get("ops") or {}}:
        assert f"\n## `{op}`\n" in page, op
    for q in matrix.get("quirks") or []:
        assert f"\n### `{q['id']}`\n" in page, q["id"]


# ---------------------------------------------------------------------------------------------
# Version order

# (a, b, sign of a - b): hard expectations, whatever packaging says.
ORDER = [
    ("1.0", "1.0.1", -1),
    ("1.0", "1.0.0", 0),
    ("1", "1.0.0.0", 0),
    ("0.1.10", "0.1.10.1", -1),
    ("0.1.10.1", "0.1.10.post1", 1),
    ("0.1.10.post1", "0.1.10", 1),
    ("0.1.9", "0.1.10", -1),
    ("0.1.9.post1", "0.1.10", -1),
    ("0.1.5.post4", "0.1.6", -1),
    ("0.1.7.post2.dev18", "0.1.7.post2", -1),
    ("0.1.7.post2.dev18", "0.1.7.post1", 1),
    ("0.1.7.post2.dev18", "0.1.7.post2.dev19", -1),
    ("1.0.dev1", "1.0rc1", -1),
    ("1.0rc1.dev1", "1.0rc1", -1),
    ("1.0rc1", "1.0", -1),
    ("1.0rc1", "1.0rc2", -1),
    ("1.0a1", "1.0b1", -1),
    ("1.0b2", "1.0rc1", -1),
    ("1.0.dev1", "1.0", -1),
    ("1.0.post1.dev1", "1.0.post1", -1),
    ("1.0.post1.dev1", "1.0", 1),
    ("1.0.post1", "1.0.1.dev1", -1),
    ("0.1.12+rocm7.2", "0.1.12", 0),
    ("0.1.12+rocm7.2.manylinux_2_28", "0.1.12+rocm7.1", 0),
    ("0.1.12+rocm7.2", "0.1.12.post1", -1),
    ("0.1.11.post1+local", "0.1.12", -1),
    ("v0.1.12", "0.1.12", 0),
    ("main", "0.1.20.post1", 1),
    ("main", "99.0.post9", 1),
    ("main", "main", 0),
]


@pytest.mark.parametrize("a,b,sign", ORDER)
def test_version_order_hard_expectations(a, b, sign):
    assert cp.compare_versions(a, b) == sign
    assert cp.compare_versions(b, a) == -sign
    assert (cp.Version(a) == cp.Version(b)) == (sign == 0)
    assert (cp.Version(a) < cp.Version(b)) == (sign < 0)


def _packaging_version():
    try:
        from packaging import version
    except ImportError as e:
        reason = f"packaging is not importable ({e}): checked against the hard expectations only"
        print(reason)
        pytest.skip(reason)
    return version


def test_version_order_agrees_with_packaging():
    version = _packaging_version()
    texts = sorted({t for a, b, _ in ORDER for t in (a, b) if t != "main"})
    with open(MATRIX_PATH, encoding="utf-8") as f:
        texts += [str(r["version"]) for r in yaml.safe_load(f)["releases"] if str(r["version"]) != "main"]

    def public(t):  # the order ignores local labels, as the probe's does
        return version.Version(version.Version(t).public)

    for a in texts:
        for b in texts:
            pa, pb = public(a), public(b)
            want = (pa > pb) - (pa < pb)
            assert cp.compare_versions(a, b) == want, (a, b)


def test_matrix_releases_are_in_ascending_order():
    releases = [str(r["version"]) for r in cp.load_matrix(MATRIX_PATH)["releases"]]
    for a, b in zip(releases, releases[1:]):
        assert cp.compare_versions(a, b) < 0, (a, b)


@pytest.mark.parametrize("bad", ["", "x1.0", "1.0-foo", "1..0", "1.0+", "1.0.post", "latest"])
def test_bad_versions_are_refused(bad):
    with pytest.raises(ValueError):
        cp.Version(bad)


# (version, specifier set, contained): hard expectations.
SPECS = [
    ("0.1.10", ">=0.1.10,<0.1.18", True),
    ("0.1.17", ">=0.1.10,<0.1.18", True),
    ("0.1.18", ">=0.1.10,<0.1.18", False),
    ("0.1.9.post1", ">=0.1.10,<0.1.18", False),
    ("0.1.9.post1", "<0.1.10", True),
    ("0.1.7.post2.dev18", "<0.1.10", True),
    ("0.1.7.post2.dev18", ">=0.1.7.post2", False),
    ("0.1.15", ">=0.1.15.post1", False),
    ("0.1.15.post1", ">=0.1.15.post1", True),
    ("0.1.12+rocm7.2", ">=0.1.12", True),
    ("0.1.12+rocm7.2", "<0.1.12", False),
    ("0.1.12+rocm7.2", "==0.1.12", True),
    ("0.1.12+rocm7.2", "<=0.1.12", True),
    ("0.1.12", "!=0.1.12", False),
    ("0.1.13", "!=0.1.12", True),
    ("0.1.13", " >= 0.1.10 , < 0.1.18 ", True),
    ("0.1.1", "", True),
    ("main", ">=0.1.10", True),
    ("main", ">=0.1.10,<0.1.18", False),
    ("main", "<0.1.10", False),
]


@pytest.mark.parametrize("v,spec,inside", SPECS)
def test_specifier_sets_hard_expectations(v, spec, inside):
    assert cp.version_in(v, spec) is inside


def test_specifier_sets_agree_with_packaging():
    _packaging_version()
    from packaging.specifiers import SpecifierSet
    for v, spec, _ in SPECS:
        if v == "main" or not spec.strip():
            continue
        assert cp.version_in(v, spec) == SpecifierSet(spec).contains(v, prereleases=True), (v, spec)


@pytest.mark.parametrize("bad", ["0.1.10", "=>0.1.10", ">=", ">=0.1.10,,~0.2"])
def test_bad_specifiers_are_refused(bad):
    with pytest.raises(ValueError):
        cp.parse_specifier(bad)


# ---------------------------------------------------------------------------------------------
# Joining rows

def test_collapse_never_joins_rows_that_differ():
    for _ in range(300):
        n = int(RNG.integers(1, 12))
        kinds = int(RNG.integers(1, 4))
        rows = [(f"0.{i}", (str(int(RNG.integers(0, kinds))), "x")) for i in range(n)]
        out = cp.collapse(rows)
        index = {v: i for i, (v, _) in enumerate(rows)}
        covered = []
        for label, cells in out:
            first, _, last = label.partition(" - ")
            last = last or first
            span = rows[index[first]:index[last] + 1]
            assert span and all(c == cells for _, c in span), (rows, out)
            covered += [v for v, _ in span]
        assert covered == [v for v, _ in rows]
        for (_, a), (_, b) in zip(out, out[1:]):
            assert a != b, out


SYNTHETIC = {
    "schema_version": 1,
    "releases": [
        # Each release differs from the one before in exactly one column of op `alpha`'s table,
        # except 1.0.post1, which equals 1.0, and 1.6, which equals 1.0 but not its neighbour.
        {"version": "1.0", "ops": {"alpha": {"present": True, "module": "m.a", "sinks": "unsupported",
                                             "window_arity": 2, "params": ["q", "k"]}}},
        {"version": "1.0.post1", "ops": {"alpha": {"present": True, "module": "m.a", "sinks": "unsupported",
                                                   "window_arity": 2, "params": ["q", "k", "extra"]}}},
        {"version": "1.1", "ops": {"alpha": {"present": True, "module": "m.b", "sinks": "unsupported",
                                             "window_arity": 2, "params": ["q", "k"]}}},
        {"version": "1.2", "ops": {"alpha": {"present": True, "module": "m.b", "sinks": "unsupported",
                                             "window_arity": 3, "params": ["q", "k"]}}},
        {"version": "1.3", "ops": {"alpha": {"present": True, "module": "m.b", "sinks": "supported",
                                             "window_arity": 3, "params": ["q", "k"]}}},
        {"version": "1.4", "ops": {"alpha": {"present": True, "module": "m.b", "sinks": "supported",
                                             "window_arity": 3, "params": ["q", "k", "sinks"]}}},
        {"version": "1.5", "ops": {"alpha": {"present": True, "module": "m.b", "sinks": "supported",
                                             "window_arity": 3, "params": ["q", "k", "sinks"]},
                                   "beta": {"present": True, "module": "m.c", "params": ["x"]}}},
        {"version": "1.6", "ops": {"alpha": {"present": True, "module": "m.a", "sinks": "unsupported",
                                             "window_arity": 2, "params": ["q", "k"]},
                                   "beta": {"present": False}}},
        {"version": "main", "ops": {"alpha": {"present": False}, "beta": {"present": True, "module": "m.c",
                                                                         "params": ["x"]}}},
    ],
    "quirks": [
        {"id": "late-drop", "versions": ">=1.5,<1.6", "archs": ["gfx950"], "ops": ["alpha"],
         "effect": "sinks_ignored", "summary": "drops sinks"},
        {"id": "harmless", "versions": "==1.4", "archs": [], "ops": ["alpha"], "effect": "semantic_change",
         "summary": "a note"},
        {"id": "needs-param", "versions": ">=1.0", "archs": [], "ops": ["beta"], "requires_param": "y",
         "effect": "wrong_result", "summary": "never applies: beta has no y"},
    ],
}


def _tables(page):
    """{op: [row cells]} from the page's tables."""
    tables, op = {}, None
    for line in page.splitlines():
        if line.startswith("## `"):
            op = line[4:-1]
            tables[op] = []
        elif op and line.startswith("| ") and not line.startswith("| release") and not line.startswith("| ---"):
            tables[op].append([c.strip() for c in line.strip("|").split(" | ")])
    return tables


def test_collapse_in_a_synthetic_matrix(tmp_path):
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(SYNTHETIC, sort_keys=False))
    routed = {"alpha": cp.Route("fallback", "the test's kernels")}
    page = cp.render(cp.load_matrix(str(path)), routed)
    tables = _tables(page)
    assert list(tables) == ["alpha", "beta"]
    alpha = tables["alpha"]
    assert [r[0] for r in alpha] == ["1.0 - 1.0.post1", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "main"]
    for a, b in zip(alpha, alpha[1:]):
        assert a[1:] != b[1:], (a, b)
    rows = {r[0]: dict(zip(cp.COLUMNS, r)) for r in alpha}
    assert rows["1.0 - 1.0.post1"]["aiter-compat does"] == "AITer; calls with sinks: fallback"
    assert rows["1.3"]["sink param"] == cp.NONE and rows["1.4"]["sink param"] == "`sinks`"
    assert rows["1.4"]["quirks"] == "`harmless`"
    assert rows["1.4"]["aiter-compat does"] == "AITer, sinks included"
    assert rows["1.5"]["quirks"] == "`late-drop` (gfx950)"
    assert rows["1.5"]["aiter-compat does"] == "AITer, sinks included; calls hit by `late-drop` (gfx950): fallback"
    assert rows["1.6"]["quirks"] == cp.NONE
    assert rows["main"]["present"] == "no" and rows["main"]["aiter-compat does"] == "all calls: fallback"
    beta = tables["beta"]
    assert [r[0] for r in beta] == ["1.0 - 1.4", "1.5", "1.6", "main"]
    assert beta[0][1] == "not recorded"
    assert all(r[-1] == "reported by the probe; not routed" for r in beta)
    assert all(r[6] == cp.NONE for r in beta)  # needs-param: beta never has y
    for q in SYNTHETIC["quirks"]:
        assert f"### `{q['id']}`" in page


# ---------------------------------------------------------------------------------------------
# The command line

@pytest.fixture
def no_extension(monkeypatch):
    monkeypatch.setattr(cp, "extension_routed", lambda: (None, "kept out by the test"))


def test_write_then_check(tmp_path, no_extension, capsys):
    out = tmp_path / "page.md"
    assert cp.main([MATRIX_PATH, "--write", str(out)]) == 0
    assert out.read_text() == cp.render(cp.load_matrix(MATRIX_PATH))
    assert cp.main([MATRIX_PATH, "--check", str(out)]) == 0
    out.write_text(out.read_text().replace("| yes |", "| maybe |", 1))
    capsys.readouterr()
    assert cp.main([MATRIX_PATH, "--check", str(out)]) == 1
    captured = capsys.readouterr()
    assert "-| 0.1.1" in captured.out or "| maybe |" in captured.out
    assert captured.out.startswith("--- ")
    assert cp.REGENERATE in captured.err
    assert cp.main([MATRIX_PATH, "--check", str(tmp_path / "absent.md")]) == 1


def test_check_fails_when_routed_differs_from_the_extension(tmp_path, monkeypatch, capsys):
    out = tmp_path / "page.md"
    out.write_text(cp.render(cp.load_matrix(MATRIX_PATH)))
    extension = {op: (op, ["m"]) for op in cp.ROUTED}
    monkeypatch.setattr(cp, "extension_routed", lambda: (extension, None))
    assert cp.main([MATRIX_PATH, "--check", str(out)]) == 0
    extension["new_routed_op"] = ("new_routed_op", ["m"])
    del extension["unified_attention"]
    capsys.readouterr()
    assert cp.main([MATRIX_PATH, "--check", str(out)]) == 3
    err = capsys.readouterr().err
    assert "new_routed_op" in err and "unified_attention" in err and "ROUTED" in err
    # --write still writes, from ROUTED, with a warning
    assert cp.main([MATRIX_PATH, "--write", str(out)]) == 0
    assert "warning" in capsys.readouterr().err
