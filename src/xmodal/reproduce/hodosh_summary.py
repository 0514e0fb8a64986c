"""The prose of ``reports/hodosh.md`` (the Summary and the originals' conclusion): each number
and ordering it states, read from the results, and the report's names of systems and paper claims.

:func:`summary` takes the result dict of :func:`xmodal.reproduce.hodosh.evaluate`, the
``hodosh_originals.json`` payload and the KCCA cost benchmarks (both optional), so a rerun that
changes a table changes the prose with it. Orderings are decided on the numbers as the tables
print them (one decimal, median rank whole).
"""

from __future__ import annotations

import math

from xmodal.reproduce.render import span as value_range

LABELS = {
    "nn": "NN (NN5 idf-F1)",
    "bow1": "BoW1",
    "bow5": "BoW5",
    "tagrank": "TagRank",
    "tri5": "Tri5",
    "tri5sem": "Tri5Sem",
    "tri5sem-effnet": "Tri5Sem + EfficientNet-Lite0",
    "bow5-effnet": "BoW5 + EfficientNet-Lite0",
    "tri5-landmarks": "Tri5, text kernel vs landmarks (like Tri5Sem, d = 1)",
    "tri5sem-full": "Tri5Sem, exact kernels (all 6,000 training images, rank 3,000)",
    "bow5-full": "BoW5, exact kernels (rank 3,000)",
    "tagrank-full": "TagRank, exact kernels (rank 3,000)",
    "tri5-full": "Tri5, exact kernels (rank 3,000)",
    "bow5-112": "BoW5 on 112x112 images (resolution ablation)",
    "bow5-448": "BoW5 on images enlarged to 448x448 (descriptor scale of the originals)",
    "tri5sem-448": "Tri5Sem on images enlarged to 448x448",
    "tri5sem-448-full": "Tri5Sem, 448x448, exact kernels (rank 3,000)",
    "bow5-448-full": "BoW5, 448x448, exact kernels (rank 3,000)",
    "tagrank-448-full": "TagRank, 448x448, exact kernels (rank 3,000)",
    "tri5-448-full": "Tri5, 448x448, exact kernels (rank 3,000)",
}
def label(s: str) -> str:
    """The report's name of a system (``NAME@single``: its single best dev model)."""
    base = s.removesuffix("@single")
    return LABELS[base] + (" (single best dev model)" if s.endswith("@single") else "")


# each number the paper's text states: (claim, paper value, where ours is in the results)
PAPER_CLAIMS = [
    ("Annotation R@1, Tri5Sem", 8.3, ("flickr8k-hodosh", "i2t", "tri5sem", "R@1")),
    ("Annotation R@1, BoW5", 6.2, ("flickr8k-hodosh", "i2t", "bow5", "R@1")),
    ("Annotation R@1, TagRank", 6.0, ("flickr8k-hodosh", "i2t", "tagrank", "R@1")),
    ("Annotation S@10, Tri5Sem", 49.1, ("flickr8k-hodosh-crowd", "i2t", "tri5sem", "R@10")),
    ("Search S@10, Tri5Sem", 48.5, ("flickr8k-hodosh-crowd", "t2i", "tri5sem", "R@10")),
    ("Annotation R-precision, Tri5", 11.6, ("flickr8k-hodosh-crowd", "i2t", "tri5", "R-P")),
    ("Search R-precision, Tri5", 11.0, ("flickr8k-hodosh-crowd", "t2i", "tri5", "R-P")),
    ("Annotation R-precision, Tri5Sem", 13.4,
     ("flickr8k-hodosh-crowd", "i2t", "tri5sem", "R-P")),
    ("Search R-precision, Tri5Sem", 13.7, ("flickr8k-hodosh-crowd", "t2i", "tri5sem", "R-P")),
    ("Tri5Sem top caption expert = 4.0 (% images)", 11.0, ("expert", "tri5sem", ">=4.0")),
    ("Tri5Sem top caption expert >= 2.66 (% images)", 28.1, ("expert", "tri5sem", ">=2.66")),
]


def gap_shares(res: dict) -> list[dict]:
    """Each paper claim with two estimates of what the originals would give on the 8K pools.

    (a) our exact-kernel 224-px number (``-full``) times the cross-validated ratio originals /
    224; its calibration: the same rule for the 448-px enlargement (``-full`` x ratio 224@448 /
    224) against the measured ``-448-full`` number. (b) the measured ``-448-full`` number times
    the ratio originals / 224@448. ``share``: the part of the gap (paper - ours) an estimate
    closes, with the ratio's 95% interval."""
    rows = []
    for c in res.get("full_scale", {}).get("claims", []):
        protocol, rel = c["controlled"]
        per = res["effects"][protocol][rel][c["direction"]].get(c["system"], {})
        vs448 = res.get("against_enlarged", {}).get(protocol, {}).get(rel, {}).get(
            c["direction"], {}).get(c["system"])
        gap = c["paper"] - c["ours"]
        row = dict(c)
        for name, base, eff in (("a", c.get("ours_full"), per.get("originals")),
                                ("calibration", c.get("ours_full"), per.get("224@448")),
                                ("b", c.get("ours_448_full"), vs448 and vs448["effect"])):
            if base is None or eff is None:
                continue
            r = eff[c["metric"]]
            est = [base * x for x in (r["ratio"], *r["ratio_ci"])]
            row[name] = {"ratio": r["ratio"], "estimate": est,
                         "share": [(x - c["ours"]) / gap for x in est]}
        rows.append(row)
    return rows



