"""How a training script starts vLLM's engine itself, read from its syntax tree (never run).

A run that builds ``vllm.LLM(...)`` (or ``LLMEngine.from_engine_args``) in its own code (a GRPO
loop of its own; TRL's trainers build theirs inside TRL) gets the engine's process started by
vLLM (LAY021 judges it per release). ``read_engine_start`` follows the path from the script's
module-level code to the engine build, through the calls it can resolve (the script's functions,
classes of the repository's modules, ``self.`` methods), and says:

- where the engine is built, and whether module-level code outside an
  ``if __name__ == "__main__":`` guard reaches it (a spawned child re-imports the script);
- what the code certainly runs before it on that path that touches CUDA: a torch CUDA
  initialisation (``.cuda()``, ``.to("cuda")``, a tensor made on ``device="cuda"``,
  ``torch.cuda.set_device``) or only the driver probe ``torch.cuda.is_available()``; and whether
  something it runs there may initialise CUDA (``.to(device)`` with a device it does not know);
- the literal environment writes of the files read (``os.environ["VLLM_…"] = "0"``) and the
  engine's literal ``tensor_parallel_size`` / ``distributed_executor_backend``.

Only statements that certainly ran before the build count: those earlier in the same block as
the statement that leads to it (an ``if``'s test, a loop's iterable), never a branch not taken
or a function that may not run first. Calls it cannot resolve (another package's, a method of an
object) are not followed: what they do is not seen.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

#: vLLM's offline engines whose process start VLLM_ENABLE_V1_MULTIPROCESSING governs
#: (vllm/v1/engine/llm_engine.py LLMEngine.from_engine_args / from_vllm_config)
ENGINES = frozenset({"LLM", "LLMEngine"})
#: the environment variables that decide how vLLM starts its engine process, and the torch one
#: that makes ``torch.cuda.is_available()`` fork-safe
ENV_KEYS = (
    "VLLM_ENABLE_V1_MULTIPROCESSING",
    "VLLM_WORKER_MULTIPROC_METHOD",
    "VLLM_USE_V1",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
)
#: ``torch.cuda`` functions that initialise torch's CUDA state (``torch.cuda._lazy_init``)
CUDA_INIT_CALLS = frozenset(
    {
        "set_device",
        "init",
        "current_device",
        "synchronize",
        "get_device_properties",
        "get_device_name",
        "get_device_capability",
        "mem_get_info",
        "is_bf16_supported",
        "current_stream",
    }
)
#: torch's tensor factories: one given a CUDA device initialises CUDA
FACTORIES = frozenset(
    {"zeros", "ones", "empty", "full", "rand", "randn", "randint", "tensor", "arange", "as_tensor", "eye"}
)
#: the variables vLLM's external_launcher executor reads (``int(os.environ["RANK"])``)
RANK_KEYS = ("RANK", "LOCAL_RANK")
MAX_DEPTH = 6  # calls followed from the script's module level to the engine
MAX_STEPS = 20000  # statements visited for one script


@dataclass(frozen=True)
class EngineStart:
    """Where and how the script builds vLLM's engine (``read_engine_start``)."""

    engine: str  # "LLM(...) in src/gen.py:40"
    #: the script's module-level statement outside a ``__main__`` guard that leads to the build
    #: ("train.py:12"), None when the path runs under the guard
    unguarded: str | None = None
    #: a torch CUDA initialisation certainly run before the build ("`.cuda()` in train.py:30")
    cuda_init: str | None = None
    #: ``torch.cuda.is_available()`` certainly run before it ("train.py:33")
    cuda_probe: str | None = None
    #: something run before it that may initialise CUDA (``.to(device)``), not known to
    maybe_init: str | None = None
    #: literal writes of ``ENV_KEYS`` in the files read: key -> (value, where)
    env: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: the build's literal ``tensor_parallel_size`` (1 when not given), None when computed
    tensor_parallel: int | None = 1
    #: its literal ``distributed_executor_backend`` ("" when not given), None when computed
    backend: str | None = ""
    #: the rank variables (``RANK_KEYS``) the files read write into ``os.environ``, any value
    rank_env: tuple[str, ...] = ()


@dataclass
class _File:
    label: str
    path: Path
    tree: ast.Module
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    #: name -> (module, attribute or "", relative level) of every import in the file
    imports: dict[str, tuple[str, str, int]] = field(default_factory=dict)


