"""What one training example costs when the top of an encoder is tuned (issue 17, fifth round).

    python -m benchmarks.finetune_cost        # a few timed steps each, after a warm-up

- image: EfficientNet-Lite2's head conv (BN folded, :mod:`xmodal.models.image_top`) on cached
  (81, 352) activations, forward and backward;
- image, one block more: the last MBConv block too (its input cached instead);
- text: MPNet's last transformer layer on cached hidden states of 16-token captions, forward and
  backward (the layers below frozen and cached).
Examples per second for a batch of 128 images / 640 captions, and the seconds an epoch over
Flickr8K + CC train (22,643 images; 46,643 captions) would take. Written to
``benchmarks/results/finetune_cost.json``.
"""

from __future__ import annotations

import copy
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks._record import record  # noqa: E402

TRAIN_IMAGES = 22_643
TRAIN_CAPTIONS = 46_643


def per_second(step, batch: int, repeats: int = 4) -> float:
    step()
    t = time.perf_counter()
    for _ in range(repeats):
        step()
    return batch * repeats / (time.perf_counter() - t)


def main() -> None:
    import torch

    from xmodal.features.image_encoder import load_efficientnet
    from xmodal.features.text_encoder import load_mpnet
    from xmodal.models.image_top import pretrained_top, tunable_top

    out = {"threads": torch.get_num_threads()}
    top = tunable_top(pretrained_top("lite2"))
    x = torch.randn(128, 81, 352)

    def head_step():
        top.zero_grad()
        top(x).sum().backward()

    out["image_head_conv_per_s"] = per_second(head_step, 128)

    net = load_efficientnet("lite2")
    block = copy.deepcopy(net._blocks[-1]).eval()
    x2 = torch.randn(128, block._expand_conv.in_channels, 9, 9)

    def block_step():
        top.zero_grad()
        block.zero_grad()
        top(block(x2).flatten(2).transpose(1, 2)).sum().backward()

    out["image_last_block_and_head_conv_per_s"] = per_second(block_step, 128)

    layer = copy.deepcopy(load_mpnet()[0].auto_model.encoder.layer[-1]).train()
    h = torch.randn(640, 16, 768)
    mask = torch.zeros(640, 1, 1, 16)

    def text_step():
        layer.zero_grad()
        layer(h, attention_mask=mask)[0].mean(1).sum().backward()

    out["text_last_layer_per_s"] = per_second(text_step, 640, repeats=2)
    per_s = {k[: -len("_per_s")]: v for k, v in out.items() if k.endswith("_per_s")}
    out["epoch_s"] = {k: (TRAIN_CAPTIONS if k.startswith("text") else TRAIN_IMAGES) / v
                      for k, v in per_s.items()}
    print(out)
    record("finetune_cost", out)


if __name__ == "__main__":
    main()