def cv_pairs(res: dict) -> list[tuple[str, str]]:
    """(system, direction) pairs of a ``hodosh_originals.json`` result."""
    return [(s, d) for s in res["systems"] for d in ("i2t", "t2i")]


def cv_span(res: dict, copy: str, metric: str, scale: float = 100.0) -> tuple[float, float]:
    """Smallest and largest cross-validated difference ``copy`` - 224 over the pairs."""
    eff = res["effects"]["cv"]["gold"]
    v = [scale * eff[d][s][copy][metric]["diff"] for s, d in cv_pairs(res)]
    return min(v), max(v)


def cv_n_sig(res: dict, copy: str, metric: str, rel: str = "gold") -> int:
    """In how many pairs ``copy`` differs from 224 at p <= 0.05 (cross-validation)."""
    test = "rank" if metric == "medR" else metric
    sig = res["significance"]["cv"][rel]
    return sum(sig[d][s][copy][test] <= 0.05 for s, d in cv_pairs(res))


def kappa_sentence(res: dict) -> str:
    """Which kappa the cross-validated dev selection chose most often, per copy."""
    sel = res.get("selection", {}).get("cv", {})
    share: dict[str, dict[str, float]] = {}
    for per in sel.values():
        for copy, t in per.items():
            for d in ("i2t", "t2i"):
                for k, v in t[d]["kappa_share"].items():
                    share.setdefault(copy, {}).setdefault(k, 0.0)
                    share[copy][k] += v
    if not share:
        return ""
    top = {c: max(v, key=v.get) for c, v in share.items()}
    largest = max((k for v in share.values() for k in v), key=float)
    if len(set(top.values())) == 1:
        k = next(iter(top.values()))
        what = (f"kappa = {float(k):g}" + (", the largest of the paper's grid," if k == largest
                                           else "") + " is the most frequent choice for every "
                "copy")
    else:
        what = "the most frequent kappa: " + ", ".join(f"{c} {float(k):g}"
                                                       for c, k in top.items())
    return (f"The dev selection's choices of (kappa, n) per copy are in the table below ({what}; "
            "larger kappas were worse on the 8K dev pool, see 'What was tried').")


