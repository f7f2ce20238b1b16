"""Stages only look back: no stage imports a later one, no module imports itself through others (no cycles, inside
packages too), imports sit at the top of a module unless they load an optional heavy dependency, no module is a god
file, and the planning stage leaves its input graph alone."""
from __future__ import annotations

import ast
from pathlib import Path

import tinyaot

SRC = Path(tinyaot.__file__).parent
# The pipeline's stages in order; a package may import its own and earlier ones (top-level modules anything). A
# stage is a package or one module of one ("quantize.fixedpoint"): the kernels' knowledge (ref/) ranks right after
# the IR and the fixed-point arithmetic, so every later stage asks it instead of re-deriving it.
STAGES = [("errors", "diagnostics", "ir"), ("fixedpoint", "quantize.fixedpoint"), ("ref",), ("frontend",), ("passes",),
          ("quantize",), ("plan",), ("codegen",), ("targets",), ("report",)]
RANK = {name: i for i, group in enumerate(STAGES) for name in group}


def stage_of(dotted: str) -> str | None:
    """The stage of a module inside tinyaot ("ref.conv2d_s8" -> "ref"): its longest prefix that is one."""
    parts = dotted.split(".")
    return next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in RANK), None)


def _imports(path: Path):
    """(line, imported tinyaot stage) for every import in the file, at module level or inside functions."""
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            other = stage_of(".".join(parts[1:])) if parts[0] == "tinyaot" and len(parts) > 1 else None
            if other is not None:
                yield node.lineno, other


def test_no_stage_imports_a_later_stage():
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        stage = stage_of(".".join(rel.with_suffix("").parts))
        if stage is None:
            continue  # pipeline, model, cli, demo...: they assemble the stages
        wrong += [f"{rel}:{line} imports tinyaot.{other}" for line, other in _imports(path)
                  if RANK[other] > RANK[stage]]
    assert wrong == []


# Imports inside functions are for optional heavy dependencies only: a PyTorch model needs torch, exact placement
# CP-SAT, the TFLM oracle tflite_micro; everything else is imported at the top, where a reader sees what a module
# needs and a cycle cannot hide.
HEAVY = ("torch", "ortools", "tflite_micro")
LAZY = {
    # tinyaot.compile: `import tinyaot` (run before any tinyaot.<module>) stays light; nothing the pipeline
    # imports imports the package back, so this is not a cycle.
    ("__init__.py", "tinyaot.pipeline"),
}
MAX_LINES = 600  # C kernels and generated tables are not .py files: no exceptions


def _modules() -> dict[str, Path]:
    """Dotted name -> file of every module and package in tinyaot."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _all_imports(name: str, path: Path):
    """(line, imported module (relative imports resolved), imported names, inside a function) for every import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield child.lineno, alias.name, (), in_function
            elif isinstance(child, ast.ImportFrom):
                module = child.module or ""
                if child.level:
                    base = package.split(".")[:len(package.split(".")) - child.level + 1]
                    module = ".".join(base + ([child.module] if child.module else []))
                yield child.lineno, module, tuple(a.name for a in child.names), in_function
            yield from walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                           ast.Lambda)))

    yield from walk(ast.parse(path.read_text()), False)


def _import_graph() -> dict[str, dict[str, list[int]]]:
    """module -> {tinyaot module it imports: [lines]}, imports inside functions included. `from P import x` is an
    edge to the module P.x when x is one, else to P (its __init__, which may re-export from P's modules); importing
    P.x also runs every package above it, an edge too unless the importer is inside that package (its __init__ has
    run already, or is what imports it)."""
    modules = _modules()
    graph: dict[str, dict[str, list[int]]] = {m: {} for m in modules}
    for name, path in modules.items():
        for line, module, names, _ in _all_imports(name, path):
            if module != "tinyaot" and not module.startswith("tinyaot."):
                continue
            targets = {f"{module}.{n}" for n in names if f"{module}.{n}" in modules}
            if len(targets) < len(names) or not names:
                targets.add(module)  # a name from the module itself (or a plain `import module`)
            for target in list(targets):
                parts = target.split(".")
                targets |= {".".join(parts[:n]) for n in range(1, len(parts))
                            if not (name + ".").startswith(".".join(parts[:n]) + ".")}
            for target in targets - {name}:
                if target in modules:
                    graph[name].setdefault(target, []).append(line)
    return graph


