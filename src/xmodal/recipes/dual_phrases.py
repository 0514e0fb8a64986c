"""Stage 3 of the dual encoder: tuning its text side for the short queries people type.

Stages 1 and 2 (:mod:`xmodal.recipes.dual`, :mod:`xmodal.recipes.dual_finetune`) learn from
whole captions, so one- and two-word queries ("dog", "a person", "running") land where no
caption does. This stage keeps the image side and the sentence side exactly as shipped and
adds a second set of text heads for short queries (a query of at most two words without
sentence punctuation, :func:`xmodal.models.dual.is_short_query`), warm-started from the shipped
text heads and trained on:

* a **phrase loss**: short phrases made from the training captions' own words (label-to-caption
  augmentation the other way round). The captions of the training photos (Flickr8K train and
  CC18K train) are parsed as the short-query benchmark parses dev captions
  (:func:`xmodal.eval.short_queries.parse_captions`); every noun, activity (``-ing`` form) and
  adjective-noun pair that at least ``min_photos`` training photos name becomes phrases
  ("dog", "a dog", "dogs", "running", "black dog"), relevant to the photos whose captions name
  it or a synonym (:data:`xmodal.eval.short_queries.SYNONYMS`). A phrase is pulled towards all
  of its photos in the batch at once (a softmax over the batch's photos, averaged over the
  phrase's positives);
* an **anchor loss**: the ImageNet class names as short queries ("a wall clock") stay where
  the shipped heads put them (what the image towers know stays known);
* optionally the caption loss of stage 1 and a pull of captions towards their shipped vectors
  (``caption_weight``, ``keep_weight``; tried, not shipped).

The photo vectors are the shipped model's, so photo indexes keep theirs
(:attr:`xmodal.models.dual.DualEncoder.image_space_id`).

Nothing here reads a dev or test caption for training. Selection is on dev (the short-query
benchmark's dev mAP) with the out-of-domain check beside it: ``python -m
benchmarks.phrase_tuning`` runs the recipe, records every epoch and writes the chosen model.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.paths import cache_dir

# the shipped model's stage 3 (chosen on dev; see benchmarks/results/phrase_tuning.json)
SHIPPED_STAGE3 = {"phrase_weight": 1.0, "anchor_weight": 8.0, "caption_weight": 0.0,
                  "keep_weight": 0.0, "epochs": 6, "lr": 1e-3, "min_photos": 10,
                  "batch_images": 256, "seed": 0, "train_only": ("linear", "fc2")}

# words of no visible subject, never made phrases (a shorter list than the benchmark's:
# clothing, body parts and balls are things people do search for)
NOT_VISIBLE = {
    "front", "side", "top", "background", "picture", "image", "photo", "view", "stock",
    "illustration", "vector", "area", "way", "end", "edge", "middle", "other", "something",
    "one", "two", "three", "lot", "bunch", "day", "time", "part", "thing", "use", "type",
    "number", "concept", "style", "design", "set", "piece", "form", "isolated", "close",
    "closeup", "shot", "look", "stand", "year", "season", "event", "premiere", "attend",
}
NOT_ACTIVE = {"be", "have", "do", "get", "make", "take", "seem", "include", "feature",
              "isolate", "say", "find", "let", "keep", "try", "come", "go", "give"}
ADJ_SKIP = {"other", "many", "few", "several", "same", "different", "top", "next", "most"}


@dataclass
class Phrases:
    texts: list[str]
    kinds: list[str]
    photos: list[np.ndarray]  # per phrase: the rows of the training photos it is relevant to


def work_dir() -> Path:
    return cache_dir() / "phrase_tuning"


def _digest(obj) -> str:
    return hashlib.sha1(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:12]


# ----- training data --------------------------------------------------------------------------
def training_photos(data=None, cc_path=None):
    """(photo ids, image paths, [captions] per photo) of the training splits: Flickr8K train,
    plus CC18K train when its data is there."""
    from xmodal.recipes.dual import training_items

    extra = {}
    try:
        from xmodal.data.conceptual_captions import load_conceptual_captions

        extra["cc"] = load_conceptual_captions(cc_path, warn=False)
    except XmodalError as exc:
        print(f"CC18K left out: {exc}")
    ids, paths, captions, split_ids = training_items(data, extra=extra)
    train = split_ids["train"]
    row = {i: r for r, i in enumerate(ids)}
    caps: dict[str, list[str]] = {}
    for i, text in captions:
        caps.setdefault(i, []).append(text)
    return train, [paths[row[i]] for i in train], [caps.get(i, []) for i in train]


def photo_vectors(model, key: str, paths: list) -> np.ndarray:
    """The shipped model's vectors of ``paths``, decoded and embedded as the photo index does
    (cached under :func:`work_dir`)."""
    from xmodal.index.scan import load_checked

    f = work_dir() / f"photos-{key}-{_digest([str(p) for p in paths])}.npy"
    if f.is_file():
        return np.load(f)
    from tqdm.auto import tqdm

    square = getattr(model, "image_input_size", None)
    out = np.zeros((len(paths), model.dim), np.float32)
    for s in tqdm(range(0, len(paths), 32), desc="embedding training photos", unit="batch"):
        batch, rows = [], []
        for r in range(s, min(s + 32, len(paths))):
            img, _ = load_checked(str(paths[r]), square=square)
            if img is not None:
                batch.append(img)
                rows.append(r)
        if batch:
            out[rows] = model.embed_images(batch, progress=False, cache=False)
    f.parent.mkdir(parents=True, exist_ok=True)
    np.save(f, out)
    return out


def parsed(texts: list[list[str]]) -> list[dict]:
    """:func:`xmodal.eval.short_queries.parse_captions`, cached under :func:`work_dir`."""
    from xmodal.eval.short_queries import parse_captions

    f = work_dir() / f"parse-{_digest(texts)}.json"
    if f.is_file():
        raw = json.loads(f.read_text())
        return [{"nouns": set(d["nouns"]), "verbs": set(d["verbs"]), "pairs": set(d["pairs"]),
                 "ing": Counter({tuple(k.split("|")): v for k, v in d["ing"].items()}),
                 "nns": Counter({tuple(k.split("|")): v for k, v in d["nns"].items()})}
                for d in raw]
    per = parse_captions(texts)
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps([{"nouns": sorted(d["nouns"]), "verbs": sorted(d["verbs"]),
                              "pairs": sorted(d["pairs"]),
                              "ing": {f"{a}|{b}": c for (a, b), c in d["ing"].items()},
                              "nns": {f"{a}|{b}": c for (a, b), c in d["nns"].items()}}
                             for d in per]))
    return per


def make_phrases(per: list[dict], min_photos: int = 10) -> Phrases:
    """The phrases of the training captions and the photos each is relevant to."""
    from xmodal.eval.short_queries import MASS, SYNONYMS

    texts, kinds, photos = [], [], []
    seen = set()

    def add(text, kind, rows):
        if text in seen or len(rows) < min_photos:
            return
        seen.add(text)
        texts.append(text)
        kinds.append(kind)
        photos.append(np.asarray(rows, np.int32))

    noun_rows: dict[str, list[int]] = {}
    verb_rows: dict[str, list[int]] = {}
    pair_rows: dict[str, list[int]] = {}
    plural, ing = Counter(), Counter()
    for r, d in enumerate(per):
        for w in d["nouns"]:
            noun_rows.setdefault(w, []).append(r)
        for w in d["verbs"]:
            verb_rows.setdefault(w, []).append(r)
        for p in d["pairs"]:
            pair_rows.setdefault(p, []).append(r)
        plural.update(d["nns"])
        ing.update(d["ing"])

    def naming(lemma: str) -> list[int]:
        rows = set(noun_rows.get(lemma, ())) | set(verb_rows.get(lemma, ()))
        for s in SYNONYMS.get(lemma, ()):
            rows |= set(noun_rows.get(s, ())) | set(verb_rows.get(s, ()))
        return sorted(rows)

    for w, rows in sorted(noun_rows.items(), key=lambda kv: -len(kv[1])):
        if w in NOT_VISIBLE or len(w) < 3 or len(rows) < min_photos:
            continue
        named = naming(w)
        add(w, "noun", named)
        if w not in MASS:
            add(f"{'an' if w[0] in 'aeiou' else 'a'} {w}", "a noun", named)
        forms = Counter({f: c for (lem, f), c in plural.items() if lem == w})
        if forms:
            add(forms.most_common(1)[0][0], "plural", named)
    forms: dict[str, set[str]] = {}
    for (lem, f), _ in ing.items():
        forms.setdefault(f, set()).add(lem)
    for f, lemmas in forms.items():
        if lemmas <= NOT_ACTIVE:
            continue
        add(f, "activity", sorted({r for lem in lemmas for r in verb_rows.get(lem, ())}))
    for p, rows in pair_rows.items():
        adj, noun = p.split(" ", 1)
        if adj in ADJ_SKIP or noun in NOT_VISIBLE:
            continue
        add(p, "adjective noun", rows)
    return Phrases(texts, kinds, photos)


# ----- the text heads in torch ----------------------------------------------------------------
def text_members(model):
    """The model's text heads as trainable torch modules (one per ensemble member)."""
    import torch

    from xmodal.models.dual_heads import DualHeads

    config, state = model.heads_.config(), model.heads_.state_arrays()
    members = []
    for i, cfg in enumerate(config.get("members", [config])):
        prefix = f"m{i}.text." if "members" in config else "text."
        arrays = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
        h = DualHeads(image_dim=cfg["image_dim"], text_dim=cfg["text_dim"], dim=cfg["dim"],
                      hidden=cfg["hidden"], dropout=cfg["dropout"]).text
        h.load_state_dict({k: torch.from_numpy(np.asarray(v, np.float32))
                           for k, v in arrays.items()}, strict=True)
        members.append(h)
    return torch.nn.ModuleList(members)