@dataclass
class _Found:
    engine: ast.Call
    file: _File
    ran: list[tuple[_File, ast.AST]]
    unguarded: tuple[_File, ast.stmt] | None


#: loads a file's syntax tree: (tree, label) or None
Loader = Callable[[Path], "tuple[ast.Module, str] | None"]
#: finds a repository module by import name: (dotted, level, home) -> its file or None
Locator = Callable[[str, int, Path], "Path | None"]


def read_engine_start(
    script: Path, tree: ast.Module, label: str, load: Loader, locate: Locator, notebook: bool = False
) -> EngineStart | None:
    """The engine the script's module-level code reaches (``EngineStart``), or None: it builds
    none that envdoctor can reach through calls it resolves. ``notebook``: the code runs in
    IPython (its cells hold magics), whose ``__main__`` a spawned child does not re-import: no
    statement of it is ``unguarded``."""
    try:
        found = _read(_Reader(load, locate), script, tree, label)
    except (RecursionError, MemoryError):  # too deep to walk: not read
        return None
    if found is not None and notebook:
        found = replace(found, unguarded=None)
    return found


def _read(reader: _Reader, script: Path, tree: ast.Module, label: str) -> EngineStart | None:
    main = reader.file(script, tree, label)
    found = reader.block(main.tree.body, main, [], 0, top=True)
    if found is None:
        return None
    init = probe = maybe = None
    for file, node in found.ran:
        for kind, where in reader.touches(node, file, 0):
            if kind == "init" and init is None:
                init = where
            elif kind == "probe" and probe is None:
                probe = where
            elif kind == "maybe" and maybe is None:
                maybe = where
    env: dict[str, tuple[str, str]] = {}
    ranks: set[str] = set()
    for file in reader.files.values():
        for key, value, line in _env_writes(file.tree):
            env.setdefault(key, (value, f"{file.label}:{line}"))
        ranks |= _keys_written(file.tree, RANK_KEYS)
    call = found.engine
    return EngineStart(
        engine=f"{_dotted(call.func) or 'LLM'}(...) in {found.file.label}:{call.lineno}",
        unguarded=f"{found.unguarded[0].label}:{found.unguarded[1].lineno}" if found.unguarded else None,
        cuda_init=init,
        cuda_probe=probe,
        maybe_init=maybe,
        env=env,
        tensor_parallel=_int_keyword(call, "tensor_parallel_size", 1),
        backend=_str_keyword(call, "distributed_executor_backend"),
        rank_env=tuple(sorted(ranks)),
    )