def _cycles(graph: dict[str, dict[str, list[int]]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.add(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_no_import_cycles():
    """No module imports itself through others, at module level or inside a function: each piece of code sits in
    the module that owns it, and the import order does not matter."""
    graph = _import_graph()
    wrong = []
    for component in _cycles(graph):
        edges = [f"{m} -> {t} (line {', '.join(map(str, lines))})" for m in sorted(component)
                 for t, lines in sorted(graph[m].items()) if t in component]
        wrong.append(f"cycle among {', '.join(sorted(component))}: " + "; ".join(edges))
    assert wrong == [], "\n".join(wrong)


def test_the_cycle_check_sees_cycles():
    """Function-level imports and imports of a package's __init__ make edges; a cycle through them is found."""
    graph = _import_graph()
    assert graph["tinyaot"]["tinyaot.pipeline"]  # a function-level import (tinyaot.compile's)
    assert "tinyaot.codegen" in graph["tinyaot.backend"]  # `from tinyaot.codegen import generate_c`: its __init__
    assert "tinyaot.frontend" in graph["tinyaot.pipeline"]  # importing frontend.pt2e runs frontend/__init__ first
    assert "tinyaot.plan" not in graph["tinyaot.plan.kernels"]  # ... but a package's own __init__ is no edge
    assert _cycles({"a": {"b": [1]}, "b": {"c": [1]}, "c": {"a": [1]}, "d": {"a": [1]}}) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b": [1]}, "b": {}}) == []


def test_imports_inside_functions_are_optional_heavy_dependencies():
    wrong = []
    for name, path in _modules().items():
        rel = path.relative_to(SRC).as_posix()
        for line, module, _, in_function in _all_imports(name, path):
            heavy = any(module == h or module.startswith(h + ".") for h in HEAVY)
            if in_function and not heavy and (rel, module) not in LAZY:
                wrong.append(f"{rel}:{line} imports {module} inside a function")
    assert wrong == [], "move these imports to the top of their modules:\n" + "\n".join(wrong)


def test_no_module_is_over_600_lines():
    """A file past 600 lines holds more than one thing: split it by what it does."""
    long = {p.relative_to(SRC).as_posix(): len(p.read_text().splitlines()) for p in SRC.rglob("*.py")}
    wrong = {rel: n for rel, n in long.items() if n > MAX_LINES}
    assert wrong == {}, f"over {MAX_LINES} lines: " + ", ".join(f"{rel} ({n})" for rel, n in sorted(wrong.items()))


def test_stages_are_ranked_module_by_module():
    """A module ranked apart from its package (quantize.fixedpoint) is judged by its own rank, both ways."""
    assert stage_of("quantize.fixedpoint") == "quantize.fixedpoint" and stage_of("quantize.lower") == "quantize"
    assert stage_of("ref.per_channel") == "ref" and stage_of("pipeline") is None
    assert RANK["ref"] < RANK["frontend"] < RANK["quantize"] < RANK["plan"]


def test_the_planning_stage_does_not_mutate_its_input():
    from conftest import shared_file

    from tinyaot.backend import plan_stage
    from tinyaot.frontend.tflite import from_tflite
    from tinyaot.plan.contract import Contract

    g = from_tflite(shared_file("models/mlperf_tiny/pretrainedResnet_quant.tflite"))  # residual adds to fuse
    before = ([n.name for n in g.nodes], dict(g.tensors), [dict(n.attrs) for n in g.nodes])
    planned, memory, free = plan_stage(g, 4, Contract(keep_input=True))
    assert ([n.name for n in g.nodes], dict(g.tensors), [dict(n.attrs) for n in g.nodes]) == before
    assert "conv2d_add" in {n.op for n in planned.nodes} and "conv2d_add" not in {n.op for n in g.nodes}
    assert memory.keep_input and free < memory.arena_bytes
    assert {t for b in memory.buffers if not b.scratch for t in b.tensors} <= set(planned.tensors)
