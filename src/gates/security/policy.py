"""Vibeloop policy check: banned imports and calls in Python files, found with ast.

Run in the worktree root as  python3 -I -S -c "<this file>" '<json>'  where <json> is
{"files": [relative .py paths], "banned_calls": [...], "banned_imports": [...]}.
-I keeps the repository's directory off sys.path, so a planted ast.py cannot shadow ast;
-S skips site (no .pth file or sitecustomize runs). Only the standard library is used.

Prints one JSON object per finding, {"path", "line", "col", "kind", "name", "message"}, then
{"done": <files checked>}. kind: import, call, reference, syntax, error. Exits 0 with
findings; 2 when the argument is not valid. Missing files (and directories, fifos...) are
skipped.

Names resolve through every binding the file makes anywhere (flow-insensitive): imports with
or without "as", "from m import *", and simple assignments of relevant names (o = os,
s = os.system, sp = importlib.import_module("subprocess")); getattr(x, "literal"),
__import__("m"), importlib.import_module("m"), m.__dict__["f"], vars(m)["f"],
sys.modules["m"] and __builtins__["f"] resolve too. A name that matches a banned
one or lies inside it (os.system.__call__) is a finding wherever it is read: called
("call") or passed around ("reference"). Shadowing is ignored on purpose: a local function
named eval is still reported when called, because the check reads names, not values.
Strings and comments are never code, so "os.system" in them is not a finding.
"""

import ast
import json
import os
import sys
import warnings

MAX_BYTES = 5 * 1024 * 1024
IMPORTERS = {"__import__", "importlib.import_module", "importlib.__import__"}
BUILTIN_PREFIXES = ("builtins.", "__builtins__.")
EXPRESSIONS = (ast.Name, ast.Attribute, ast.Subscript, ast.Call)


def emit(path, line, col, kind, name, message):
    record = {"path": path, "line": line or 1, "col": col or 1, "kind": kind,
              "name": name, "message": message}
    sys.stdout.write(json.dumps(record) + "\n")


def under(name, banned):
    """True when dotted `name` is `banned` or inside it."""
    return name == banned or name.startswith(banned + ".")


