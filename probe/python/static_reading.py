# Reads AITer's sources with the compiler's AST, never importing them: a module's top-level bindings, a
# function's parameter list, what aiter/__init__.py re-exports, compatibility maps. Embedded
# into the probe (as the module _aiter_compat_static_reading) beside aiter_introspect.py.
#
# Only files that can matter are read: the known modules of each entry point, and (name_search.py)
# files whose text names it. A file whose text does not contain the name cannot bind it, so it
# is not parsed. Each module read, and each package above an entry point's module, is compiled
# as an import would compile it (or its valid __pycache__ file read, as an import would), so
# that a module that cannot be imported is never described as if it could.
#
# Nodes come from _ast (what `ast` re-exports) and trees from compile(): importing `ast` itself
# (contextlib, enum, ...) costs a fifth of a probe; it is imported only for what _ast lacks
# (literal_eval and unparse of an unusual default or decorator).
import _ast
import _imp
import marshal
import os
import sys


def error_of(where, exc):
    """{where, error} for the report: "SyntaxError: msg (line N)" or "Type: message"."""
    line = getattr(exc, "lineno", None)
    text = f"{type(exc).__name__}: {exc}"
    if line is not None and isinstance(exc, SyntaxError):
        text = f"SyntaxError: {exc.msg} (line {line})"
    return {"where": where, "error": text}


# Every byte but line ends, as a space: a string or comment blanked keeps its lines.
_BLANK = bytes(c if c in (10, 13) else 32 for c in range(256))


def _blank_strings_and_comments(data):
    """data with every comment and the inside of every string literal (all but its first quote)
    replaced by spaces, line ends kept, so what is left is code: brackets can be counted, and a
    line that starts with a character starts a statement or continues one. Written with
    bytes.find rather than `re` (importing re costs more than this takes); exact for source that
    compiles."""
    n, pos, pieces = len(data), 0, []
    hashes, singles, doubles = data.find(b"#"), data.find(b"'"), data.find(b'"')
    while True:
        if 0 <= hashes < pos:
            hashes = data.find(b"#", pos)
        if 0 <= singles < pos:
            singles = data.find(b"'", pos)
        if 0 <= doubles < pos:
            doubles = data.find(b'"', pos)
        found = [x for x in (hashes, singles, doubles) if x >= 0]
        if not found:
            break
        start = min(found)
        if start == hashes:
            end = data.find(b"\n", start)
            end = n if end < 0 else end
        else:
            quote = data[start:start + 1]
            if data.startswith(quote * 3, start):
                quote *= 3
            p = start + len(quote)
            while True:
                e = data.find(quote, p)
                if e < 0:
                    e = n
                    break
                k = e
                while k > p and data[k - 1] == 92:  # backslashes before it: an odd count escapes it
                    k -= 1
                if (e - k) % 2 == 0:
                    break
                p = e + 1
            end = min(n, e + len(quote))
        pieces.append(data[pos:start])
        if start == hashes:
            pieces.append(data[start:end].translate(_BLANK))
        else:  # the opening quote stays: a line may start with a string statement (a docstring)
            pieces.append(data[start:start + 1] + data[start + 1:end].translate(_BLANK))
        pos = end
    pieces.append(data[pos:])
    return b"".join(pieces)


_CLAUSES = (b"else", b"elif", b"except", b"finally")  # continue the compound statement above


def _is_clause(line):
    for word in _CLAUSES:
        after = line[len(word):len(word) + 1]
        if line.startswith(word) and not (after.isalnum() or after == b"_"):
            return True
    return False


def top_level_statements(data):
    """(code, [(begin, end, first line)]): data with strings and comments blanked, and the
    module's top-level statements (a decorated definition with its decorators; an if/try with
    its clauses), found from the text alone."""
    code = _blank_strings_and_comments(data)
    out = []
    depth, counted, offset, line_no, decorators = 0, 0, 0, 1, False
    for line in code.split(b"\n"):
        first = line[:1]
        if first and first not in b" \t\f\r":
            chunk = code[counted:offset]
            depth += chunk.count(b"(") + chunk.count(b"[") + chunk.count(b"{") \
                - chunk.count(b")") - chunk.count(b"]") - chunk.count(b"}")
            counted = offset
            continued = code[max(0, offset - 3):max(0, offset - 1)].rstrip(b"\r").endswith(b"\\")
            if depth == 0 and not continued and not _is_clause(line) and first not in b")]}":
                if decorators:  # the definition (or the next decorator) belongs to them
                    decorators = first == b"@"
                else:
                    if out:
                        out[-1][1] = offset
                    out.append([offset, len(data), line_no])
                    decorators = first == b"@"
        offset += len(line) + 1
        line_no += 1
    return code, [tuple(s) for s in out]


