"""Put the probe model on disk in the probe's temp dir: the user's shape, or the generic one.

The reduced config and the tokenizer (the user's cached files, else a byte-level one) are written
here with the stdlib; the random weights by ``model_writer.py`` in the training interpreter,
in a process group of its own that is ended with the probe's limit.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from envdoctor.probe.plan.model_source import PARAM_BUDGET, TOKENIZER_FILES, ProbeModel
from envdoctor.probe.plan.tinymodel import EOS, PAD, tokenizer_files, write_tiny_model
from envdoctor.probe.stage.groups import end_group

WRITER = Path(__file__).with_name("model_writer.py")
#: processor files a vision-language model needs beside its tokenizer (vLLM loads them)
PROCESSOR_FILES = ("preprocessor_config.json", "processor_config.json", "video_preprocessor_config.json")
_TOKEN_IDS = ("bos_token_id", "eos_token_id", "pad_token_id")


#: the most parameters the writer allocates (counted first on torch's meta device): twice the
#: reduced model's budget, for what the budget does not count (a vision tower, extra heads)
WRITER_MAX_PARAMETERS = 2 * PARAM_BUDGET


def _byte_token_ids(cfg: dict[str, Any]) -> None:
    """Point the config's special tokens at the byte-level tokenizer's (its ids 256, 257)."""
    for target in (cfg, cfg.get("text_config")):
        if isinstance(target, dict):
            target.update({"bos_token_id": EOS, "eos_token_id": EOS, "pad_token_id": PAD})


def _copy_tokenizer(source: str, folder: Path) -> list[str]:
    copied = []
    for name in (*TOKENIZER_FILES, *PROCESSOR_FILES):
        path = Path(source) / name
        if path.is_file() and path.stat().st_size <= 64 * 1024 * 1024:
            shutil.copyfile(path, folder / name)
            copied.append(name)
    return copied


def write_generic(folder: Path) -> dict[str, Any]:
    write_tiny_model(folder)
    return {"source": "generic", "writer": "stdlib"}


class ModelWriter:
    """The probe model's weights being written in the background (``model_writer.py``), so that
    the trainer's imports overlap with it; ``result()`` says how it went."""

    def __init__(
        self, model: ProbeModel, folder: Path, python: str, env: dict[str, str], timeout_s: float
    ) -> None:
        assert model.config is not None
        folder.mkdir(parents=True, exist_ok=True)
        cfg = json.loads(json.dumps(model.config))
        copied = _copy_tokenizer(model.tokenizer_dir, folder) if model.tokenizer_dir else []
        if "tokenizer.json" not in copied and "tokenizer.model" not in copied:
            _byte_token_ids(cfg)
            for name, text in tokenizer_files().items():
                (folder / name).write_text(text)
        (folder / "config.json").write_text(json.dumps(cfg, indent=1))
        spec = folder.parent / "writer-spec.json"
        spec.write_text(
            json.dumps({"folder": str(folder), "seed": 0, "max_parameters": WRITER_MAX_PARAMETERS})
        )
        self.folder, self.copied = folder, copied
        self.log = folder.parent / "writer.log"
        self.start = time.monotonic()
        self.deadline = self.start + timeout_s
        self.timeout_s = timeout_s
        with open(self.log, "wb") as fh:
            self.proc = subprocess.Popen(
                [python, str(WRITER), str(spec)],
                env=env,
                cwd=folder.parent,
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def done(self) -> bool:
        return self.proc.poll() is not None or time.monotonic() > self.deadline

    def stop(self) -> None:
        end_group(self.proc, 5.0)

    def wait(self) -> dict[str, Any]:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=max(self.deadline - time.monotonic(), 0.0))
        return self.result()

    def result(self) -> dict[str, Any]:
        """What was written (class, dtype, parameters, seconds); ``RuntimeError`` saying why
        not (the caller falls back to the generic model)."""
        running = self.proc.poll() is None
        self.stop()
        if running:
            raise RuntimeError(f"writing its weights took over {self.timeout_s:.0f} s")
        try:
            info = json.loads((self.folder / "writer.json").read_text())
        except (OSError, ValueError):
            tail = self.log.read_text(errors="replace").strip().splitlines()[-3:]
            raise RuntimeError(
                f"the weight writer exited ({self.proc.returncode}): " + " | ".join(tail)[-400:]
            ) from None
        if not info.get("ok"):
            err = info.get("error") or {}
            raise RuntimeError(
                f"transformers could not build it: {err.get('type')}: {str(err.get('message'))[:300]}"
            )
        info.pop("ok", None)
        info["write_s"] = round(time.monotonic() - self.start, 2)
        info["tokenizer_files"] = self.copied
        return info