def text_forward(members, x):
    """The ensemble's text vector: members' unit vectors side by side, divided by sqrt(K)."""
    import torch
    from torch.nn import functional as F

    parts = [F.normalize(m(x), dim=-1) for m in members]
    return torch.cat(parts, dim=1) / np.sqrt(len(parts))


def embed_text_features(members, feats: np.ndarray) -> np.ndarray:
    import torch

    members.eval()
    with torch.no_grad():
        return text_forward(members, torch.from_numpy(np.asarray(feats, np.float32))).numpy()


def tune(members, photo_vecs, cap_feats, cap_photo, phrase_feats, phrases: Phrases, *,
         phrase_weight: float, epochs: int, lr: float, batch_images: int, seed: int,
         keep_weight: float = 0.0, anchor_feats=None, anchor_weight: float = 0.0,
         caption_weight: float = 1.0, train_only: tuple[str, ...] | None = None,
         eval_fn=None, log=print):
    """Train ``members`` in place; returns [(epoch, state dict copy, eval)] after each epoch
    (epoch 0: the warm start).

    ``train_only`` names the layers that learn ("linear", "fc2"; None: all), the others
    stay the warm start's (and a saved model stores only what changed).
    ``caption_weight`` weighs the caption loss (0: captions only through ``keep_weight``);
    ``keep_weight`` adds the squared distance of the batch's caption vectors to the warm
    start's (sentences stay where they were); ``anchor_weight`` the same for a batch of
    ``anchor_feats`` (texts the training captions do not cover, such as the ImageNet class
    names: the vocabulary the heads knew stays known)."""
    import copy

    import torch
    from torch.nn import functional as F

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    n = len(photo_vecs)
    caps_of: list[list[int]] = [[] for _ in range(n)]
    for c, p in enumerate(cap_photo):
        caps_of[p].append(c)
    phrases_of: list[list[int]] = [[] for _ in range(n)]
    for q, rows in enumerate(phrases.photos):
        for r in rows:
            phrases_of[r].append(q)
    rows = np.array([r for r in range(n) if caps_of[r] and np.any(photo_vecs[r])])
    Z = torch.from_numpy(np.asarray(photo_vecs, np.float32))
    Tc = torch.from_numpy(np.asarray(cap_feats, np.float32))
    Tp = torch.from_numpy(np.asarray(phrase_feats, np.float32))
    member_of = {}  # photo row -> set of phrase ids, for the positives mask
    for r in rows:
        member_of[r] = set(phrases_of[r])
    kept = torch.from_numpy(embed_text_features(members, cap_feats)) if keep_weight else None
    Ta = None if anchor_feats is None else torch.from_numpy(np.asarray(anchor_feats, np.float32))
    anchored = torch.from_numpy(embed_text_features(members, Ta.numpy())) if anchor_weight else None
    scale = 20.0  # the shipped heads' learned scale is about this (1 / 0.05)
    for name, p in members.named_parameters():
        p.requires_grad = train_only is None or name.split(".")[1] in train_only
    opt = torch.optim.AdamW([p for p in members.parameters() if p.requires_grad], lr=lr,
                            weight_decay=1e-4)
    history = [(0, copy.deepcopy(members.state_dict()), eval_fn(members) if eval_fn else None)]
    t0 = time.time()
    for epoch in range(1, epochs + 1):
        members.train()
        order = rng.permutation(rows)
        losses = []
        for s in range(0, len(order), batch_images):
            b = order[s:s + batch_images]
            zi = Z[b]
            cap = [caps_of[r][rng.integers(len(caps_of[r]))] for r in b]
            zt = text_forward(members, Tc[cap])
            logits = scale * zt @ zi.T
            target = torch.arange(len(b))
            loss = caption_weight * 0.5 * (F.cross_entropy(logits, target)
                                           + F.cross_entropy(logits.T, target))
            if phrase_weight > 0:
                picks = sorted({phrases_of[r][rng.integers(len(phrases_of[r]))]
                                for r in b if phrases_of[r]})
                if picks:
                    pos = torch.tensor([[q in member_of[r] for r in b] for q in picks])
                    zp = text_forward(members, Tp[picks])
                    lp = F.log_softmax(scale * zp @ zi.T, dim=1)
                    phrase_loss = -(lp * pos).sum(1).div(pos.sum(1)).mean()
                    loss = loss + phrase_weight * phrase_loss
            if keep_weight:
                loss = loss + keep_weight * (zt - kept[cap]).pow(2).sum(1).mean()
            if anchor_weight:
                a = torch.from_numpy(rng.integers(0, len(Ta), batch_images))
                drift = text_forward(members, Ta[a]) - anchored[a]
                loss = loss + anchor_weight * drift.pow(2).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        score = eval_fn(members) if eval_fn else None
        history.append((epoch, copy.deepcopy(members.state_dict()), score))
        log(f"epoch {epoch}: loss {np.mean(losses):.4f} ({time.time() - t0:.0f} s) {score}")
    return history


