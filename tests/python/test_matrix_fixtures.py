"""Each matrix entry's fixture package, probed by the static and the live channel, must be
described exactly as the matrix says (--check-matrix passes, and the JSON carries the facts)."""
import pytest

from conftest import MATRIX_PATH, make_fixture

MATRIX = make_fixture.load_matrix(MATRIX_PATH)
VERSIONS = [str(r["version"]) for r in MATRIX["releases"]]


def expected_ops(version):
    return make_fixture.release(MATRIX, version)["ops"]


def assert_matches_matrix(report, version, channel):
    rel = make_fixture.release(MATRIX, version)
    assert report["aiter"]["found"] is True
    assert report["aiter"]["distribution"] == rel["distribution"]
    assert report["aiter"]["version_source"] == "distribution metadata"
    assert report["aiter"]["matrix_entry"] == version
    assert report["check_matrix"] == {"matches": True, "differences": []}
    for name, want in rel["ops"].items():
        got = report["ops"][name]
        assert got["present"] == want["present"], (version, name)
        assert got["read_by"] == channel
        if not want["present"]:
            continue
        assert got["module"] == want["module"]
        assert got["params"] == want["params"]
        assert got["sinks"] == want["sinks"]
        assert got["window_arity"] == want.get("window_arity")
        for alias in want.get("aliases", []):
            assert got["import_paths"][alias].startswith("alias of"), (version, name, got["import_paths"])


@pytest.mark.parametrize("version", VERSIONS)
def test_static_probe_matches_matrix(cli, fixture_pkg, version):
    site, _ = fixture_pkg(version)
    report = cli.probe_json("--aiter-root", site, "--check-matrix", "--no-dlopen")
    assert_matches_matrix(report, version, "static")
    assert list(report["channels"]) == ["static"]


@pytest.mark.parametrize("version", VERSIONS)
def test_live_probe_matches_matrix(cli, fixture_pkg, version):
    site, pkg = fixture_pkg(version)
    report = cli.probe_json("--aiter-root", site, "--live", "--check-matrix", "--no-dlopen")
    assert_matches_matrix(report, version, "live")
    assert report["disagreements"] == []
    assert report["channels"]["live"]["import_error"] is None


def test_sinks_history(cli, fixture_pkg):
    """The facts engines trip on: sink_ptr from 0.1.10, unified_attention sinks from 0.1.6.post2."""
    old_site, _ = fixture_pkg("0.1.9.post1", subdir="old")
    new_site, _ = fixture_pkg("0.1.10", subdir="new")
    old = cli.probe_json("--aiter-root", old_site)
    new = cli.probe_json("--aiter-root", new_site)
    assert old["ops"]["flash_attn_varlen_func"]["sinks"] == "unsupported"
    assert "TypeError" in old["ops"]["flash_attn_varlen_func"]["sinks_reason"]
    assert new["ops"]["flash_attn_varlen_func"]["sinks"] == "supported"
    assert new["ops"]["pa_fwd_asm"]["sinks"] == "unsupported"
    assert "sink-ptr-typeerror" in [q["id"] for q in old["quirks"]]
    assert "sink-ptr-typeerror" not in [q["id"] for q in new["quirks"]]
