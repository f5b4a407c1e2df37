"""The static reader parses only the top-level statements that mention an entry point, cut from
the text: the cut must find exactly the statements the compiler sees, whatever strings, comments,
brackets and clauses do around them, and the probe must read what a whole-file parse reads."""
import ast
import glob
import os
import sys

import pytest

from conftest import SOURCE

sys.path.insert(0, os.path.join(SOURCE, "probe", "python"))
import static_reading  # noqa: E402  (imports only built-in modules and os)

TRICKY = [
    # a docstring whose lines at column 0 look like code
    '"""Module.\ndef flash_attn_varlen_func(q):\n    pass\nx = 1\n"""\nimport os\n',
    # strings with escaped quotes, raw strings, nested quotes, a triple-quoted f-string
    "a = 'it\\'s'\nb = r\"\\\"\"\nc = f\"{'x'}\"\nd = f'''{a}\n'''\ne = 1\n",
    # a comment holding quotes and a backslash, then a backslash continuation
    "# don't \\\nx = 1 + \\\n2\ny = 3\n",
    # a bracketed import with names at column 0, and a closing bracket at column 0
    "from .mha import (\nflash_attn_varlen_func,\nflash_attn_func,\n)\nz = [\n1,\n]\n",
    # decorators, one spanning lines, then clauses of compound statements
    "@a\n@b(\n  1)\ndef f():\n    pass\nif x:\n    y = 1\nelif z:\n    pass\nelse:\n    pass\n"
    "try:\n    pass\nexcept ValueError:\n    pass\nfinally:\n    pass\nelse_value = 1\n",
    # several statements on one line, a class, an async def
    "a = 1; b = 2\nclass C:\n    x = '''\nstill the class\n'''\nasync def g():\n    pass\n",
]


def statement_lines(source):
    tree = ast.parse(source)
    return sorted({min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])]) for n in tree.body})


@pytest.mark.parametrize("source", TRICKY)
def test_statements_cut_from_tricky_text_are_the_compilers(source):
    data = source.encode()
    _, statements = static_reading.top_level_statements(data)
    assert [line for _, _, line in statements] == statement_lines(data)
    # The pieces follow each other to the end of the file, and each parses on its own.
    assert all(statements[i][1] == statements[i + 1][0] for i in range(len(statements) - 1))
    assert statements[-1][1] == len(data)
    for begin, end, _ in statements:
        ast.parse(data[begin:end])


def test_statements_of_the_standard_library_are_the_compilers():
    """Hundreds of modules of every style: the cut must match the compiler on each."""
    files = sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "*.py")))
    assert len(files) > 100, files[:3]
    mismatched = []
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        try:
            want = statement_lines(data)
        except SyntaxError:
            continue  # lib2to3 fixtures and the like
        got = [line for _, _, line in static_reading.top_level_statements(data)[1]]
        if got != want:
            mismatched.append(path)
    assert mismatched == []


def test_the_probe_reads_what_a_whole_parse_reads(cli, fixture_pkg):
    """The last top-level binding wins: a string holding `name = None` at column 0 after the
    definition is not a binding; a rebinding after it is, and leaves the parameters unreadable."""
    site, pkg = fixture_pkg("0.1.12")
    path = f"{pkg}/ops/mha.py"
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write('"""\nflash_attn_varlen_func = None\ndef flash_attn_func(x):\n    pass\n"""\n' + text +
                "NOTE = '''\nflash_attn_varlen_func = None\n'''\nmha_batch_prefill_func = flash_attn_func\n")
    ops = cli.probe_json("--aiter-root", site)["ops"]
    assert ops["flash_attn_varlen_func"]["params"][-1] == "sink_ptr"
    assert len(ops["flash_attn_func"]["params"]) > 1
    assert ops["mha_batch_prefill_func"]["params"] is None
    assert any("bound by assignment" in n for n in ops["mha_batch_prefill_func"]["notes"])


def test_a_syntax_error_anywhere_in_a_known_module_is_reported(cli, fixture_pkg):
    """Only the entry point's statements are parsed, but the whole file is checked: a module that
    cannot be imported is not described as if it could."""
    site, pkg = fixture_pkg("0.1.12")
    with open(f"{pkg}/ops/attention.py", "a") as f:
        f.write("\n\ndef unrelated(:\n    pass\n")
    op = cli.probe_json("--aiter-root", site)["ops"]["pa_fwd_asm"]
    assert op["present"] is False and op["sinks"] == "unknown"
    assert any("SyntaxError" in e["error"] and "attention.py" in e["where"] for e in op["errors"])
