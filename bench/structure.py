"""Figures of the code's structure, from the source alone (issue 10's before/after):
`python -m bench.structure`.

Prints, for `chalicelib`: import cycles (strongly connected components of the module graph, imports
inside functions and under TYPE_CHECKING included), service modules importing `adapters.tables`,
PynamoDB expressions built in services, service-to-service imports inside functions, statements
per function in services (median, p90; the ports' Protocols left out), and lines longer than 100
characters; then service modules reaching PynamoDB or the stores' classes, optimistic-retry loops
left in services, and unit tests of services on fakes (`tests/services`).

`python -m bench.structure [ROOT]` measures another checkout (e.g. a worktree of an old commit).
"""

from __future__ import annotations

import ast
import statistics
import sys
from pathlib import Path

ROOT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "chalicelib"
EXPRESSION_METHODS = {
    "set",
    "add",
    "remove",
    "delete",
    "append",
    "prepend",
    "exists",
    "does_not_exist",
    "is_in",
    "between",
    "startswith",
    "contains",
    "is_type",
}
"""PynamoDB attribute methods that build an update action or a condition."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, bool]]:
    """`(imported module, inside a function)` of every import in `tree`."""
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend((alias.name, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = module.split(".")
                    parts = parts[: len(parts) - child.level + (1 if is_package else 0)]
                    base = ".".join([*parts, base] if base else parts)
                found.append((base, in_function))
                found.extend((f"{base}.{alias.name}", in_function) for alias in child.names)
            visit(child, inside)

    visit(tree, False)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def expressions_in(tree: ast.AST) -> int:
    """Calls like `RunRow.status.set(...)` and comparisons like `RunRow.slots == 0`."""
    count = 0
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in EXPRESSION_METHODS
            and isinstance(node.func.value, ast.Attribute)
            and isinstance(node.func.value.value, ast.Name)
            and node.func.value.value.id.endswith("Row")
        ):
            count += 1
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Attribute)
            and isinstance(node.left.value, ast.Name)
            and node.left.value.id.endswith("Row")
        ):
            count += 1
    return count


def statements(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return sum(isinstance(node, ast.stmt) for node in ast.walk(function)) - 1


def retry_loops(tree: ast.AST) -> int:
    """`for _ in range(n)` / `while True` loops that call a store's conditional write (`update`,
    `replace`) inside: the hand-rolled optimistic retries `chalicelib.retrying.change` replaces."""

    def writes(loop: ast.AST) -> bool:
        return any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("update", "replace")
            for n in ast.walk(loop)
        )

    return sum(
        1
        for node in ast.walk(tree)
        if (
            isinstance(node, ast.For)
            and isinstance(node.iter, ast.Call)
            and getattr(node.iter.func, "id", None) == "range"
            and writes(node)
        )
        or (isinstance(node, ast.While) and isinstance(node.test, ast.Constant) and writes(node))
    )


def fake_tests() -> int:
    """Test functions under `tests/services` (the services' rules on in-memory fakes)."""
    return sum(
        1
        for path in (ROOT / "tests" / "services").rglob("test_*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    )


def main() -> int:
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p): p for p in files}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    tables_importers: set[str] = set()
    deferred = 0
    expressions = 0
    sizes: list[int] = []
    long_lines = 0
    persistence: set[str] = set()
    loops = 0
    for name, path in modules.items():
        text = path.read_text()
        long_lines += sum(len(line) > 100 for line in text.splitlines())
        tree = ast.parse(text)
        service = name.startswith("chalicelib.services")
        for target, in_function in imports_of(tree, name, path.name == "__init__.py"):
            if target in modules and target != name:
                graph[name].add(target)
            if service and target.startswith("chalicelib.adapters.tables"):
                tables_importers.add(name)
            if service and (
                target.startswith(
                    ("pynamodb", "chalicelib.adapters.tables", "chalicelib.adapters.stores")
                )
            ):
                persistence.add(name)
            if (
                service
                and in_function
                and target.startswith("chalicelib.services.")
                and target in modules
            ):
                deferred += 1
        if service:
            expressions += expressions_in(tree)
            loops += retry_loops(tree)
            if not name.startswith(
                "chalicelib.services.ports"
            ):  # a Protocol's methods have no body
                sizes += [
                    statements(f)
                    for f in ast.walk(tree)
                    if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
    found = cycles(graph)
    sizes.sort()
    print(
        f"import cycles: {len(found)} (largest {max((len(c) for c in found), default=0)} modules)"
    )
    for component in found:
        print("  " + ", ".join(component))
    print(f"service modules importing adapters.tables: {len(tables_importers)}")
    print(f"PynamoDB expressions built in services: {expressions}")
    print(f"service-to-service imports inside functions: {deferred}")
    print(
        f"statements per function in services: median {statistics.median(sizes):g}, "
        f"p90 {sizes[int(0.9 * (len(sizes) - 1))]} ({len(sizes)} functions)"
    )
    print(f"lines over 100 characters in chalicelib: {long_lines}")
    print(
        "service modules importing pynamodb, adapters.tables or adapters.stores: "
        f"{len(persistence)}"
    )
    print(f"hand-rolled optimistic-retry loops in services: {loops}")
    print(f"unit tests of services on fakes: {fake_tests()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
