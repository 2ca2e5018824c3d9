"""One way through the house: the import graph of envdoctor/ follows the declared layers.

facts -> plan -> checks (rules) -> report, then the doctor that runs them, the API, the
integrations that call it, the commands on top; probe, triage and cluster beside (up to the
doctor). Every ``import`` of every module counts, at module level and inside functions (a
function-level import runs too, only later). Imports under ``if TYPE_CHECKING:`` never run: they
do not count against the layers, but they do for cycles (mypy follows them). Modules loaded by
name (``importlib.import_module``: the CLI's table of subcommands, the package's lazy
``preflight``) are not seen. A module may import its own layer and the layers below it; a
module beside may import anything up to ``BESIDE_MAX`` and the other modules beside. The graph
has no cycle. Inside the probe, its own layers (``PROBE_LAYERS``: plan, observe, stage, judge,
run, then the package and its report area) are held the same way.

Known violations are listed below with why they stay; a new one fails here. To fix one, move
the shared piece below its users (re-exported from the old place if callers import it there),
then delete its line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

#: The layers, lowest first. A key names a module or a package (a package covers its modules);
#: the longest key that a module name starts with decides its layer.
LAYERS: list[tuple[str, ...]] = [
    # base: shared pieces every layer may use (data, limits, output hygiene, curated knowledge)
    (
        "envdoctor",  # the package itself: __version__, lazy names
        "envdoctor.errors",
        "envdoctor.coerce",
        "envdoctor.units",
        "envdoctor.findings",
        "envdoctor.versions",
        "envdoctor.pep508",
        "envdoctor.redact",
        "envdoctor.resources",
        "envdoctor.settings",
        "envdoctor.suppression",
        "envdoctor.schemas",  # the JSON Schemas of the output formats (data)
        "envdoctor.parsing",
        "envdoctor.script_args",
        "envdoctor.output",
        "envdoctor.rule_docs",
        "envdoctor.net_policy",
        "envdoctor.trl_release",
        "envdoctor.knowledge",
    ),  # the package: loaders, schema, keys, requirements, known failures
    ("envdoctor.facts",),
    ("envdoctor.plan",),
    ("envdoctor.checks",),
    ("envdoctor.report",),
    ("envdoctor.remedy",),  # the fix closure: applies a remedy to facts + plan, runs the rules
    ("envdoctor.doctor",),  # runs facts -> plan -> checks -> report
    ("envdoctor.api",),  # preflight(): may run the probe
    ("envdoctor.integrations",),  # the TRL callback and monitor: they call the API
    ("envdoctor.commands",),
    ("envdoctor.cli", "envdoctor.__main__"),
]
#: Beside the flow: may import the layers up to and including ``BESIDE_MAX``'s, and each other;
#: the layers above it (the API, the commands) may import them.
BESIDE = ("envdoctor.probe", "envdoctor.triage", "envdoctor.cluster")
BESIDE_MAX = "envdoctor.doctor"

#: The probe's inner layers, named as its data flows (plan -> stage -> run -> observe -> judge),
#: each with the layers it may import besides its own. The run is the lifecycle that stages,
#: launches, watches and judges, so it sits on top like the doctor; the NVML watch (observe) is
#: below staging, which watches a vLLM server of the user's before the launch; the judges read
#: only the spec and the observations. ``envdoctor.probe.interface`` (ProbeSpec, ProbeResult)
#: counts as the plan; the package itself and ``area`` (the report area) may import them all.
#: A module of envdoctor.probe in none of these keys fails ``test_every_probe_module_has_a_layer``.
PROBE_LAYERS: dict[str, tuple[str, ...]] = {
    "envdoctor.probe.plan": (),
    "envdoctor.probe.observe": (),
    "envdoctor.probe.stage": ("envdoctor.probe.plan", "envdoctor.probe.observe"),
    "envdoctor.probe.judge": ("envdoctor.probe.plan", "envdoctor.probe.observe"),
    "envdoctor.probe.run": (
        "envdoctor.probe.plan",
        "envdoctor.probe.observe",
        "envdoctor.probe.stage",
        "envdoctor.probe.judge",
    ),
}
PROBE_ALIASES = {"envdoctor.probe.interface": "envdoctor.probe.plan"}
PROBE_TOP = ("envdoctor.probe", "envdoctor.probe.area")


#: Known upward imports (importer, imported), each with why it stays. Do not add to this list:
#: move the shared piece down instead.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {
    # none left: facts -> plan, redact -> plan, knowledge -> facts, cluster -> commands and
    # api -> commands were fixed by moving the shared piece down (parsing, script_args, output,
    # probe.area).
}

#: Known cycles, as the edge that closes each, with why it stays.
ALLOWED_CYCLE_EDGES: dict[tuple[str, str], str] = {
    # the rule registry imports the rule modules (envdoctor.checks) to register them; each rule
    # module imports the registry: a plug-in registration, run once inside a function.
    ("envdoctor.checks.registry", "envdoctor.checks"): "rule registration",
}

ROOT = Path(__file__).resolve().parent.parent / "envdoctor"


def _modules() -> dict[str, Path]:
    mods = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, type_checking: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth; those under ``if TYPE_CHECKING:`` only when
    ``type_checking``."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        if not type_checking and isinstance(node, ast.If) and _type_checking(node):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def _targets(name: str, path: Path, node: ast.Import | ast.ImportFrom, mods: dict[str, Path]) -> set[str]:
    """The envdoctor modules an import statement of module ``name`` loads."""
    if isinstance(node, ast.Import):
        wanted = [a.name for a in node.names]
    else:
        if node.level:
            package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        wanted = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
    out = set()
    for target in wanted:
        while target and target not in mods:
            target = target.rpartition(".")[0]
        if target.startswith("envdoctor") and target != name:
            out.add(target)
    return out


def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the envdoctor modules it imports (module level and function level; for type
    checking too when ``type_checking``)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in _imports(tree, type_checking):
            graph[name] |= _targets(name, path, node, mods)
    return graph


def _key(module: str, keys: tuple[str, ...]) -> str | None:
    best = None
    for key in keys:
        if (module == key or module.startswith(key + ".")) and (best is None or len(key) > len(best)):
            best = key
    return best


def layer_of(module: str) -> tuple[str, int]:
    """("flow", index) for a module of ``LAYERS``, ("beside", index of BESIDE_MAX's layer) for
    one beside; the most specific key wins (``envdoctor`` itself only for the package)."""
    keys = {k: i for i, layer in enumerate(LAYERS) for k in layer if k != "envdoctor"}
    beside = _key(module, BESIDE)
    flow = _key(module, tuple(keys))
    if beside and (flow is None or len(beside) >= len(flow)):
        return "beside", keys[BESIDE_MAX]
    if flow is not None:
        return "flow", keys[flow]
    if module == "envdoctor":
        return "flow", 0
    raise AssertionError(f"{module} is in no layer: add it to LAYERS or BESIDE in {__file__}")


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Imports against the declared order."""
    bad = set()
    for src, targets in graph.items():
        kind, level = layer_of(src)
        for dst in targets:
            dst_kind, dst_level = layer_of(dst)
            if dst_kind == "beside":
                ok = kind == "beside" or level > dst_level  # beside modules: for commands up
            else:
                ok = dst_level <= level
            if not ok:
                bad.add((src, dst))
    return bad


def probe_layer_of(module: str) -> str:
    """The inner layer of a module of envdoctor.probe (a key of ``PROBE_LAYERS``, or "top")."""
    if module in PROBE_TOP:
        return "top"
    if module in PROBE_ALIASES:
        return PROBE_ALIASES[module]
    key = _key(module, tuple(PROBE_LAYERS))
    if key is None:
        raise AssertionError(f"{module} is in no layer of the probe: put it in a subpackage of PROBE_LAYERS")
    return key


def probe_upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Imports between the probe's inner layers against ``PROBE_LAYERS``."""
    bad = set()
    for src, targets in graph.items():
        if _key(src, ("envdoctor.probe",)) is None:
            continue
        layer = probe_layer_of(src)
        for dst in targets:
            if _key(dst, ("envdoctor.probe",)) is None:
                continue
            dst_layer = probe_layer_of(dst)
            below = layer == "top" or dst_layer in (layer, *PROBE_LAYERS.get(layer, ()))
            if not below:
                bad.add((src, dst))
    return bad


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
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


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_every_module_has_a_layer(graph):
    for module in graph:
        layer_of(module)


def test_no_new_upward_import(graph):
    new = sorted(upward_imports(graph) - set(ALLOWED_UPWARD))
    assert not new, (
        "imports against the layers (facts -> plan -> checks -> report -> commands; "
        "move the shared piece down, see tests/test_layers.py):\n"
        + "\n".join(f"  {a} imports {b}" for a, b in new)
    )


def test_every_probe_module_has_a_layer(graph):
    for module in graph:
        if _key(module, ("envdoctor.probe",)):
            probe_layer_of(module)


def test_the_probe_layers_go_one_way(graph):
    """plan and observe import no other probe layer; stage and judge only those two; the run
    anything below it; nothing below the top imports the package or its report area."""
    new = sorted(probe_upward_imports(graph))
    assert not new, (
        "imports against the probe's layers (see PROBE_LAYERS in tests/test_layers.py):\n"
        + "\n".join(f"  {a} imports {b}" for a, b in new)
    )


def test_the_probe_layer_check_fails_an_upward_import():
    """Sabotage: the judge reaching for the runner, the plan for staging, staging for a judge,
    a rank's worker for the report area are each caught; the runner's imports are not."""
    wrong = {
        ("envdoctor.probe.judge.trainer", "envdoctor.probe.run.runner"),
        ("envdoctor.probe.plan.spec", "envdoctor.probe.stage.staging"),
        ("envdoctor.probe.interface", "envdoctor.probe.observe.watcher"),
        ("envdoctor.probe.stage.staging", "envdoctor.probe.judge.failures"),
        ("envdoctor.probe.run.worker", "envdoctor.probe.area"),
    }
    right = {
        ("envdoctor.probe.run.runner", "envdoctor.probe.judge.trainer"),
        ("envdoctor.probe.stage.staging", "envdoctor.probe.observe.watcher"),
        ("envdoctor.probe.judge.trainer", "envdoctor.probe.interface"),
        ("envdoctor.probe.area", "envdoctor.probe.run.runner"),
        ("envdoctor.probe.judge.failures", "envdoctor.triage.scanner"),
    }
    graph: dict[str, set[str]] = {}
    for src, dst in wrong | right:
        graph.setdefault(src, set()).add(dst)
    assert probe_upward_imports(graph) == wrong
    with pytest.raises(AssertionError, match="no layer of the probe"):
        probe_layer_of("envdoctor.probe.loose_module")


def test_allowed_upward_imports_still_exist(graph):
    """A fixed violation leaves the allow-list, so that it cannot come back unseen."""
    gone = sorted(set(ALLOWED_UPWARD) - upward_imports(graph))
    assert not gone, f"fixed, remove from ALLOWED_UPWARD: {gone}"


def test_no_import_cycle():
    """Not even through an import for type checking only (mypy follows those)."""
    graph = import_graph(type_checking=True)
    pruned = {m: {t for t in ts if (m, t) not in ALLOWED_CYCLE_EDGES} for m, ts in graph.items()}
    found = cycles(pruned)
    assert not found, "import cycles (function-level imports count):\n" + "\n".join(
        "  " + " <-> ".join(c) for c in found
    )


def test_allowed_cycle_edges_still_exist(graph):
    gone = sorted(e for e in ALLOWED_CYCLE_EDGES if e[1] not in graph.get(e[0], set()))
    assert not gone, f"gone, remove from ALLOWED_CYCLE_EDGES: {gone}"


def test_the_checker_sees_what_it_must():
    """The graph reader finds function-level and relative imports, skips TYPE_CHECKING ones,
    and flags an upward import and a cycle."""
    mods = {
        "envdoctor.facts.a": Path("a.py"),
        "envdoctor.plan": Path("__init__.py"),
        "envdoctor.plan.b": Path("b.py"),
        "envdoctor.errors": Path("errors.py"),
    }
    src = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from envdoctor.errors import X\n"
        "def f():\n    from envdoctor.plan import b\n"
    )
    found = set()
    for node in _imports(ast.parse(src)):
        found |= _targets("envdoctor.facts.a", Path("a.py"), node, mods)
    assert found == {"envdoctor.plan.b"}
    typed = set()
    for node in _imports(ast.parse(src), type_checking=True):
        typed |= _targets("envdoctor.facts.a", Path("a.py"), node, mods)
    assert typed == {"envdoctor.plan.b", "envdoctor.errors"}
    rel = ast.parse("from .b import y\nfrom .. import errors\n").body
    assert _targets("envdoctor.plan.c", Path("c.py"), rel[0], mods) == {"envdoctor.plan.b"}
    assert _targets("envdoctor.plan.c", Path("c.py"), rel[1], mods) == {"envdoctor.errors"}
    assert upward_imports({"envdoctor.facts.a": {"envdoctor.plan.b"}, "envdoctor.plan.b": set()}) == {
        ("envdoctor.facts.a", "envdoctor.plan.b")
    }
    assert upward_imports(
        {"envdoctor.triage.x": {"envdoctor.commands.y"}, "envdoctor.commands.y": {"envdoctor.triage.x"}}
    ) == {("envdoctor.triage.x", "envdoctor.commands.y")}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