class _Reader:
    def __init__(self, load: Loader, locate: Locator) -> None:
        self.load = load
        self.locate = locate
        self.files: dict[Path, _File] = {}
        self.steps = 0
        self.entered: set[tuple[str, str]] = set()  # (file, function) on the path being walked

    def file(self, path: Path, tree: ast.Module, label: str) -> _File:
        key = path.resolve()
        if key not in self.files:
            self.files[key] = _index(_File(label, path, tree))
        return self.files[key]

    def module(self, dotted: str, level: int, home: _File) -> _File | None:
        path = self.locate(dotted, level, home.path)
        if path is None:
            return None
        key = path.resolve()
        if key in self.files:
            return self.files[key]
        got = self.load(path)
        return None if got is None else self.file(path, got[0], got[1])

    # -- the path to the engine -------------------------------------------------------------

    def block(
        self,
        stmts: list[ast.stmt],
        file: _File,
        ran: list[tuple[_File, ast.AST]],
        depth: int,
        top: bool = False,
    ) -> _Found | None:
        """The engine the statements reach, with what certainly ran before it."""
        done = list(ran)
        for stmt in stmts:
            self.steps += 1
            if self.steps > MAX_STEPS:
                return None
            found = self.stmt(stmt, file, done, depth)
            if found is not None:
                if top and found.unguarded is None and not _main_guard(stmt):
                    found.unguarded = (file, stmt)
                return found
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                done.append((file, stmt))
        return None

    def stmt(
        self, stmt: ast.stmt, file: _File, ran: list[tuple[_File, ast.AST]], depth: int
    ) -> _Found | None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None  # a definition runs no body
        if isinstance(stmt, (ast.If, ast.While)):
            found = self.expr(stmt.test, file, ran, depth)
            if found is not None:
                return found
            after = [*ran, (file, stmt.test)]
            return self.block(stmt.body, file, after, depth) or self.block(stmt.orelse, file, after, depth)
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            found = self.expr(stmt.iter, file, ran, depth)
            after = [*ran, (file, stmt.iter)]
            return (
                found
                or self.block(stmt.body, file, after, depth)
                or self.block(stmt.orelse, file, after, depth)
            )
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            items = [i.context_expr for i in stmt.items]
            for item in items:
                found = self.expr(item, file, ran, depth)
                if found is not None:
                    return found
            return self.block(stmt.body, file, [*ran, *((file, i) for i in items)], depth)
        if isinstance(stmt, ast.Try):
            return (
                self.block(stmt.body, file, ran, depth)
                or self.block(stmt.orelse, file, ran, depth)
                or self.block(stmt.finalbody, file, ran, depth)
            )
        return self.expr(stmt, file, ran, depth)

    def expr(self, node: ast.AST, file: _File, ran: list[tuple[_File, ast.AST]], depth: int) -> _Found | None:
        """The engine a simple statement or expression reaches: an engine call in it, or one a
        call it makes to a resolvable function or class reaches."""
        for call in _calls(node):
            if self.is_engine(call, file):
                return _Found(call, file, list(ran), None)
            if depth >= MAX_DEPTH:
                continue
            for target, home in self.callees(call, file):
                key = (home.label, f"{target.name}:{target.lineno}")
                if key in self.entered:
                    continue
                self.entered.add(key)
                try:
                    found = self.block(target.body, home, ran, depth + 1)
                finally:
                    self.entered.discard(key)
                if found is not None:
                    return found
        return None

    def is_engine(self, call: ast.Call, file: _File) -> bool:
        parts = (_dotted(call.func) or "").split(".")
        if parts[-1] == "from_engine_args":
            parts = parts[:-1]
        if not parts or parts[-1] not in ENGINES:
            return False
        if len(parts) == 1:
            source = file.imports.get(parts[0])
            return source is not None and not source[2] and source[0].split(".")[0] == "vllm"
        head = file.imports.get(parts[0])
        return head is not None and not head[2] and (head[0] or head[1]).split(".")[0] == "vllm"

    def callees(
        self, call: ast.Call, file: _File
    ) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, _File]]:
        """The bodies a call runs that envdoctor can read: a function or class (its ``__init__``)
        of the file or of a repository module it imports, a ``self.`` method of the file's classes."""
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            for cls in file.classes.values():
                method = _method(cls, func.attr)
                if method is not None:
                    yield method, file
            return
        name = _dotted(func)
        if name is None:
            return
        parts = name.split(".")
        target = _local(file, parts[0]) if len(parts) == 1 else None
        if target is not None:
            yield target, file
            return
        source = file.imports.get(parts[0])
        if source is None:
            return
        module, attr, level = source
        if len(parts) == 1 and attr:
            found = self.module(module, level, file)
            target = _local(found, attr) if found is not None else None
            if found is not None and target is not None:
                yield target, found
        elif len(parts) == 2:
            found = self.module(f"{module}.{attr}" if attr else module, level, file)
            target = _local(found, parts[1]) if found is not None else None
            if found is not None and target is not None:
                yield target, found

    # -- what ran before it -----------------------------------------------------------------

    def touches(self, node: ast.AST, file: _File, depth: int) -> Iterator[tuple[str, str]]:
        """What a statement that ran does to CUDA: ("init" | "probe" | "maybe", where), also
        through the unconditional statements of the functions it calls that envdoctor reads."""
        for call in _certain_calls(node):
            self.steps += 1
            if self.steps > 2 * MAX_STEPS:
                return
            kind = _cuda_kind(call, file)
            if kind is not None:
                yield kind, f"`{_said(call)}` in {file.label}:{call.lineno}"
                continue
            if depth >= 3:
                continue
            for target, home in self.callees(call, file):
                for stmt in target.body:
                    yield from self.touches(stmt, home, depth + 1)


