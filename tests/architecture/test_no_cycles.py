"""No module of ours imports, through any chain, a module that imports it back: not at the
top, not inside a function. Work for another layer is sent by name through the outbox
(compaction/outbox.py), so the worker's path reads one way: tasks, pipeline, services.
"""

from __future__ import annotations

import grimp

PACKAGES = ("sessions", "compaction", "alerts", "privacy", "team", "config")


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def _described(graph: grimp.ImportGraph, group: list[str]) -> str:
    edges = []
    for importer in group:
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if imported in group:
                lines = graph.get_import_details(importer=importer, imported=imported)
                at = ", ".join(str(line["line_number"]) for line in lines)
                edges.append(f"  {importer} -> {imported} (line {at})")
    return "\n".join(edges)


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = grimp.build_graph(*PACKAGES)
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n\n".join(_described(graph, g) for g in cycles)


def test_the_check_finds_a_cycle_made_inside_a_function() -> None:
    graph = grimp.ImportGraph()
    for module in ("a", "a.low", "a.high"):
        graph.add_module(module)
    graph.add_import(importer="a.high", imported="a.low", line_number=1, line_contents="import")
    graph.add_import(importer="a.low", imported="a.high", line_number=9, line_contents="import")
    assert _cycles(graph) == [["a.high", "a.low"]]
