"""The package's shape: layers import only downward, no import cycle, modules stay small.

Every ``import`` of a rubrictools module counts, at module level or inside a function, except
those under ``if TYPE_CHECKING:`` (never executed). Run it as a script for the full report:
``python tests/test_architecture.py``.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "rubrictools"
MAX_LINES = 500

# Lowest first. A module may import modules of its own layer entry or of a lower one.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "rubrictools.stack",
        "rubrictools.deprecation",
        "rubrictools.frames",
        "rubrictools.progress",
        "rubrictools.images",
        "rubrictools.disk",
        "rubrictools.tables",
        "rubrictools.palette",
        "rubrictools.conversations",
        "rubrictools.submissions",
        "rubrictools.verdicts",
        "rubrictools.testing",
    ),
    ("rubrictools.rubric",),
    ("rubrictools.judge",),
    ("rubrictools.records",),
    ("rubrictools.grading",),
    ("rubrictools.metrics",),
    ("rubrictools.human_agreement", "rubrictools.leaderboard", "rubrictools.comparison"),
    ("rubrictools.calibration", "rubrictools.datasets", "rubrictools.ppi", "rubrictools.inspect"),
    ("rubrictools.diagnostics",),
    ("rubrictools.evolution",),
    ("rubrictools.charts",),
    ("rubrictools.widgets",),
    ("rubrictools.cli",),
    ("rubrictools",),
)


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module (resolved to a module, not a name inside it)
    names: tuple[str, ...]
    line: int
    in_function: bool


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, in_function: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for sub in child.orelse:
                yield from _walk(sub, in_function)
            continue
        fn = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield child, fn
        yield from _walk(child, fn)


def imports_of(name: str, path: Path, known: set[str]) -> list[Import]:
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[Import] = []
    for node, in_fn in _walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "rubrictools":
                    out.append(Import(name, a.name, (), node.lineno, in_fn))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            if base.split(".")[0] != "rubrictools":
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                target = sub if sub in known else base
                out.append(Import(name, target, (a.name,), node.lineno, in_fn))
    return out


def layer_of(module: str) -> int:
    best, best_len = -1, -1
    for i, entries in enumerate(LAYERS):
        for e in entries:
            if (module == e or module.startswith(e + ".")) and len(e) > best_len:
                best, best_len = i, len(e)
    return best


def all_imports() -> list[Import]:
    mods = modules()
    known = set(mods)
    return [imp for name, path in mods.items() for imp in imports_of(name, path, known)]


def layer_violations() -> list[str]:
    bad = []
    for imp in all_imports():
        src, dst = layer_of(imp.source), layer_of(imp.target)
        if dst > src:
            bad.append(f"{imp.source}:{imp.line} imports {imp.target} (layer {dst} above {src})")
    return bad


def cycles() -> list[list[str]]:
    graph: dict[str, set[str]] = {}
    for imp in all_imports():
        if imp.target != imp.source:
            graph.setdefault(imp.source, set()).add(imp.target)
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                found.append([*stack[stack.index(m) :], m])
            elif state.get(m) is None:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if state.get(n) is None:
            visit(n)
    return found


def private_imports() -> list[str]:
    bad = []
    for imp in all_imports():
        for n in imp.names:
            if n.startswith("_") and not n.startswith("__") and imp.target != imp.source:
                bad.append(f"{imp.source}:{imp.line} imports private {n} from {imp.target}")
    return bad


def function_level_imports() -> list[str]:
    return [f"{i.source}:{i.line} imports {i.target} inside a function" for i in all_imports() if i.in_function]


def long_modules() -> list[str]:
    out = []
    for name, path in modules().items():
        n = len(path.read_text().splitlines())
        if n > MAX_LINES:
            out.append(f"{name}: {n} lines")
    return out


def unplaced_modules() -> list[str]:
    return [m for m in modules() if layer_of(m) < 0]


def test_every_module_has_a_layer() -> None:
    assert unplaced_modules() == []


def test_layers_import_only_downward() -> None:
    assert layer_violations() == []


def test_no_import_cycles() -> None:
    assert cycles() == []


def test_no_private_names_across_modules() -> None:
    assert private_imports() == []


def test_no_module_over_500_lines() -> None:
    assert long_modules() == []


def test_the_checker_sees_function_level_imports(tmp_path: Path) -> None:
    """The checker itself must count an import hidden inside a function."""
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from rubrictools.grading import grade\n    return grade\n")
    (imp,) = imports_of("rubrictools.rubric.m", src, {"rubrictools.grading"})
    assert imp.in_function and imp.target == "rubrictools.grading"
    assert layer_of(imp.target) > layer_of(imp.source)


if __name__ == "__main__":
    report = {
        "unplaced": unplaced_modules(),
        "layer violations": layer_violations(),
        "cycles": [" -> ".join(c) for c in cycles()],
        "private imports": private_imports(),
        "function-level imports": function_level_imports(),
        "modules over 500 lines": long_modules(),
    }
    for title, rows in report.items():
        print(f"## {title}: {len(rows)}")
        for r in rows:
            print("  ", r)
    sys.exit(1 if any(v for k, v in report.items() if k != "function-level imports") else 0)
