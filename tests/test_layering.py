"""The README's one-way data flow, enforced: model -> graph (frontend) -> bounds
(allocator/theory) -> plan (allocator/planning) -> code (codegen) -> firmware -> the driver
(compiler.py) -> what prints it -> the command line. No module imports a later stage.

``LAYERS`` below is the one place that states the order; every module of the package must
sit in it, and each may import only its own layer, earlier ones and the board data. The C
kernels' quoted ``#include``s, and which object defines the symbols another one uses, must
form no circle either.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from paths import REPO

# (layer, module prefixes relative to the package `rip`), earliest first. A module belongs
# to the layer with its longest matching prefix; "" is the package's own __init__.py.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("core",)),  # the shared vocabulary: imports only core
    ("frontend", ("frontend",)),  # model -> Graph
    ("allocator.theory", ("allocator", "allocator.theory")),  # per-layer bounds
    ("allocator.planning", ("allocator.planning",)),  # per-model plans
    ("codegen", ("codegen",)),  # plan -> C (never firmware, a later layer)
    ("firmware", ("firmware",)),  # C -> project, build, run, serial
    ("timing", ("timing",)),  # a firmware run timed as its Pico (QEMU plugin, XIP cache)
    ("compiler", ("compiler",)),  # the driver: every stage, in order
    ("presentation", ("report", "plot", "oplist")),  # formats what the driver made
    # the Python API over the driver and the report; the package's own __init__.py
    # re-exports it (imported on first use), so no stage may import the package root
    ("api", ("", "api")),
    ("cli", ("cli",)),  # argument parsing and printing
)
# Data any stage may read (the board files); it imports only core.
DATA = ("boards",)
DATA_MAY_IMPORT = ("core",)
# Folders of the checkout outside the package: they may import any of it, the package
# never imports them (nor the modules they put on sys.path), and benchmarks never import
# the tests.
OUTSIDE = ("benchmarks", "examples", "tests")
SKIP_DIRS = {".venv", "build", "dist", ".git", "__pycache__", "docs", "kernels", "templates"}


@dataclass(frozen=True)
class Import:
    where: str  # file:line, relative to the checkout
    target: str  # the imported module, absolute (rip.x.y, or a top-level name)

    def __str__(self) -> str:
        return f"{self.where} imports {self.target}"


def python_files(root: Path) -> Iterator[Path]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
        found += [Path(folder, f) for f in files if f.endswith(".py")]
    yield from sorted(found)


def module_name(root: Path, path: Path) -> str:
    """``allocator/planning/plan.py`` -> ``allocator.planning.plan`` (package-relative)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def in_package(root: Path, path: Path) -> bool:
    """Part of the installed package: a root module, or inside folders with __init__.py
    all the way down from the root."""
    folder = path.parent
    while folder != root:
        if not (folder / "__init__.py").is_file():
            return False
        folder = folder.parent
    return True


def package_modules(root: Path) -> dict[str, Path]:
    return {module_name(root, p): p for p in python_files(root) if in_package(root, p)}


