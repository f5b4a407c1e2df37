"""The probe lists every public function of the package with a sink-like parameter that the op
table (and so compat_matrix.yaml) does not describe, in JSON and in the human report, so a new
sink-taking entry point is seen the day it appears; known entry points, private names and
private modules are not listed."""
import os


def add(pkg, rel, text):
    path = os.path.join(pkg, *rel.split("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


def test_unknown_sink_functions_are_listed(cli, fixture_pkg):
    site, pkg = fixture_pkg("0.1.20.post1")
    add(pkg, "ops/new_attention.py", "def paged_decode_v9(q, k, v, sinks=None):\n    pass\n\n"
                                     "def _helper(q, sink=None):\n    pass\n\n"
                                     "def no_sink(q, sink_size=0):\n    pass\n")
    add(pkg, "ops/mla.py", "def mla_decode_v4(q, kv, *, attn_sink=None):\n    pass\n")
    add(pkg, "ops/triton/_triton_kernels/kern.py", "def kernel(q, sink_ptr):\n    pass\n")
    report = cli.probe_json("--aiter-root", site)
    listed = {(f["module"], f["function"], f["param"]) for f in report["unknown_sink_functions"]}
    assert listed == {("aiter.ops.new_attention", "paged_decode_v9", "sinks"), ("aiter.ops.mla", "mla_decode_v4", "attn_sink")}
    human = cli.run("probe", "--aiter-root", site).stdout
    assert "sink_functions:" in human and "aiter.ops.new_attention.paged_decode_v9(sinks=)" in human


def test_known_entry_points_are_not_listed(cli, fixture_pkg):
    site, _ = fixture_pkg("0.1.20.post1")
    report = cli.probe_json("--aiter-root", site)
    assert report["unknown_sink_functions"] == [], report["unknown_sink_functions"]
    assert "sink_functions:" not in cli.run("probe", "--aiter-root", site).stdout
