"""Failures whose cause is the host, the hardware or a library beneath the stack, read from the
message's and the traceback's structure and from the facts of the host the log shows (GPU names,
ROCm / HIP, Ray's processes). Each answers only where nothing else was named (diagnose's chain).

- **The GPU cannot run it, or failed** (TRI025): peer access refused, CUDA error 217 ("peer access
  is not supported between these two devices") under NCCL's "unhandled cuda error" (NCCL_P2P_DISABLE),
  in an engine's custom all-reduce or torch's own error; NCCL's "unhandled cuda error" on a GPU the
  log names as one without P2P (L4, L40S, GeForce RTX 40/50) only likely that (a warning); no
  kernels for its compute capability ("no kernel image is available …", torch's "sm_120 is not
  compatible …", flash-attn's "only supports Ampere GPUs or newer", HIP's hipErrorNoBinaryForGpu);
  a hardware fault (an uncorrectable ECC error, a GPU off the bus).
- **The host's limits** (TRI026): ``pthread_create`` / ``fork`` / a C++ thread failing with EAGAIN
  ("Resource temporarily unavailable", bash's "fork: retry:", Python's "can't start new thread"):
  ``ulimit -u`` or a container's pids limit; "Too many open files": ``ulimit -n``; ``[Errno 12]``
  at ``os.fork``: the kernel cannot commit a copy of a large parent (spawn instead).
- **A small /dev/shm** (TRI027): torch DataLoader's bus error, a write to /dev/shm out of space
  (errors); Ray's object store falling back to /tmp (a warning: the run goes on, slower).
- **A library called from a thread it does not support** (TRI028): the fast tokenizer's "Already
  borrowed" (PyO3's borrow check), "signal only works in main thread" (a SIGALRM timeout,
  math_verify's), Triton's "no allocator was set" in a thread pool (a ContextVar a new thread does
  not inherit).
- **A library beneath the stack of another release** (TRI029): a member NumPy removed, from NumPy's
  own tables (``rules/knowledge/numpy_removals.yaml``, read only then); the host's glibc or
  libstdc++ older than a wheel needs (``version `GLIBCXX_3.4.30' not found``); another library
  beneath the stack missing a member a library reads (a warning).
- **No GPU visible** (TRI030): torch in a Ray actor seeing none (an error where the log shows ROCm:
  RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES; a warning otherwise), libcuda.so.1 missing (a
  container without GPUs), NVML's driver/library mismatch (reboot), busy devices (a warning).
- **A package's own minimum-version assert** (TRI019): "X is installed with version A, which is
  less than the minimum required version B" (SGLang's ``assert_pkg_version``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from envdoctor.findings import Severity
from envdoctor.triage.draft import Draft, Log, at_severity, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import Traceback

MAX_LINES = 4000  # lines of the head looked at
AROUND = 8  # lines after an NCCL error read for NCCL's "Last error:"

_PEER = re.compile(
    r"peer access is not supported between these two devices|Cuda failure 217\b|"
    r"cudaErrorPeerAccessUnsupported|CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"
)
#: GPUs without peer-to-peer access between cards of one host (no NVLink, P2P over PCIe not
#: offered by the driver): the L4 / L40 / L40S data-centre cards and GeForce RTX 40 / 50 cards
_NO_P2P_GPU = re.compile(r"\bNVIDIA (?:GeForce )?(?P<gpu>L40S?|L4|RTX [45]0[6-9]0(?: Ti| SUPER| D)?)\b")
UNHANDLED_CUDA = re.compile(r"unhandled cuda error", re.IGNORECASE)

_NPROC = re.compile(
    r"pthread_create(?: failed)?:? (?:failed:? )?(?:\(?EAGAIN\)?:? )?Resource temporarily unavailable|"
    r"(?P<py>can't start new thread)|Failed to create new (?:OS )?thread|"
    r"(?P<bash>\bfork: (?:retry: .{0,60}|Resource temporarily unavailable))|"
    r"Thread creation failed: Resource temporarily unavailable|"
    r"blas_thread_init: pthread_create failed|"
    # a C++ runtime's thread refused (Ray's raylet and core workers: boost's and std::thread's
    # system_error, EAGAIN = errno 11)
    r"what\(\):\s?(?:thread: )?Resource temporarily unavailable"
)
_SHM = re.compile(
    r"(?P<ray>object store is using /tmp instead of /dev/shm because /dev/shm has only "
    r"(?P<bytes>\d{1,20}) bytes available)|"
    r"(?P<bus>Unexpected bus error encountered in worker\. This might be caused by insufficient shared "
    r"memory \(shm\)|DataLoader worker \(pid \d{1,9}\) is killed by signal: Bus error)|"
    r"(?P<space>No space left on device.{0,200}/dev/shm|/dev/shm.{0,200}No space left on device|"
    r"unable to write to file </torch_\d{1,12}_\d{1,12}(?:_\d{1,6})?>: No space left on device)"
)
_SHM_SIZE = re.compile(r"--shm-size=(?P<size>[\d.]{1,12}(?:gb|g|GB|G))")
_VERSION_ASSERT = re.compile(
    r"(?:Module )?'?(?P<pkg>[A-Za-z][\w.\-]{0,80})'? is installed with version (?P<ver>[\w.+\-]{1,60}?),? "
    r"which is less than the minimum required version (?P<min>[\w.+\-]{1,60}?)\.?(?:\s|$)"
)
_NUMPY_ATTR = re.compile(
    r"module 'numpy' has no attribute '(?P<name>\w{1,60})'|`np\.(?P<name2>\w{1,60})` was removed in the NumPy"
)
_ROCM = re.compile(
    r"\bROCm\b|\brocm\d|\+rocm|HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|\bhipError|No HIP GPUs|"
    r"AMD Instinct|AMD-Instinct|\bMI(?:100|2[15]0X?|30[08][AX]?|325X|35[05]X)\b|\bamdgpu\b"
)
_RAY = re.compile(
    # Ray's prefix of an actor's or task's lines: "(TaskRunner pid=61, ip=10.0.0.1)"; vLLM's own
    # processes print the same shape ("(EngineCore_DP0 pid=7)", "(APIServer pid=3)"): not Ray
    r"\bray::|RayTaskError|RayActorError|ActorDiedError|/ray/_private/|"
    r"\((?!EngineCore|APIServer|ApiServer|VllmWorker|Worker_|VllmEngine)\w{1,80} pid=\d{1,9}|"
    r"^\((?:raylet|gcs_server|dashboard)\)",
    re.MULTILINE,
)


def _near(
    pattern: re.Pattern[str], text: str, literal: str, before: int = 160, after: int = 500
) -> re.Match[str] | None:
    """``pattern`` searched only around the occurrences of ``literal`` (its fixed part): a pattern
    that opens with a variable-length name (a GPU's, a package's, a library's path) costs, over a
    whole line, as many tries as the line has characters; around the literal it costs a window's."""
    start = 0
    for _ in range(MAX_NEAR):
        at = text.find(literal, start)
        if at < 0:
            return None
        found = pattern.search(text, max(0, at - before), at + len(literal) + after)
        if found is not None:
            return found
        start = at + len(literal)
    return None


MAX_NEAR = 20  # occurrences of a literal tried per text


def _line_match(no: int, body: str, lines: list[str]) -> Match:
    from envdoctor.triage.signatures import signatures

    sig = next(x for x in signatures() if x.id == "unrecognized-exception")
    return Match(sig, no, body[:1000], {}, None, tuple(lines[max(0, no - 41) : no - 1]))


def _head_lines(log: Log) -> list[str]:
    return log.head.decode("utf-8", errors="replace").split("\n")[:MAX_LINES] if log.head else []


def _shows(log: Log, pattern: re.Pattern[str], m: Match | None = None) -> re.Match[str] | None:
    """``pattern`` in the log's head, else in the failing line's kept lines."""
    if log.head:
        found = pattern.search(log.head[: 1 << 20].decode("utf-8", errors="replace"))
        if found is not None:
            return found
    if m is not None:
        return pattern.search("\n".join([*m.context, m.text]))
    return None


# -- TRI025: GPUs without peer access ---------------------------------------------------------------


def _p2p_fix(shm_transport: bool) -> str:
    fix = (
        "set NCCL_P2P_DISABLE=1 in the environment of every rank (with Ray: in the job's runtime_env "
        "env_vars, or exported before ray start) so that NCCL copies through host memory instead of "
        "peer-to-peer between the GPUs"
    )
    # reporters of NeMo-RL (NVIDIA-NeMo/RL#1683) and EasyR1 (hiyouga/EasyR1#579) set it and kept
    # the error: a copy the stack makes itself over CUDA IPC is not NCCL's to route
    fix += (
        "; if the error stays with the variable set (NCCL_DEBUG=INFO shows NCCL's P2P level in each "
        "process), the failing copy is one the RL stack makes itself over CUDA IPC (a weight update "
        "between trainer and inference engine), which NCCL_P2P_DISABLE does not reach: place the "
        "trainer and the engine on GPUs with peer access, or on one GPU each without a direct copy "
        "(the stack's non-colocated mode), and report it to the stack with this log"
    )
    if shm_transport:
        fix += (
            "; NCCL's warning points at its shared-memory transport (transport/shm.cc): there "
            "NCCL_CUMEM_HOST_ENABLE=0 or a newer driver is the fix NCCL names (NVIDIA/nccl#1838)"
        )
    return fix


def peer_access(m: Match, log: Log) -> Draft | None:
    """NCCL's "unhandled cuda error" (``m``, TRI002's line) whose next lines give CUDA error 217,
    or one on a GPU the log names as one without P2P (module docstring)."""
    after = _head_lines(log)[m.line_no - 1 : m.line_no + AROUND] if m.line_no > 0 else []
    text = "\n".join([m.text, *after])
    peer = _PEER.search(text) or (_shows(log, _PEER) if UNHANDLED_CUDA.search(m.text) else None)
    if peer is not None:
        what = (
            "NCCL failed because the GPUs of this host cannot access each other's memory directly: CUDA "
            "error 217 (cudaErrorPeerAccessUnsupported, 'peer access is not supported between these two "
            "devices'); GPUs without NVLink whose driver offers no PCIe peer-to-peer (L4, L40S, GeForce "
            "cards, some cloud instances) refuse the P2P transport NCCL chose"
        )
        return at_severity(
            finding("TRI025", [m], log, what, _p2p_fix("shm.cc" in text), peer_access="error-217"),
            Severity.ERROR,
        )
    if not UNHANDLED_CUDA.search(m.text):
        return None
    gpu = _shows(log, _NO_P2P_GPU, m)
    if gpu is None:
        return None
    what = (
        f"NCCL failed with an unhandled CUDA error on NVIDIA {gpu.group('gpu')}, a GPU without peer-to-peer "
        "access between the cards of a host: most often NCCL's P2P transport refused (CUDA error 217); "
        "the log does not show NCCL's 'Last error:' line that would tell"
    )
    fix = _p2p_fix(False) + "; NCCL_DEBUG=INFO shows the CUDA error if it is another one"
    d = finding("TRI025", [m], log, what, fix, peer_access="gpu-without-p2p", gpu=gpu.group("gpu"))
    return at_severity(d, Severity.WARNING)


def _peer_line(no: int, body: str, lines: list[str], log: Log) -> Draft | None:
    if _PEER.search(body) is None:
        return None
    what = (
        "CUDA refused peer access between two GPUs of this host (error 217, cudaErrorPeerAccessUnsupported): "
        "GPUs without NVLink whose driver offers no PCIe peer-to-peer (L4, L40S, GeForce cards, some cloud "
        "instances) cannot use the P2P path NCCL or the engine's all-reduce chose"
    )
    engine = (
        "turn the inference engine's custom all-reduce off (vLLM: disable_custom_all_reduce=True / "
        "--disable-custom-all-reduce; SGLang: --disable-custom-all-reduce, or --enable-p2p-check)"
    )
    if re.search(r"custom_all_reduce|CustomAllreduce|custom_ar", body):  # the engine's kernel, not NCCL
        fix = engine + "; NCCL_P2P_DISABLE does not reach it"
    else:
        fix = (
            _p2p_fix("shm.cc" in body)
            + "; where an inference engine's custom all-reduce raised it, "
            + engine
        )
    return at_severity(
        finding("TRI025", [_line_match(no, body, lines)], log, what, fix, peer_access="error-217"),
        Severity.ERROR,
    )


# -- TRI025: kernels for the GPU's compute capability ----------------------------------------------

_CAPABILITY = re.compile(
    r"(?P<gpu>[\w][\w .\-]{0,80}?) with CUDA capability sm_(?P<sm>\d{2,3}) is not compatible with the "
    r"current "
    r"PyTorch installation"
)
_CAPABILITY_AT = " with CUDA capability sm_"
_SUPPORTS = re.compile(
    r"current PyTorch install supports CUDA capabilities (?P<list>(?:sm_\d{2,3}a?\s?){1,30})"
)
_NO_KERNEL = re.compile(
    r"no kernel image is available for execution on the device|CUDA_ERROR_NO_BINARY_FOR_GPU|"
    r"cudaErrorNoKernelImageForDevice"
)
_NO_HIP_BINARY = re.compile(r"hipErrorNoBinaryForGpu|Unable to find code object for all current devices")
_FA_AMPERE = re.compile(r"FlashAttention only supports Ampere GPUs or newer")


def _capability_fix(sm: int | None) -> str:
    if sm is not None and sm >= 100:
        return (
            f"install a torch build with kernels for sm_{sm} (Blackwell): torch >= 2.7 from the CUDA 12.8 "
            "index "
            "(pip install 'torch>=2.7' --index-url https://download.pytorch.org/whl/cu128), and vLLM / "
            "flash-attn builds made for that torch"
        )
    return (
        "install builds that include this GPU's compute capability: the torch wheel for a CUDA version that "
        "supports it (download.pytorch.org/whl/cuXXX), and extensions (flash-attn, vLLM, custom kernels) "
        "built "
        "for that torch, or built here with TORCH_CUDA_ARCH_LIST set to the GPU's capability"
    )


def capability_line(no: int, body: str, lines: list[str], log: Log) -> Draft | None:
    """torch's own warning that it has no kernels for the GPU's compute capability."""
    found = _near(_CAPABILITY, body, _CAPABILITY_AT)
    if found is None:
        return None
    sm = int(found.group("sm"))
    more = _SUPPORTS.search(" ".join(x.strip() for x in lines[no - 1 : no + 3]))
    has = f" (the installed torch has kernels for {more.group('list').strip()})" if more else ""
    what = (
        f"the installed torch has no CUDA kernels for the {found.group('gpu').strip()} (compute capability "
        f"sm_{sm}){has}: every kernel launch on it fails ('no kernel image is available for execution on "
        "the device')"
    )
    d = finding(
        "TRI025", [_line_match(no, body, lines)], log, what, _capability_fix(sm), capability=f"sm_{sm}"
    )
    return at_severity(d, Severity.ERROR)


def no_kernel(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """A kernel launch refused for the GPU's compute capability, or flash-attn refusing a GPU
    before Ampere."""
    if _FA_AMPERE.search(tb.message):
        in_vllm = any(f.package == "vllm" for t in tb.all() for f in t.frames)
        what = (
            "flash-attn 2 runs only on GPUs of compute capability 8.0 or newer (Ampere, Ada, Hopper): this "
            "GPU "
            "is older (V100, T4, RTX 20xx), and "
            + (
                "vLLM chose a FlashAttention backend for it"
                if in_vllm
                else "the model was loaded with attn_implementation='flash_attention_2'"
            )
        )
        fix = (
            "give vLLM an attention backend that runs on this GPU (VLLM_ATTENTION_BACKEND, among those the "
            "installed vLLM lists), or run it on an Ampere or newer GPU"
            if in_vllm
            else "load the model with attn_implementation='sdpa' (or 'eager'): in TRL model_init_kwargs / "
            "--attn_implementation sdpa, and drop use_flash_attention_2; or run on an Ampere or newer GPU"
        )
        return at_severity(finding("TRI025", [m], log, what, fix, capability="below-sm80"), Severity.ERROR)
    if not _NO_KERNEL.search(tb.message):
        return None
    head = log.head[: 1 << 20].decode("utf-8", errors="replace") if log.head else ""
    said = _near(_CAPABILITY, "\n".join([head, *m.context, m.text]), _CAPABILITY_AT)
    if said is not None:
        sm = int(said.group("sm"))
        what = (
            f"a CUDA kernel has no build for the {said.group('gpu').strip()} (compute capability sm_{sm}): "
            "torch "
            "itself warned that it was not compiled for it"
        )
        return at_severity(
            finding("TRI025", [m], log, what, _capability_fix(sm), capability=f"sm_{sm}"), Severity.ERROR
        )
    who = next((f.package for f in reversed(tb.frames) if f.package), "")
    what = (
        "a CUDA kernel has no build for this GPU's compute capability ('no kernel image is available for "
        f"execution on the device'){' in ' + who if who else ''}: torch or an extension (flash-attn, vLLM, a "
        "custom kernel) was compiled for other GPUs; the log does not show the GPU nor torch's capabilities "
        "(python -c 'import torch; print(torch.cuda.get_device_capability(), torch.cuda.get_arch_list())')"
    )
    d = finding("TRI025", [m], log, what, _capability_fix(None), capability="unknown")
    return at_severity(d, Severity.WARNING)


# -- TRI026: the process / thread limit -------------------------------------------------------------


_NOFILE = re.compile(r"Too many open files|\[Errno 24\]|received 0 items of ancdata")


def _nofile_line(no: int, body: str, lines: list[str], log: Log) -> Draft | None:
    found = _NOFILE.search(body)
    if found is None:
        return None
    under = " under Ray (the raylet holds sockets and pipes for every worker)" if _shows(log, _RAY) else ""
    what = (
        f"a process ran out of file descriptors ('{found.group(0)}'){under}: the open-file limit (ulimit -n, "
        "RLIMIT_NOFILE; 1024 by default on many hosts) is below what the run's sockets, pipes and shared "
        "tensors need (torch's DataLoader passes tensors between processes as file descriptors)"
    )
    fix = (
        "raise the open-file limit in the shell (or job script) that starts the run: ulimit -n 65535 (the "
        "hard limit: nofile in /etc/security/limits.conf, or the container's --ulimit nofile=65535:65535); "
        "for DataLoader workers also torch.multiprocessing.set_sharing_strategy('file_system')"
    )
    return at_severity(
        finding("TRI026", [_line_match(no, body, lines)], log, what, fix, errno=24, limit="nofile"),
        Severity.ERROR,
    )


def _nproc_line(no: int, body: str, lines: list[str], log: Log) -> Draft | None:
    found = _NPROC.search(body)
    if found is None:
        return None
    said = found.group(0).strip()
    under = " under Ray (raylet and core workers start many threads each)" if _shows(log, _RAY) else ""
    what = (
        f"the system refused to start a new thread or process ('{said}'){under}: pthread_create and fork "
        "fail with EAGAIN when the user's process/thread limit (ulimit -u, RLIMIT_NPROC, which counts "
        "threads) "
        "or the container's pids limit is reached — not a lack of memory"
    )
    fix = (
        "raise the per-user process limit before the run starts, in the shell (or job script) that launches "
        "it: ulimit -u 65535 (or 'unlimited'); to keep it, set nproc in /etc/security/limits.conf, or a "
        "container's --pids-limit / the pod's pids limit; or start fewer threads (OMP_NUM_THREADS, Ray's "
        "num_cpus in ray.init, fewer data loader workers)"
    )
    return at_severity(
        finding("TRI026", [_line_match(no, body, lines)], log, what, fix, errno=11, limit="nproc"),
        Severity.ERROR,
    )


# -- TRI027: a small /dev/shm -----------------------------------------------------------------------


def _shm_line(no: int, body: str, lines: list[str], log: Log) -> Draft | None:
    found = _SHM.search(body)
    if found is None and "object store is using /tmp" in body:  # Ray's warning wrapped over lines
        found = _SHM.search(" ".join([body, *(x.strip() for x in lines[no : no + 3])]))
    if found is None:
        return None
    m = _line_match(no, body, lines)
    if found.group("ray"):
        have = int(found.group("bytes")) / 2**30
        more = " ".join(lines[no - 1 : no + 6])
        size = _SHM_SIZE.search(more)
        what = (
            f"the shared memory (/dev/shm) has only {have:.1f} GiB, too little for Ray's object store, which "
            "falls back to the disk (/tmp): the run goes on, with slower transfers between workers (a "
            "container's small /dev/shm)"
        )
        fix = (
            "give the container a larger /dev/shm: docker run "
            f"--shm-size={size.group('size') if size else '16g'}"
            " (Ray asks for more than 30% of the RAM) or --ipc=host; in Kubernetes an emptyDir with medium: "
            "Memory mounted at /dev/shm"
        )
        return at_severity(finding("TRI027", [m], log, what, fix, shm="ray-object-store"), Severity.WARNING)
    what = (
        "a worker process ran out of shared memory (/dev/shm): torch's DataLoader workers pass batches "
        "through /dev/shm, and a container's /dev/shm is 64 MB unless set; the worker died with a bus error"
        if found.group("bus")
        else "a write to /dev/shm ran out of space: the host's (or container's) shared memory is too small "
        "for what the processes exchange through it"
    )
    fix = (
        "give the container a larger /dev/shm (docker run --shm-size=16g or --ipc=host; in Kubernetes an "
        "emptyDir with medium: Memory at /dev/shm), or pass batches without it (DataLoader num_workers=0)"
    )
    return at_severity(
        finding("TRI027", [m], log, what, fix, shm="bus-error" if found.group("bus") else "full"),
        Severity.ERROR,
    )


# -- TRI019: a package's own minimum-version assert ------------------------------------------------


def _version_assert_line(no: int, body: str, lines: list[str], log: Log) -> Draft | None:
    found = _near(_VERSION_ASSERT, body, " is installed with version ")
    if found is None:
        return None
    pkg, ver, low = found.group("pkg"), found.group("ver"), found.group("min").rstrip(".")
    what = (
        f"a package checked its dependencies at start and refused {pkg} {ver}: it needs {pkg} >= {low} "
        "(SGLang's assert_pkg_version and the like): the installed release is older than the one the "
        "package was built against"
    )
    fix = (
        f"pip install '{pkg}>={low}' (or the exact release the package pins) in the environment that runs it"
    )
    d = finding("TRI019", [_line_match(no, body, lines)], log, what, fix, requirement=f"{pkg}>={low}")
    return at_severity(d, Severity.ERROR)


# -- the host's libraries and devices, by the message alone (TRI025, TRI029, TRI030) -----------------

_SYMBOL_VERSION = re.compile(
    r"(?P<lib>/[^\s:`']{0,300}?(?P<name>libc|libstdc\+\+|libgcc_s)\.so(?:\.\d{1,3})?)?:? ?version "
    r"[`'](?P<ver>(?P<kind>GLIBCXX|GLIBC|CXXABI|GCC)_[\d.]{1,12})' not found(?: \(required by "
    r"(?P<by>[^)\s]{1,400})\))?"
)
_NO_LIBCUDA = re.compile(r"libcuda\.so(?:\.1)?: cannot open shared object file")
_NVML_MISMATCH = re.compile(r"(?:Failed to initialize NVML|NVML): Driver/library version mismatch")
_BUSY = re.compile(r"CUDA-capable device\(s\) (?:is/are|are) busy or unavailable")
_ECC = re.compile(
    r"uncorrectable ECC error encountered|GPU has fallen off the bus|\bXid\b.{0,40}\b(?:48|79|94|95)\b"
)

#: what the checks below answer: (rule, severity, what, fix, evidence)
Said = tuple[str, Severity, str, str, dict[str, Any]]


def host_text(text: str) -> Said | None:
    """The host's libraries and devices named by a message alone (module docstring)."""
    found = _near(_SYMBOL_VERSION, text, "' not found")
    if found is not None:
        ver, kind, by = found.group("ver"), found.group("kind"), found.group("by") or "a compiled extension"
        lib = found.group("lib") or ""
        runtime = "libgcc_s" if kind == "GCC" else "libstdc++"
        if kind == "GLIBC":
            what = (
                f"{by} was built against a newer C library than this host has: it needs {ver}, which the "
                "host's "
                "glibc does not provide (a wheel or binary made on a newer OS than the one it runs on)"
            )
            fix = (
                "install a build of that package made for this host's glibc (ldd --version shows it; an "
                "older "
                "release, or the manylinux wheel for it), or run in a newer OS image (container)"
            )
        else:
            what = (
                f"{by} needs {ver} from {runtime}, and the {runtime} the process loaded"
                + (f" ({lib})" if lib else "")
                + " is older: most often the environment's own (conda's lib/) shadowing the system's newer "
                "one"
            )
            fix = (
                "load a libstdc++ that has it: conda install -c conda-forge 'libstdcxx-ng>=12' (or "
                "'libstdcxx>=12') "
                "in the environment, or put the system's first (LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu); "
                "else "
                "install a build of the package made with an older compiler"
            )
        return (
            "TRI029",
            Severity.ERROR,
            what,
            fix,
            {"symbol_version": ver, "required_by": found.group("by")},
        )
    return next((said for pattern, said in _HOST_MESSAGES if pattern.search(text)), None)


#: the host faults a message names by itself: (its pattern, what envdoctor says of it)
_HOST_MESSAGES: tuple[tuple[re.Pattern[str], Said], ...] = (
    (
        _NO_LIBCUDA,
        (
            "TRI030",
            Severity.ERROR,
            (
                "the NVIDIA driver's library (libcuda.so.1) is not visible to this process: a container "
                "started without GPUs, or no NVIDIA driver on the host"
            ),
            (
                "start the container with the GPUs (docker run --gpus all with the NVIDIA Container "
                "Toolkit; in Kubernetes request nvidia.com/gpu), or install the NVIDIA driver on the "
                "host"
            ),
            {"gpu_visible": "no-driver-library"},
        ),
    ),
    (
        _NVML_MISMATCH,
        (
            "TRI030",
            Severity.ERROR,
            (
                "the NVIDIA kernel driver loaded and the driver's user-space libraries are different "
                "releases (the driver was upgraded and the host not rebooted): CUDA and NVML cannot "
                "start"
            ),
            ("reboot the host (or unload and reload the nvidia kernel modules) so that the new driver runs"),
            {"gpu_visible": "driver-mismatch"},
        ),
    ),
    (
        _BUSY,
        (
            "TRI030",
            Severity.WARNING,
            (
                "CUDA found no GPU it may use: a GPU in exclusive-process compute mode already held by "
                "another process, or one prohibited to this process"
            ),
            (
                "free the GPU (nvidia-smi lists the processes on it) or give each process its own GPU; "
                "set the compute mode back to shared where you may (nvidia-smi -c DEFAULT)"
            ),
            {"gpu_visible": "busy"},
        ),
    ),
    (
        _NO_HIP_BINARY,
        (
            "TRI025",
            Severity.WARNING,
            (
                "the HIP runtime found no code object for the GPUs it sees ('hipErrorNoBinaryForGpu'): "
                "a ROCm build of torch (or of an extension) without this AMD GPU's architecture (gfx "
                "target) — or a ROCm build installed on a machine whose GPU is NVIDIA's"
            ),
            (
                "on an NVIDIA machine install the CUDA build of torch (pip install torch --index-url "
                "https://download.pytorch.org/whl/cu128 or the cuXXX of your driver); on an AMD GPU "
                "install ROCm builds that include its gfx target (rocminfo names it) or build them with "
                "PYTORCH_ROCM_ARCH set to it; a consumer Radeon whose gfx the builds lack runs the "
                "nearest supported one with HSA_OVERRIDE_GFX_VERSION (10.3.0 for RDNA2 cards such as "
                "gfx1031/gfx1032)"
            ),
            {"capability": "rocm-gfx"},
        ),
    ),
    (
        _ECC,
        (
            "TRI025",
            Severity.ERROR,
            (
                "the GPU reported a hardware fault (an uncorrectable ECC memory error, or the GPU lost "
                "from the PCIe bus): the run cannot continue on it, whatever the software"
            ),
            (
                "take the GPU (or node) out of the job, reset it (nvidia-smi -r) or reboot, and check "
                "nvidia-smi -q -d ECC and the kernel log (Xid); a GPU that repeats it needs replacing"
            ),
            {"hardware": "fault"},
        ),
    ),
)


def _host_line(no: int, body: str, lines: list[str], log: Log) -> Draft | None:
    said = host_text(body)
    if said is None:
        return None
    rule, severity, what, fix, ev = said
    return at_severity(finding(rule, [_line_match(no, body, lines)], log, what, fix, **ev), severity)


_LINE_CHECKS = (
    _host_line,
    _peer_line,
    capability_line,
    _nproc_line,
    _nofile_line,
    _shm_line,
    _version_assert_line,
)
_KEYS = (
    "peer access",
    "217",
    "PeerAccess",
    "PEER_ACCESS",
    "pthread_create",
    "temporarily unavailable",
    "thread",
    "fork:",
    "dev/shm",
    "shm",
    "Bus error",
    "bus error",
    "is installed with version",
    "object store is using",
    "open files",
    "Errno 24",
    "ancdata",
    "CUDA capability",
    "unable to write to file",
    "not found",
    "libcuda",
    "NVML",
    "busy or unavailable",
    "ECC",
    "fallen off",
    "Xid",
    "code object",
)


def from_head(log: Log, first_line: int | None = None) -> Draft | None:
    """The first failure of this module's line kinds in the log's head, errors before warnings;
    ``first_line``: the line of the log's first exception, which a warning answers only when it is
    that very line (never standing in for another exception); None: the log has none."""
    lines = _head_lines(log)
    from envdoctor.triage.scanner import clean, split_prefix

    warned: Draft | None = None
    for no, raw in enumerate(lines, 1):
        if not any(k in raw for k in _KEYS):
            continue
        body = split_prefix(clean(raw[:4096].encode()))[0].strip()
        for check in _LINE_CHECKS:
            found = check(no, body, lines, log)
            if found is None:
                continue
            if found.finding.severity == Severity.ERROR:
                return found
            if first_line is None or found.line == first_line:
                warned = warned or found
    return warned


# -- exceptions with their frames ------------------------------------------------------------------

_FORK_CALLS = ("fork", "_fork_exec", "fork_exec", "posix_spawn", "_launch", "_execute_child", "_Popen")


def _fork_frame(tb: Traceback) -> bool:
    if not tb.frames:
        return False
    last = tb.frames[-1]
    return last.function in _FORK_CALLS or "fork" in last.code


def _caller(tb: Traceback, below: str) -> str:
    """The last frame's package above the frames of ``below`` and of Python's own library."""
    for f in reversed(tb.frames):
        if f.package and f.package not in (below, "multiprocessing", "subprocess"):
            if f.package == "megatron" and f.module_path.startswith("core/"):
                return "megatron-core"  # the distribution of site-packages/megatron/core
            return f.package
    return ""


def fork_memory(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI026: os.fork (a subprocess's or multiprocessing's) refused with ENOMEM."""
    if tb.name not in ("OSError", "MemoryError") or "[Errno 12]" not in tb.message or not _fork_frame(tb):
        return None
    who = _caller(tb, "")
    ray = " inside a Ray actor" if _shows(log, _RAY, m) else ""
    what = (
        f"fork() of a large process{ray} failed with ENOMEM{' (in ' + who + ')' if who else ''}: the kernel "
        "must be able to commit a copy of the parent's writable memory for the child, and the host's RAM and "
        "swap (or the overcommit policy, vm.overcommit_memory) could not — the training process holds many "
        "GiB, the child would need little"
    )
    fix = (
        "start the child with the 'spawn' or 'forkserver' start method instead of fork "
        "(multiprocessing.set_start_method('spawn') / get_context('spawn'), or the library's option for its "
        "worker), so it does not copy the parent; else allow overcommit (sysctl vm.overcommit_memory=1), add "
        "swap, or lower the parent's host memory"
    )
    return at_severity(finding("TRI026", [m], log, what, fix, errno=12, caller=who or None), Severity.ERROR)


@lru_cache(maxsize=1)
def _numpy_removals() -> dict[str, dict[str, Any]]:
    from envdoctor.resources import read_yaml, rules_dir

    data = read_yaml(rules_dir() / "knowledge" / "numpy_removals.yaml") or {}
    out: dict[str, dict[str, Any]] = {}
    for rel in data.get("releases", []):
        for name, instead in (rel.get("removed") or {}).items():
            out.setdefault(
                str(name), {**{k: v for k, v in rel.items() if k != "removed"}, "instead": instead}
            )
    return out


def _shown_version(versions: Mapping[str, Any], pkg: str) -> str:
    v = versions.get(pkg) or versions.get(pkg.replace("_", "-"))
    if v is None or getattr(v, "how", "") == "frames":  # a range the frames fit, not a release shown
        return ""
    return str(getattr(v, "version", "") or "")


def numpy_removed(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI029: a member NumPy removed, called by a library written for the NumPy before."""
    if tb.name != "AttributeError":
        return None
    found = _NUMPY_ATTR.search(tb.message)
    if found is None:
        return None
    name = found.group("name") or found.group("name2")
    row = _numpy_removals().get(name)
    if row is None:
        return None  # a member NumPy has, or one it never had: not the removal

    who = _caller(tb, "numpy")
    at = _shown_version(log.versions, who) if who else ""
    numpy_at = _shown_version(log.versions, "numpy")
    caller = f"{who} {at}".strip() if who else "the calling code"
    what = (
        f"{caller} calls np.{name}, which NumPy {row['numpy']} removed (NumPy's replacement: "
        f"{row['instead']}); "
        f"the installed NumPy{' ' + numpy_at if numpy_at else ''} is that release or newer, and "
        f"{caller} was written for the NumPy before"
    )
    fix = (
        f"pip install '{row['pin']}' (the NumPy {caller} was written for)"
        + (
            f", or upgrade {who} to a release that supports NumPy {row['numpy'].rsplit('.', 1)[0]}"
            if who
            else ""
        )
        + (f"; in your own code use {row['instead']}" if not who else "")
    )
    return at_severity(
        finding("TRI029", [m], log, what, fix, removed=f"numpy.{name}", caller=who or None), Severity.ERROR
    )


_MODULE_ATTR = re.compile(
    r"^module '(?P<module>[A-Za-z_][\w.]{0,200})' has no attribute '(?P<attr>\w{1,200})'"
)


def library_member_missing(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI029 (a warning): library P's frame reads X.Y of another library X beneath the stack (not
    one of the stack's, which TRI009 pairs with its knowledge) that the installed X does not have:
    API drift between P and X at the releases installed."""
    if tb.name != "AttributeError" or not tb.frames:
        return None
    found = _MODULE_ATTR.search(tb.message.strip())
    if found is None:
        return None
    from envdoctor.triage.traceback import PACKAGES

    module, attr = found.group("module"), found.group("attr")
    top = module.split(".", 1)[0]
    if top in PACKAGES or top == "numpy" or top in _STDLIB:
        return None
    caller = next(
        (
            f
            for f in reversed(tb.frames)
            if f.package and f.package.replace("-", "_") != top and "-packages/" in f.path
        ),
        None,
    )
    if caller is None or caller.package is None:
        return None  # the user's own code, or no library between: nothing to pair
    who = caller.package
    if who == "megatron" and caller.module_path.startswith("core/"):
        who = "megatron-core"
    at, x_at = _shown_version(log.versions, who), _shown_version(log.versions, top)
    what = (
        f"{who}{' ' + at if at else ''} reads {module}.{attr}, which the installed "
        f"{top}{' ' + x_at if x_at else ''} does not have: {who} was written for another release of {top} "
        "(the member removed or renamed since, or not yet added) — API drift between the two libraries at "
        "the releases installed"
    )
    fix = (
        f"install the {top} release {who} declares (pip show {who} lists its Requires-Dist; pip install "
        f"'{who}=={at or '<its version>'}' '{top}' lets pip's resolver pick it), or upgrade {who} to a "
        f"release written for the installed {top}"
    )
    d = finding("TRI029", [m], log, what, fix, module=module, attribute=attr, caller=who)
    return at_severity(d, Severity.WARNING)


#: the standard library's top-level modules: their members do not drift between libraries' releases
_STDLIB = frozenset(
    {
        "os",
        "sys",
        "re",
        "json",
        "typing",
        "collections",
        "functools",
        "itertools",
        "asyncio",
        "signal",
        "threading",
        "multiprocessing",
        "subprocess",
        "socket",
        "inspect",
        "importlib",
        "logging",
        "math",
        "pathlib",
        "dataclasses",
        "enum",
        "abc",
        "io",
        "time",
        "datetime",
        "copy",
        "pickle",
        "types",
        "ast",
    }
)


_NO_DEVICE = re.compile(
    r"tuple index out of range|No HIP GPUs are available|No CUDA GPUs are available|invalid device ordinal",
    re.IGNORECASE,
)


def ray_device(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI030: torch in a Ray actor sees no GPU (or fewer than it indexes)."""
    if not any(_NO_DEVICE.search(t.message) for t in tb.all()):
        return None
    frames = [f for t in tb.all() for f in t.frames]
    in_torch_cuda = any(
        f.package == "torch" and ("cuda/" in f.module_path or f.module_path.startswith("cuda"))
        for f in frames
    )
    if not in_torch_cuda or not _shows(log, _RAY, m):
        return None
    rocm = _shows(log, _ROCM, m)
    if rocm is not None:
        what = (
            f"torch in a Ray actor sees no GPU on an AMD (ROCm) host (the log shows '{rocm.group(0)}'): Ray "
            "sets ROCR_VISIBLE_DEVICES (HIP_VISIBLE_DEVICES in newer Ray) for each actor, and torch's HIP "
            "runtime then finds no device at the index the code asks for"
        )
        fix = (
            "export RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES=1 "
            "(RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES=1 with a Ray that sets HIP_VISIBLE_DEVICES) before "
            "ray start / ray.init, and select the devices with HIP_VISIBLE_DEVICES; the framework must then "
            "map each actor to its GPU (OpenRLHF and verl read these flags)"
        )
        return at_severity(finding("TRI030", [m], log, what, fix, platform="rocm"), Severity.ERROR)
    what = (
        "torch in a Ray actor sees no GPU, or fewer than the device index it asks for: Ray sets each actor's "
        "visible devices to the GPUs it reserved (CUDA_VISIBLE_DEVICES; ROCR_VISIBLE_DEVICES or "
        "HIP_VISIBLE_DEVICES on AMD), so an actor that reserved none sees none, and a device index beyond "
        "its own (a local rank > 0) is out of range"
    )
    fix = (
        "on AMD GPUs with Ray >= 2.10: export RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES=1 (or "
        "RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES=1) before ray start and select GPUs with "
        "HIP_VISIBLE_DEVICES; on NVIDIA: reserve the GPU for the actor (num_gpus in @ray.remote / "
        ".options) and use device index 0 (the one GPU Ray left visible)"
    )
    return at_severity(finding("TRI030", [m], log, what, fix, platform="unknown"), Severity.WARNING)


#: a message that says the process found no device to run on, whoever checked: "There are
#: currently no available devices found, must be one of 'XPU', 'CUDA', or 'NPU'.", "No GPU found",
#: "CUDA is not available", "no CUDA-capable device is detected", "Torch not compiled with CUDA
#: enabled": the environment the process ran in, not an option of the run
_NONE_SEEN = re.compile(
    r"(?i)\bno (?:available |usable |visible |supported |compatible )?(?:nvidia |amd |intel )?"
    r"(?:cuda[- ]capable |cuda |gpu |hip |xpu |npu |tpu )?"
    r"(?:devices?|gpus?|accelerators?)\b(?: (?:were|was|are|is|has been|have been))? "
    r"(?:currently )?(?:found|available|detected|visible|present)|"
    r"\bthere (?:are|is) (?:currently )?no (?:available |usable |visible )?"
    r"(?:devices?|gpus?|accelerators?)\b|"
    r"\b(?:cuda|gpus?|rocm|xpu|npu|accelerators?|cuda devices?)(?: support)? (?:is |are )?(?:not|un)[ -]?"
    r"available\b|\bnot compiled with (?:cuda|rocm|hip)\b|\bfound no nvidia driver\b|"
    r"\bcuda\.is_available\(\) (?:is|returned|returns) false"
)
#: what a log shows of why the process saw no GPU: (pattern, why, the fix)
_WHY_NONE: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(
            r"\b(?:CUDA|HIP|ROCR)_VISIBLE_DEVICES\s?=\s?(?:\"\"|''|-1\b|NoDevFiles\b|$)", re.MULTILINE
        ),
        "the log shows the visible devices set to none (CUDA_VISIBLE_DEVICES empty or -1): every GPU is "
        "hidden from the process",
        "unset CUDA_VISIBLE_DEVICES (or list the GPUs: CUDA_VISIBLE_DEVICES=0,1) where the process starts",
    ),
    (
        re.compile(r"Torch not compiled with CUDA enabled|\btorch(?:==| |: ?)\d[\w.]{0,20}\+cpu\b"),
        "the log shows a CPU-only build of torch (no CUDA in it)",
        "install torch's CUDA build for the host's driver (pip install torch --index-url "
        "https://download.pytorch.org/whl/cu124, the cuXXX the driver supports)",
    ),
    (
        re.compile(
            r"Found no NVIDIA driver on your system|NVIDIA driver on your system is too old|"
            r"libcuda\.so(?:\.1)?: cannot open shared object file|NVIDIA-SMI has failed"
        ),
        "the log shows no usable NVIDIA driver in the process (none found, too old, or libcuda.so missing: a "
        "container started without GPUs)",
        "start the container with the GPUs (docker run --gpus all), or install or update the NVIDIA driver",
    ),
)
_NONE_CHECKS = (
    "check what the process sees, where it runs: `echo $CUDA_VISIBLE_DEVICES` (empty or -1 hides every GPU), "
    "`nvidia-smi` (the driver and its GPUs; in a container, started with --gpus), `python -c 'import torch; "
    "print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), torch.cuda.device_count())'` "
    "(a CPU-only build prints None / False)"
)


def no_device_seen(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI030: the process found no device to run on (``_NONE_SEEN``), whichever package's check
    said so. Not a refusal of the configuration (TRI012): what the process saw and the checks of
    the environment; an error where the log shows why (``_WHY_NONE``), else a warning — the checks
    all passing leaves the check itself (a release's device detection) as the cause."""
    message = tb.message.strip()
    found = _NONE_SEEN.search(message[:2000]) if message else None
    if found is None:
        return None
    last = next((f for f in reversed(tb.frames) if f.package is not None), None)
    who, package = "", last.package if last is not None else None
    if last is not None:
        at = f"{last.at}" + (f" in {last.function}" if last.function else "")
        who = f"{last.package}'s check ({at})"
    elif not tb.frames:
        from envdoctor.triage.raisesites import locate_tb

        loc = locate_tb(tb, log)
        if loc is not None:
            package = loc.package
            who = (
                f"{loc.package}'s check in {loc.places()} ({loc.package} {loc.span()}; placed by its message)"
            )
    said = f"{who} found" if who else "the process found"
    what = (
        f"{said} no device to run on: “{message[:400]}” — what the process saw of its environment (the GPUs "
        "visible to it, the driver, the torch build), not a setting of the run that a check refuses"
    )
    why = next(((w, fix) for pattern, w, fix in _WHY_NONE if _shows(log, pattern, m) is not None), None)
    if why is not None:
        d = finding("TRI030", [m], log, f"{what}; {why[0]}", why[1], gpu_visible="none-seen")
        return at_severity(d, Severity.ERROR)
    fix = _NONE_CHECKS + (
        f"; if it sees the GPU, the device detection behind this check is what fails: a release regression "
        f"of {package} or of the library that called it (try their previous releases, or the latest)"
        if package
        else "; if it sees the GPU, the package that raised it detects devices wrongly (try another release)"
    )
    d = finding("TRI030", [m], log, what, fix, gpu_visible="none-seen")
    return at_severity(d, Severity.WARNING)


_BORROWED = re.compile(r"^Already (?:mutably )?borrowed\b")
_SIGNAL_THREAD = re.compile(r"^signal only works in main thread")
_TRITON_ALLOCATOR = re.compile(r"Kernel requires a runtime memory allocation, but no allocator was set")
_THREAD_FRAMES = re.compile(r"concurrent/futures/|/threading\.py|ThreadPoolExecutor|Exception in thread ")


def thread_unsafe(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI028: a library called from a thread it does not support (module docstring)."""
    msg = tb.message.strip()
    if tb.name == "RuntimeError" and _BORROWED.search(msg):
        who = next((f.package for f in reversed(tb.frames) if f.package), "")
        what = (
            "one Rust-backed object was used by two threads at once and PyO3's borrow check refused the "
            "second ('Already borrowed'): in this stack the Hugging Face fast tokenizer (tokenizers), which "
            "changes its own truncation / padding state on every call, shared by concurrent requests or "
            "worker threads" + (f" (raised under {who})" if who else "")
        )
        fix = (
            "give each thread its own tokenizer (copy.deepcopy(tokenizer) per thread or thread-local), or "
            "serialize the calls on the shared one with a threading.Lock; TOKENIZERS_PARALLELISM does not "
            "change it; a vLLM server with thread-safe tokenizer wrappers (vllm-project/vllm#41181) where "
            "the engine's own threads share it"
        )
        return at_severity(finding("TRI028", [m], log, what, fix, unsafe="tokenizer-shared"), Severity.ERROR)
    if tb.name == "RuntimeError" and _TRITON_ALLOCATOR.search(msg):
        threaded = _THREAD_FRAMES.search("\n".join(f.path for t in tb.all() for f in t.frames)) or _shows(
            log, _THREAD_FRAMES, m
        )
        if threaded is None:
            what = (
                "a Triton kernel that needs scratch memory (TMA descriptors) ran without an "
                "allocator: nothing called triton.set_allocator in this context"
            )
            fix = (
                "call triton.set_allocator(alloc_fn) (alloc_fn(size, alignment, stream) returning a torch "
                "uint8 CUDA tensor) before the kernel runs, in the thread that launches it"
            )
            d = finding("TRI028", [m], log, what, fix, unsafe="triton-allocator")
            return at_severity(d, Severity.WARNING)
        what = (
            "a Triton kernel that needs scratch memory ran in a worker thread (a thread pool) without an "
            "allocator: Triton keeps triton.set_allocator's allocator in a ContextVar, and a new thread "
            "starts "
            "with a fresh context, so the allocator set in the main thread is not there"
        )
        fix = (
            "set the allocator in the thread that launches the kernel (call triton.set_allocator at the "
            "start "
            "of the function the pool runs), or make it the ContextVar's default so that threads inherit it "
            "(as verl#4676 did); a framework release with that fix"
        )
        return at_severity(
            finding("TRI028", [m], log, what, fix, unsafe="triton-allocator-thread"), Severity.ERROR
        )
    if tb.name == "ValueError" and _SIGNAL_THREAD.search(msg):
        who = next((f.package for f in reversed(tb.frames) if f.package), "")
        what = (
            "a library set a signal handler (a timeout on SIGALRM) from a worker thread, which Python allows "
            "only in the main thread"
            + (f": {who}'s, called from a thread" if who else "")
            + " — a reward function run in a thread pool or an asynchronous trainer calls it off the main "
            "thread"
        )
        fix = (
            "call it from the main thread, or turn its signal timeout off where it runs in a thread "
            "(math_verify: parse(..., parsing_timeout=None), verify(..., timeout_seconds=None)) and bound "
            "the time another way (a process pool with a timeout)"
        )
        return at_severity(
            finding("TRI028", [m], log, what, fix, unsafe="signal-in-thread", raised_in=who or None),
            Severity.ERROR,
        )
    return None


def host_exception(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """``host_text`` of an exception's message (an ImportError of libcuda, glibc, libstdc++ …)."""
    said = host_text(tb.message)
    if said is None:
        return None
    rule, severity, what, fix, ev = said
    return at_severity(finding(rule, [m], log, what, fix, **ev), severity)


def from_traceback(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """The first of this module's answers for the exception ``tb``."""
    return (
        host_exception(tb, m, log)
        or no_kernel(tb, m, log)
        or fork_memory(tb, m, log)
        or numpy_removed(tb, m, log)
        or ray_device(tb, m, log)
        or no_device_seen(tb, m, log)
        or thread_unsafe(tb, m, log)
    )