def imports(root: Path, path: Path, package: dict[str, Path]) -> Iterator[Import]:
    """Every import in ``path`` (at any depth: a function's lazy import counts too), with
    ``from pkg import module`` resolved to the module."""
    module = module_name(root, path)
    parent = module if path.name == "__init__.py" else module.rpartition(".")[0]
    rel = path.relative_to(root)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(f"{rel}:{node.lineno}", alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = parent.split(".") if parent else []
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join([*base, *([node.module] if node.module else [])])
                mod = f"rip.{mod}".rstrip(".") if in_package(root, path) else mod
            else:
                mod = node.module or ""
            for alias in node.names:
                sub = f"{mod}.{alias.name}"
                is_module = sub.startswith("rip.") and sub.removeprefix("rip.") in package
                yield Import(f"{rel}:{node.lineno}", sub if is_module else mod)


def layer_of(module: str) -> str | None:
    """The layer of a package-relative module name (longest prefix), or None."""
    best, length = None, -1
    for layer, prefixes in (*LAYERS, ("data", DATA)):
        for prefix in prefixes:
            matches = module == prefix or (prefix and module.startswith(prefix + "."))
            if matches and len(prefix) > length:
                best, length = layer, len(prefix)
    return best


RANK = {layer: k for k, (layer, _) in enumerate(LAYERS)}


def top_level_names(folder: Path) -> set[str]:
    """The modules and packages directly in ``folder``, importable by name once it is on
    sys.path (``paths``, ``tflite_writer``, ``results``, ...)."""
    if not folder.is_dir():
        return set()
    return {p.stem for p in folder.glob("*.py")} | {
        p.name for p in folder.iterdir() if (p / "__init__.py").is_file()
    }


def outside_names(root: Path) -> set[str]:
    """Top-level names of what lies outside the package: the folders, and what they put
    on sys.path."""
    return set(OUTSIDE).union(*(top_level_names(root / f) for f in OUTSIDE))


def layer_violations(root: Path) -> list[str]:
    """Each package module imports only its own layer, earlier layers and the board data;
    the board data imports only core; nothing in the package imports what lies outside it
    (benchmarks, examples, tests); every module is in a layer."""
    package, outside = package_modules(root), outside_names(root)
    bad: list[str] = []
    for module, path in sorted(package.items()):
        layer = layer_of(module)
        if layer is None:
            bad.append(f"{path.relative_to(root)} is in no layer of LAYERS")
            continue
        for imp in imports(root, path, package):
            top = imp.target.split(".")[0]
            if top in outside:
                bad.append(f"{imp}: the package never imports {', '.join(OUTSIDE)}")
                continue
            if top != "rip":
                continue  # the standard library or a third-party package
            to = layer_of(imp.target.removeprefix("rip").removeprefix("."))
            if to is None:
                bad.append(f"{imp}, which is in no layer of LAYERS")
            elif layer == "data":
                if to != "data" and to not in DATA_MAY_IMPORT:
                    bad.append(f"{imp} ({to}): {', '.join(DATA)} may import only core")
            elif to != "data" and RANK[to] > RANK[layer]:
                bad.append(f"{imp} ({to}), a later stage than {module} ({layer})")
    return bad


def test_no_module_imports_a_later_stage():
    bad = layer_violations(REPO)
    assert not bad, "imports against the layers of tests/test_layering.py:\n" + "\n".join(bad)


def test_every_python_file_is_in_the_package_or_outside_it():
    """A .py file outside the package lies under one of the OUTSIDE folders (a new folder
    of the package needs its __init__.py, and so a layer)."""
    stray = [
        str(p.relative_to(REPO))
        for p in python_files(REPO)
        if not in_package(REPO, p) and p.relative_to(REPO).parts[0] not in OUTSIDE
    ]
    assert not stray, f"Python files neither in the package nor under {OUTSIDE}: {stray}"


def test_benchmarks_never_import_the_tests():
    tests = {"tests"} | top_level_names(REPO / "tests")
    package = package_modules(REPO)
    bad = [
        str(imp)
        for path in python_files(REPO)
        # benchmarks/tests are tests of the benchmarks: they may read the tests' lists
        if path.relative_to(REPO).parts[0] == "benchmarks"
        and "tests" not in path.relative_to(REPO).parts[1:-1]
        for imp in imports(REPO, path, package)
        if imp.target.split(".")[0] in tests
    ]
    assert not bad, "benchmarks import the tests:\n" + "\n".join(bad)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_checker_reports_each_kind_of_violation(tmp_path):
    """A codegen module importing firmware, core importing the front end (lazily, inside a
    function), the boards importing codegen, the package importing the tests' helpers, and
    a module in no layer: each reported with its file and line."""
    init = {f"{d}/__init__.py": "" for d in ("core", "frontend", "codegen", "firmware", "boards")}
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            **init,
            "core/terms.py": "def f():\n    from rip.frontend import ir\n",
            "frontend/ir.py": "from rip.core import terms\n",
            "codegen/emit.py": "import os\n\nfrom rip.firmware.uf2 import write\n",
            "firmware/uf2.py": "from rip.codegen import emit\nfrom rip import boards\n",
            "boards/__init__.py": "from rip.codegen.emit import x\n",
            "report.py": "from paths import REPO\n",
            "newstage/__init__.py": "",
            "tests/paths.py": "",
        },
    )
    assert sorted(layer_violations(root)) == sorted(
        [
            "boards/__init__.py:1 imports rip.codegen.emit (codegen): boards may import only core",
            "codegen/emit.py:3 imports rip.firmware.uf2 (firmware), a later stage than "
            "codegen.emit (codegen)",
            "core/terms.py:2 imports rip.frontend.ir (frontend), a later stage than core.terms "
            "(core)",
            "newstage/__init__.py is in no layer of LAYERS",
            "report.py:1 imports paths: the package never imports benchmarks, examples, tests",
        ]
    )
    assert layer_of("codegen.emit") == "codegen" and layer_of("allocator") == "allocator.theory"
    assert layer_of("allocator.planning.plan") == "allocator.planning"
    assert layer_of("codegenx") is None and layer_of("") == "api"


