"""Compiles a Python source into what the probe embeds: this interpreter's bytecode magic number,
then the marshalled code object. The embedded interpreter loads it instead of compiling the
source at every start; when its own magic number differs it compiles the embedded source.

    CompilePython.py SOURCE OUTPUT CODE_FILENAME
"""
import importlib.util
import marshal
import sys

source, output, filename = sys.argv[1:4]
with open(source, encoding="utf-8") as f:
    code = compile(f.read(), filename, "exec", dont_inherit=True)
with open(output, "wb") as f:
    f.write(importlib.util.MAGIC_NUMBER + marshal.dumps(code))