def norm(name):
    for prefix in BUILTIN_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def literal_str(node):
    """The value of a string literal, "a" + "b", or an f-string without fields."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = literal_str(node.left), literal_str(node.right)
        if left is not None and right is not None:
            return left + right
    if isinstance(node, ast.JoinedStr):
        parts = [literal_str(v) for v in node.values]
        if all(p is not None for p in parts):
            return "".join(parts)
    return None


class Checker:
    def __init__(self, path, calls, imports):
        self.path, self.calls, self.imports = path, calls, imports
        self.aliases = {}  # local name -> set of dotted names it may stand for
        self.star = set()  # modules imported with *
        self.cache = {}  # id(node) -> resolve(node), emptied when bindings change
        watched = set(calls) | IMPORTERS | {"getattr"}
        self.watched = watched | {"builtins." + w for w in watched if "." not in w}

    def bind(self, name, target):
        self.aliases.setdefault(name, set()).add(target)

    def relevant(self, name):
        return any(under(w, name) or under(name, w) for w in self.watched)

    def resolve(self, node):
        """The dotted names `node` may stand for (empty when unknown)."""
        key = id(node)
        if key not in self.cache:  # long attribute chains would be quadratic without it
            self.cache[key] = self.resolve_uncached(node)
        return self.cache[key]

    def resolve_uncached(self, node):
        if isinstance(node, ast.Name):
            names = set(self.aliases.get(node.id, {node.id}))
            for module in self.star:
                candidate = module + "." + node.id
                if any(under(candidate, b) for b in self.calls):
                    names.add(candidate)
            return {norm(n) for n in names}
        if isinstance(node, ast.Attribute):
            return {norm(v + "." + node.attr) for v in self.resolve(node.value)}
        if isinstance(node, ast.Subscript):  # __builtins__["eval"], os.__dict__["system"]
            key = literal_str(getattr(node.slice, "value", None) if type(node.slice).__name__
                              == "Index" else node.slice)  # ast.Index: Python 3.8
            if key is None:
                return set()
            bases = {b[: -len(".__dict__")] if b.endswith(".__dict__") else b
                     for b in self.resolve(node.value)}
            return {key if b == "sys.modules" else norm(b + "." + key) for b in bases}
        if isinstance(node, ast.Call) and node.args:
            funcs = self.resolve(node.func)
            if "vars" in funcs:
                return self.resolve(node.args[0])
            if "getattr" in funcs and len(node.args) >= 2:
                attr = literal_str(node.args[1])
                if attr is not None:
                    return {norm(v + "." + attr) for v in self.resolve(node.args[0])}
            module = literal_str(node.args[0])
            if module and funcs & {"__import__", "importlib.__import__"}:
                return {module.split(".")[0]}  # __import__("a.b") returns a
            if module and "importlib.import_module" in funcs:
                return {module}
        return set()

    def collect(self, nodes):
        assigns = []
        for node in nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.bind(a.asname, a.name)
                    else:
                        top = a.name.split(".")[0]
                        self.bind(top, top)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                for a in node.names:
                    if a.name == "*":
                        self.star.add(node.module)
                    else:
                        self.bind(a.asname or a.name, node.module + "." + a.name)
            elif isinstance(node, ast.Assign):
                assigns += [(t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
                if isinstance(node.target, ast.Name) and node.value is not None:
                    assigns.append((node.target.id, node.value))
        for _ in range(5):  # chains of assignments: a = os; b = a
            self.warm(nodes)
            changed = False
            for target, value in assigns:
                for name in self.resolve(value):
                    if self.relevant(name) and name not in self.aliases.get(target, ()):
                        self.bind(target, name)
                        changed = True
            if not changed:
                break
        self.warm(nodes)

    def warm(self, nodes):
        """Resolves every expression, inner ones first, so no resolve recurses deeply."""
        self.cache.clear()
        for node in reversed(nodes):  # breadth-first order reversed: children first
            if isinstance(node, EXPRESSIONS):
                self.resolve(node)

    def check_module(self, node, module):
        for banned in self.imports:
            if under(module, banned):
                emit(self.path, node.lineno, node.col_offset + 1, "import", module,
                     f"import of {module} is banned by policy.banned_imports ({banned}); "
                     "use another module")
                return True
        return False

    def check_imports(self, node):
        if isinstance(node, ast.Import):
            for a in node.names:
                self.check_module(node, a.name)
        elif not node.level and node.module:
            if not self.check_module(node, node.module):
                for a in node.names:
                    if a.name != "*" and self.check_module(node, node.module + "." + a.name):
                        break

    def run(self, tree):
        nodes = list(ast.walk(tree))  # breadth first: outer expressions come first
        self.collect(nodes)
        called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        covered = set()
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.check_imports(node)
            if isinstance(node, ast.Call) and node.args:
                funcs = self.resolve(node.func)
                module = literal_str(node.args[0])
                if module and funcs & IMPORTERS:
                    self.check_module(node, module)
            if id(node) in covered or not isinstance(node, EXPRESSIONS):
                continue
            if not isinstance(node, ast.Call) and not isinstance(node.ctx, ast.Load):
                continue
            self.check_name(node, id(node) in called, covered)

    def check_name(self, node, is_called, covered):
        for name in sorted(self.resolve(node)):
            banned = next((b for b in self.calls if under(name, b)), None)
            if banned is None:
                continue
            if is_called:
                kind, message = "call", (f"call to {banned} is banned by policy.banned_calls; "
                                         "remove it or use a safer alternative")
            else:
                kind, message = "reference", (f"{banned} is banned by policy.banned_calls; "
                                              "calling it through another name is banned too")
            emit(self.path, node.lineno, node.col_offset + 1, kind, name, message)
            while True:  # the inner parts of os.system or getattr(os, "system") are done
                covered.add(id(node))
                if isinstance(node, (ast.Attribute, ast.Subscript)):
                    node = node.value
                elif isinstance(node, ast.Call) and node.args:
                    covered.add(id(node.func))
                    node = node.args[0]
                else:
                    return


def check_file(path, root, calls, imports):
    """Checks one file; False when it was skipped."""
    full = os.path.realpath(path)
    if not os.path.isfile(full):
        return False
    if os.path.commonpath([root, full]) != root:
        emit(path, 1, 1, "error", "", "cannot check: the file is a link out of the repository; "
             "replace the link with the file")
        return True
    with open(full, "rb") as f:
        source = f.read(MAX_BYTES + 1)
    if len(source) > MAX_BYTES:
        emit(path, 1, 1, "error", "", f"cannot check: larger than {MAX_BYTES} bytes; "
             "split the file")
        return True
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as e:
        emit(path, e.lineno, e.offset, "syntax", "", f"cannot parse: {e.msg}")
        return True
    except (ValueError, RecursionError, MemoryError) as e:
        emit(path, 1, 1, "syntax", "", f"cannot parse: {e}")
        return True
    try:
        Checker(path, calls, imports).run(tree)
    except RecursionError:
        emit(path, 1, 1, "error", "", "cannot check: expressions nested too deeply; "
             "simplify the file")
    return True


def main():
    warnings.simplefilter("ignore")  # SyntaxWarnings would mix with the JSON lines
    sys.setrecursionlimit(4000)  # long generated expressions nest deeply in the tree
    try:
        config = json.loads(sys.argv[1])
        files = [str(f) for f in config["files"]]
        calls = [str(c) for c in config.get("banned_calls", [])]
        imports = [str(i) for i in config.get("banned_imports", [])]
    except (IndexError, KeyError, TypeError, ValueError, AttributeError) as e:
        sys.stdout.write(json.dumps({"error": f"bad argument: {e}"}) + "\n")
        return 2
    root = os.path.realpath(".")
    done = 0
    for path in files:
        try:
            done += check_file(path, root, calls, imports)
        except (OSError, ValueError) as e:
            emit(path, 1, 1, "error", "", f"cannot check: {getattr(e, 'strerror', None) or e}")
    sys.stdout.write(json.dumps({"done": done}) + "\n")
    return 0


sys.exit(main())
