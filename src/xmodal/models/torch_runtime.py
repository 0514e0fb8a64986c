"""Where torch-backed models run: ``--device cpu|cuda[:N]`` and ``--batch-size`` of the CLI.

:func:`configure` sets the process-wide choice (CPU and each model's own batch size by default);
models built afterwards read it (:func:`device`, :func:`batch_size`): open_clip checkpoints
(:mod:`xmodal.models.openclip_backend`) and the dual encoder's training
(:mod:`xmodal.models.dual_train`). Asking for CUDA where torch sees no GPU is an error that says
so, not a silent fall back to the CPU.
"""

from __future__ import annotations

import re

from xmodal.errors import XmodalError

_STATE: dict[str, object] = {"device": "cpu", "batch_size": None}


def check_device(name: str) -> str:
    """``name`` if torch can run on it (``cpu``, ``cuda``, ``cuda:N``), else XmodalError."""
    name = (name or "cpu").strip().lower()
    if name == "cpu":
        return name
    if not re.fullmatch(r"cuda(:\d+)?", name):
        raise XmodalError(f"--device must be cpu, cuda or cuda:N, not {name!r}")
    import torch

    if not torch.cuda.is_available():
        raise XmodalError(f"--device {name}: torch sees no CUDA GPU here (torch "
                          f"{torch.__version__}, CUDA build {torch.version.cuda or 'none'}); "
                          "use --device cpu")
    index = int(name.split(":")[1]) if ":" in name else 0
    if index >= torch.cuda.device_count():
        raise XmodalError(f"--device {name}: torch sees {torch.cuda.device_count()} GPU(s)")
    return name


def configure(device: str | None = None, batch_size: int | None = None) -> None:
    """Set the device and batch size of torch-backed models built from now on."""
    if batch_size is not None and batch_size < 1:
        raise XmodalError(f"--batch-size must be at least 1, not {batch_size}")
    _STATE["device"] = check_device(device or "cpu")
    _STATE["batch_size"] = batch_size


def device() -> str:
    return str(_STATE["device"])


def batch_size(default: int) -> int:
    """The configured batch size, or the model's ``default``."""
    value = _STATE["batch_size"]
    return default if value is None else int(value)  # type: ignore[arg-type]