def _index(f: _File) -> _File:
    for stmt in f.tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            f.functions[stmt.name] = stmt
        elif isinstance(stmt, ast.ClassDef):
            f.classes[stmt.name] = stmt
    for node in ast.walk(f.tree):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                f.imports.setdefault(a.asname or a.name, (node.module or "", a.name, node.level))
        elif isinstance(node, ast.Import):
            for a in node.names:
                name = a.asname or a.name.split(".")[0]
                f.imports.setdefault(name, (a.name if a.asname else name, "", 0))
    return f


def _local(f: _File, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    if name in f.functions:
        return f.functions[name]
    cls = f.classes.get(name)
    return _method(cls, "__init__") if cls is not None else None


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    return next(
        (s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name),
        None,
    )


def _main_guard(stmt: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (either side)."""
    test = stmt.test if isinstance(stmt, ast.If) else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, *test.comparators]
    names = {s.id for s in sides if isinstance(s, ast.Name)}
    texts = {s.value for s in sides if isinstance(s, ast.Constant)}
    return names == {"__name__"} and texts == {"__main__"}


def _calls(node: ast.AST) -> Iterator[ast.Call]:
    """The calls of a statement or expression, outermost first, not those of the functions,
    lambdas and classes it defines."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, ast.Call):
            yield cur
        stack.extend(
            reversed(
                [
                    c
                    for c in ast.iter_child_nodes(cur)
                    if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
                ]
            )
        )


def _certain_calls(node: ast.AST) -> Iterator[ast.Call]:
    """The calls a statement that ran certainly made: not those in the branches of a conditional
    expression, after the first operand of ``and`` / ``or``, in a comprehension's element, a
    lambda or a definition."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(
            cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Try, ast.Match)
        ):
            continue
        if isinstance(cur, ast.Call):
            yield cur
        if isinstance(cur, (ast.If, ast.While)):
            stack.append(cur.test)  # its branches may not run
        elif isinstance(cur, (ast.For, ast.AsyncFor)):
            stack.append(cur.iter)
        elif isinstance(cur, (ast.With, ast.AsyncWith)):
            stack.extend(i.context_expr for i in cur.items)
        elif isinstance(cur, ast.IfExp):
            stack.append(cur.test)
        elif isinstance(cur, ast.BoolOp):
            stack.append(cur.values[0])
        elif isinstance(cur, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            stack.append(cur.generators[0].iter)
        else:
            stack.extend(ast.iter_child_nodes(cur))


def _cuda_kind(call: ast.Call, file: _File) -> str | None:
    """ "init" (torch's CUDA state is initialised), "probe" (``torch.cuda.is_available()``: the
    driver only), "maybe" (a device envdoctor does not know), or None."""
    name = _dotted(call.func) or ""
    parts = name.split(".")
    last = call.func.attr if isinstance(call.func, ast.Attribute) else parts[-1]
    if _torch_cuda(parts[:-1], file):
        if last == "is_available":
            return "probe"
        if last in CUDA_INIT_CALLS:
            return "init"
        return None
    if isinstance(call.func, ast.Attribute) and last == "cuda" and not call.args:
        return "init"
    if isinstance(call.func, ast.Attribute) and last == "to":
        target = next(
            (k.value for k in call.keywords if k.arg == "device"), call.args[0] if call.args else None
        )
        return _device_kind(target)
    device = next((k.value for k in call.keywords if k.arg == "device"), None)
    if device is not None and last in FACTORIES and _is_torch(parts[0], file):
        return _device_kind(device)
    device_map = next((k.value for k in call.keywords if k.arg == "device_map"), None)
    if device_map is not None and last == "from_pretrained":
        return (
            "maybe"
            if not (isinstance(device_map, ast.Constant) and device_map.value in ("cpu", None))
            else None
        )
    return None


def _device_kind(node: ast.expr | None) -> str | None:
    """A ``.to(...)`` / ``device=`` value: "init" for a literal CUDA device, None for a literal
    other one (``"cpu"``, a dtype), "maybe" for one envdoctor does not know."""
    if node is None:
        return None
    if isinstance(node, ast.Call) and (_dotted(node.func) or "").endswith("device") and node.args:
        node = node.args[0]  # torch.device("cuda")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            return "init" if node.value.startswith("cuda") else None
        return "init" if isinstance(node.value, int) and not isinstance(node.value, bool) else None
    name = _dotted(node) or ""
    if name.split(".")[0] == "torch" or name.endswith(("dtype", "float16", "bfloat16", "float32")):
        return None  # torch.bfloat16, model.dtype
    return "maybe"


def _torch_cuda(parts: list[str], file: _File) -> bool:
    """Whether ``parts`` names ``torch.cuda`` (``torch.cuda``, ``cuda`` imported from torch)."""
    if parts == ["torch", "cuda"]:
        return _is_torch("torch", file)
    if parts == ["cuda"]:
        source = file.imports.get("cuda")
        return source is not None and source[0] == "torch" and source[1] == "cuda"
    return False


def _is_torch(name: str, file: _File) -> bool:
    source = file.imports.get(name)
    return source is not None and (source[0] or source[1]) == "torch" and not source[2]


def _env_writes(tree: ast.Module) -> Iterator[tuple[str, str, int]]:
    """``os.environ["K"] = "v"``, ``os.environ.setdefault("K", "v")``, ``os.putenv("K", "v")`` and
    ``os.environ.update({"K": "v"})`` / ``(K="v")`` of ``ENV_KEYS``, literal values only."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for t in node.targets:
                if isinstance(t, ast.Subscript) and (_dotted(t.value) or "").endswith("environ"):
                    key = t.slice
                    if isinstance(key, ast.Constant) and key.value in ENV_KEYS:
                        yield str(key.value), str(node.value.value), node.lineno
        elif isinstance(node, ast.Call):
            name = _dotted(node.func) or ""
            if name.endswith(("environ.setdefault", "putenv")) and len(node.args) == 2:
                key, value = node.args
                if (
                    isinstance(key, ast.Constant)
                    and key.value in ENV_KEYS
                    and isinstance(value, ast.Constant)
                ):
                    yield str(key.value), str(value.value), node.lineno
            elif name.endswith("environ.update"):
                pairs: list[tuple[str, ast.expr]] = [(k.arg, k.value) for k in node.keywords if k.arg]
                if node.args and isinstance(node.args[0], ast.Dict):
                    pairs += [
                        (str(k.value), v)
                        for k, v in zip(node.args[0].keys, node.args[0].values, strict=False)
                        if isinstance(k, ast.Constant)
                    ]
                for text, value in pairs:
                    if text in ENV_KEYS and isinstance(value, ast.Constant):
                        yield text, str(value.value), node.lineno


def _keys_written(tree: ast.Module, keys: tuple[str, ...]) -> set[str]:
    """Which of ``keys`` the file writes into ``os.environ`` (any value, any form: a subscript, a
    ``setdefault`` / ``update`` / ``putenv``, a text key anywhere in such a call)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            found |= {
                str(t.slice.value)
                for t in node.targets
                if isinstance(t, ast.Subscript)
                and (_dotted(t.value) or "").endswith("environ")
                and isinstance(t.slice, ast.Constant)
                and t.slice.value in keys
            }
        elif isinstance(node, ast.Call) and (_dotted(node.func) or "").endswith(
            ("environ.setdefault", "environ.update", "putenv")
        ):
            found |= {str(k.arg) for k in node.keywords if k.arg is not None and k.arg in keys}
            for sub in ast.walk(node):
                if isinstance(sub, ast.Constant) and sub.value in keys:
                    found.add(str(sub.value))
    return found


def _int_keyword(call: ast.Call, name: str, default: int) -> int | None:
    if any(k.arg is None for k in call.keywords):
        return None  # a **mapping may pass it
    value = next((k.value for k in call.keywords if k.arg == name), None)
    if value is None:
        return default
    if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
        return value.value
    return None


def _str_keyword(call: ast.Call, name: str) -> str | None:
    if any(k.arg is None for k in call.keywords):
        return None
    value = next((k.value for k in call.keywords if k.arg == name), None)
    if value is None:
        return ""
    return value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None


def _said(call: ast.Call) -> str:
    """A call as a message names it: ``torch.cuda.is_available()``, ``.to("cuda")``."""
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cuda"):
        args = ", ".join(ast.unparse(a) for a in call.args[:1])
        return f".{call.func.attr}({args})"[:60]
    text = ast.unparse(call)
    return text if len(text) <= 60 else f"{_dotted(call.func) or 'call'}(...)"


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None
