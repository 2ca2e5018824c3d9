"""Package pins on an accelerator other than CUDA.

PyPI's wheels of torch, vLLM, flash-attn and the like are built for CUDA (or the CPU); on ROCm,
Intel XPU or Ascend a plain ``pip install 'vllm==X'`` would replace the platform's own build with
a CUDA one. A fix there names the release and leaves the build to the platform's index or image.
"""

from __future__ import annotations

import shlex
from typing import Any

#: packages whose PyPI wheels are built for CUDA (or the CPU): on another accelerator they come from
#: that platform's own index or image, never from a plain ``pip install``
BUILT_FOR_CUDA = frozenset(
    {"torch", "torchvision", "torchaudio", "vllm", "flash-attn", "xformers", "triton", "bitsandbytes"}
)


def accelerator_build(facts: Any) -> str | None:
    """The accelerator the run's torch is built for where it is not CUDA: "ROCm" (a ``+rocm`` torch
    or an AMD GPU), "Intel XPU" (``+xpu``), "Ascend NPU" (torch_npu or vllm-ascend installed); None
    for CUDA or not known."""
    from envdoctor.checks.gpus import non_cuda_build

    build = non_cuda_build(facts.version("torch")) or ""  # the torch wheel's own local label
    if "ROCm" in build or any(w in g.name for g in facts.gpus for w in ("AMD", "Instinct", "Radeon")):
        return "ROCm"
    if "XPU" in build:
        return "Intel XPU"
    if facts.version("torch-npu") or facts.version("vllm-ascend"):
        return "Ascend NPU"
    return None


def pip_lines(packages: dict[str, str], build: str | None = None, quote: bool = False) -> list[str]:
    """The pip line of ``packages`` (exact versions); on an accelerator other than CUDA (``build``)
    the packages PyPI builds for CUDA are named in a shell comment for that platform's own builds
    instead (the comment installs nothing). ``quote``: each pin in single quotes, as check's text
    writes them."""
    pkgs = sorted(packages.items())
    own = [(n, v) for n, v in pkgs if build and n in BUILT_FOR_CUDA]
    plain = [(n, v) for n, v in pkgs if (n, v) not in own]
    out = []
    if plain:
        pins = (f"'{n}=={v}'" if quote else shlex.quote(f"{n}=={v}") for n, v in plain)
        out.append("pip install " + " ".join(pins))
    if own:
        out.append(
            f"# {' '.join(f'{n}=={v}' for n, v in own)}: install the {build} builds of these releases "
            f"(PyPI's wheels are built for CUDA and would replace the {build} ones)"
        )
    return out


def on_platform(text: str, packages: dict[str, str], build: str | None) -> str:
    """A fix text whose packages include one PyPI builds for CUDA, told for ``build``: a text that
    is only the pip line of ``packages`` becomes the platform's lines; another text keeps its words
    and says which releases to take from the platform's builds."""
    own = sorted(n for n in packages if n in BUILT_FOR_CUDA)
    if not build or not own:
        return text
    plain = "pip install " + " ".join(f"'{n}=={v}'" for n, v in sorted(packages.items()))
    if text.strip() == plain:
        return "; ".join(pip_lines(packages, build, quote=True))
    pins = " ".join(f"{n}=={packages[n]}" for n in own)
    return f"{text} (on {build}: {pins} from the {build} builds, not PyPI's CUDA wheels)"
