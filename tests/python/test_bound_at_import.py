"""Names bound to AITer's functions before install() ran, as engines bind them at import (SGLang's
aiter_backend: `from aiter import mha_batch_prefill_func, ...`; ATOM's attention_mha:
unified_attention): install() finds them in the stand-in engine's module below and rebinds those
held under AITer's own name to the routes, so the engine's calls through them are routed; it
reports them (bound_elsewhere(), one log line), leaves them with AITER_COMPAT_REBIND=0, leaves
a name held under another name unless AITER_COMPAT_REBIND=all, never touches a name the module
rebound itself, never reads what it cannot safely change; uninstall() puts AITer's functions
back where the route still is. Over fixture AITer 0.1.20.post1 in a fresh interpreter each."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import BUILD_PYTHON, SOURCE

TESTS = os.path.join(SOURCE, "tests", "python")
ENGINE = "fake_engine.backend"

BACKEND = '''"""A stand-in engine backend: binds AITer's names when it is imported."""
from aiter import flash_attn_varlen_func, mha_batch_prefill_func
from aiter.ops.triton.attention.unified_attention import unified_attention
from aiter import flash_attn_varlen_func as aiter_varlen  # under a name of its own
from aiter import flash_attn_func


def flash_attn_func(*args, **kwargs):  # the engine's own, over the name it imported
    return "the engine's own flash_attn_func"


class Backend:
    prefill = staticmethod(flash_attn_varlen_func)  # a class attribute: out of reach


def _captured(fn):
    return lambda: fn  # a closure cell: out of reach


captured = _captured(flash_attn_varlen_func)


def prefill(**kwargs):
    return flash_attn_varlen_func(**kwargs)


def extend(*args, **kwargs):
    return mha_batch_prefill_func(*args, **kwargs)


def decode(**kwargs):
    return unified_attention(**kwargs)
