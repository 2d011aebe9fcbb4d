"""Tests of the client as a distribution: Python 3.8 syntax, pyproject.toml, and the
ways it is imported (installed, from client/python on sys.path, one copied file).

Debian ships no Python 3.8, so 3.8 compatibility is checked here by parsing with
ast's feature_version=(3, 8) plus a check of the annotations that 3.8 evaluates at
import time; mypy --strict --python-version 3.8 (scripts/test.sh) checks the standard
library names the package uses against 3.8's.

    cd client/python && python3 -m unittest -v test_packaging
"""

import ast
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import vram_exporter_client as vec

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "vram_exporter_client")
REQUIRE_ALL = os.environ.get("VRAM_REQUIRE_ALL") == "1"

# Generic aliases that are subscriptable at runtime only from Python 3.9 on.
_NEW_GENERICS = frozenset((
    "list", "dict", "set", "frozenset", "tuple", "type",
    "collections.abc.Callable", "collections.abc.Iterable", "collections.abc.Mapping",
    "collections.abc.Sequence", "collections.deque", "collections.OrderedDict",
    "collections.defaultdict", "weakref.WeakSet", "weakref.ref", "queue.Queue",
    "re.Pattern", "re.Match", "os.PathLike",
))


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return base + "." + node.attr if base else None
    return None


_TYPE_NAMES = frozenset(("int", "str", "bytes", "float", "bool", "object", "list", "dict",
                         "set", "tuple", "type"))


def _looks_like_type(node):
    return (isinstance(node, ast.Constant) and node.value is None) or \
        isinstance(node, ast.Subscript) or \
        (isinstance(node, ast.Name) and (node.id in _TYPE_NAMES or node.id[:1].isupper()))


def _runtime_annotation_problems(expr, where, annotation=True):
    """What in an annotation (evaluated at import under 3.8) needs a newer Python.
    Outside annotations `a | b` is only a type union when an operand looks like a type
    (None, a builtin type, a capitalised name): ints are or-ed at module level too."""
    out = []
    for node in ast.walk(expr):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) and (
                annotation or _looks_like_type(node.left) or _looks_like_type(node.right)):
            out.append("%s: 'X | Y' needs Python 3.10 (use typing.Optional/Union)" % where)
        elif isinstance(node, ast.Subscript) and _dotted(node.value) in _NEW_GENERICS:
            out.append("%s: %s[...] needs Python 3.9 (use typing's generics)"
                       % (where, _dotted(node.value)))
    return out


def py38_problems(source, name):
    """Reasons `source` would not import on Python 3.8, or []."""
    try:
        tree = ast.parse(source, name, feature_version=(3, 8))
    except SyntaxError as exc:
        return ["%s:%s: not Python 3.8 syntax: %s" % (name, exc.lineno, exc.msg)]
    lazy = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
               and any(a.name == "annotations" for a in n.names) for n in tree.body)
    out = []
    for node in ast.walk(tree):
        where = "%s:%d" % (name, getattr(node, "lineno", 0))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not lazy:
            a = node.args
            for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
                if arg is not None and arg.annotation is not None:
                    out += _runtime_annotation_problems(arg.annotation, where)
            if node.returns is not None:
                out += _runtime_annotation_problems(node.returns, where)
        elif isinstance(node, ast.AnnAssign) and not lazy:
            out += _runtime_annotation_problems(node.annotation, where)
    # type aliases and other module-level expressions always run at import
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            out += _runtime_annotation_problems(stmt.value, "%s:%d" % (name, stmt.lineno),
                                                annotation=False)
    return out


def _sources():
    files = glob.glob(os.path.join(HERE, "*.py")) + glob.glob(os.path.join(PACKAGE, "*.py")) \
        + glob.glob(os.path.join(HERE, "examples", "*.py"))
    return sorted(files)


class Python38Test(unittest.TestCase):
    def test_every_file_is_python_38(self):
        files = _sources()
        self.assertIn(os.path.join(PACKAGE, "__init__.py"), files)
        self.assertIn(os.path.join(PACKAGE, "vllm_plugin.py"), files)
        problems = []
        for f in files:
            with open(f, encoding="utf-8") as fh:
                problems += py38_problems(fh.read(), os.path.relpath(f, HERE))
        self.assertEqual(problems, [])

    def test_checker_catches_newer_syntax(self):
        cases = {
            "def f(x: int | None) -> None: ...": "3.10",
            "def f() -> list[int]: ...": "3.9",
            "x: dict[str, int] = {}": "3.9",
            "Alias = tuple[int, str]": "3.9",
            "Alias = int | None": "3.10",
            "Alias = Pool | Device": "3.10",
            "import weakref\ns: weakref.WeakSet[int] = weakref.WeakSet()": "3.9",
            "match x:\n    case 1: pass": "syntax",
        }
        for src, why in cases.items():
            with self.subTest(src=src):
                got = py38_problems(src, "t.py")
                self.assertTrue(got, "not flagged")
                self.assertIn(why if why != "syntax" else "not Python 3.8 syntax", got[0])
        self.assertEqual(py38_problems("FLAGS = getattr(a, 'X', 0) | getattr(a, 'Y', 0)", "t.py"), [])
        self.assertEqual(py38_problems('def f(x: "int | None") -> "list[int]": ...', "t.py"), [])
        self.assertEqual(py38_problems(
            "from __future__ import annotations\ndef f(x: int | None) -> list[int]: ...",
            "t.py"), [])


