"""Entry points outside their known modules are found by name, by both channels: moved to a new
module, re-exported through __init__ files, defined twice. The known path wins when it has one."""
import pytest

from conftest import MATRIX_PATH, make_fixture

MATRIX = make_fixture.load_matrix(MATRIX_PATH)
CHANNELS = [("static",), ("live", "--live")]


def params_of(version, name):
    return make_fixture.release(MATRIX, version)["ops"][name]["params"]


def probe(cli, site, channel, *extra, expect_rc=0):
    report = cli.probe_json("--aiter-root", site, "--no-dlopen", *channel[1:], *extra, expect_rc=expect_rc)
    if channel[0] == "live":
        assert report["channels"]["live"]["import_error"] is None, report["channels"]["live"]
        assert report["disagreements"] == [], report["disagreements"]
    return report


NEW_UNIFIED = "aiter.ops.triton.attention.unified.unified_attention"


@pytest.mark.parametrize("channel", CHANNELS, ids=lambda c: c[0])
def test_moved_to_a_new_module_behind_a_new_compat_map(cli, fixture_pkg, channel):
    """As a release after v0.1.20.post1 might: unified_attention in a new subpackage, the known
    new path gone, the old one kept working by the compatibility map: read through the map."""
    site, _ = fixture_pkg("0.1.20.post1", moved={"unified_attention": NEW_UNIFIED},
                          compat_map={"unified_attention": "attention.unified.unified_attention"})
    report = probe(cli, site, channel)
    op = report["ops"]["unified_attention"]
    assert op["present"] is True and op["module"] == NEW_UNIFIED, op
    assert op["located_by"] == "known path"
    assert op["read_by"] == channel[0]
    assert op["params"] == params_of("0.1.20.post1", "unified_attention")
    assert op["sinks"] == "supported" and op["sinks_reason"] == "takes sinks"
    assert op["import_paths"]["aiter.ops.triton.attention.unified_attention"] == "absent"
    assert op["import_paths"]["aiter.ops.triton.unified_attention"] == f"alias of {NEW_UNIFIED}"
    assert any(NEW_UNIFIED + " is a new location" in n for n in op["notes"]), op["notes"]
    # Everything else is where the matrix says.
    assert report["ops"]["flash_attn_varlen_func"]["located_by"] == "known path"
    assert report["ops"]["flash_attn_varlen_func"]["notes"] == []


@pytest.mark.parametrize("channel", CHANNELS, ids=lambda c: c[0])
def test_moved_to_a_new_module_found_by_name(cli, fixture_pkg, channel):
    """Moved, and no compatibility map points there: only a search by name finds it."""
    site, _ = fixture_pkg("0.1.20.post1", moved={"unified_attention": NEW_UNIFIED}, compat_map={})
    op = probe(cli, site, channel)["ops"]["unified_attention"]
    assert op["present"] is True and op["module"] == NEW_UNIFIED, op
    assert op["located_by"] == "name search"
    assert op["params"] == params_of("0.1.20.post1", "unified_attention")
    assert op["sinks"] == "supported"
    assert op["import_paths"]["aiter.ops.triton.attention.unified_attention"] == "absent"
    assert op["import_paths"]["aiter.ops.triton.unified_attention"] == "absent"
    assert any("not at its known module paths (aiter.ops.triton.attention.unified_attention, "
               "aiter.ops.triton.unified_attention); found by name search in " + NEW_UNIFIED in n
               for n in op["notes"]), op["notes"]
    assert any(NEW_UNIFIED + " is a new location" in n for n in op["notes"]), op["notes"]


def test_a_new_location_is_a_matrix_difference(cli, fixture_pkg):
    site, _ = fixture_pkg("0.1.20.post1", moved={"unified_attention": NEW_UNIFIED}, compat_map={})
    proc = cli.run("probe", "--aiter-root", site, "--check-matrix")
    assert proc.returncode == 4, proc.stdout
    assert ("ops.unified_attention.module: matrix 0.1.20.post1 expects "
            f"aiter.ops.triton.attention.unified_attention, found {NEW_UNIFIED}") in proc.stdout


@pytest.mark.parametrize("channel", CHANNELS, ids=lambda c: c[0])
def test_reexported_through_init_files(cli, fixture_pkg, channel):
    """Defined in a module nobody knows, re-exported by aiter.ops and by aiter itself."""
    impl = "aiter.ops.attention_impl.varlen"
    site, _ = fixture_pkg("0.1.12", moved={"flash_attn_varlen_func": impl},
                          reexports={"aiter.ops": ["flash_attn_varlen_func"], "aiter": ["flash_attn_varlen_func"]})
    with open(f"{site}/aiter/__init__.py") as f:
        assert "from .ops.attention_impl.varlen import flash_attn_varlen_func" in f.read()
    op = probe(cli, site, channel)["ops"]["flash_attn_varlen_func"]
    assert op["present"] is True and op["module"] == impl, op
    assert op["located_by"] == "name search"
    assert op["params"] == params_of("0.1.12", "flash_attn_varlen_func")
    assert op["sinks"] == "supported"
    assert op["exported"] is True
    assert op["import_paths"]["aiter.ops.mha"] == "module without it"
    if channel[0] == "static":
        assert op["import_paths"]["aiter.ops"] == f"re-export of {impl}"
        assert op["import_paths"][impl] == "defined"


