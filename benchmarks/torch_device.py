"""--device / --batch-size on CPU and GPU (issue 44): open_clip embedding and dual-encoder head
training, the same work on each device, with the results compared.

- open_clip: ViT-B-32 with random weights (nothing is downloaded: the architecture is built and
  saved to a temporary checkpoint, then loaded as ``openclip:ViT-B-32:CKPT`` through xmodal);
  ``--images`` random 224 px images and 500 captions embedded per device and batch size;
  images/s, and the largest difference of the embeddings from the CPU's (cosine 1 expected up to
  float error, TF32 on Ampere and later).
- training: ``fit_heads`` on synthetic features (the test suite's generator, 2,000 images x 5
  captions, 20 epochs) per device: seconds, final loss, dev R@1.

    python -m benchmarks.torch_device                         # cpu, and cuda where there is one
    python -m benchmarks.torch_device --devices cpu --images 64 --out /tmp/x.json   # quick

Writes ``benchmarks/results/torch_device.json`` (or ``--out``) with command, commit and machine.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np


def _devices(asked: list[str] | None) -> list[str]:
    import torch

    if asked:
        return asked
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def openclip_rows(devices: list[str], n_images: int, batch_sizes: list[int]) -> list[dict]:
    import torch
    from PIL import Image

    from xmodal.factory import load_embedding_model
    from xmodal.models import torch_runtime
    from xmodal.models.openclip_backend import import_open_clip
    from xmodal.quiet import dropped_logs

    open_clip = import_open_clip()
    torch.manual_seed(0)
    folder = Path(tempfile.mkdtemp(prefix="xmodal-clip-"))
    ckpt = folder / "vit-b-32-random.pt"
    with dropped_logs(lambda r: "initialized randomly" in r.getMessage()):  # meant here
        net = open_clip.create_model("ViT-B-32", pretrained=None)
    torch.save({"state_dict": net.state_dict()}, ckpt)
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 255, (240, 320, 3), dtype=np.uint8))
              for _ in range(n_images)]
    texts = [f"a photo of {k} dogs on the grass" for k in range(500)]
    reference = None
    rows = []
    for device in devices:
        for bs in batch_sizes:
            torch_runtime.configure(device, bs)
            model = load_embedding_model(f"openclip:ViT-B-32:{ckpt}")
            model.embed_images(images[:bs], progress=False)  # warm-up
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            E = model.embed_images(images, progress=False)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            t1 = time.perf_counter()
            T = model.embed_texts(texts, progress=False)
            dt_text = time.perf_counter() - t1
            if reference is None:
                reference = (E, T)
            rows.append({"model": "openclip ViT-B-32 (random weights)", "device": device,
                         "batch_size": bs, "images": n_images,
                         "images_per_s": n_images / dt, "texts_per_s": len(texts) / dt_text,
                         "max_abs_diff_vs_first": float(max(np.abs(E - reference[0]).max(),
                                                            np.abs(T - reference[1]).max())),
                         "min_cosine_vs_first": float(min((E * reference[0]).sum(1).min(),
                                                          (T * reference[1]).sum(1).min()))})
            print(json.dumps(rows[-1]), flush=True)
    torch_runtime.configure()
    return rows


def _synthetic(n: int = 2000, d_img: int = 1280, d_txt: int = 384, seed: int = 0):
    from xmodal.models.dual_train import TrainData

    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 32))
    A, B = rng.normal(size=(32, d_img)), rng.normal(size=(32, d_txt))
    # noise about twice the signal: dev R@1 well below 100% (0.5 gave 100% after 3 epochs)
    pooled = (z @ A + 12 * rng.normal(size=(n, d_img))).astype(np.float32)
    caption_image = np.repeat(np.arange(n), 5)
    text = (z[caption_image] @ B + 12 * rng.normal(size=(5 * n, d_txt))).astype(np.float32)
    text /= np.linalg.norm(text, axis=1, keepdims=True)
    rows = np.arange(n)
    splits = {"train": rows[: int(0.8 * n)], "dev": rows[int(0.8 * n):int(0.9 * n)],
              "test": rows[int(0.9 * n):]}
    return TrainData(pooled, rng.normal(size=(n, 1000)).astype(np.float32), None, None, None,
                     text, caption_image, [f"{i}.jpg" for i in rows], splits)


def training_rows(devices: list[str], epochs: int) -> list[dict]:
    import torch

    from xmodal.models import torch_runtime
    from xmodal.models.dual_train import TrainConfig, fit_heads, recall_5cap, split_rows

    td = _synthetic()
    rows = []
    for device in devices:
        torch_runtime.configure(device)
        cfg = TrainConfig(dim=128, hidden=512, epochs=epochs, batch_images=128, lr=2e-3,
                          eval_every=epochs)
        t0 = time.perf_counter()
        heads, history, _ = fit_heads(td, cfg, log=lambda *_: None)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        r, caps = split_rows(td, "dev")
        with torch.no_grad():
            zi = heads.image_forward(torch.from_numpy(td.pooled[r]), None).numpy()
            zt = heads.text_forward(torch.from_numpy(td.text[caps])).numpy()
        pos = {int(row): k for k, row in enumerate(r)}
        dev = recall_5cap(zi, zt, np.array([pos[int(i)] for i in td.caption_image[caps]]))
        rows.append({"model": "dual heads (synthetic 2,000 x 5)", "device": device,
                     "epochs": epochs, "seconds": dt, "final_loss": history[-1]["loss"],
                     "dev": dev})
        print(json.dumps(rows[-1]), flush=True)
    torch_runtime.configure()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", nargs="*", help="default: cpu, and cuda where there is one")
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--batch-sizes", type=int, nargs="*", default=[32, 128])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--out", type=Path, help="default: benchmarks/results/torch_device.json")
    args = ap.parse_args()
    devices = _devices(args.devices)
    results = {"openclip": openclip_rows(devices, args.images, args.batch_sizes),
               "training": training_rows(devices, args.epochs)}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        print(args.out)
        return
    from benchmarks._record import record

    print(record("torch_device", results))


if __name__ == "__main__":
    main()