class PyprojectTest(unittest.TestCase):
    def setUp(self):
        try:
            import tomllib
        except ImportError:  # Python < 3.11
            if REQUIRE_ALL:
                raise
            self.skipTest("tomllib needs Python 3.11")
        with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
            self.pp = tomllib.load(f)

    def test_distribution(self):
        p = self.pp["project"]
        self.assertEqual(p["name"], "vram-exporter-client")
        self.assertEqual(p["requires-python"], ">=3.8")
        self.assertEqual(p["dependencies"], [], "the client is standard library only")
        self.assertEqual(self.pp["build-system"]["build-backend"], "setuptools.build_meta")
        self.assertEqual(self.pp["tool"]["setuptools"]["packages"], ["vram_exporter_client"])
        self.assertEqual(self.pp["tool"]["setuptools"]["package-data"],
                         {"vram_exporter_client": ["py.typed"]})
        self.assertTrue(os.path.isfile(os.path.join(PACKAGE, "py.typed")))
        self.assertEqual(self.pp["tool"]["setuptools"]["dynamic"]["version"],
                         {"attr": "vram_exporter_client.__version__"})
        self.assertEqual(self.pp["tool"]["mypy"]["python_version"], "3.8")
        self.assertIs(self.pp["tool"]["mypy"]["strict"], True)

    def test_vllm_entry_point_resolves(self):
        eps = self.pp["project"]["entry-points"]["vllm.general_plugins"]
        self.assertEqual(list(eps), ["vram_exporter"])
        module, _, attr = eps["vram_exporter"].partition(":")
        mod = __import__(module, fromlist=[attr])
        fn = getattr(mod, attr)
        self.assertTrue(callable(fn))
        from vram_exporter_client import vllm_plugin
        self.assertIs(fn, vllm_plugin.register)


class ImportTest(unittest.TestCase):
    def test_documented_names(self):
        for name in vec.__all__ + ["__version__", "SOCKET_ENV"]:
            self.assertTrue(hasattr(vec, name), name)
        self.assertEqual(sorted(vec.__all__), sorted([
            "Reporter", "torch_source", "jax_source", "cupy_source", "TensorRTTracker",
            "cuda_uuid", "default_sources", "DEFAULT_SOCKET", "PROTOCOL_VERSION",
            "MAX_MESSAGE_BYTES"]))

    def _run(self, code, cwd):
        return subprocess.run([sys.executable, "-I", "-c", code], cwd=cwd, timeout=60,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True)

    def test_import_from_client_directory_as_scripts_do(self):
        # scripts/gpu/*.py put client/python on sys.path and import the client
        d = tempfile.mkdtemp(prefix="vec-imp-")
        self.addCleanup(shutil.rmtree, d, True)
        code = ("import sys; sys.path.insert(0, %r)\n"
                "import vram_exporter_client as vc\n"
                "r = vc.Reporter(socket_path='/nonexistent/x.sock', sources=[vc.torch_source()])\n"
                "assert vc.__file__.startswith(%r), vc.__file__\n"
                "print(vc.__version__)" % (HERE, PACKAGE))
        res = self._run(code, d)
        self.assertEqual(res.returncode, 0, res.stdout)
        self.assertEqual(res.stdout.strip(), vec.__version__)

    def test_module_works_as_one_copied_file(self):
        # the core stays one self-contained module: it can be dropped next to serving
        # code as vram_exporter_client.py, without the package around it
        d = tempfile.mkdtemp(prefix="vec-copy-")
        self.addCleanup(shutil.rmtree, d, True)
        shutil.copy(os.path.join(PACKAGE, "__init__.py"), os.path.join(d, "vram_exporter_client.py"))
        code = ("import sys; sys.path.insert(0, %r)\n"
                "import vram_exporter_client as vc\n"
                "assert vc.__file__.endswith('vram_exporter_client.py'), vc.__file__\n"
                "r = vc.Reporter(socket_path='/nonexistent/x.sock', sources=[])\n"
                "r.set_pool('GPU-1', 'p', allocated=1)\n"
                "print(r.sample_now(), r.errors)" % d)
        res = self._run(code, d)
        self.assertEqual(res.returncode, 0, res.stdout)
        self.assertEqual(res.stdout.strip().splitlines()[-1], "False 1")


if __name__ == "__main__":
    unittest.main()