# ---- the C kernels -----------------------------------------------------------------------

KERNELS = REPO / "kernels"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` (node -> nodes it depends on) as a path, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_circle_finder():
    assert _circle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"a"}}) == ["a", "a"]


def test_kernel_includes_form_no_circle():
    """Every quoted #include of kernels/*.c and *.h names a file in kernels/, and the
    include graph has no circle."""
    graph: dict[str, set[str]] = {}
    missing = []
    for path in sorted([*KERNELS.glob("*.c"), *KERNELS.glob("*.h")]):
        text = path.read_text(encoding="utf-8")
        graph[path.name] = set(INCLUDE.findall(text))
        for name in graph[path.name]:
            if not (KERNELS / name).is_file():
                line = text[: text.index(f'"{name}"')].count("\n") + 1
                missing.append(f"kernels/{path.name}:{line} includes {name}")
    assert not missing, "quoted includes of files not in kernels/:\n" + "\n".join(missing)
    circle = _circle(graph)
    assert circle is None, f"kernels include in a circle: {' -> '.join(circle)}"


def test_kernel_objects_link_in_no_circle(tmp_path):
    """Which object defines the symbols another one uses (gcc -c, nm): no two kernel
    sources need each other, so each family links with what it uses and no more."""
    gcc, nm = shutil.which("gcc"), shutil.which("nm")
    if gcc is None or nm is None:
        pytest.skip("needs gcc and nm (binutils)")
    sources = sorted(KERNELS.glob("*.c"))
    command = [gcc, "-std=c99", "-O0", "-c", f"-I{KERNELS}", *map(str, sources)]
    subprocess.run(command, check=True, capture_output=True, cwd=tmp_path)
    defined: dict[str, str] = {}
    undefined: dict[str, set[str]] = {}
    for source in sources:
        obj = tmp_path / f"{source.stem}.o"
        symbols = subprocess.run([nm, str(obj)], check=True, capture_output=True, text=True)
        undefined[source.name] = set()
        for line in symbols.stdout.splitlines():
            *_, kind, name = line.split()
            if kind == "U":
                undefined[source.name].add(name)
            elif kind.isupper():
                defined[name] = source.name
    graph = {
        src: {defined[s] for s in needs if s in defined and defined[s] != src}
        for src, needs in undefined.items()
    }
    circle = _circle(graph)
    assert circle is None, f"kernel sources link in a circle: {' -> '.join(circle)}"
