"""The layers of omnigym (docs/architecture.md), checked on the source: the core imports no
layer above it, environments import neither agents nor evaluators, agents do not import the
evaluators, families never import each other's insides, and no package imports form a cycle."""

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {
    "omnigym": "omnigym",
    "envs": "omnigym.envs",
    "agents": "omnigym.agents",
    "llm_agents": "omnigym.llm_agents",
    "evaluators": "omnigym.evaluators",
    "scenarios": "omnigym.scenarios",
}
FAMILIES = ("craft", "mcu", "lmrl", "safety", "diplomacy", "methods")
PUBLIC_MODULES = {"omnigym.envs.craft.engine", "omnigym.envs.craft.render"}
"""Family modules documented as public, which other families may build on (MCU on the Craft
engine, and on its renderer for ``pixels=True``)."""


def _module_name(path: Path) -> str:
    folder, *rest = path.relative_to(ROOT).with_suffix("").parts
    parts = [FOLDERS[folder], *rest]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports() -> dict[str, set[str]]:
    """Module → the omnigym modules it imports at module level (imports inside functions are
    lazy by design: entry points, optional extras). ``from package import module`` counts as
    importing the module."""
    paths = [path for folder in FOLDERS for path in (ROOT / folder).rglob("*.py")]
    modules = {_module_name(path) for path in paths}
    found: dict[str, set[str]] = defaultdict(set)
    for path in paths:
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                found[name] |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    found[name].add(full if full in modules else base)
    return {m: {i for i in imported if i.startswith("omnigym")} for m, imported in found.items()}


IMPORTS = _imports()


@pytest.mark.parametrize(
    ("below", "above"),
    [
        ("omnigym.envs", ("omnigym.agents", "omnigym.llm_agents", "omnigym.evaluators")),
        ("omnigym.agents", ("omnigym.evaluators", "omnigym.scenarios")),
        ("omnigym.llm_agents", ("omnigym.scenarios",)),
        ("omnigym.evaluators", ("omnigym.scenarios",)),
    ],
)
def test_lower_layers_never_import_higher_ones(below, above):
    offending = sorted(
        f"{module} imports {imported}"
        for module, imported_set in IMPORTS.items()
        if module.startswith(below + ".") or module == below
        for imported in imported_set
        if imported.startswith(above)
    )
    assert offending == []


def test_the_core_imports_only_the_core_at_module_level():
    core = {m for m in IMPORTS if m == "omnigym" or m.split(".")[1] not in _SUBPACKAGES}
    offending = sorted(
        f"{module} imports {imported}"
        for module in core
        for imported in IMPORTS[module]
        if imported.split(".")[1:2]
        and imported.split(".")[1] in _SUBPACKAGES
        and module != "omnigym"  # the package registers the families' ids on import
    )
    assert offending == []


_SUBPACKAGES = ("envs", "agents", "llm_agents", "evaluators", "scenarios")


def test_families_never_import_each_others_insides():
    offending = []
    for module, imported_set in IMPORTS.items():
        parts = module.split(".")
        if len(parts) < 3 or parts[1] != "envs" or parts[2] not in FAMILIES:
            continue
        for imported in imported_set:
            other = imported.split(".")
            if imported in PUBLIC_MODULES:
                continue
            if other[1:2] == ["envs"] and len(other) > 2 and other[2] != parts[2]:
                offending.append(f"{module} imports {imported}")
    assert offending == []


def test_no_import_cycles_between_modules():
    graph = {m: {i for i in imported if i in IMPORTS and i != m} for m, imported in IMPORTS.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt) :] + [nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_no_module_is_above_900_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 900
    }
    assert long == {}


def test_no_comment_points_outside_the_repository():
    import re

    pattern = re.compile(r"spec [a-z_]+\.md|specs/|DESIGN §|\bspec §|issue \d+|\.\./shared")
    offending = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in (*FOLDERS, "tests", "benchmarks")
        for path in (ROOT / folder).rglob("*.py")
        if path.name != "test_layering.py"  # the pattern itself
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert offending == []
