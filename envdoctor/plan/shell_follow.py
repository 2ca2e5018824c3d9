"""A launch that runs a shell script (``bash train.sh``, ``sh x.sh``, ``bash -x run.sh``,
``./launch/grpo.sh ARGS``, ``source x.sh``) followed to the commands the script runs, read as bash
reads them and never run: its logical lines (``shell_lines.bash_lines``: continuations joined,
comments and heredoc bodies left out), ``VAR=…`` / ``export VAR=…`` / ``set -a``, ``${VAR}``,
``${VAR:-default}``, ``$1``…``$9`` / ``$@`` / ``$*`` from the launch's own arguments, ``$0`` and
``$(dirname "$0")``, ``cd DIR``, a command's environment prefix, ``&`` and ``wait``, shell functions
(a body is read where the function is called, with the call's arguments as ``$1``… and the values
set by then, as bash runs it; a function never called is read only where nothing else launches,
its arguments not known), and the scripts it runs in turn (nested at most ``MAX_NESTING`` deep).

The result is the run's launch lines in order, each carrying the environment the script exported
before it and the script's file and line it came from (``Launch.source``): a vLLM server's line
(``trl vllm-serve`` / ``vllm serve``) before the trainer's, the trainer's last, as several
``--launch`` lines give them. A value the script cannot give statically (a command substitution, a
loop variable, a variable set in a branch chosen at run time, one the script never sets) stays as
written (``$N``) and is said in ``Launch.unknown``; several different trainer lines in branches
leave the launch unresolved, never guessed.

Bounded: a script over ``MAX_BYTES`` or ``MAX_LINES``, with a NUL byte, or one that runs itself
is not read (the launch stays unresolved, naming the file); the reading is linear in its lines; a
line whose values expand past ``shell_lines.MAX_LINE`` characters is not read (what it sets is not
known), and a launch whose scripts, run by scripts, read more than ``MAX_READ`` lines in all stays
unresolved (``bash a.sh`` a thousand times in each of three nested scripts).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from envdoctor.plan.cd import cd_target
from envdoctor.plan.interface import Launch

MAX_BYTES = 256 * 1024
MAX_LINES = 5_000
MAX_NESTING = 3
#: logical lines read in all for one launch: its script and every script it runs, each time it runs
MAX_READ = 2 * MAX_LINES
_SUFFIXES = (".sh", ".bash")
#: the scripts being read now (their real paths): how deep, and a script that runs itself
_FOLLOWING: list[str] = []
#: the lines read so far for the launch being followed (reset where the outermost script starts)
_READ = [0]
#: exported variables a launched process reads (the CUDA/NCCL/PyTorch/vLLM… families), written
#: before a followed launch line so that the line stands alone (``envdoctor fix``'s lines)
_CHILD_ENV = re.compile(
    r"^(?:CUDA_\w+|NCCL_\w+|PYTORCH_\w+|TORCH_\w+|VLLM_\w+|ACCELERATE_\w+|OMP_NUM_THREADS|"
    r"MASTER_ADDR|MASTER_PORT|WORLD_SIZE|NNODES|NPROC_PER_NODE|NODE_RANK|HIP_VISIBLE_DEVICES|"
    r"ROCR_VISIBLE_DEVICES|TOKENIZERS_PARALLELISM|DS_\w+|TRL_\w+)$"
)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ASSIGN = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<plus>\+)?=(?P<value>.*)$", re.S)
_REF = re.compile(r"\$(?:\{(?P<brace>[^{}]*)\}|(?P<name>[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]))")
_BRACE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#])(?:(?P<op>:?[-=+?])(?P<word>.*))?$", re.S)
#: ``$(dirname "$0")`` / ``$(dirname "${BASH_SOURCE[0]}")``: the script's folder, known statically
_DIRNAME = re.compile(
    r"""\$\(\s*dirname\s+(?:"|')?(?:\$0|\$\{0\}|\$\{BASH_SOURCE(?:\[0\])?\}|\$BASH_SOURCE)(?:"|')?\s*\)"""
)
#: ``$(cd DIR && pwd)``: DIR (a literal, once the dirname above is read)
_CD_PWD = re.compile(
    r"""\$\(\s*cd\s+(?:"|')?(?P<dir>[^"'$`()&;|]*)(?:"|')?\s*(?:&&|;)\s*pwd(?:\s+-[LP])?\s*\)"""
)
_PWD = re.compile(r"\$\(\s*pwd\s*\)|\$\{PWD\}|\$PWD\b")
_ARRAY = re.compile(r"^(?:local\s+|readonly\s+|declare\s+-a\s+|typeset\s+-a\s+)?(?P<name>[A-Za-z_]\w*)\+?=\(")
_FUNCTION = re.compile(
    r"^\s*(?:function\s+(?P<kw>[\w.:-]+)\s*(?:\(\s*\))?|(?P<fn>[\w.:-]+)\s*\(\s*\))\s*(?P<brace>\{)?"
)
#: functions running inside one another at most (a function that calls itself is not run again)
MAX_CALLS = 8
_OPENERS = {"if": "if", "case": "case", "for": "loop", "while": "loop", "until": "loop", "select": "loop"}
_CLOSERS = {"fi": "if", "esac": "case", "done": "loop", "}": "{", ")": "("}
#: the launchers' own types: the trainer among several commands the script runs in sequence
_TRAINER_LAUNCHERS = ("accelerate", "torchrun", "deepspeed")


def script_words(command: list[str], shell_script: list[str] | None) -> list[str] | None:
    """[script, its arguments…] of a command that runs a shell script: ``bash [flags] x.sh ARGS``
    (``shell_script``, as the wrapper reader found it), ``./x.sh ARGS`` / ``dir/x.sh`` (a path:
    bash looks a bare name up on PATH), ``source x.sh`` / ``. x.sh``; None for any other."""
    if shell_script:
        return shell_script
    if not command:
        return None
    prog = command[0]
    if prog in ("source", ".") and len(command) > 1:
        return None if _is_activate(command[1]) else command[1:]
    if "/" in prog and prog.endswith(_SUFFIXES) and "$" not in prog:
        return command
    return None


@dataclass(frozen=True)
class Parser:
    """The launch parser's own readings the follower hands each command to (plan/launch passes
    them in: this module does not import it back): ``parse(text, exported, depth, folder)`` the
    launches of a command's text."""

    parse: Callable[[str, dict[str, str], int, str], list[Launch]]


def _unknown(raw: str, env: dict[str, str], tokens: list[str], why: str) -> Launch:
    """A launch whose commands are not known, saying why (as plan/launch's own)."""
    return Launch(
        raw=raw, launcher="unknown", env=env, program=tokens[:1], script_args=tokens[1:], unresolved=why
    )


class _TooLong(Exception):
    """A line whose references expand past ``shell_lines.MAX_LINE`` characters."""


@dataclass
class _Found:
    launch: Launch
    branch: bool


@dataclass
class _Reader:
    """One script's reading: its variables (None: not known statically, ``why`` says why), the
    exported ones, the folder ``cd`` went to (None: not known), and the launches found."""

    shown: str
    zero: str  # ``$0``: the script as the command wrote it
    args: list[str]
    depth: int
    values: dict[str, str | None]
    exported: dict[str, str]
    folder: str | None
    why: dict[str, str] = field(default_factory=dict)
    #: defaults taken on this line (``${NAME:-x}`` where the script never sets NAME), and the
    #: variables whose values carry such a default (NAME -> what is said)
    defaults: list[str] = field(default_factory=list)
    taken: dict[str, tuple[str, ...]] = field(default_factory=dict)
    refs: set[str] = field(default_factory=set)
    #: what the script wrote for a variable whose value is not known (exported as written, so
    #: that a rule reading it says it is left to the shell rather than taking the machine's)
    written: dict[str, str] = field(default_factory=dict)
    allexport: bool = False
    stack: list[str] = field(default_factory=list)
    found: list[_Found] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stopped: bool = False
    returning: bool = False  # a `return` ran: the rest of the function's body does not
    #: a `return` in a branch of the running function: its later `exit` may not run
    may_return: bool = False
    exhausted: bool = False  # more than MAX_READ lines read in all: the launch is not known
    array: int = 0  # an array assignment's lines still open
    parser: Parser = field(default_factory=lambda: Parser(lambda *_: []))
    #: the functions defined so far: name -> (file, its body's logical lines, the header's rest
    #: first); the one being defined now; the ones running now (innermost last) with the
    #: variables each made ``local`` (name -> its value before, or absent); those called
    functions: dict[str, tuple[str, list[tuple[int, str]]]] = field(default_factory=dict)
    defining: tuple[str, list[tuple[int, str]]] | None = None
    calls: list[tuple[str, dict[str, tuple[bool, str | None]]]] = field(default_factory=list)
    called: set[str] = field(default_factory=set)
    args_known: bool = True  # False in a function read without its call: ``$1``… not known

    # -- values -------------------------------------------------------------------------------

    def _value(self, m: re.Match[str], quoted: bool) -> str | None:
        """The text a ``$…`` reference expands to (shell-quoted for its place), None: unknown."""
        if m["name"] is not None:
            name, op, word = m["name"], None, None
        else:
            b = _BRACE.match(m["brace"])
            if b is None:  # ${#N}, ${N%x}, ${ARR[@]}: not evaluated
                inner = re.match(r"#?([A-Za-z_]\w*)", m["brace"])
                if inner:
                    self.why.setdefault(inner.group(1), "an expansion envdoctor does not evaluate")
                return None
            name, op, word = b["name"], b["op"], b["word"]
        if not self.args_known and (name.isdigit() and name != "0" or name in ("@", "*", "#")):
            self.why[name] = "an argument of a function envdoctor did not see called"
            return None
        if name in ("@", "*"):
            words = " ".join(shlex.quote(a) for a in self.args)
            return f'"{words}"' if quoted and name == "@" else _escape(" ".join(self.args), quoted)
        if name == "#":
            return str(len(self.args))
        if name in ("?", "$", "!", "-"):
            return None
        if name.isdigit():
            k = int(name)
            value: str | None = self.zero if k == 0 else (self.args[k - 1] if k <= len(self.args) else None)
            is_set = k == 0 or k <= len(self.args)
        else:
            is_set = name in self.values
            value = self.values.get(name)
            if is_set and value is None:
                return None  # set, to a value not known statically
            if not is_set:
                if op and op.lstrip(":")[:1] in "-=" and word is not None:
                    pass  # a default the script writes: taken where the environment does not set it
                else:
                    self.why.setdefault(name, "not set by the script (its environment gives it)")
                    return None
        if op is None:
            return _escape(value or "", quoted)
        empty = value is None or (op.startswith(":") and value == "")
        kind = op.lstrip(":")
        if kind in ("-", "="):
            if not empty:
                return _escape(value or "", quoted)
            text = self.expand(word or "", inner=True)
            if not name.isdigit() and not is_set:
                self.defaults.append(f"`${name}` is not set by the script: its default `{text}` is taken")
            if kind == "=" and not name.isdigit():
                self.values[name] = text
            return text if quoted else text
        if kind == "+":
            return "" if empty else self.expand(word or "", inner=True)
        return None if empty else _escape(value or "", quoted)  # ${N:?message}

    def expand(self, text: str, inner: bool = False) -> str:
        """``text`` with every reference whose value is known put in; the others as written."""
        if "$" not in text:
            return text
        from envdoctor.plan.shell_lines import MAX_LINE

        out: list[str] = []
        size = 0  # characters the references put in: bounded (``A="$A$A"`` forty times)
        single = double = False
        i = 0
        while i < len(text):
            ch = text[i]
            if ch == "\\" and not single:
                out.append(text[i : i + 2])
                i += 2
                continue
            if ch == "'" and not double and not inner:
                single = not single
            elif ch == '"' and not single:
                double = not double
            elif ch == "$" and not single:
                m = _REF.match(text, i)
                whole = (
                    m is not None and m.group(0) in ("$@", "${@}") and out[-1:] == ['"'] and self.args_known
                )
                if m is not None and whole and text[m.end() : m.end() + 1] == '"':
                    out[-1] = " ".join(shlex.quote(a) for a in self.args)  # "$@": a word each, none when none
                    double = False
                    i = m.end() + 1
                    continue
                if m is not None:
                    got = self._value(m, double)
                    if got is not None:
                        size += len(got)
                        if size > MAX_LINE:
                            raise _TooLong
                        out.append(got)
                        i = m.end()
                        continue
                    out.append(m.group(0))
                    i = m.end()
                    continue
            out.append(ch)
            i += 1
        return "".join(out)

    def _static(self, line: str) -> str:
        """``$(dirname "$0")``, ``$(cd DIR && pwd)``, ``$(pwd)`` / ``$PWD``: known without running."""
        if "$" not in line:
            return line
        here = os.path.dirname(self.zero) or "."
        line = _DIRNAME.sub(lambda _: here, line)
        if self.folder is not None:  # `pwd` prints an absolute path: later `cd`s do not move it
            start = os.path.abspath(self.folder or ".")
            line = _CD_PWD.sub(lambda m: os.path.normpath(os.path.join(start, m["dir"].strip() or ".")), line)
            line = _PWD.sub(lambda _: start, line)
        return line

    # -- statements ---------------------------------------------------------------------------

    @property
    def branch(self) -> bool:
        """Inside an ``if``/``case``/loop/subshell (a running function's own frame is not one)."""
        return any(f != "call" for f in self.stack)

    @property
    def dry(self) -> bool:
        """Inside a function's definition: its lines are kept for its call, not run now."""
        return any(f.startswith("fn") for f in self.stack)

    def _set(self, name: str, value: str, number: int, conditional: bool) -> None:
        self.written[name] = value
        if "$(" in value or "`" in value:
            self.values[name] = None
            self.why[name] = f"set by a command substitution ({self.shown}:{number})"
        elif _REF.search(value):
            self.values[name] = None
            left = _REF.search(value)
            ref = left.group(0) if left else value
            self.why[name] = f"set from `{ref}`, not known ({self.shown}:{number})"
        elif (conditional or self.branch) and self.values.get(name, "\0") != value:
            self.values[name] = None
            self.why[name] = f"set in a branch chosen at run time ({self.shown}:{number})"
        else:
            self.values[name] = value
        carried = [*self.defaults, *(n for r in self.refs for n in self.taken.get(r, ()))]
        if carried:
            self.taken[name] = tuple(dict.fromkeys(carried))
        if self.allexport or name in self.exported:
            self._export(name)

    def _export(self, name: str) -> None:
        value = self.values.get(name)
        written = self.written.get(name, "")
        shell = written if ("$" in written or "`" in written) else f"${{{name}}}"  # left to the shell
        self.exported[name] = value if value is not None else shell

    def run(self, text: str) -> None:
        from envdoctor.plan.shell_lines import MAX_LINE, bash_lines  # loaded only where a script is read

        for number, line, _ in bash_lines(text):
            if self.stopped:
                return
            if len(line) > MAX_LINE:  # a quoted block of data, not a command line
                self.notes.append(f"{self.shown}:{number} is longer than {MAX_LINE:,} characters: not read")
                continue
            self.feed(number, line.strip())

    def feed(self, number: int, stripped: str) -> None:
        """One logical line, counted against ``MAX_READ``; kept for its function's call where it
        is a line of a function's definition."""
        if not stripped or stripped.startswith("#"):
            return
        _READ[0] += 1
        if _READ[0] > MAX_READ:
            self.exhausted = self.stopped = True
            return
        defining = self.defining
        if self.array:
            self.array = max(self.array + stripped.count("(") - stripped.count(")"), 0)
        else:
            self.line(number, stripped)
        if defining is not None:  # a line of the body (its last closes the definition)
            defining[1].append((number, stripped))
        if self.defining is not None and not self.dry:  # the definition closed (on this line too)
            name, body = self.defining
            self.functions[name] = (self.shown, body)
            self.defining = None

    def line(self, number: int, text: str) -> None:
        array = _ARRAY.match(text)
        if array:  # ARGS=(--model m …): an array, its items not read (``${ARGS[@]}`` stays)
            if not self.dry:
                self._local(array["name"])
                self.values[array["name"]] = None
                self.why[array["name"]] = f"an array ({self.shown}:{number})"
            code = text.split(" #", 1)[0]
            self.array = max(code.count("(") - code.count(")"), 0)
            return
        fn = _FUNCTION.match(text)
        if fn and not text.lstrip().startswith(("if ", "for ", "while ")):
            if not self.dry:  # a definition: its body is kept, read where it is called
                self.defining = (fn["kw"] or fn["fn"], [])
                if text[fn.end() :].strip():
                    self.defining[1].append((number, text[fn.end() :].strip()))
            self.stack.append("fn" if fn["brace"] else "fn?")
            text = text[fn.end() :]
            if not text.strip():
                return
        from envdoctor.plan.shell_lines import split_words

        if self.dry:  # only the structure: where the definition ends
            self._commands(number, split_words(text) or [])
            return

        self.defaults = []
        self.refs = {
            m["name"] or re.split(r"[:\-=+?#%/\[]", m["brace"] or "")[0] for m in _REF.finditer(text)
        }
        try:
            expanded = self.expand(self._static(text))
        except _TooLong:
            from envdoctor.plan.shell_lines import MAX_LINE

            self.notes.append(f"{self.shown}:{number} expands to more than {MAX_LINE:,} characters: not read")
            for name in re.findall(
                r"(?:^|[\s;&|(])(?:export\s+|local\s+|declare\s+)?([A-Za-z_]\w*)\+?=", text
            ):
                self.values[name] = None  # what the line sets is not known (never the value before it)
                self.why[name] = f"set to a value longer than {MAX_LINE:,} characters ({self.shown}:{number})"
            return
        self._commands(number, split_words(expanded) or [])

    def _commands(self, number: int, words: list[str]) -> None:
        if not words:
            return
        commands: list[list[str]] = [[]]
        for w in words:
            if w in (";", ";;", "&&", "||", "|", "&", "|&"):
                commands.append([])
            elif w.endswith(";") and len(w) > 1 and not w.endswith("\\;"):
                commands[-1].append(w.rstrip(";"))
                commands.append([])
            else:
                commands[-1].append(w)
        chained = any(w in ("&&", "||") for w in words)
        for k, cmd in enumerate(c for c in commands if c):
            self.command(number, cmd, conditional=chained and k > 0, first=k == 0)
            if self.stopped:
                return

    def command(self, number: int, cmd: list[str], conditional: bool, first: bool) -> None:
        while cmd and cmd[0] in ("then", "do", "else", "{", "(", "!"):
            if cmd[0] == "{" and self.stack and self.stack[-1] == "fn?":
                self.stack[-1] = "fn"
            elif cmd[0] in ("{", "("):
                self.stack.append(cmd[0])
            cmd = cmd[1:]
        if not cmd:
            return
        head = cmd[0]
        if head in _CLOSERS or (head.endswith(")") and self.stack[-1:] == ["case"] and len(cmd) == 1):
            if head in _CLOSERS:
                want = _CLOSERS[head]
                while self.stack:
                    if self.stack[-1] == "call":
                        break  # a running function's end: its caller's frames stay
                    top = self.stack.pop()
                    if top == want or (want == "{" and top.startswith("fn")):
                        break
            return
        if head in _OPENERS or head == "elif":
            if head in ("if", "elif", "while", "until") and len(cmd) > 1:
                # the condition runs (`if accelerate launch …; then`): read it as a command
                self.command(number, cmd[1:], conditional or head != "if", first)
            if head in _OPENERS:
                self.stack.append(_OPENERS[head])
            if head in ("for", "select") and len(cmd) > 1 and _NAME.match(cmd[1]) and not self.dry:
                self.values[cmd[1]] = None
                self.why[cmd[1]] = f"the loop variable of `{head}` ({self.shown}:{number})"
            return
        if self.stack[-1:] == ["case"] and head.endswith(")"):
            cmd = cmd[1:]  # `pattern) command ;;`
            if not cmd:
                return
            head = cmd[0]
        if cmd[-1:] == ["}"] or cmd[-1:] == ["fi"] or cmd[-1:] == ["done"]:
            closer = cmd[-1]
            self.command(number, cmd[:-1], conditional, first)
            self.command(number, [closer], conditional, first)
            return
        if self.dry:
            return
        conditional = conditional or self.branch
        if all(_ASSIGN.match(w) for w in cmd):
            for w in cmd:
                a = _ASSIGN.match(w)
                assert a is not None
                if a["value"].startswith("("):  # an array not first on its line (`A=1 B=(x y)`)
                    self.values[a["name"]] = None
                    self.why[a["name"]] = f"an array ({self.shown}:{number})"
                    continue
                value = (self.values.get(a["name"]) or "") + a["value"] if a["plus"] else a["value"]
                self._set(a["name"], value, number, conditional)
            return
        if head in ("export", "declare", "typeset", "local", "readonly"):
            flags = "".join(w[1:] for w in cmd[1:] if w.startswith("-"))
            exports = head == "export" or "x" in flags
            for w in cmd[1:]:
                if w.startswith("-"):
                    continue
                a = _ASSIGN.match(w)
                name = a["name"] if a else w
                if not _NAME.match(name):
                    continue
                if head == "local" or (head in ("declare", "typeset") and self.calls):
                    self._local(name)
                if exports:
                    self.exported.setdefault(name, "")
                if a:
                    self._set(name, a["value"], number, conditional)
                elif exports:
                    self._export(name)
            return
        if head == "set":
            for w in cmd[1:]:
                if re.fullmatch(r"-[a-zA-Z]*a[a-zA-Z]*", w) or (w == "allexport" and "-o" in cmd):
                    self.allexport = True
                elif re.fullmatch(r"\+[a-zA-Z]*a[a-zA-Z]*", w) or (w == "allexport" and "+o" in cmd):
                    self.allexport = False
            return
        if head == "unset":
            for w in cmd[1:]:
                self.values.pop(w, None)
                self.exported.pop(w, None)
            return
        if head == "shift":
            n = int(cmd[1]) if len(cmd) > 1 and cmd[1].isdigit() else 1
            self.args = self.args[n:]
            return
        if head in ("cd", "pushd", "popd"):
            target = cmd[1] if len(cmd) == 2 and head != "popd" else None
            base = self.folder
            if target is not None and os.path.isabs(target):  # a root `pwd` gave: from here if below
                target, base = os.path.relpath(target, os.getcwd()), ""
                target = target if not target.startswith("..") else None
            moved = cd_target(base, target) if target is not None else None
            self.folder = None if conditional and moved != self.folder else moved
            return
        if head == "exit" and first and not self.branch and not self.may_return:
            self.stopped = True
            return
        if head == "return" and self.calls:
            if first and not self.branch:
                self.returning = True
            else:  # `[[ -n $N ]] && return`, `if …; then return; fi`: what follows may not run
                self.may_return = True
            return
        if head in self.functions:
            if conditional and not self.branch:  # `[ -f x ] || die`: its body runs or not
                self.stack.append("if")
            self.call(head, cmd[1:])
            if self.stack[-1:] == ["if"] and conditional:
                self.stack.pop()
            return
        if head in ("source", ".") and len(cmd) > 1 and not _is_activate(cmd[1]):
            self._source(number, cmd[1], cmd[2:])
            return
        self._launch(number, cmd, conditional)
        if head == "exec" and first and not self.branch:
            self.stopped = True

    def _local(self, name: str) -> None:
        """``local NAME`` in a running function: its value before, given back at the return."""
        if self.calls and name not in self.calls[-1][1]:
            self.calls[-1][1][name] = (name in self.values, self.values.get(name))

    def call(self, name: str, args: list[str] | None) -> None:
        """A function's body run as bash runs it at the call: its arguments ``$1``… (None: not
        known), the values set by then, ``local`` given back and ``return`` at its end."""
        if any(n == name for n, _ in self.calls) or len(self.calls) >= MAX_CALLS:
            return  # a function that calls itself: its first run is read
        self.called.add(name)
        shown, body = self.functions[name]
        outer = (self.shown, self.args, self.args_known, len(self.stack), self.may_return)
        self.shown, self.args_known = shown, args is not None
        self.args = list(args or [])
        self.stack.append("call")
        self.calls.append((name, {}))
        self.may_return = False
        try:
            for number, text in body:
                if self.stopped or self.returning:
                    break
                self.feed(number, text)
        finally:
            _, saved = self.calls.pop()
            for var, (had, value) in saved.items():
                if had:
                    self.values[var] = value
                else:
                    self.values.pop(var, None)
            self.shown, self.args, self.args_known = outer[0], outer[1], outer[2]
            del self.stack[outer[3] :]
            self.returning, self.may_return = False, outer[4]
            self.array = 0

    def _source(self, number: int, name: str, args: list[str]) -> None:
        """``source FILE``: its lines run in this shell (its variables are this script's)."""
        path = _at(self.folder, name)
        if path is None or not os.path.isfile(path):
            self.notes.append(
                f"`source {name}` ({self.shown}:{number}) is not here: what it sets is not read"
            )
            return
        text, problem = _read(path)
        real = os.path.realpath(path)
        if problem is None and (real in _FOLLOWING or len(_FOLLOWING) >= MAX_NESTING):
            problem = f"{name} is sourced {'by itself' if real in _FOLLOWING else 'too deep'}"
        if problem is not None:
            self.notes.append(f"`source {name}` ({self.shown}:{number}) not read: {problem}")
            return
        outer_shown, outer_args, outer_zero = self.shown, self.args, self.zero
        self.shown, self.args, self.zero = path, args or self.args, name
        _FOLLOWING.append(real)
        try:
            self.run(text or "")
        finally:
            _FOLLOWING.pop()
            self.shown, self.args, self.zero = outer_shown, outer_args, outer_zero

    def _launch(self, number: int, cmd: list[str], conditional: bool) -> None:
        from envdoctor.errors import InputError
        from envdoctor.plan.shell_lines import may_launch
        from envdoctor.plan.shell_words import join, quote

        raw = join(cmd)
        runs_script = any(w.endswith(_SUFFIXES) for w in cmd[:3])
        if not (may_launch(raw) or runs_script):
            return
        try:
            launches = self.parser.parse(raw, dict(self.exported), self.depth + 1, self.folder or "")
        except InputError:
            return
        for lx in launches:
            if lx.source is None:
                if not _launches(lx, runs_script):
                    continue
                lx.source = f"{self.shown}:{number}"
                carried = [*self.defaults, *(n for r in self.refs for n in self.taken.get(r, ()))]
                lx.unknown = self._unknown_in(lx.raw) + tuple(dict.fromkeys(carried))
                if self.folder is None:
                    lx.unknown += ("the folder a `cd` went to (in a branch, or to a variable)",)
                prefix = [f"{k}={quote(v)}" for k, v in lx.env.items() if _CHILD_ENV.match(k)]
                prefix = [p for p in prefix if p.split("=", 1)[0] + "=" not in lx.raw]
                if prefix:
                    lx.raw = " ".join([*prefix, lx.raw])
            self.found.append(_Found(lx, conditional))

    def _unknown_in(self, raw: str) -> tuple[str, ...]:
        out: list[str] = []
        for m in _REF.finditer(raw):
            name = m["name"] or re.sub(r"^#?([A-Za-z_]\w*|[0-9]+).*", r"\1", m["brace"] or "")
            why = self.why.get(name, "not set by the script (its environment gives it)")
            said = f"`{m.group(0)}`: {why}"
            if said not in out:
                out.append(said)
        if "$(" in raw or "`" in raw:
            out.append("a command substitution on the line")
        return tuple(out)


#: ``python -m MODULE`` that starts no training (a setup step: ``python3 -m pip install uv``)
_TOOL_MODULES = frozenset({"pip", "venv", "ensurepip", "site", "json.tool", "http.server", "uv", "wandb"})


def _launches(lx: Launch, runs_script: bool) -> bool:
    """Whether a command the script runs is one of the run's launches: a launcher's, a Python
    script's or module's, a server's; one whose program is not known only where it names a
    launcher or a variable (``$PYTHON train.py``: said, not dropped), not a shell function or a
    tool handed a ``.py`` path (``validate_file_exists "$TRAINING_SCRIPT"``)."""
    from envdoctor.plan.shell_lines import may_launch

    if lx.launcher == "python":
        return bool(lx.script) or bool(lx.module and lx.module not in _TOOL_MODULES)
    if lx.launcher != "unknown":
        return True
    prog = os.path.basename(lx.program[0]) if lx.program else ""
    if re.fullmatch(r"python[\d.]*", prog):
        return False  # `python3 - <<PY`, `python -c …`: no script, no training
    return runs_script or prog.startswith("$") or (bool(prog) and may_launch(prog))


def _escape(value: str, quoted: bool) -> str:
    """A value put in where the reference stood: inside double quotes its ``"\\$``` escaped;
    outside them also its single quotes (bash splits it into words, keeps quotes literal)."""
    chars = '"\\$`' if quoted else "\"'\\$`"
    return "".join("\\" + c if c in chars else c for c in value)


def _is_activate(name: str) -> bool:
    """A virtual environment's or conda's activation script: it changes PATH, runs no launch."""
    base = os.path.basename(name)
    return base.startswith("activate") or base in ("conda.sh", "mamba.sh") or "conda" in name.split("/")[:-1]


def _at(folder: str | None, name: str) -> str | None:
    if "$" in name or "`" in name:
        return None
    return os.path.normpath(name if os.path.isabs(name) or not folder else os.path.join(folder, name))


#: git's conflict markers, each at the start of its line (seven characters, then a space or the end)
_CONFLICT = re.compile(
    r"^<{7}(?: [^\n]*)?\n(?:[^\n]*\n)*?={7}[ \t]*\n(?:[^\n]*\n)*?>{7}(?: [^\n]*)?$", re.MULTILINE
)


def merge_conflict(text: str) -> tuple[int, int] | None:
    """The first and last line of the first unresolved git merge conflict in ``text`` (``<<<<<<<``,
    ``=======``, ``>>>>>>>`` in that order, each at a line's start), or None."""
    found = _CONFLICT.search(text)
    if found is None:
        return None
    first = text.count("\n", 0, found.start()) + 1
    return first, first + found.group(0).count("\n")


def _read(path: str) -> tuple[str | None, str | None]:
    """(the script's text, None) or (None, why it is not read): too large, too many lines, not
    text."""
    try:
        size = os.path.getsize(path)
        if size > MAX_BYTES:
            return (
                None,
                f"{path} is {size:,} bytes, more than envdoctor reads of a launch script ({MAX_BYTES:,})",
            )
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        return None, f"{path} cannot be read ({exc.strerror or exc})"
    if b"\0" in data:
        return None, f"{path} is not a text file (it holds a NUL byte)"
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    if text.count("\n") > MAX_LINES:
        return None, f"{path} has more than {MAX_LINES:,} lines, more than envdoctor reads of a launch script"
    return text, None


def follow(
    words: list[str],
    env: dict[str, str],
    depth: int,
    launched: str,
    parser: Parser,
    folder: str = "",
    sourced: bool = False,
) -> list[Launch] | None:
    """The launches a shell script runs (``words``: the script and its arguments; ``env``: the
    environment it starts with; ``launched``: the command as given): its servers' lines, then its
    trainer's; an unresolved launch naming the file where it is not read or its trainer is not
    known; None where the script is not here (the launch stays as it was)."""
    name, args = words[0], list(words[1:])
    path = _at(folder, name)
    if path is None or not os.path.isfile(path):
        return None
    real = os.path.realpath(path)
    problem = None
    if not _FOLLOWING:
        _READ[0] = 0  # the outermost script: a new launch's count
    if real in _FOLLOWING:
        problem = f"{name} runs itself (read once: envdoctor does not follow it again)"
    elif len(_FOLLOWING) >= MAX_NESTING:
        problem = (
            f"{name} is a script run by a script {MAX_NESTING} deep (envdoctor reads {MAX_NESTING} levels)"
        )
    text, problem = (None, problem) if problem else _read(path)
    if problem is not None or text is None:
        return [_unknown(launched, env, shlex.split(launched) if launched else [], problem or path)]
    lines = merge_conflict(text)
    if lines is not None:  # bash reads the markers as commands: what runs is not the script meant
        where = f"{path}:{lines[0]}-{lines[1]}"
        why = f"{where} holds an unresolved git merge conflict (<<<<<<< … ======= … >>>>>>>)"
        unknown = _unknown(launched, env, shlex.split(launched) if launched else [], why)
        return [replace(unknown, conflict=where)]
    reader = _Reader(
        shown=path,
        zero=name,
        args=args,
        depth=depth,
        values=dict(env),
        exported=dict(env),
        folder=folder or "",
        parser=parser,
    )
    _FOLLOWING.append(real)
    try:
        reader.run(text)
        if not reader.found and not reader.stopped:  # functions never called (`"$1"` picks one)
            for fname in [f for f in reader.functions if f not in reader.called]:
                reader.stack.append("uncalled")  # read as a branch, its arguments not known
                reader.call(fname, None)
                reader.stack.pop()
    finally:
        _FOLLOWING.pop()
    if reader.exhausted or _READ[0] > MAX_READ:
        why = (
            f"{name} and the scripts it runs read more than {MAX_READ:,} lines in all "
            "(envdoctor reads that many of a launch's scripts): not read"
        )
        return [_unknown(launched, env, shlex.split(launched) if launched else [], why)]
    if sourced and not reader.found:  # `source env.sh`: its exports are the shell's, for what follows
        return [Launch(raw=launched, launcher="env", env=dict(reader.exported))]
    return _result(reader, launched, env)


#: bytes of a candidate's script read for GRPO's names (a script names its trainer near the top)
_NAME_READ = 256 * 1024
_GRPO_WORDS = (b"GRPOTrainer", b"GRPOConfig", b"grpo_trainer", b"GRPO_Trainer")


def _grpo_named(found: list[_Found], folder: str | None) -> _Found | None:
    """Of a script's several plain commands (prepare the data, train, evaluate), the one that
    runs GRPO: the only one whose script's file or module is named for GRPO (``run_grpo.py``),
    else the only one whose script names GRPO's trainer or config; None where that is not one."""
    named = [f for f in found if "grpo" in (f.launch.script or f.launch.module or "").lower()]
    if len(named) == 1:
        return named[0]
    naming = []
    for f in found:
        path = _at(folder or None, f.launch.script or "")
        if f.launch.script and path and os.path.isfile(path):
            try:
                with open(path, "rb") as fh:
                    head = fh.read(_NAME_READ)
            except OSError:
                continue
            if any(w in head for w in _GRPO_WORDS):
                naming.append(f)
    return naming[0] if len(naming) == 1 else None


def _result(reader: _Reader, launched: str, env: dict[str, str]) -> list[Launch]:
    servers = [f.launch for f in reader.found if f.launch.is_server]
    trainers = [f for f in reader.found if not f.launch.is_server]
    distinct: dict[str, _Found] = {}
    for f in trainers:
        distinct.setdefault(f.launch.raw, f)
    tokens = shlex.split(launched) if launched else []
    if not distinct:
        why = f"`{launched}` runs no training command envdoctor knows ({reader.shown} read)"
        return servers or [_unknown(launched, env, tokens, why)]
    notes = tuple(reader.notes)
    if len(distinct) == 1:
        trainer = next(iter(distinct.values())).launch
    elif any(f.branch for f in distinct.values()):
        where = ", ".join(f.launch.source or "" for f in list(distinct.values())[:4])
        why = (
            f"{reader.shown} runs one of several trainer lines, chosen at run time ({where}); "
            "envdoctor does not pick one (give the trainer's line)"
        )
        return [*servers, _unknown(launched, env, tokens, why)]
    else:
        typed = [f for f in distinct.values() if f.launch.launcher.startswith(_TRAINER_LAUNCHERS + ("trl-",))]
        grpo = _grpo_named(list(distinct.values()), reader.folder)
        chosen = typed[0] if len(typed) == 1 else grpo or list(distinct.values())[-1]
        trainer = chosen.launch
        others = [f.launch.source or "" for f in distinct.values() if f is not chosen]
        notes += (
            f"{reader.shown} runs other commands too ({', '.join(others[:4])}): "
            f"read as the trainer: {trainer.source}",
        )
    trainer.via = trainer.via or launched
    trainer.unknown = tuple(dict.fromkeys(trainer.unknown + notes))
    for s in servers:
        s.via = s.via or launched
    return [*servers, trainer]