def without_body(data, code, begin, end):
    """A function definition's text up to the colon that ends its signature, with `pass` for a
    body (its decorators and parameters are what is read, and a body can be thousands of lines);
    any other statement whole. code is data with strings and comments blanked."""
    head = begin
    while code.startswith(b"@", head):  # decorators: one line each, or bracketed over several
        head = _past_brackets(code, head, end, b"\n") + 1
    if not (code.startswith(b"def ", head) or code.startswith(b"async def ", head)):
        return data[begin:end]
    colon = _past_brackets(code, head, end, b":")
    if colon >= end:
        return data[begin:end]
    return data[begin:colon + 1] + b" pass\n"


def _past_brackets(code, pos, end, stop):
    """The offset of the first `stop` byte after pos with as many brackets closed as opened since
    pos (end if none): counted with bytes.count, a signature holds only a few candidates."""
    at = pos
    while True:
        i = code.find(stop, at, end)
        if i < 0:
            return end
        opened = code.count(b"(", pos, i) + code.count(b"[", pos, i) + code.count(b"{", pos, i)
        if opened == code.count(b")", pos, i) + code.count(b"]", pos, i) + code.count(b"}", pos, i):
            return i
        at = i + 1


_CODE = type(compile("", "", "exec"))
_CO_NEWLOCALS = 0x2  # a function's code (a class body's has its own namespace, not new locals)


def _bindings_agree(tree, code, words):
    """Whether statements parsed one by one tell the same as the module's compiled code about
    each word: the same top-level functions of that name starting at the same lines (a function's
    code starts at its first decorator), and no import binding it that the code never names. A
    disagreement means the statements were cut wrong, and the file is parsed whole instead. (An
    import is in the parts whenever it is in the file: its text names the word, so its statement
    is taken; a cut through it would not parse.)"""
    functions = [c for c in code.co_consts if isinstance(c, _CODE) and c.co_flags & _CO_NEWLOCALS]
    for word in words:
        code_defs = {c.co_firstlineno for c in functions if c.co_name == word}
        tree_defs, imported = set(), False
        for node in module_level(tree.body):
            if isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef)) and node.name == word:
                tree_defs.add(min([node.lineno] + [d.lineno for d in node.decorator_list]))
            elif isinstance(node, (_ast.Import, _ast.ImportFrom)):
                imported = imported or any((al.asname or al.name.split(".")[0]) == word for al in node.names)
        if code_defs != tree_defs or (imported and word not in code.co_names):
            return False
    return True


def _cached_code(path, data):
    """The code an import of path would load from its __pycache__ file rather than compile (the
    cached file checked as importlib checks it: this interpreter's magic number, then the
    source's mtime and size, or its hash), or None. Reading it costs a fraction of compiling a
    large module, and an install's files are usually cached (pip compiles them)."""
    try:
        ext = sys.modules["_frozen_importlib_external"]  # importlib's own checks, loaded at start-up
        with open(ext.cache_from_source(path), "rb") as f:
            cached = f.read()
        flags = ext._classify_pyc(cached, path, {})
        if flags & 0b1:
            if _imp.check_hash_based_pycs != "never" and (flags & 0b10 or _imp.check_hash_based_pycs == "always"):
                ext._validate_hash_pyc(cached, _imp.source_hash(ext._RAW_MAGIC_NUMBER, data), path, {})
        else:
            st = os.stat(path)
            ext._validate_timestamp_pyc(cached, int(st.st_mtime), st.st_size, path, {})
        code = marshal.loads(memoryview(cached)[16:])
        return code if isinstance(code, _CODE) else None
    except Exception:  # no cached file, a stale or foreign one, an interpreter without caching
        return None


def compile_as_import(data, path):
    """The module's code as an import makes it from source (importlib's source_to_code): every
    error that import would raise before running the module is raised here, those the parser
    sees and those only code generation sees ('return' outside a function, a late __future__
    import, too many nested blocks)."""
    return compile(data, path, "exec", dont_inherit=True)


