#!/usr/bin/env python3
"""Derive the raise-site index of the stack's packages from their git histories (maintainer command).

A log often shows an exception's message and nothing else (a one-line paste, a log cut before its
traceback, a wrapper that prints ``str(e)``). The message itself tells who raised it when a stack
package writes it in its own code: this command records, per release of a package, the messages of
its ``raise X("…")`` / ``raise X(f"…")`` statements and ``assert cond, "…"`` checks (f-strings,
``%`` and ``.format`` templates and ``+`` concatenations turned into patterns with wildcards), with
the file, the qualified function, the exception type and the releases whose code has that raise.

A raise whose function is kept but that is absent from every release after B was lifted (or
reworded) in B+1: the commit that removed it (``git log -S`` between the two releases' commits),
its subject and PR number are recorded, and whether its message says it fixes, supports or removes
the restriction; a reworded raise (the function raises the same exception with a close message in
B+1) is not lifted and is left without a removal.

Files in a vendored folder (``third_party/``, ``_vendor/``: another project's code kept in the
package, verl's copy of vLLM) are left out: their messages are that project's.

A raise whose message joins a list of messages the function collected (``errors.append(f"…")``
then ``raise ValueError(" ".join(errors))``: vLLM's ``PEFTHelper.validate_legal``) raises each of
them. Where the template's formatted values are plain names (``{tensor_parallel_size}``,
``{lora_config.max_lora_rank}``), their names are kept: the value a log shows at a wildcard is that
variable's, so a message that names a setting in words ("tensor parallel size (6)") names it.

Releases: as scripts/derive_frame_index.py reads them (release tags, or the version line for the
date-versioned packages), made since ``--since``. Blobs are parsed once (``git cat-file --batch``).

**From wheels** (``--wheels DIR``: a package whose repository is past the mirrors, vLLM and
transformers): the releases are the wheels in DIR (``DIST-VERSION-*.whl``, oldest first, pre-releases
left out), their ``.py`` files read with ``zipfile`` (nothing installed or extracted; a root is the
installed folder, ``vllm``, ``transformers``) through the same code path as a git history
(``derive_frame_index.release_reader``); a wheel has no commits, so a lift is told by its release
only (``sha`` ""). The maintainer fetches the last patch of each minor release, one command per
release (about 0.5 GB a vLLM wheel; delete them when done)::

    pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --platform manylinux_2_35_x86_64 --platform manylinux_2_31_x86_64 --platform manylinux_2_24_x86_64 \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform any vllm==0.33.0 -d WHEELS/vllm
    python scripts/derive_raise_sites.py --wheels WHEELS/vllm --package vllm --root vllm
    python scripts/derive_raise_sites.py --wheels WHEELS/transformers --package transformers \
        --root transformers

(vLLM's x86_64 wheels are tagged manylinux1 to 0.11, manylinux_2_31 from 0.12 to 0.19,
manylinux_2_35 for 0.20, manylinux_2_24 for 0.21 and manylinux_2_28 from 0.22.)

``--exclude FILE``: a file of URLs (a held-out evaluation's threads): a removal commit whose message
or PR names one of them is dropped (scripts/derive_fix_history.py's rule), so the lift is told by
its release only.

It writes ``rules/knowledge/raises/DIST.json.gz`` (schema ``envdoctor.raises/1``)::

    {"schema": …, "package": "trl", "source": "huggingface/trl", "head": "<sha>",
     "releases": ["0.14.0", …],                         # oldest first
     "modules": ["extras/vllm_client.py", …],
     "sites": [[exc, template, module, qualname, [[r0, r1], …], added(, names)], …],
     "lifted": {"<site>": [release, sha10, title, number, fixes]}}

A template's literal parts are joined by ``\\x00`` (a wildcard: a formatted value); whitespace runs
are one space. ``r0``/``r1`` index ``releases`` (both included); ``added`` is 1 when the raise came
into a function the release before already had (a check or a regression of that release).
``lifted`` maps a site's index to the first release without it and its removal commit ("" where
none was found or it was excluded);
``fixes`` is 1 when the commit's message says it fixes, supports or removes what the raise refused.
``names`` (only where known): the names of the values formatted at the template's wildcards.
Read from wheels, ``head`` and ``since`` are "" and ``read_from`` is "wheels".
Budget: 4 MB for all files together (``--budget``).

Usage (the mirrors: ``git clone --mirror URL``, or the session's ``fetch`` tool):

    python scripts/derive_raise_sites.py --all --mirrors /work/.mirror [--exclude URLS.txt]
    python scripts/derive_raise_sites.py --git-dir DIR --package trl --root trl --tags '^v(\\d[\\w.]*)$'
    python scripts/derive_raise_sites.py --wheels DIR --package vllm --root vllm   # the wheels above

Offline: it reads the git directory (``git`` on the path) or the wheels only.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "knowledge" / "raises"
SCHEMA = "envdoctor.raises/1"
BUDGET = 4_000_000
SINCE = "2024-01-01"
MAX_FILE = 2_000_000  # a larger .py file is passed over (generated tables)
MIN_LITERAL = 14  # a template with fewer literal characters tells no raise apart
MAX_TEMPLATE = 400  # characters of a template kept
WILD = "\x00"


sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts: scripts/sibling.py
from sibling import load as _load  # noqa: E402

frames = _load("derive_frame_index")  # releases, blobs, file listings: one reading of the mirrors
fixes = _load("derive_fix_history")  # --exclude's rule

_TAG = r"^v(\d+\.\d+\.\d+(?:\.post\d+)?)$"
#: distribution -> (mirror folder, repository, folders of its import packages, release-tag pattern):
#: the fix history's packages (the stacks users run GRPO through) and the libraries under them
PACKAGES: dict[str, tuple[str, str, tuple[str, ...], str]] = {
    **fixes.PACKAGES,
    "accelerate": ("huggingface+accelerate", "huggingface/accelerate", ("src/accelerate",), _TAG),
    "peft": ("huggingface+peft", "huggingface/peft", ("src/peft",), _TAG),
    "deepspeed": ("deepspeedai+DeepSpeed", "deepspeedai/DeepSpeed", ("deepspeed",), _TAG),
}
SINCE_OF = {"unsloth": "2025-02-01", "unsloth-zoo": "2025-02-01"}
#: the repositories of the packages read from their wheels (recorded as ``source``)
SOURCES = {"vllm": "vllm-project/vllm", "transformers": "huggingface/transformers"}
#: the modules (``fnmatch`` patterns of the path inside the package) indexed of a large package
#: (the budget): those whose checks refuse an RL run's configuration
MODULES_OF: dict[str, tuple[str, ...]] = {}
#: folders in which a package keeps a copy of another project's code (``verl/third_party/vllm``)
_VENDORED = frozenset({"third_party", "thirdparty", "_vendor", "vendor", "vendored"})
#: a removal commit that says it lifts what the raise refused
_LIFTS = re.compile(
    r"(?i)\b(?:fix(?:es|ed)?|support(?:s|ed|ing)?|add(?:s|ed)? support|enabl(?:e|es|ed|ing)|"
    r"allow(?:s|ed|ing)?|lift(?:s|ed)?|implement(?:s|ed)?|remov(?:e|es|ed|ing) (?:the )?"
    r"(?:restriction|limitation|check|guard|error|assert(?:ion)?|NotImplementedError|ValueError|raise))\b"
)
#: a commit that adds or moves a check, or changes what is raised, lifts nothing
_NOT_LIFT = re.compile(
    r"(?i)\b(?:add(?:s|ed)?|missing|better|clearer|improve[sd]?)\b.{0,40}\b(?:check|validation|guard|error|"
    r"message)s?\b|\braise\b.{0,60}\binstead\b|\bdeprecat|\brefactor|\bmov(?:e|es|ed|ing)\b|\brenam"
    r"|\bsimplif|\brewr[io]te|\boverhaul|\brevamp|\bclean[- ]?up\b"
)
#: words of a message that name no feature in particular
_PLAIN = frozenset(
    (
        "this",
        "that",
        "with",
        "when",
        "your",
        "using",
        "used",
        "have",
        "been",
        "must",
        "should",
        "cannot",
        "does",
        "support",
        "supported",
        "implemented",
        "please",
        "pass",
        "passed",
        "yet",
        "currently",
        "only",
        "either",
        "value",
        "values",
        "type",
        "given",
        "expected",
        "instead",
        "make",
        "sure",
        "into",
        "from",
        "than",
        "more",
        "less",
        "were",
        "will",
        "would",
        "could",
        "there",
        "their",
        "they",
        "them",
        "what",
        "which",
    )
)
_PERCENT = re.compile(r"%(?:\([^)]{0,40}\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?[diouxXeEfFgGcrsa%]")
_FORMAT = re.compile(r"\{\{|\}\}|\{[^{}]{0,80}\}")


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def _parts(node: ast.AST) -> list[str] | None:
    """A message expression as literal parts and wildcards (``WILD``); None for one that is no
    string built in place (a variable, a call's result)."""
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        out: list[str] = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                out.append(v.value)
            else:
                out.append(WILD)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _parts(node.left), _parts(node.right)
        if left is None and right is None:
            return None
        return (left or [WILD]) + (right or [WILD])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = _parts(node.left)
        if left is None:
            return None
        return [WILD if p == WILD else _PERCENT.sub(lambda m: "%" if m[0] == "%%" else WILD, p) for p in left]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, (ast.Constant, ast.JoinedStr))
    ):
        left = _parts(node.func.value)
        if left is None:
            return None
        sub = {"{{": "{", "}}": "}"}
        return [WILD if p == WILD else _FORMAT.sub(lambda m: sub.get(m[0], WILD), p) for p in left]
    return None