def originals_conclusion(res: dict) -> list[str]:
    """The plain statement: what resolution does, what the controls say, what remains."""
    ref, eff = res["reference"], res["effects"]["cv"]["gold"]
    pairs = cv_pairs(res)

    def span(copy: str, metric: str, scale: float = 100.0) -> tuple[float, float]:
        return cv_span(res, copy, metric, scale)

    def n_sig(copy: str, metric: str) -> int:
        return cv_n_sig(res, copy, metric)

    def ratios(copy: str, metric: str) -> tuple[float, float]:
        v = [eff[d][s][copy][metric]["ratio"] for s, d in pairs]
        return min(v), max(v)

    n = len(pairs)
    r10, r1, med = span("originals", "R@10"), span("originals", "R@1"), span("originals", "medR", 1)
    q10 = ratios("originals", "R@10")
    real = r10[0] > 0 and n_sig("originals", "R@10") * 2 >= n
    official = res["significance"].get("official", {}).get("gold", {})
    n_official = sum(official[d][s]["originals"]["R@10"] <= 0.05 for s, d in pairs
                     if "originals" in official.get(d, {}).get(s, {}))
    L = ["\n#### Conclusion\n",
         ("* **Resolution matters, and the effect is real but moderate.** " if real else
          "* **Resolution: what the originals change.** ")
         + "On the same photos, with everything else equal, the originals "
         + ("beat" if r10[0] > 0 else "differ from")
         + " our 224-px copies in the "
         f"cross-validation by {r10[0]:+.1f} to {r10[1]:+.1f} points of R@10 (ratio "
         f"{q10[0]:.2f}-{q10[1]:.2f}; p <= 0.05 in {n_sig('originals', 'R@10')} of {n} "
         f"system x task pairs) and {med[0]:+.0f} to {med[1]:+.0f} places of median rank "
         f"(p <= 0.05 in {n_sig('originals', 'medR')} of {n}); R@1 moves by {r1[0]:+.1f} to "
         f"{r1[1]:+.1f} points (p <= 0.05 in {n_sig('originals', 'R@1')} of {n}). On the "
         "official split of the set (125 queries per task) "
         f"{n_official} of the {n} R@10 differences reach p <= 0.05."]
    agree = res["features"]["agreement"].get(ref, {}).get("originals")
    if agree:
        hist = res["features"]["shared_codebook"]
        feats = sorted((f for f in agree if f != "combined"), key=lambda f: agree[f]["pearson"])
        L.append("* **What resolution changes in the features**: "
                 + ", ".join(f"{f} (kernel correlation {agree[f]['pearson']:.2f}, "
                             f"{100 * agree[f]['top10_overlap']:.0f}% of the 10 nearest "
                             f"neighbours kept, same-photo histogram intersection "
                             f"{hist[f]['same_image']:.2f})" for f in feats)
                 + " between the originals and our copies: the fine-grained descriptors move "
                 "most, colour hardly at all.")
    if "originals@224" in res["conditions"]:
        a = span("originals@224", "R@10")
        same = n_sig("originals@224", "R@10") == 0
        L.append(("* **The re-encode itself costs nothing measurable.** The originals shrunk to "
                  "224x224 here behave like our copies" if same else
                  "* **The re-encode.** The originals shrunk to 224x224 here against our copies")
                 + f" (R@10 {a[0]:+.1f} to {a[1]:+.1f} points; p <= 0.05 "
                 f"in {n_sig('originals@224', 'R@10')} of {n} pairs, its kernel correlates "
                 f"{res['features']['agreement'][ref]['originals@224']['combined']['pearson']:.3f}"
                 " with ours)" + (": what our copies lose is the detail of the larger images, "
                                  "not JPEG quality or the aspect ratio." if same else "."))
    if "224@448" in res["conditions"]:
        a, st = span("224@448", "R@10"), res["features"]["kernel_stats"]
        agree = res["features"]["agreement"]
        L.append(f"* **Restoring the scale is not restoring the detail.** Our copies enlarged to "
                 f"448x448 get the originals' kernel statistics (combined kernel: off-diagonal "
                 f"mean {st['224@448']['combined']['mean_offdiag']:.3f} vs "
                 f"{st['originals']['combined']['mean_offdiag']:.3f} for the originals and "
                 f"{st[ref]['combined']['mean_offdiag']:.3f} for ours; effective dimension "
                 f"{st['224@448']['combined']['effective_dim']:.0f} vs "
                 f"{st['originals']['combined']['effective_dim']:.0f} and "
                 f"{st[ref]['combined']['effective_dim']:.0f}) and a kernel closer to theirs "
                 f"(Pearson {agree['originals']['224@448']['combined']['pearson']:.3f} against "
                 f"{agree['originals'][ref]['combined']['pearson']:.3f}), but only "
                 f"{a[0]:+.1f} to {a[1]:+.1f} points of R@10 (p <= 0.05 in "
                 f"{n_sig('224@448', 'R@10')} of {n}). So the originals' gain is not a kernel "
                 "scale or normalisation that a setting could restore. " + kappa_sentence(res)
                 + " There is no cheap fix for the 8K reproduction: it needs the original "
                 "photos.")
    vs = res.get("against_enlarged", {}).get("cv", {}).get("gold", {})
    if vs:
        d10 = [100 * vs[d][s]["effect"]["R@10"]["diff"] for s, d in pairs]
        n10 = sum(vs[d][s]["p"]["R@10"] <= 0.05 for s, d in pairs)
        nmed = sum(vs[d][s]["p"]["rank"] <= 0.05 for s, d in pairs)
        L.append(f"* **The originals also beat the enlargement**: {min(d10):+.1f} to "
                 f"{max(d10):+.1f} points of R@10 over `224@448` (p <= 0.05 in {n10} of {n} "
                 f"pairs; median rank in {nmed} of {n}).")
    rows = [r for r in gap_shares(res) if "a" in r and "b" in r]
    if rows:
        def shares(pred) -> list[float]:
            return [100 * r[k]["share"][0] for r in rows if pred(r) for k in ("a", "b")]

        def span(v: list[float]) -> str:
            return f"{min(v):.0f}-{max(v):.0f}%"

        def join(parts: list[str]) -> str:
            return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]

        names = {"R@10": "S@10", "R-P": "R-precision", "R@1": "annotation R@1"}
        main = [(names[m], shares(lambda r, m=m: r["system"] == "tri5sem" and r["metric"] == m))
                for m in ("R@10", "R-P", "R@1")]
        main = [(n, v) for n, v in main if v]
        other = shares(lambda r: r["system"] != "tri5sem")
        short = [r for r in rows if "calibration" in r and r["calibration"]["estimate"][0]
                 < r["ours_448_full"]]
        L.append("* **How much of the gap to the paper resolution explains** (estimates; table "
                 "below). For Tri5Sem, the paper's best system, the originals would close "
                 + join([f"{span(v)} of the {n} gaps" for n, v in main])
                 + (f"; for the other claims (R@1 of BoW5 and TagRank, R-precision of Tri5) "
                    f"{span(other)}" if other else "")
                 + ". Each range spans the two estimates: (a) scales our 224-px 8K numbers by "
                 "the originals' ratio and understates the known 448-px effect in "
                 f"{len(short)} of {len([r for r in rows if 'calibration' in r])} claims; (b) "
                 "scales our measured 448-px 8K numbers by the originals' ratio over the "
                 "enlargement. Their 95% intervals are wide (pools of 125).")
        rest = [(n, [100 - x for x in v]) for n, v in main]
        exact_share = max(100 * (r["ours_full"] - r["ours"]) / (r["paper"] - r["ours"])
                          for r in rows if r.get("ours_full") is not None)
        L.append("* **What remains** for Tri5Sem: "
                 + join([f"{span(v)} of the {n} gaps" for n, v in rest])
                 + f". The KCCA is not it (exact kernels close at most {exact_share:.0f}% of "
                 "a gap, `-full` rows), nor the re-encode, the kernel scale or the dev selection "
                 "(above). The candidates we cannot test without the paper's materials are the "
                 "lost texture filter bank (ours is an oriented-edge bank), codebooks learned on "
                 "PASCAL rather than Flickr8K, the BNC statistics behind Tri5Sem (GloVe here) "
                 "and details of the caption preprocessing.")
    return L