class Sources:
    """The package's source files by module name; each read once. A module is compiled whole as
    an import compiles it (an error anywhere makes it unimportable), but only its top-level
    statements that mention a word asked for are turned into an AST: building the AST of
    aiter/ops/mha.py (140 kB) took most of a probe's time, and the entry points are a few
    statements in it."""

    def __init__(self, pkg):
        self.pkg = pkg
        self.base = os.path.dirname(pkg)
        self.texts = {}
        self.codes = {}   # module -> (code, None) | (None, error) | (None, None): no such file
        self.shapes = {}  # module -> ("error", err) | ("whole", tree) | ("parts", code, statements, parsed)

    def path_of(self, module):
        rel = module.replace(".", os.sep)
        for cand in (rel + ".py", os.path.join(rel, "__init__.py")):
            full = os.path.join(self.base, cand)
            if os.path.isfile(full):
                return full
        return None

    def keep_text(self, module, data):
        """Text already read elsewhere (the name search), so it is not read twice."""
        self.texts.setdefault(module, data)

    def text(self, module):
        """(bytes or None, error or None); None without error: no such module file."""
        if module not in self.texts:
            path = self.path_of(module)
            if path is None:
                self.texts[module] = None
            else:
                try:
                    with open(path, "rb") as f:
                        self.texts[module] = f.read()
                except OSError as exc:
                    self.texts[module] = error_of(path, exc)
        data = self.texts[module]
        return (None, data) if isinstance(data, dict) else (data, None)

    def mentions(self, module, word):
        data, _ = self.text(module)
        return data is not None and word.encode() in data

    def compiled(self, module):
        """(code, None), (None, error), or (None, None) where the module has no file; once per
        module. The code is what an import would run: the cached file's when it is valid for
        the source, else the source compiled."""
        if module not in self.codes:
            data, err = self.text(module)
            if data is None:
                self.codes[module] = (None, err)
            else:
                path = self.path_of(module)
                code = _cached_code(path, data)
                try:
                    self.codes[module] = (code or compile_as_import(data, path), None)
                except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
                    self.codes[module] = (None, error_of(path, exc))
        return self.codes[module]

    def import_error(self, module):
        """The first package of module's import path (aiter, aiter.ops, ...) whose __init__.py does
        not compile, as {where, error}: importing module runs those files first, so it fails
        there. None when they all compile (the module's own file is read, and so compiled, by
        whoever asks this)."""
        parts = module.split(".")
        for i in range(1, len(parts)):
            package = ".".join(parts[:i])
            path = self.path_of(package)
            if path is None or os.path.basename(path) != "__init__.py":
                continue  # a namespace package runs no file
            _, err = self.compiled(package)
            if err:
                return {"where": err["where"], "error": f"{err['error']}; importing {module} runs this file first"}
        return None

    def _shape(self, module, data):
        if module not in self.shapes:
            code, err = self.compiled(module)
            if err:
                self.shapes[module] = ("error", err)
                return self.shapes[module]
            # Statements are cut from UTF-8 text only (a coding cookie of another encoding
            # would be lost with the first lines).
            if _declares_other_encoding(data):
                try:
                    self.shapes[module] = ("whole", parse(data, self.path_of(module)))
                except (SyntaxError, ValueError) as exc:
                    self.shapes[module] = ("error", error_of(self.path_of(module), exc))
            else:
                self.shapes[module] = ("parts", code, top_level_statements(data), {})
        return self.shapes[module]

    def tree(self, module, words):
        """(Module or None, error or None): the module's top-level statements that mention
        one of words (every statement that could bind them), in order."""
        data, err = self.text(module)
        if data is None:
            return None, err
        shape = self._shape(module, data)
        if shape[0] == "error":
            return None, shape[1]
        if shape[0] == "whole":
            return shape[1], None
        _, compiled, (code, statements), parsed = shape
        keys = [w.encode() for w in words]
        body = []
        try:
            for i, (begin, end, line) in enumerate(statements):
                if not any(data.find(k, begin, end) >= 0 for k in keys):
                    continue
                if i not in parsed:
                    # Line ends first, so the parser numbers lines as in the file (cheaper than
                    # renumbering the tree); a definition without its body (nothing here reads it).
                    text = b"\n" * (line - 1) + without_body(data, code, begin, end)
                    parsed[i] = parse(text, self.path_of(module)).body
                body.extend(parsed[i])
            tree = _ast.Module(body=body, type_ignores=[])
            if _bindings_agree(tree, compiled, words):
                return tree, None
        except (SyntaxError, ValueError):
            pass
        whole = parse(data, self.path_of(module))  # parses: it compiled
        self.shapes[module] = ("whole", whole)
        return whole, None


def _declares_other_encoding(data):
    """A PEP 263 coding line in the first two lines naming anything but UTF-8."""
    for line in data.split(b"\n", 2)[:2]:
        if line.lstrip().startswith(b"#") and b"coding" in line:
            name = line.split(b"coding", 1)[1].lstrip(b":= \t").split()[0:1]
            return not name or name[0].lower().replace(b"_", b"-") not in (b"utf-8", b"utf8")
    return False