'''

PRELUDE = """
import json, sys
import aiter_compat, sglang_calls, vllm_calls
from aiter_compat._aiter_compat import PatchedFunction
import aiter, aiter.ops.mha as mha
import aiter.ops.triton.attention.unified_attention as ua
ORIGINALS = {"flash_attn_varlen_func": mha.flash_attn_varlen_func, "mha_batch_prefill_func": mha.mha_batch_prefill_func,
             "unified_attention": ua.unified_attention, "aiter_varlen": mha.flash_attn_varlen_func}

def held(module):
    # name -> "route" / "original" / "other", for the names the engine bound from AITer
    def what(v):
        if isinstance(v, PatchedFunction):
            return "route" if any(v.__wrapped__ is o for o in ORIGINALS.values()) else "another route"
        return "original" if any(v is o for o in ORIGINALS.values()) else "other"
    return {n: what(vars(module)[n]) for n in ("flash_attn_varlen_func", "mha_batch_prefill_func",
                                               "unified_attention", "aiter_varlen", "flash_attn_func")}

def calls(backend):
    args, kwargs = sglang_calls.extend((-1, -1))
    return {"prefill": vllm_calls.call_record(backend.prefill, vllm_calls.prefill(False)),
            "extend+sinks": vllm_calls.call_record(backend.extend, kwargs, args),
            "decode+sinks": vllm_calls.call_record(backend.decode, vllm_calls.decode(True))}

def out(**kw):
    print(json.dumps(kw))
"""


def run(fixture_pkg, tmp_path, code, env=None):
    site, _ = fixture_pkg("0.1.20.post1")
    engine = tmp_path / "engine"
    (engine / "fake_engine").mkdir(parents=True)
    (engine / "fake_engine" / "__init__.py").write_text("")
    (engine / "fake_engine" / "backend.py").write_text(BACKEND)
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join([BUILD_PYTHON, TESTS, site, str(engine)]),
                    PYTHONNOUSERSITE="1", AITER_COMPAT_LOG_LEVEL="info")
    for name in ("AITER_COMPAT_INSTALL", "AITER_COMPAT_REBIND"):
        full_env.pop(name, None)
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.splitlines()[-1]), proc.stderr


def elsewhere_lines(log):
    return [line for line in log.splitlines() if "bound outside aiter" in line or "put back outside aiter" in line]


REBOUND = [f"{ENGINE}.{n}" for n in ("flash_attn_varlen_func", "mha_batch_prefill_func", "unified_attention")]

INSTALL_AND_CALL = """
    import fake_engine.backend as backend   # the engine's import, before install()
    before = held(backend)
    installed = aiter_compat.install()
    during, report = held(backend), aiter_compat.bound_elsewhere()
    made = calls(backend)
    original = ORIGINALS["flash_attn_varlen_func"]
    out_of_reach = [backend.Backend.prefill is original, backend.captured() is original]
    restored = aiter_compat.uninstall()
    out(before=before, during=during, report=report, calls=made, stats=aiter_compat.stats(), out_of_reach=out_of_reach,
        restored=restored, installed=installed, after=held(backend), after_report=aiter_compat.bound_elsewhere(),
        own=backend.flash_attn_func())
"""


def test_names_bound_at_import_become_routes_until_uninstall(fixture_pkg, tmp_path):
    got, log = run(fixture_pkg, tmp_path, INSTALL_AND_CALL)
    assert got["before"] == {"flash_attn_varlen_func": "original", "mha_batch_prefill_func": "original",
                             "unified_attention": "original", "aiter_varlen": "original", "flash_attn_func": "other"}
    assert got["during"] == {"flash_attn_varlen_func": "route", "mha_batch_prefill_func": "route",
                             "unified_attention": "route", "aiter_varlen": "original", "flash_attn_func": "other"}
    # Reported: what was rebound, and the alias left with its reason. The engine's own
    # flash_attn_func, the class attribute and the closure hold no original found, and are not named.
    assert got["report"]["rebound"] == REBOUND
    assert got["report"]["left"] == [f"{ENGINE}.aiter_varlen"]
    assert got["report"]["reasons"] == {f"{ENGINE}.aiter_varlen": "held as aiter_varlen, not as "
                                        "flash_attn_varlen_func; AITER_COMPAT_REBIND=all rebinds it"}
    assert got["out_of_reach"] == [True, True]
    # The engine's calls through its own globals are routed: None keywords dropped (AITer called
    # directly would have received sink_ptr=None), counted, and a call the release cannot serve
    # correctly (0.1.14+: sink_ptr without sink_size) is kept from it.
    prefill = got["calls"]["prefill"]
    assert prefill["route"] == "aiter" and "sink_ptr" not in prefill["received"] and prefill["left_over"] == 0
    assert got["stats"]["flash_attn_varlen_func"] == {"aiter.ops.mha.flash_attn_varlen_func": 1}
    extend = got["calls"]["extend+sinks"]
    assert extend["route"] == "error", extend
    assert "quirk batch-prefill-sink-needs-sink-size" in " ".join(r for c in extend["candidates"] for r in c["reasons"])
    decode = got["calls"]["decode+sinks"]
    assert decode["route"] == "aiter" and "sinks" in decode["received"] and decode["same_objects"], decode
    # uninstall(): AITer's own objects back; its return value stays aiter's paths, install()'s list.
    assert got["after"] == got["before"] and got["own"] == "the engine's own flash_attn_func"
    assert set(got["restored"]) == set(got["installed"]) and not any(p.startswith(ENGINE) for p in got["restored"])
    assert got["after_report"] == {"rebound": [], "left": [], "reasons": {}}
    lines = elsewhere_lines(log)
    assert len(lines) == 2, log
    assert "[info]" in lines[0] and f"rebound {', '.join(REBOUND)}; left {ENGINE}.aiter_varlen (held as" in lines[0]
    assert lines[1].endswith("uninstall: AITer's functions put back outside aiter in " + ", ".join(REBOUND))


@pytest.mark.parametrize("flag", ["0", "off"])
def test_rebind_off_reports_and_leaves_them(fixture_pkg, tmp_path, flag):
    got, log = run(fixture_pkg, tmp_path, INSTALL_AND_CALL, env={"AITER_COMPAT_REBIND": flag})
    assert got["during"] == got["before"]  # nothing changed
    assert got["report"]["rebound"] == []
    assert got["report"]["left"] == sorted(REBOUND + [f"{ENGINE}.aiter_varlen"])
    assert set(got["report"]["reasons"].values()) == {f"AITER_COMPAT_REBIND={flag}: reported only"}
    prefill = got["calls"]["prefill"]
    assert prefill["route"] == "aiter" and "sink_ptr" in prefill["received"]  # AITer's function, called directly
    assert got["stats"] == {}
    (line,) = [line for line in elsewhere_lines(log)]
    assert "[info]" in line and "left " in line and "rebound" not in line, log


def test_rebind_all_takes_other_names_too(fixture_pkg, tmp_path):
    got, _ = run(fixture_pkg, tmp_path, INSTALL_AND_CALL, env={"AITER_COMPAT_REBIND": "all"})
    assert got["during"]["aiter_varlen"] == "route"
    assert got["report"]["rebound"] == sorted(REBOUND + [f"{ENGINE}.aiter_varlen"]) and got["report"]["left"] == []
    assert got["after"] == got["before"]


def test_unknown_rebind_value_warns_and_rebinds_aiters_names(fixture_pkg, tmp_path):
    got, log = run(fixture_pkg, tmp_path, INSTALL_AND_CALL, env={"AITER_COMPAT_REBIND": "maybe"})
    assert got["report"]["rebound"] == REBOUND
    (line, _) = elsewhere_lines(log)
    assert "[warning]" in line and "AITER_COMPAT_REBIND='maybe' is not one of 0/1/all" in line


def test_a_name_the_engine_rebinds_after_install_is_left_by_uninstall(fixture_pkg, tmp_path):
    got, log = run(fixture_pkg, tmp_path, """
        import fake_engine.backend as backend
        aiter_compat.install()
        def own_decode(**kw):
            return "the engine's own decode"
        backend.unified_attention = own_decode
        aiter_compat.uninstall()
        out(after=held(backend), own=backend.unified_attention is own_decode, report=aiter_compat.bound_elsewhere())
    """)
    assert got["own"] and got["after"]["unified_attention"] == "other"
    assert got["after"]["flash_attn_varlen_func"] == got["after"]["mha_batch_prefill_func"] == "original"
    assert got["report"]["rebound"] == []
    assert f"uninstall: left as they are: {ENGINE}.unified_attention: now holds function, not the route" in log, log


def test_a_second_install_rebinds_modules_imported_since(fixture_pkg, tmp_path):
    got, log = run(fixture_pkg, tmp_path, """
        first = aiter_compat.install()
        import fake_engine.backend as backend  # after install(): it binds the routes itself
        direct = held(backend)
        sys.modules["late_engine"] = late = type(sys)("late_engine")
        late.flash_attn_varlen_func = mha.flash_attn_varlen_func.__wrapped__  # an original kept since before
        again = aiter_compat.install()
        out(direct=direct, same=first == again, late=isinstance(late.flash_attn_varlen_func, PatchedFunction),
            report=aiter_compat.bound_elsewhere())
    """)
    assert got["direct"]["flash_attn_varlen_func"] == got["direct"]["unified_attention"] == "route"
    assert got["same"] and got["late"]
    assert got["report"]["rebound"] == ["late_engine.flash_attn_varlen_func"]
    assert len([line for line in elsewhere_lines(log) if "rebound" in line]) == 1, log


def test_what_cannot_be_read_safely_is_not_read(fixture_pkg, tmp_path):
    """A lazy module not yet loaded is not loaded by the scan (reading an attribute would execute
    it); an object in sys.modules that is not a module is not read at all."""
    got, log = run(fixture_pkg, tmp_path, """
        import importlib.util, os, tempfile
        folder = tempfile.mkdtemp()
        with open(os.path.join(folder, "lazy_engine.py"), "w") as f:
            f.write("import sys\\nsys.lazy_engine_ran = True\\nfrom aiter import flash_attn_varlen_func\\n")
        spec = importlib.util.spec_from_file_location("lazy_engine", os.path.join(folder, "lazy_engine.py"))
        spec.loader = importlib.util.LazyLoader(spec.loader)
        lazy = importlib.util.module_from_spec(spec)
        sys.modules["lazy_engine"] = lazy
        spec.loader.exec_module(lazy)
        class Proxy:
            def __getattribute__(self, name):
                raise RuntimeError(f"read {name}")
        sys.modules["proxy_engine"] = Proxy()
        got = aiter_compat.install()
        ran_at_install = getattr(sys, "lazy_engine_ran", False)
        out(ran_at_install=ran_at_install, patched=bool(got), report=aiter_compat.bound_elsewhere(),
            lazy_binds_route=isinstance(lazy.flash_attn_varlen_func, PatchedFunction))
    """)
    assert got["patched"] and got["ran_at_install"] is False
    assert got["report"] == {"rebound": [], "left": [], "reasons": {}}
    assert got["lazy_binds_route"]  # loaded when the program reads it, after install(): it binds the route
    assert "[warning]" not in log, log