def test_reexport_chain_is_followed_to_the_definition(cli, fixture_pkg):
    """aiter.ops.decode re-exports from .kernels, which re-exports from .kernels.asm."""
    site, pkg = fixture_pkg("0.1.12", moved={"pa_fwd_asm": "aiter.ops.decode.kernels.asm"},
                            reexports={"aiter.ops.decode.kernels": ["pa_fwd_asm"]})
    with open(f"{pkg}/ops/decode/__init__.py", "w") as f:
        f.write("from .kernels import pa_fwd_asm as pa_fwd_asm\n")
    op = cli.probe_json("--aiter-root", site)["ops"]["pa_fwd_asm"]
    assert op["module"] == "aiter.ops.decode.kernels.asm"
    assert op["params"] == params_of("0.1.12", "pa_fwd_asm")
    assert op["import_paths"]["aiter.ops.decode"] == "re-export of aiter.ops.decode.kernels.asm"
    assert op["import_paths"]["aiter.ops.decode.kernels"] == "re-export of aiter.ops.decode.kernels.asm"


@pytest.mark.parametrize("channel", CHANNELS, ids=lambda c: c[0])
def test_known_path_wins_over_a_second_definition(cli, fixture_pkg, channel):
    site, _ = fixture_pkg("0.1.12", also_defined={"pa_fwd_asm": {"aiter.ops.asm_v2": ["Q", "K", "V"]}})
    op = probe(cli, site, channel)["ops"]["pa_fwd_asm"]
    assert op["module"] == "aiter.ops.attention"
    assert op["located_by"] == "known path"
    assert op["params"] == params_of("0.1.12", "pa_fwd_asm")
    assert op["notes"] == []


@pytest.mark.parametrize("channel", CHANNELS, ids=lambda c: c[0])
def test_two_new_definitions_the_one_aiter_exports_wins(cli, fixture_pkg, channel):
    site, _ = fixture_pkg("0.1.12", moved={"pa_fwd_asm": "aiter.ops.zz_decode"},
                          also_defined={"pa_fwd_asm": {"aiter.ops.a_decode": ["Q", "K", "V"]}},
                          reexports={"aiter": ["pa_fwd_asm"]})
    op = probe(cli, site, channel)["ops"]["pa_fwd_asm"]
    assert op["module"] == "aiter.ops.zz_decode", op
    assert op["params"] == params_of("0.1.12", "pa_fwd_asm")
    if channel[0] == "static":
        assert any(n.startswith("also defined in aiter.ops.a_decode") for n in op["notes"]), op["notes"]


def test_two_new_definitions_otherwise_by_depth_then_name(cli, fixture_pkg):
    site, _ = fixture_pkg("0.1.12", moved={"pa_fwd_asm": "aiter.ops.deeper.zz_decode"},
                          also_defined={"pa_fwd_asm": {"aiter.ops.b_decode": ["Q", "K"],
                                                       "aiter.ops.a_decode": ["Q", "K", "V"]}})
    op = cli.probe_json("--aiter-root", site)["ops"]["pa_fwd_asm"]
    assert op["module"] == "aiter.ops.a_decode"
    assert op["params"] == ["Q", "K", "V"]
    assert any("also defined in aiter.ops.b_decode, aiter.ops.deeper.zz_decode" in n for n in op["notes"]), op["notes"]


def test_a_broken_known_module_is_not_replaced_by_another_definition(cli, fixture_pkg):
    """aiter.ops.mha fails to parse: flash_attn_varlen_func is broken there, and another function
    of that name elsewhere (as aiter.ops.triton has) is not what aiter.flash_attn_varlen_func is."""
    site, pkg = fixture_pkg("0.1.12", also_defined={"flash_attn_varlen_func": {"aiter.ops.triton.mha": None}})
    with open(f"{pkg}/ops/mha.py", "a") as f:
        f.write("def broken(:\n")
    op = cli.probe_json("--aiter-root", site)["ops"]["flash_attn_varlen_func"]
    assert op["present"] is False and op["sinks"] == "unknown"
    assert op["located_by"] is None
    assert "aiter.ops.triton.mha" not in op["import_paths"]


def test_mentioning_the_name_is_not_defining_it(cli, fixture_pkg):
    """Comments, strings, calls and attribute reads name an entry point without binding it."""
    site, pkg = fixture_pkg("0.1.5")
    with open(f"{pkg}/ops/notes.py", "w") as f:
        f.write("# unified_attention arrives in 0.1.6.post2\n"
                "DOC = '''\nunified_attention = None\n'''\n"
                "def use(aiter):\n    return aiter.unified_attention(1)\n")
    op = cli.probe_json("--aiter-root", site)["ops"]["unified_attention"]
    assert op["present"] is False and op["located_by"] is None
    assert op["sinks_reason"] == "entry point not found"