def parse(data, path):
    """ast.parse without importing ast."""
    return compile(data, path, "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)


_NOT_LITERAL = object()


def _literal_value(node):
    """The value of what defaults and module constants are made of (constants, signed numbers,
    tuples, lists, sets, dicts of them), as ast.literal_eval gives it; _NOT_LITERAL otherwise."""
    if isinstance(node, _ast.Constant):
        return node.value
    if isinstance(node, (_ast.Tuple, _ast.List, _ast.Set)):
        items = [_literal_value(e) for e in node.elts]
        if any(i is _NOT_LITERAL for i in items):
            return _NOT_LITERAL
        return tuple(items) if isinstance(node, _ast.Tuple) else list(items) if isinstance(node, _ast.List) else set(items)
    if isinstance(node, _ast.Dict):
        if any(k is None for k in node.keys):  # {**other}
            return _NOT_LITERAL
        keys, values = [_literal_value(k) for k in node.keys], [_literal_value(v) for v in node.values]
        if any(x is _NOT_LITERAL for x in keys + values):
            return _NOT_LITERAL
        return dict(zip(keys, values))
    if isinstance(node, _ast.UnaryOp) and isinstance(node.op, (_ast.USub, _ast.UAdd)) \
            and isinstance(node.operand, _ast.Constant) and type(node.operand.value) in (int, float, complex):
        return -node.operand.value if isinstance(node.op, _ast.USub) else +node.operand.value
    return _NOT_LITERAL


def literal_eval(node):
    """ast.literal_eval(node): the common shapes here, the rest by ast itself (same errors)."""
    try:
        value = _literal_value(node)
    except TypeError:  # an unhashable set member or dict key: let ast raise as it does
        value = _NOT_LITERAL
    if value is _NOT_LITERAL:
        import ast
        return ast.literal_eval(node)
    return value


def _literal(node):
    try:
        return repr(literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        import ast
        return ast.unparse(node) if hasattr(ast, "unparse") else "<expr>"


def _dotted(node):
    """"a.b.c" for a name or an attribute chain, else None."""
    if isinstance(node, _ast.Name):
        return node.id
    if isinstance(node, _ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def params_from_ast(fn):
    a = fn.args
    pos = list(a.posonlyargs) + list(a.args)
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    params = []
    for i, arg in enumerate(pos):
        kind = "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        params.append({"name": arg.arg, "kind": kind,
                       "default": None if defaults[i] is None else _literal(defaults[i])})
    if a.vararg:
        params.append({"name": a.vararg.arg, "kind": "VAR_POSITIONAL", "default": None})
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append({"name": arg.arg, "kind": "KEYWORD_ONLY", "default": None if d is None else _literal(d)})
    if a.kwarg:
        params.append({"name": a.kwarg.arg, "kind": "VAR_KEYWORD", "default": None})
    return params


def decorator_names(fn):
    names = []
    for d in fn.decorator_list:
        target = d.func if isinstance(d, _ast.Call) else d
        name = _dotted(target)
        if name is None:
            import ast
            name = ast.unparse(target) if hasattr(ast, "unparse") else type(target).__name__
        names.append(name)
    return names


def find_top_level(tree, name):
    """("def" | "assign" | "import", node) of the last top-level binding of name (it wins at run
    time), or None."""
    found = None
    for node in tree.body:
        if isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef)) and node.name == name:
            found = ("def", node)
        elif isinstance(node, _ast.Assign) and any(isinstance(t, _ast.Name) and t.id == name for t in node.targets):
            found = ("assign", node)
        elif isinstance(node, _ast.ImportFrom) and any((al.asname or al.name) == name for al in node.names):
            found = ("import", node)
    return found


