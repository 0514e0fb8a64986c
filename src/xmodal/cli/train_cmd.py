"""``xmodal train ...``: train a model and save it to a directory."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from xmodal.cli._app import console, train_app


DUAL_HELP = (
    "Train the dual encoder (heads on frozen EfficientNet-Lite / sentence-encoder features) and "
    "save it (a model directory)."
    "\n\nTrains on the Flickr8K train split and, with --cc, the Conceptual Captions 18k train "
    "split; the epoch and the bridge weight are selected on the dev split(s) (Flickr8K dev, and "
    "CC dev with --cc). Stage 2 then tunes EfficientNet-Lite2's head conv with the heads (a few "
    "epochs from the stage-1 model; --no-stage2 skips it), and a querybank of the training "
    "images is stored in the model, its weights in int8 (--no-querybank skips it). Features "
    "are cached on disk (the "
    "first run extracts them). The options "
    "default to the shipped recipe; each one overrides a value, explicitly."
    "\n\nExamples:\n\n  xmodal train dual --data ../shared/data --out models/dual --cc ../data/cc18k"
    "\n\n  xmodal train dual --out models/dual-f8k --no-cc --epochs 60 --no-stage2"
    "\n\n  xmodal train dual --out models/dual --stage2-from models/dual-stage1"
    "\n\n  xmodal eval -p flickr8k-5cap -m models/dual"
)


@train_app.command("dual", help=DUAL_HELP)
def dual(
    data: Path = typer.Option(None, "--data", help="Data root (holding flickr8k/) or flickr8k."),
    out: Path = typer.Option(..., "--out", help="Directory to write the trained model to."),
    cc: Path = typer.Option(
        None, "--cc", help="Conceptual Captions 18k folder (default: $XMODAL_CC_DATA or "
        "../data/cc18k, when the shipped recipe uses it)."),
    no_cc: bool = typer.Option(False, "--no-cc", help="Train on Flickr8K alone."),
    image_backbone: str = typer.Option(
        None, "--image-backbone", help="Override: lite0, lite1 or lite2."),
    text_encoder: str = typer.Option(None, "--text-encoder", help="Override: minilm or mpnet."),
    epochs: int = typer.Option(None, "--epochs", help="Override: training epochs."),
    hidden: int = typer.Option(None, "--hidden", help="Override: hidden units of the heads."),
    ensemble: int = typer.Option(None, "--ensemble", help="Override: heads trained with seeds "
                                 "seed, seed+1, ...; their embeddings are joined."),
    flip: bool = typer.Option(None, "--flip/--no-flip", help="Override: also train on the "
                              "mirrored images (their features are extracted once and cached)."),
    hard_negatives: float = typer.Option(None, "--hard-negatives", help="Override: hard-negative "
                                         "weighting beta (0 = off)."),
    max_train_images: int = typer.Option(
        None, "--max-train-images", help="Use only the first N images of the train split."
    ),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
    stage2: bool = typer.Option(None, "--stage2/--no-stage2", help="After the heads, tune the "
                                "image tower's head conv with them (stage 2 of the shipped "
                                "recipe, Lite2 + MPNet with CC only; the stage-1 model is kept "
                                "in OUT-stage1). Default: on for that recipe."),
    stage2_from: Path = typer.Option(None, "--stage2-from", help="Skip stage 1: run stage 2 "
                                     "from this saved stage-1 model."),
    querybank: bool = typer.Option(True, "--querybank/--no-querybank", help="After stage 2, "
                                   "store a querybank of the training images inside the model "
                                   "(it reorders image -> text rankings) and its weight "
                                   "matrices in int8, as the shipped model does."),
    as_json: bool = typer.Option(False, "--json", help="Print the dev-split scores as JSON."),
    device: str = typer.Option("cpu", "--device", help="Train the heads on cpu, cuda or cuda:N."),
    batch_size: int = typer.Option(None, "--batch-size", help="Override: training images per "
                                   "step (a hyperparameter: it changes the result)."),
) -> None:
    """Train the dual encoder (see ``DUAL_HELP``)."""
    from xmodal.models import torch_runtime
    from xmodal.models.dual_train import TrainConfig
    from xmodal.recipes.dual import SHIPPED_RECIPE, SHIPPED_USES_CC, train_dual

    torch_runtime.configure(device)
    cfg = TrainConfig(**SHIPPED_RECIPE)
    for name, value in (("image_backbone", image_backbone), ("text_encoder", text_encoder),
                        ("epochs", epochs), ("hidden", hidden), ("ensemble_size", ensemble),
                        ("use_flip", flip), ("hard_negative_beta", hard_negatives),
                        ("batch_images", batch_size)):
        if value is not None:
            setattr(cfg, name, value)
    from xmodal.errors import XmodalError

    extra = None
    if not no_cc and (cc is not None or SHIPPED_USES_CC):
        from xmodal.data.conceptual_captions import load_conceptual_captions
        from xmodal.paths import dataset_dir

        dataset_dir("flickr8k", data)  # the main dataset's error first, before CC's
        try:
            extra = {"cc": load_conceptual_captions(cc)}
        except XmodalError as exc:
            raise XmodalError(f"{exc}\n(or train on Flickr8K alone: --no-cc)") from None
    shipped_encoders = cfg.image_backbone == "lite2" and cfg.text_encoder == "mpnet"
    if stage2 is None:
        stage2 = shipped_encoders and extra is not None
    if stage2 and not (shipped_encoders and extra is not None):
        raise XmodalError("stage 2 needs the shipped encoders (Lite2 + MPNet) and CC; "
                          "use --no-stage2")
    if stage2_from is not None and not stage2:
        raise XmodalError("--stage2-from runs stage 2 only; drop --no-stage2")
    stage1 = stage2_from
    if stage1 is None:
        model, report = train_dual(data, config=cfg, max_train_images=max_train_images,
                                   seed=seed, extra=extra, log=console.print,
                                   progress=not as_json)
        stage1 = out.with_name(out.name + "-stage1") if stage2 else out
        model.save(stage1)
        console.print(f"saved the stage-1 dual encoder to {stage1}")
    if stage2:
        from xmodal.recipes.dual_finetune import SHIPPED_STAGE2, finetune

        report, model = finetune(warm_from=stage1, data=data, cc_path=cc,
                                 log=console.print, **SHIPPED_STAGE2)
        model.save(out)
        if querybank:
            from xmodal.recipes.querybank import SHIPPED_IMAGE_BANK, ship_with_image_bank

            ship_with_image_bank(out, data=data, cc_path=cc, log=console.print,
                                 **SHIPPED_IMAGE_BANK)
        console.print(f"saved dual encoder to {out}")
    if as_json:
        print(json.dumps({"out": str(out), **report}, indent=2))
    else:
        console.print(report)


TAGGER_HELP = (
    "Train a keyword tagger on your own captioned photos; use it with `xmodal tag --model`."
    "\n\nKeywords are the nouns, verbs and adjectives of your captions (lemmatized) that occur "
    "for at least --min-images photos. The tagger is a logistic head on EfficientNet-Lite0 "
    "features, like the shipped tagger; its settings are chosen on a held-out share of "
    "the photos and the final model is fit on all of them. Runs offline on a CPU."
    "\n\nExamples:\n\n  xmodal train tagger ~/Pictures/garden --captions garden.csv --out "
    "garden-tags\n\n  xmodal tag new_photo.jpg --model garden-tags"
)


@train_app.command("tagger", help=TAGGER_HELP)
def tagger(
    folder: Path = typer.Argument(..., help="Folder of your photos (searched recursively)."),
    captions: Path = typer.Option(
        ..., "--captions", help="CSV (image,caption) or JSONL file of captions; image names are "
        "paths relative to the folder; several captions per photo are welcome."),
    out: Path = typer.Option(..., "--out", help="Directory to write the tagging model to."),
    min_images: int = typer.Option(
        5, "--min-images", help="A keyword must occur in the captions of this many photos."),
    held_out: float = typer.Option(
        0.2, "--held-out", help="Share of photos held out to choose the regularisation."),
    seed: int = typer.Option(0, "--seed", help="Random seed of the held-out split."),
    as_json: bool = typer.Option(False, "--json", help="Print the training summary as JSON."),
) -> None:
    """Train a keyword tagger (see ``TAGGER_HELP``)."""
    from xmodal.recipes.tagger import train_keyword_tagger

    summary = train_keyword_tagger(folder, captions, out, min_images=min_images,
                                   held_out=held_out, seed=seed, progress=not as_json)
    if as_json:
        print(json.dumps({"out": str(out), **summary}, indent=2))
        return
    h = summary["held_out"]
    console.print(
        f"saved a tagger of {summary['keywords']} keywords, trained on {summary['photos']} "
        f"photos, to {out}\nheld-out top-5 tags (settings {summary['selected']}): mean "
        f"precision {h['mean_P']:.2f}, mean recall {h['mean_R']:.2f}, "
        f"{h['n_words_recall_gt0']} of {h['n_words']} keywords found at least once")


@train_app.command("kcca")
def kcca(
    out: Path = typer.Option(..., "--out", help="Directory to write the trained system to."),
    setting: str = typer.Option(
        None, "--setting", help="A registered KCCA setting (`xmodal models`), e.g. tri5sem or "
        "hodosh-tri5sem-full: trains exactly that record. Default: the setting named by "
        "--text-kernel, else tri5sem."),
    text_kernel: str = typer.Option(
        None, "--text-kernel", help="Override: text kernel bow1, bow5, tagrank, tri5, tri5sem."
    ),
    image_kernel: str = typer.Option(
        None, "--image-kernel",
        help="Override: image kernel pyramid, histogram, effnet, pyramid112 or pyramid448 "
        "(images resized to 112 or 448 px first).",
    ),
    data: Path = typer.Option(None, "--data", help="Data root (holding flickr8k/) or flickr8k."),
    power: float = typer.Option(None, "--power", help="Override: image kernel exponent p."),
    diag_factor: float | None = typer.Option(
        None, "--diag-factor", help="Override: text-kernel diagonal factor d."),
    rank: int = typer.Option(None, "--rank", help="Override: incomplete-Cholesky rank per view "
                             "(the dev grid of n then reaches it)."),
    landmarks: int = typer.Option(None, "--landmarks", help="Override: training images the "
                                  "image kernel is computed against; 6000 = all, the exact "
                                  "kernel."),
    as_json: bool = typer.Option(False, "--json", help="Print the selection summary as JSON."),
) -> None:
    """Train a Hodosh et al. (2013) KCCA system on Flickr8K and save it (a model directory).

    Low-rank KCCA on the 6,000 training images (5 captions each); the 5 best (kappa, n) settings
    per R@1/R@5/R@10 on the dev pool form Borda ensembles for annotation and for search.
    Features and kernels are cached under $XMODAL_CACHE/hodosh, so a second run is fast.
    --setting gives exactly a registered record (`xmodal eval -m hodosh-NAME` trains the same);
    every other option overrides one hyperparameter of it, explicitly.

    Examples:

      xmodal train kcca --setting tri5sem --out models/tri5sem

      xmodal eval --protocol flickr8k-hodosh --model models/tri5sem

      xmodal train kcca --setting tri5sem-full --out models/tri5sem-full   # exact kernels

      xmodal train kcca --text-kernel bow5 --image-kernel effnet --out models/bow5-effnet
    """
    from xmodal.models.hodosh import n_grid_for
    from xmodal.recipes.flickr8k import load_hodosh_data
    from xmodal.provenance import provenance
    from xmodal.recipes import get_setting

    record = get_setting(setting or text_kernel or "tri5sem", "kcca")
    overrides = {k: v for k, v in {
        "text_kernel": text_kernel, "image_kernel": image_kernel, "power": power,
        "diag_factor": diag_factor, "rank": rank, "n_landmarks": landmarks}.items()
        if v is not None and v != record.params[k]}
    if "rank" in overrides:
        overrides["n_grid"] = n_grid_for(overrides["rank"])
    hd = load_hodosh_data(data)
    system = record.build(**overrides).fit(hd)
    system.save(out, provenance=provenance(setting=record.name, overrides=overrides))
    best = {
        task: max(system.dev_grid_, key=lambda r, t=task: r[t]["R@5"] + r[t]["R@10"])
        for task in ("i2t", "t2i")
    }
    summary = {
        "out": str(out),
        "setting": record.name,
        "overrides": overrides,
        "fit_seconds": round(system.fit_seconds_, 1),
        "selected": system.selected_,
        "best_dev": {
            t: {"kappa": b["kappa"], "n": b["n"], **{k: b[t][k] for k in ("R@1", "R@5", "R@10")}}
            for t, b in best.items()
        },
    }
    console.print(f"saved KCCA system ({record.name}"
                  + (f" with {overrides}" if overrides else "") + f") to {out}")
    if as_json:
        print(json.dumps(summary, indent=2, default=list))
    else:
        console.print(summary["best_dev"])