def full_scale_reference(stored: dict) -> dict:
    """Each paper claim next to our full 8K number (from a ``hodosh_reproduction.json`` record)
    and where the controlled runs measure the same metric (cross-validation, pooled)."""
    metrics = stored.get("results", {}).get("metrics", {})
    out = []
    for text, paper, key in PAPER_CLAIMS:
        if key[0] == "expert":
            continue  # no expert judgments inside the small pools
        protocol, d, system, metric = key
        ours = metrics.get(protocol, {}).get(d, {}).get(system, {}).get(metric)
        if ours is None:
            continue
        row = {"claim": text, "paper": paper, "ours": 100 * ours, "system": system,
               "direction": d, "metric": metric,
               "controlled": ["cv", "crowd" if protocol.endswith("crowd") else "gold"]}
        for tag in ("full", "448-full"):  # exact kernels at 224 px and at 448 px
            v = metrics.get(protocol, {}).get(d, {}).get(f"{system}-{tag}", {}).get(metric)
            row[f"ours_{tag.replace('-', '_')}"] = None if v is None else 100 * v
        out.append(row)
    return {"claims": out, "source": {k: stored.get(k) for k in ("command", "commit", "date")}}


def with_full_scale(payload: dict, record: dict | None) -> dict:
    """The originals payload compared with the 8K numbers of ``record`` (the report's own),
    instead of the ones recorded when the originals ran."""
    if not record or not record.get("results", {}).get("metrics"):
        return payload
    results = dict(payload["results"], full_scale=full_scale_reference(record))
    return dict(payload, results=results)




MAIN = ("nn", "bow1", "bow5", "tagrank", "tri5", "tri5sem")  # 224 px, 1,500 landmarks
KCCA = MAIN[1:]
TASKS = (("i2t", "annotation"), ("t2i", "search"))
HODOSH, CROWD = "flickr8k-hodosh", "flickr8k-hodosh-crowd"


def _value(res: dict, protocol: str, d: str, s: str, key: str) -> float | None:
    m = res["metrics"][protocol][d].get(s)
    if m is None:
        return None
    return m[key] if key == "medR" else 100 * m[key]


def _shown(key: str, v: float) -> float:
    """The value as the tables print it."""
    return round(v) if key == "medR" else round(v, 1)


def _txt(key: str, v: float) -> str:
    return f"{v:.0f}" if key == "medR" else f"{v:.1f}"


def _p(res: dict, protocol: str, d: str, s: str, key: str) -> float | None:
    return res.get("significance", {}).get(protocol, {}).get(d, {}).get(s, {}).get(
        "rank" if key == "medR" else key)