def template(node: ast.AST) -> str | None:
    """The message of ``node`` as a template (literal parts joined by ``WILD``), or None where it
    has too little literal text to tell it apart."""
    parts = _parts(node)
    if parts is None:
        return None
    text = "".join(parts)
    segments = [_squeeze(s) for s in text.split(WILD)]
    # adjacent wildcards are one; a template's ends keep their wildcard (text may stand there)
    out: list[str] = []
    for i, s in enumerate(segments):
        if s or i in (0, len(segments) - 1) or (out and out[-1]):
            out.append(s)
    joined = WILD.join(out)
    while WILD + WILD in joined:
        joined = joined.replace(WILD + WILD, WILD)
    if sum(len(s) for s in joined.split(WILD)) < MIN_LITERAL:
        return None
    return joined[:MAX_TEMPLATE]


def _expr_name(node: ast.AST) -> str:
    """The name of a formatted value: ``{lora_config.max_lora_rank}`` -> max_lora_rank ("" for an
    expression that is no name or attribute)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _names(node: ast.AST) -> list[str] | None:
    """The names of the values formatted into a message, one per wildcard of ``_parts`` (None where
    they are not known: a ``%`` or ``.format`` template)."""
    if isinstance(node, ast.Constant):
        return [] if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return [
            _expr_name(v.value)
            for v in node.values
            if not (isinstance(v, ast.Constant) and isinstance(v.value, str))
            and isinstance(v, ast.FormattedValue)
        ]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        sides: list[str] = []
        for side in (node.left, node.right):
            got = _names(side) if _parts(side) is not None else [_expr_name(side)]
            if got is None:
                return None
            sides += got
        return sides
    return None


def names(node: ast.AST, tpl: str) -> tuple[str, ...]:
    """The names of ``tpl``'s wildcards in order (``template(node)``; ``()`` where they are not
    known, adjacent wildcards were merged or the template was cut): the value a log shows at a
    wildcard is that variable's, the setting a refusal names by its words ("tensor parallel size
    (6)": ``tensor_parallel_size``)."""
    parts, found = _parts(node), _names(node)
    if parts is None or found is None or len(found) != parts.count(WILD) or not any(found):
        return ()
    if len(tpl) >= MAX_TEMPLATE or tpl.count(WILD) != len(found):
        return ()
    return tuple(found)