def module_all(tree):
    for node in tree.body:
        if isinstance(node, _ast.Assign) and any(isinstance(t, _ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                return list(literal_eval(node.value))
            except (ValueError, TypeError, SyntaxError):
                return None
    return None


def compat_map(sources, package):
    """A package's _BACKWARD_COMPAT_MAP ({old leaf: new dotted path}, aiter.ops.triton from
    v0.1.10): old module paths keep importing through it. {} when it has none."""
    if not sources.mentions(package, "_BACKWARD_COMPAT_MAP"):
        return {}
    tree, _ = sources.tree(package, ["_BACKWARD_COMPAT_MAP"])
    if tree is None:
        return {}
    for node in tree.body:
        if isinstance(node, _ast.Assign) and any(isinstance(t, _ast.Name) and t.id == "_BACKWARD_COMPAT_MAP" for t in node.targets):
            try:
                mapping = literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                return {}
            if isinstance(mapping, dict):
                return {k: v for k, v in mapping.items() if isinstance(k, str) and isinstance(v, str)}
    return {}


def compat_alias(sources, module):
    """The module an absent module path is redirected to by its package's compat map, or None."""
    parent, _, leaf = module.rpartition(".")
    target = compat_map(sources, parent).get(leaf)
    return f"{parent}.{target}" if target else None


def module_level(body):
    """Statements run at import time: the top level and the blocks of if/try/with under it."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and not isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)):
                yield from module_level(inner)


def exported(sources, module, name):
    """Whether `aiter.<name>` exists: aiter/__init__.py imports it from module."""
    rel = module[len("aiter."):] if module.startswith("aiter.") else module
    leaf = module.rpartition(".")[2]
    if not (sources.mentions("aiter", name) or sources.mentions("aiter", leaf)):
        return False
    tree, _ = sources.tree("aiter", [name, leaf])
    if tree is None:
        return False
    for node in module_level(tree.body):
        if not isinstance(node, _ast.ImportFrom):
            continue
        target = node.module if node.level == 0 else ("." * node.level + (node.module or ""))
        if target not in ("." + rel, module):
            continue
        for al in node.names:
            if al.name == "*":
                mod_tree, _ = sources.tree(module, ["__all__"])
                names = module_all(mod_tree) if mod_tree is not None else None
                if names is None or name in names:
                    return True
            elif (al.asname or al.name) == name:
                return True
    return False


def describe_binding(op, kind, node):
    """Fills params/decorators from a def, or says why only the live channel can read them."""
    if kind == "def":
        op["params"] = params_from_ast(node)
        op["decorators"] = decorator_names(node)
    else:
        op["notes"].append(f"bound by {'assignment' if kind == 'assign' else 'import'} at line "
                           f"{node.lineno}: parameters can only be read by the live channel")


def function_of(spec):
    """The Python function an op-table entry names: its key unless the entry says otherwise
    (Triton's flash_attn_varlen_func is the key triton_flash_attn_varlen_func)."""
    return spec.get("function") or spec["name"]


def empty_op():
    return {"present": False, "module": None, "params": None, "decorators": [], "import_paths": {},
            "exported": False, "errors": [], "notes": [], "located_by": None, "import_error": None}


def read_known_paths(sources, spec):
    """The entry point at its known modules (the first that binds it wins)."""
    op = empty_op()
    name = function_of(spec)
    for module in spec["modules"]:
        data, err = sources.text(module)
        if err:
            op["import_paths"][module] = "error"
            op["errors"].append(err)
            continue
        if data is None:
            alias = compat_alias(sources, module)
            op["import_paths"][module] = f"alias of {alias}" if alias else "absent"
            if alias and not op["present"]:
                _read_through_alias(sources, op, name, module, alias)
            continue
        if name.encode() not in data:
            op["import_paths"][module] = "module without it"
            continue
        tree, err = sources.tree(module, [name])
        if err:
            op["import_paths"][module] = "error"
            op["errors"].append(err)
            continue
        hit = find_top_level(tree, name)
        if hit is None:
            op["import_paths"][module] = "module without it"
            continue
        op["import_paths"][module] = "defined"
        if op["present"]:
            continue  # first candidate that defines it is the entry point
        op["present"], op["module"], op["located_by"] = True, module, "known path"
        describe_binding(op, *hit)
    return op


def _read_through_alias(sources, op, name, path, target):
    """A known path that the compat map sends elsewhere: importing it gives target's binding,
    so that is the entry point (as the live channel finds it), wherever target is."""
    hit = None
    if sources.mentions(target, name):
        tree, err = sources.tree(target, [name])
        if err:
            op["errors"].append(err)
            return
        hit = find_top_level(tree, name)
    if hit is None:
        return
    op["present"], op["module"], op["located_by"] = True, target, "known path"
    op["import_paths"][target] = "defined"
    describe_binding(op, *hit)
    op["notes"].append(f"read at {target}, where the compatibility map sends the known path {path}")


def check_aliases(op):
    """An alias path only counts when the module it points at really defines the function."""
    for module, state in list(op["import_paths"].items()):
        if state.startswith("alias of ") and op["import_paths"].get(state[len("alias of "):]) != "defined":
            op["import_paths"][module] = "alias to a missing module"
