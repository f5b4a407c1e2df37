"""The benchmark users run (`aiter-compat bench`, aiter_compat.bench) reaches only what the
module has: it runs on GPU machines alone, so a name it uses that the module lacks would only
show there, mid-run (as `_force_kernel_row` once did)."""
import ast
import os

import pytest

import aiter_compat
from conftest import BUILD_PYTHON


def test_every_module_name_the_benchmark_uses_exists():
    path = os.path.join(BUILD_PYTHON, "aiter_compat", "bench.py")
    tree = ast.parse(open(path).read())
    used = {n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "aiter_compat"}
    assert "_force_kernel_row" in used and "paged_attention_decode" in used
    missing = sorted(name for name in used if not hasattr(aiter_compat, name))
    assert missing == [], f"aiter_compat lacks {missing}"


def test_forcing_a_kernel_row_names_an_unknown_one():
    aiter_compat._force_kernel_row(None)
    with pytest.raises(Exception) as e:
        aiter_compat._force_kernel_row("no_such_row")
    assert "no_such_row" in str(e.value)
    aiter_compat._force_kernel_row("generic")
    aiter_compat._force_kernel_row(None)


def test_bench_without_torch_says_so_and_exits_0(capsys):
    from aiter_compat import bench
    if bench.torch is not None:
        pytest.skip("torch is installed here: the no-torch answer needs a machine without it")
    assert bench.main([]) == 0
    assert "torch is not installed" in capsys.readouterr().out