def routed(model, members, feats: np.ndarray, short: np.ndarray) -> np.ndarray:
    """Text vectors as the tuned model embeds them: ``short`` rows through ``members`` (the
    short-query heads), the others through the model's own text heads."""
    out = model.embed_text_features(feats)
    if short.any():
        out[short] = embed_text_features(members, feats[short])
    return out


# ----- selection on dev -----------------------------------------------------------------------
def dev_evaluator(model, key: str, data=None, cc_path=None):
    """A function of the text members giving the dev numbers that select: the short-query
    benchmark's dev mAP (raw queries, as search embeds them) and the 5-caption R@1 both ways
    on Flickr8K dev and CC18K dev (``score``: mean over the two of mean R@1, as stage 1)."""
    from xmodal.eval.short_queries import build, dev_photos, embed, mean_ap
    from xmodal.features.text_encoder import encode_texts
    from xmodal.models.dual import is_short_query
    from xmodal.models.dual_train import recall_5cap_scores

    sq_cache = cache_dir() / "short_queries"
    sq = build(data, cc_path, cache=sq_cache)
    photos, _ = embed(sq, model, key, sq_cache, phrased=False)
    short = sq.short()
    q_feats = encode_texts([sq.queries[i].text for i in short], encoder=model.text_encoder,
                           progress=False)
    caps = [c for _, _, c in dev_photos(data, cc_path)]
    sources = {}
    for src in ("flickr8k", "cc18k"):
        rows = [r for r, p in enumerate(sq.photos) if p.startswith(src + "/")]
        if not rows:
            continue
        texts = [t for r in rows for t in caps[r]]
        owner = np.array([j for j, r in enumerate(rows) for _ in caps[r]])
        short_caps = np.array([is_short_query(t, model.short_max_words_) for t in texts])
        sources[src] = (photos[rows], encode_texts(texts, encoder=model.text_encoder,
                                                   progress=False), owner, short_caps)

    def evaluate(members) -> dict:
        Q = np.zeros((len(sq.queries), photos.shape[1]), np.float32)
        Q[short] = embed_text_features(members, q_feats)
        out = {"short_map": round(mean_ap(sq, Q @ photos.T)["map"], 4)}
        r1 = []
        for src, (P, feats, owner, short_caps) in sources.items():
            T = routed(model, members, feats, short_caps)
            S = P @ T.T - model.caption_offsets(T)[None, :]
            rec = recall_5cap_scores(S, owner)
            out[f"{src}_R@1"] = [round(rec["i2t_R@1"], 2), round(rec["t2i_R@1"], 2)]
            out[f"{src}_t2i_R@10"] = round(rec["t2i_R@10"], 2)
            r1.append((rec["i2t_R@1"] + rec["t2i_R@1"]) / 2)
        out["score"] = round(float(np.mean(r1)), 3)
        return out

    return evaluate