def _join(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


def _better(key: str, a: float, b: float) -> bool:
    return _shown(key, a) < _shown(key, b) if key == "medR" else _shown(key, a) > _shown(key, b)


def _leaders(res: dict, protocol: str, d: str, key: str, systems) -> tuple[list[str], float]:
    vals = {s: _shown(key, _value(res, protocol, d, s, key)) for s in systems
            if s in res["metrics"][protocol][d]}
    best = (min if key == "medR" else max)(vals.values())
    return [s for s, v in vals.items() if v == best], best


NAMES = {"R@1": "R@1", "R@10": "R@10", "medR": "median rank", "R-P": "R-precision"}
WHERE = {"R@1": HODOSH, "R@10": HODOSH, "medR": HODOSH, "R-P": CROWD}


def _claim(res: dict, text: str) -> tuple[float, float]:
    """(paper, ours) of one of :data:`PAPER_CLAIMS`."""
    for t, paper, key in PAPER_CLAIMS:
        if t == text:
            return paper, _value(res, key[0], key[1], key[2], key[3])
    raise KeyError(text)


TRI5SEM_CLAIMS = ("Annotation R@1, Tri5Sem", "Annotation S@10, Tri5Sem", "Search S@10, Tri5Sem",
                  "Annotation R-precision, Tri5Sem", "Search R-precision, Tri5Sem")


def _lead_significance(res: dict, d: str, key: str, systems) -> str:
    """How Tri5Sem's lead on ``key`` stands against the other systems (stars are against it)."""
    protocol = WHERE[key]
    others = [s for s in systems if s != "tri5sem"]
    ps = {s: _p(res, protocol, d, s, key) for s in others}
    weak = [s for s, p in ps.items() if p is None or p > 0.05]
    if not weak:
        strength = "p <= 0.01" if all(p <= 0.01 for p in ps.values()) else "p <= 0.05"
        return f"{NAMES[key]}, against every other one ({strength})"
    if len(weak) == len(others):
        return f"{NAMES[key]}, against none of them (p > 0.05)"
    return f"{NAMES[key]}, against all but " + _join([label(s) for s in weak])


def _leaders_sentence(res: dict, d: str, keys, systems) -> tuple[str, list[str]]:
    """'X has the best R@10 (v) and median rank (v), Y the best R@1 (v)' and the keys Tri5Sem
    leads on."""
    by_system: dict[str, list[str]] = {}
    led = []
    for key in keys:
        who, best = _leaders(res, WHERE[key], d, key, systems)
        if "tri5sem" in who:
            led.append(key)
        for s in who:
            by_system.setdefault(s, []).append(f"{NAMES[key]} ({_txt(key, best)})")
    parts = [f"{label(s)} {'has ' if i == 0 else ''}the best {_join(v)}"
             for i, (s, v) in enumerate(by_system.items())]
    return "; ".join(parts), led


def _has(res: dict, *systems: str) -> bool:
    return all(s in res["metrics"][p][d] for s in systems for p in (HODOSH, CROWD)
               for d, _ in TASKS)


def paper_bullet(res: dict) -> str | None:
    if not _has(res, "tri5sem"):
        return None
    (pa, a), (pb, b), (pc, c), (pd, dd), (pe, e) = (_claim(res, t) for t in TRI5SEM_CLAIMS)
    below = sum(o < p for p, o in ((pa, a), (pb, b), (pc, c), (pd, dd), (pe, e)))
    head = ("**The paper's numbers are not reached**" if below == 5 else
            f"**The paper's numbers are reached on {5 - below} of its 5 Tri5Sem claims**")
    L = [f"* {head} with the paper's pixel features on our 224x224 re-encoded images: "
         f"annotation R@1 of Tri5Sem is {a:.1f} against {pa}, S@10 {b:.1f} / {c:.1f} against "
         f"{pb} / {pc}, R-precision {dd:.1f} / {e:.1f} against {pd} / {pe} (every gap is in "
         "\"Paper numbers against ours\", and what we tried is listed under it)."]
    systems = [s for s in MAIN if s in res["metrics"][HODOSH]["i2t"]]
    kcca = [s for s in KCCA if s in systems]
    if "nn" in systems and kcca:
        nums = [(d, k) for d, _ in TASKS for k in ("R@1", "R@5", "R@10", "medR")]
        nn = {(d, k): _value(res, HODOSH, d, "nn", k) for d, k in nums}
        below_all = sum(all(_better(k, _value(res, HODOSH, d, s, k), nn[d, k]) for s in kcca)
                        for d, k in nums)
        L.append("NN is below every KCCA model on every R@K and median rank."
                 if below_all == len(nums) else
                 f"NN is below every KCCA model on {below_all} of its {len(nums)} R@K and "
                 "median-rank numbers.")
    if {"bow1", "bow5"} <= set(systems):
        nums = [(d, k) for d, _ in TASKS for k in ("R@1", "R@5", "R@10", "medR")]
        wins = sum(_better(k, _value(res, HODOSH, d, "bow5", k), _value(res, HODOSH, d, "bow1", k))
                   for d, k in nums)
        ties = sum(_shown(k, _value(res, HODOSH, d, "bow5", k))
                   == _shown(k, _value(res, HODOSH, d, "bow1", k)) for d, k in nums)
        L.append(f"BoW5 beats BoW1 on {wins} of these {len(nums)}"
                 + (f" ({ties} tied)" if ties else "") + ".")
    if "tri5sem" in systems:
        text, led = _leaders_sentence(res, "i2t", ("R@1", "R@10", "medR", "R-P"), systems)
        L.append(f"In annotation, among the pixel-feature systems, {text}.")
        if led:
            L.append("Tri5Sem's leads are significant (p <= 0.05, stars in tables 1 and 2) on "
                     + "; on ".join(_lead_significance(res, "i2t", k, systems) for k in led)
                     + ".")
            if "R-P" in led and "but" in _lead_significance(res, "i2t", "R-P", systems):
                L.append("The paper found Tri5Sem significantly better than every model on "
                         "R-precision.")
        text, _ = _leaders_sentence(res, "t2i", ("R@10", "medR", "R-P"), systems)
        differ = [(s, k) for k in ("R@10", "medR", "R-P")
                  for s in _leaders(res, WHERE[k], "t2i", k, systems)[0] if s != "tri5sem"
                  and (_p(res, WHERE[k], "t2i", s, k) or 1.0) <= 0.05]
        L.append(f"In search, {text}; "
                 + ("none of these leads over Tri5Sem is significant (p > 0.05)."
                    if not differ else
                    "significant against Tri5Sem (p <= 0.05): "
                    + _join([f"{label(s)} on {NAMES[k]}" for s, k in differ]) + "."))
    return " ".join(L)


def _table_numbers(res: dict, s: str) -> list[tuple[str, float | None]]:
    keys = [(HODOSH, d, k) for d, _ in TASKS for k in ("R@1", "R@5", "R@10")]
    keys += [(CROWD, d, k) for d, _ in TASKS for k in ("R@1", "R@5", "R@10", "R-P", "mAP@R")]
    return [(f"{p}/{d}/{k}", _value(res, p, d, s, k)) for p, d, k in keys]


def exact_bullet(res: dict) -> str | None:
    pairs = [(s, f"{s}-full") for s in KCCA if _has(res, s, f"{s}-full")]
    if not pairs or not _has(res, "tri5sem", "tri5sem-full"):
        return None
    diffs = [abs(_shown("R@1", b) - _shown("R@1", a)) for s, f in pairs
             for (_, a), (_, b) in zip(_table_numbers(res, s), _table_numbers(res, f))]
    ranks = [abs(_value(res, HODOSH, d, f, "medR") - _value(res, HODOSH, d, s, "medR"))
             for s, f in pairs for d, _ in TASKS]
    shares = []
    for text in TRI5SEM_CLAIMS:
        paper, ours = _claim(res, text)
        key = next(k for t, _, k in PAPER_CLAIMS if t == text)
        full = _value(res, key[0], key[1], "tri5sem-full", key[3])
        shares.append((full - ours) / (paper - ours))
    head = ("**Our approximations are not the cause.**" if max(shares) < 0.5 else
            "**Our approximations explain part of the gap.**")
    f = [_value(res, HODOSH, "i2t", "tri5sem-full", "R@1")] + [
        _value(res, CROWD, d, "tri5sem-full", k) for k in ("R@10", "R-P") for d, _ in TASKS]
    return (f"* {head} Retraining on the exact 6,000 x 6,000 image and text kernels at rank "
            "3,000 (the `-full` rows, as the paper's exact KCCA) moves R@K, S@K, R-precision "
            f"and mAP@R by at most {max(diffs):.1f} points and median rank by at most "
            f"{max(ranks):.0f} places, and closes at most {100 * max(shares):.0f}% of a gap "
            f"between Tri5Sem and the paper (Tri5Sem annotation R@1 {f[0]:.1f}, S@10 "
            f"{f[1]:.1f} / {f[2]:.1f}, R-P {f[3]:.1f} / {f[4]:.1f}).")


def originals_bullet(payload: dict) -> str | None:
    o = payload["results"]
    if "originals" not in o["conditions"]:
        return None
    n = len(cv_pairs(o))
    r10, r1 = cv_span(o, "originals", "R@10"), cv_span(o, "originals", "R@1")
    med = cv_span(o, "originals", "medR", 1.0)
    L = [f"* **Image resolution, measured.** The section \"Originals against our 224-px copies\" "
         f"runs the same pipeline on {o['images']['n']:,} original-resolution Flickr8K photos "
         "and on our copies of the same photos. In cross-validation the originals change R@10 "
         f"by {r10[0]:+.1f} to {r10[1]:+.1f} points (p <= 0.05 in "
         f"{cv_n_sig(o, 'originals', 'R@10')} of {n} system x task pairs), median rank by "
         f"{med[0]:+.0f} to {med[1]:+.0f} places ({cv_n_sig(o, 'originals', 'medR')} of {n}) and "
         f"R@1 by {r1[0]:+.1f} to {r1[1]:+.1f} points ({cv_n_sig(o, 'originals', 'R@1')} of {n})."]
    if "originals@224" in o["conditions"]:
        a = cv_span(o, "originals@224", "R@10")
        L.append(f"Shrinking them to 224x224 here changes R@10 by {a[0]:+.1f} to {a[1]:+.1f} "
                 f"points (p <= 0.05 in {cv_n_sig(o, 'originals@224', 'R@10')} of {n}).")
    if "224@448" in o["conditions"]:
        a = cv_span(o, "224@448", "R@10")
        L.append(f"Enlarging our copies to 448x448 changes it by {a[0]:+.1f} to {a[1]:+.1f} "
                 f"points ({cv_n_sig(o, '224@448', 'R@10')} of {n}).")
    rows = [r for r in gap_shares(o) if "a" in r and "b" in r and r["system"] == "tri5sem"]
    parts = []
    for metric, name in (("R@10", "S@10 gaps"), ("R-P", "R-precision gaps"),
                         ("R@1", "R@1 gap")):
        v = [100 * r[k]["share"][0] for r in rows if r["metric"] == metric for k in ("a", "b")]
        if v:
            owner = "its" if parts else "Tri5Sem's"
            parts.append(f"{value_range(v, '{:.0f}')}% of {owner} {name}")
    if parts:
        L.append("Carried over to the 8K numbers (two estimates, wide intervals; table "
                 f"below), the originals would close roughly {_join(parts)}.")
    return " ".join(L)


def low_resolution_bullet(res: dict, payload: dict | None) -> str | None:
    if not _has(res, "bow5", "bow5-112"):
        return None
    r5 = [(_value(res, HODOSH, d, "bow5", "R@5"), _value(res, HODOSH, d, "bow5-112", "R@5"))
          for d, _ in TASKS]
    med = [abs(_value(res, HODOSH, d, "bow5-112", "medR") - _value(res, HODOSH, d, "bow5", "medR"))
           for d, _ in TASKS]
    loss = [100 * (a - b) / a for a, b in r5]
    L = [f"* **Halving the resolution once more** (112x112, same pixel-level feature parameters; "
         f"row `BoW5 on 112x112 images`) costs BoW5 {value_range(loss, '{:.0f}')}% of its R@5 "
         f"({r5[0][0]:.1f} -> {r5[0][1]:.1f} annotation, {r5[1][0]:.1f} -> {r5[1][1]:.1f} "
         f"search) and {value_range(med, '{:.0f}')} places of median rank."]
    if payload:
        side = math.sqrt(payload["results"]["images"]["median_pixels_vs_224"])
        L.append(f"The originals are about {side:.1f}x larger per side than our copies "
                 "(square root of the median pixel ratio).")
    return " ".join(L)


def enlarged_bullet(res: dict, payload: dict | None) -> str | None:
    h = res["metrics"][HODOSH]["i2t"]
    if not _has(res, "tri5sem", "tri5sem-448"):
        return None

    def v(p: str, d: str, s: str, k: str) -> float:
        return _value(res, p, d, s, k)

    r10 = [v(HODOSH, d, "tri5sem-448", "R@10") for d, _ in TASKS]
    r10_0 = [v(HODOSH, d, "tri5sem", "R@10") for d, _ in TASKS]
    med = [v(HODOSH, d, "tri5sem-448", "medR") for d, _ in TASKS]
    med_0 = [v(HODOSH, d, "tri5sem", "medR") for d, _ in TASKS]
    sig = sum((_p(res, HODOSH, d, "tri5sem-448", k) or 1.0) <= 0.05
              for d, _ in TASKS for k in ("R@10", "medR"))
    crowd = [v(CROWD, d, "tri5sem-448", k) for k in ("R@10", "R-P") for d, _ in TASKS]
    L = ["* **Restoring the descriptors' scale.** Enlarging our images to 448x448 before "
         "feature extraction (cubic interpolation; it adds no detail, but 4-pixel colour blocks "
         "and 16-pixel SIFT patches then cover as much of the scene, and as densely, as on the "
         f"~500x375 originals) gives Tri5Sem R@10 {r10[0]:.1f} / {r10[1]:.1f} and median rank "
         f"{med[0]:.0f} / {med[1]:.0f} (from {r10_0[0]:.1f} / {r10_0[1]:.1f} and "
         f"{med_0[0]:.0f} / {med_0[1]:.0f}; {sig} of these 4 differences significant at "
         f"p <= 0.05), crowd S@10 {crowd[0]:.1f} / {crowd[1]:.1f} and R-precision "
         f"{crowd[2]:.1f} / {crowd[3]:.1f}"]
    if _has(res, "tri5sem-448-full"):
        full = [v(CROWD, d, "tri5sem-448-full", k) for k in ("R@10", "R-P") for d, _ in TASKS]
        L[0] += (f"; with exact kernels as well, S@10 {full[0]:.1f} / {full[1]:.1f} and "
                 f"R-precision {full[2]:.1f} / {full[3]:.1f}")
        shares = []
        for text in TRI5SEM_CLAIMS[1:]:
            paper, ours = _claim(res, text)
            key = next(k for t, _, k in PAPER_CLAIMS if t == text)
            shares.append(100 * (v(key[0], key[1], "tri5sem-448-full", key[3]) - ours)
                          / (paper - ours))
        L[0] += (f", which closes {value_range(shares, '{:.0f}')}% of Tri5Sem's S@10 and "
                 "R-precision gaps to the paper")
    variants = [s for s in ("tri5sem", "tri5sem-full", "tri5sem-448", "tri5sem-448-full")
                if s in h]
    r1 = [v(HODOSH, d, s, "R@1") for s in variants for d, _ in TASKS]
    L[0] += f". R@1 of these Tri5Sem variants stays at {value_range(r1)}."
    vs = (payload or {}).get("results", {}).get("against_enlarged", {}).get("cv", {}).get(
        "gold", {})
    if vs:
        pairs = [(s, d) for s in vs.get("i2t", {}) for d, _ in TASKS]
        d10 = [100 * vs[d][s]["effect"]["R@10"]["diff"] for s, d in pairs]
        L.append(f"On the 1,000 originals the originals beat the same enlargement by "
                 f"{min(d10):+.1f} to {max(d10):+.1f} points of R@10.")
    return " ".join(L)


def effnet_bullet(res: dict) -> str | None:
    eff = [s for s in ("tri5sem-effnet", "bow5-effnet") if s in res["metrics"][HODOSH]["i2t"]]
    if not eff:
        return None

    def get(p: str, k: str, systems) -> list[float]:
        return [_value(res, p, d, s, k) for s in systems for d, _ in TASKS]

    r1, r10 = get(HODOSH, "R@1", eff), get(HODOSH, "R@10", eff)
    med, s10 = get(HODOSH, "medR", eff), get(CROWD, "R@10", eff)
    pixel = [s for s in res["metrics"][HODOSH]["i2t"] if s not in eff and s != "nn"
             and "@" not in s]
    paper = {m: max(v for _, v, k in PAPER_CLAIMS if k[0] != "expert" and k[3] == m
                    and k[0] == p) for m, p in (("R@1", HODOSH), ("R@10", CROWD))}
    above = (min(r1) > max(get(HODOSH, "R@1", pixel) + [paper["R@1"]])
             and min(s10) > max(get(CROWD, "R@10", pixel) + [paper["R@10"]]))
    return ("* **Modern image features change the picture**: the same KCCA + Borda framework "
            f"over EfficientNet-Lite0 features gives R@1 {value_range(r1)}, R@10 {value_range(r10)}, "
            f"median rank {value_range(med, '{:.0f}')} and crowd S@10 {value_range(s10)} (both tasks, "
            f"{_join([label(s) for s in eff])})"
            + (", above every pixel-feature system here and the paper's stated numbers."
               if above else "."))


def cost_bullet(costs: dict, res: dict) -> str | None:
    train, exact = costs.get("kcca_train"), costs.get("kcca_exact")
    L = []
    runs = [r for r in (train or {}).get("runs", []) if r.get("rank") == 1500]
    if runs:
        r = runs[0]
        L.append(f"KCCA on all {r['n_train_pairs']:,} training captions (6,000 images x 5, every "
                 f"pair an item) trains in {r['train_seconds'] / 60:.0f} minutes at rank 1,500 "
                 f"with a {r['peak_rss_mb_after'] / 1000:.1f} GB peak "
                 f"(`benchmarks/results/kcca_train.json`, commit `{train['git_commit']}`); the "
                 "exact solver would need two 30,000 x 30,000 matrices "
                 f"({train['setup']['dense_30000x30000_float64_gb']} GB each in float64).")
    if exact:
        e = exact["results"]
        got = e["flickr8k_hodosh"]
        want = {d: res["metrics"][HODOSH][d].get("tri5sem-full") for d, _ in TASKS}
        have_row = all(want[d] is not None for d, _ in TASKS)
        same = have_row and all(round(got[d][k], 4) == round(want[d][k], 4)
                                for d, _ in TASKS for k in ("R@1", "R@5", "R@10", "medR"))
        L.append("With the kernels cached, `python -m benchmarks.kcca_exact` trains the "
                 "exact-kernel Tri5Sem through `xmodal train kcca --setting tri5sem-full` (6,000 "
                 "landmarks, rank 3,000) "
                 f"in {e['train_wall_s']:.0f} s with a {e['train_peak_rss_mb'] / 1000:.1f} GB "
                 f"peak (`benchmarks/results/kcca_exact.json`, commit `{exact['commit']}`)"
                 + ("." if not have_row else
                    " and reproduces the `-full` row exactly." if same else " and "
                    f"gives annotation / search R@1 {100 * got['i2t']['R@1']:.1f} / "
                    f"{100 * got['t2i']['R@1']:.1f}, which differs from the `-full` row."))
    return ("* " + " ".join(L)) if L else None


def summary(res: dict, originals: dict | None = None, costs: dict | None = None) -> str:
    """The report's Summary section (markdown); ``originals`` as the report compares it
    (:func:`~xmodal.reproduce.hodosh_report.with_full_scale`)."""
    bullets = ["* Every system runs end to end on all three protocols (tables 1-3), trained from "
               "pixels and caption text; `xmodal train kcca ... --out DIR` and `xmodal eval "
               "--protocol flickr8k-hodosh --model DIR` reproduce one system.",
               paper_bullet(res), exact_bullet(res),
               originals_bullet(originals) if originals else None,
               low_resolution_bullet(res, originals), enlarged_bullet(res, originals),
               effnet_bullet(res), cost_bullet(costs or {}, res)]
    return "\n## Summary\n\n" + "\n".join(b for b in bullets if b) + "\n"