def _exc_name(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _gathered(fn: ast.AST) -> dict[str, list[ast.AST]]:
    """A function's lists of messages: ``errors.append(f"…")`` by the list's name (a check that
    collects what it refuses and raises them joined: vLLM's ``PEFTHelper.validate_legal``)."""
    out: dict[str, list[ast.AST]] = {}
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append"
            and isinstance(node.func.value, ast.Name)
            and len(node.args) == 1
            and isinstance(node.args[0], (ast.Constant, ast.JoinedStr, ast.BinOp))
        ):
            out.setdefault(node.func.value.id, []).append(node.args[0])
    return out


Raise = tuple[str, str, str, tuple[str, ...]]


def raises(source: str) -> tuple[list[Raise], set[str]]:
    """The raise sites of ``source`` (exception, template, qualified function: "" at module level,
    the names of the template's wildcards) and the names of its functions. A raise whose message
    joins a list of messages the function collected (``_gathered``) raises each of them."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return [], set()
    found: list[Raise] = []
    functions: set[str] = set()

    def message(exc: str, node: ast.AST, function: str) -> None:
        tpl = template(node)
        if tpl:
            found.append((exc, tpl, function, names(node, tpl)))

    def visit(node: ast.AST, prefix: str, function: str, lists: dict[str, list[ast.AST]]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", function, lists)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                functions.add(name)
                visit(child, name + ".<locals>.", name, _gathered(child))
            else:
                if isinstance(child, ast.Raise) and isinstance(child.exc, ast.Call) and child.exc.args:
                    exc = _exc_name(child.exc.func)
                    if exc:
                        arg = child.exc.args[0]
                        message(exc, arg, function)
                        used = {n.id for n in ast.walk(arg) if isinstance(n, ast.Name)}
                        for listed in (m for k in sorted(used & set(lists)) for m in lists[k]):
                            message(exc, listed, function)
                elif isinstance(child, ast.Assert) and child.msg is not None:
                    message("AssertionError", child.msg, function)
                visit(child, prefix, function, lists)

    visit(tree, "", "", {})
    return found, functions


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]{3,}", text.lower()))


def _reworded(tpl: str, before: list[tuple[str, str]], after: list[tuple[str, str]]) -> bool:
    """The function raises a new message close to ``tpl`` in the later release (a message it did
    not raise before, with most of the same words; any exception type): reworded, not lifted."""
    mine = _words(tpl.replace(WILD, " "))
    old = {t for _, t in before}
    for _, o_tpl in after:
        if o_tpl in old:
            continue
        theirs = _words(o_tpl.replace(WILD, " "))
        if mine and len(mine & theirs) >= 0.5 * len(mine | theirs):
            return True
    return False


def lifts(title: str, body: str, tpl: str) -> bool:
    """The removal commit says it lifts what the raise refused: a lifting verb (fixes, supports,
    allows, removes the restriction) and a word of the raise's message that names the feature, in
    one line of its title or message; not a commit that adds, moves or rewords a check, nor a
    rewrite (a simplification, an overhaul) in which the raise went with the code around it."""
    if _NOT_LIFT.search(title):
        return False
    named = {w for w in re.findall(r"[a-z_]{4,}", tpl.replace(WILD, " ").lower()) if w not in _PLAIN}
    # the verb and the feature in one line: a squashed PR's list of sub-commits ("* Fix X",
    # "* Refactor SFTTrainer") ties no fix to what the raise refused
    return any(
        _LIFTS.search(line) and named & set(re.findall(r"[a-z_]{4,}", line.lower()))
        for line in f"{title}\n{body[:2000]}".splitlines()
    )


def _anchor(tpl: str) -> str:
    return max(tpl.split(WILD), key=len)


def removal(
    git_dir: Path,
    before: str,
    after: str,
    path: str,
    tpl: str,
    exclude: frozenset[str] = frozenset(),
    threads: frozenset[str] = frozenset(),
    repo: str = "",
) -> tuple[str, str, str, int]:
    """The commit between two releases that removed the raise's message from ``path``: (sha10,
    title, PR number, 1 when its message says it lifts what the raise refused); ("", "", "", 0)
    where none is found or it is excluded."""
    anchor = _anchor(tpl)
    words = anchor.split(" ")
    needle = max((" ".join(words[i : i + 4]) for i in range(max(len(words) - 3, 1))), key=len)
    fmt = "%H%x1f%cs%x1f%s%x1f%b%x1e"
    try:
        out = frames.git(git_dir, "log", f"--format={fmt}", "-S", needle, f"{before}..{after}", "--", path)
    except Exception:  # noqa: BLE001 - a git that refuses the range: no commit to name
        return "", "", "", 0
    for row in out.split("\x1e"):
        cols = row.strip("\n").split("\x1f")
        if len(cols) < 4:
            continue
        sha, date, subject, body = cols[:4]
        c = fixes.Commit(sha, date, subject, body)
        if (exclude or threads) and fixes.excluded(c, exclude, threads, repo):
            return "", "", "", 0  # told by its release only
        return sha[:10], c.title[:160], c.number, int(lifts(c.title, body, tpl))
    return "", "", "", 0


def derive(
    git_dir: Path | None,
    package: str,
    roots: tuple[str, ...],
    tags: str = "",
    since: str = SINCE,
    source: str = "",
    ref: str = "HEAD",
    exclude: frozenset[str] = frozenset(),
    threads: frozenset[str] = frozenset(),
    wheels: Path | None = None,
    include: tuple[str, ...] = (),
) -> dict[str, object]:
    """The raise-site index of ``package`` (the module docstring's layout), from its git directory
    or (``wheels``) from its wheels; ``include``: only the modules matching these ``fnmatch``
    patterns."""
    roots = tuple(r.strip("/") for r in roots)
    reader = frames.release_reader(git_dir, package, roots, tags, since, ref, wheels)
    releases = reader.releases
    parsed: dict[str, tuple[list[Raise], set[str]]] = {}
    sites: dict[tuple[str, str, str, str], list[list[int]]] = {}
    wild: dict[tuple[str, str, str, str], tuple[str, ...]] = {}  # a site's wildcards' names
    # per release: module -> (functions, [(exc, template)] per function), for lifts and rewordings
    kept: list[dict[str, tuple[set[str], dict[str, list[tuple[str, str]]]]]] = []
    anywhere: list[set[str]] = []  # per release: the templates raised anywhere in the package
    paths: dict[str, str] = {}
    for index, (_, commit) in enumerate(releases):
        now: dict[str, tuple[set[str], dict[str, list[tuple[str, str]]]]] = {}
        seen: set[str] = set()
        for module, (key, path) in reader.files(commit, roots, include).items():
            if _VENDORED & set(module.split("/")):
                continue  # another project's code kept in the package: its messages are that project's
            paths.setdefault(module, path)
            got = parsed.get(key)
            if got is None:
                data = reader.read(key)
                got = parsed[key] = (
                    raises(data.decode("utf-8", "replace")) if len(data) <= MAX_FILE else ([], set())
                )
            found, names = got
            by_fn: dict[str, list[tuple[str, str]]] = {}
            for exc, tpl, fn, named in found:
                by_fn.setdefault(fn, []).append((exc, tpl))
                seen.add(tpl)
                if named:
                    wild[(exc, tpl, module, fn)] = named
                runs = sites.setdefault((exc, tpl, module, fn), [])
                if runs and runs[-1][1] >= index - 1:
                    runs[-1][1] = index
                else:
                    runs.append([index, index])
            now[module] = (names, by_fn)
        kept.append(now)
        anywhere.append(seen)
    reader.close()
    order = sorted(sites, key=lambda k: (k[2], k[3], k[1], k[0]))
    modules = sorted({k[2] for k in order})
    mod_id = {m: i for i, m in enumerate(modules)}
    lifted: dict[str, list[object]] = {}
    rows: list[list[object]] = []
    for i, key in enumerate(order):
        exc, tpl, module, fn = key
        runs = sites[key]
        # added to a function the release before already had: a check (or a regression) of that
        # release, not code new with it
        start = runs[0][0]
        added = int(start > 0 and bool(fn) and fn in kept[start - 1].get(module, (set(), {}))[0])
        named = wild.get(key)
        rows.append([exc, tpl, mod_id[module], fn, runs, added, *([list(named)] if named else [])])
        last = runs[-1][1]
        if last >= len(releases) - 1:
            continue
        after = kept[last + 1].get(module)
        if after is None or (fn and fn not in after[0]):
            continue  # the file or the function is gone: nothing lifted, code moved
        before = kept[last][module][1].get(fn, [])
        if tpl in anywhere[last + 1] or _reworded(tpl, before, after[1].get(fn, [])):
            continue  # moved to another file or function, or reworded: not lifted
        if any(r0 > last for r0, _ in runs):
            continue
        sha, title, number, says = "", "", "", 0  # wheels: no commits; the lift is told by its release
        if reader.history and git_dir is not None:
            sha, title, number, says = removal(
                git_dir,
                releases[last][1],
                releases[last + 1][1],
                paths[module],
                tpl,
                exclude,
                threads,
                source,
            )
        lifted[str(i)] = [releases[last + 1][0], sha, title, number, says]
    return {
        "schema": SCHEMA,
        "package": package,
        "source": source,
        "head": reader.head,
        "since": since if reader.history else "",
        **({} if reader.history else {"read_from": "wheels"}),
        "releases": [v for v, _ in releases],
        "modules": modules,
        "sites": rows,
        "lifted": lifted,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--all", action="store_true", help="every package of PACKAGES (needs --mirrors)")
    ap.add_argument("--mirrors", type=Path, help="folder of mirrors named owner+name/repo (or owner+name)")
    ap.add_argument("--only", action="append", default=[], help="with --all: this package only (repeatable)")
    ap.add_argument("--git-dir", type=Path)
    ap.add_argument(
        "--wheels",
        type=Path,
        help="a folder of the package's wheels (DIST-VERSION-*.whl): read instead of git",
    )
    ap.add_argument(
        "--include", action="append", default=[], help="only the modules matching (fnmatch; repeatable)"
    )
    ap.add_argument("--package")
    ap.add_argument("--root", action="append", default=[], help="a folder of the package in the repository")
    ap.add_argument("--tags", default="", help="release-tag pattern; its first group is the version")
    ap.add_argument("--source", default="", help="owner/name of the repository (recorded)")
    ap.add_argument("--since", default=SINCE)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--budget", type=int, default=BUDGET)
    ap.add_argument(
        "--exclude", type=Path, help="a file of URLs (issues, PRs, commits) whose removal commits are dropped"
    )
    args = ap.parse_args(argv)
    jobs: list[tuple[Path | None, str, tuple[str, ...], str, str]] = []
    if args.wheels and args.package and args.root:
        jobs.append((None, args.package, tuple(args.root), "", args.source or SOURCES.get(args.package, "")))
    elif args.all:
        if args.mirrors is None:
            ap.error("--all needs --mirrors")
        for dist, (folder, repo, roots, tags) in PACKAGES.items():
            if args.only and dist not in args.only:
                continue
            base = args.mirrors / folder
            git_dir = base / "repo" if (base / "repo").is_dir() else base
            if not git_dir.is_dir():
                print(f"{dist}: no mirror at {base}; skipped", file=sys.stderr)
                continue
            jobs.append((git_dir, dist, roots, tags, repo))
    elif args.git_dir and args.package and args.root:
        jobs.append((args.git_dir, args.package, tuple(args.root), args.tags, args.source))
    else:
        ap.error(
            "give --all --mirrors DIR, --git-dir, --package and --root, or --wheels, --package and --root"
        )
    threads = fixes.thread_keys(args.exclude) if args.exclude else frozenset()
    for git_dir, dist, roots, tags, repo in jobs:
        since = max(args.since, SINCE_OF.get(dist, args.since)) if args.all else args.since
        leave_out = fixes.exclusions(args.exclude, repo) if args.exclude and repo else frozenset()
        include = tuple(args.include) or MODULES_OF.get(dist, ())
        data = derive(
            git_dir,
            dist,
            roots,
            tags,
            since,
            repo,
            exclude=leave_out,
            threads=threads,
            wheels=args.wheels,
            include=include,
        )
        size = frames.write(data, args.out / f"{dist}.json.gz")
        releases = data["releases"]
        assert isinstance(releases, list)
        span = f"{releases[0]}–{releases[-1]}" if releases else "none"
        print(
            f"{dist}: {len(releases)} releases ({span}), {len(data['sites'])} sites, "  # type: ignore[arg-type]
            f"{len(data['lifted'])} lifted, {size} bytes"  # type: ignore[arg-type]
        )
    total = sum(p.stat().st_size for p in args.out.glob("*.json.gz"))
    print(f"total {total} bytes in {args.out}")
    if total > args.budget:
        print(f"over the budget of {args.budget} bytes", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