def training_set(model, key: str, data=None, cc_path=None, min_photos: int = 10):
    """(photo vectors, caption features, caption -> photo row, phrases, phrase features)."""
    from xmodal.features.text_encoder import encode_texts

    ids, paths, caps = training_photos(data, cc_path)
    vecs = photo_vectors(model, key, paths)
    per = parsed(caps)
    phrases = make_phrases(per, min_photos)
    texts = [t for c in caps for t in c]
    owner = np.array([r for r, c in enumerate(caps) for _ in c])
    cap_feats = encode_texts(texts, encoder=model.text_encoder)
    phrase_feats = encode_texts(phrases.texts, encoder=model.text_encoder)
    return vecs, cap_feats, owner, phrases, phrase_feats


def anchor_texts() -> list[str]:
    """The ImageNet class names as short queries ("a wall clock", "wall clock"): what the image
    towers already know, kept where the warm start put it (``anchor_weight``)."""
    from xmodal.features.image_encoder import imagenet_class_names

    names = sorted(set(imagenet_class_names()))
    return [f"{'an' if n[0] in 'aeiou' else 'a'} {n}" for n in names] + names


def warm_start(model):
    """``model`` as stage 3 starts from it: without short-query heads (the shipped default
    has them; its id is then the one it had before stage 3)."""
    import copy

    if model.short_heads_ is None:
        return model
    out = copy.copy(model)
    out.short_heads_, out.short_mix_ = None, 0.0
    out.meta_ = {k: v for k, v in model.meta_.items() if k != "stage3"}
    return out


def with_short_heads(model, members, mix: float, provenance: dict):
    """A copy of ``model`` whose short queries go through ``members`` (sentences through its
    own text heads, photos through its own image side: the same photo vectors)."""
    import copy

    from xmodal.models.head_inference import NumpyHeads

    config = model.heads_.config()
    prefix = "m{}.text." if "members" in config else "text."
    state = {prefix.format(i) + k: v.detach().cpu().numpy().astype(np.float32)
             for i, m in enumerate(members) for k, v in m.state_dict().items()}
    out = copy.copy(model)
    out.short_heads_ = NumpyHeads(config, state)
    out.short_mix_ = float(mix)
    out.meta_ = {**model.meta_, "stage3": provenance}
    return out
