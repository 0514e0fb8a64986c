"""The prose sections of ``reports/relevance_models.md`` computed from the results: the summary,
the CMRM checks and the nested cross-validation of the selection rules.

Every function reads the result dicts only (``relevance_models.json``, ``corel_nested_cv.json``).
"""

from __future__ import annotations

import numpy as np

from xmodal.reproduce.corel5k import CRM_WIDE_NAME, WIDE_LABEL


def summary(results: dict, nested: dict) -> list[str]:
    """Headline sentences computed from the results."""
    out = ["## Summary", ""]
    corel = results.get("corel", {}).get("models", {})
    cm = corel.get("CMRM (tuned)", {}).get("annotation")
    crm = corel.get("CRM on blob embeddings (tuned)", {})
    if cm:
        out.append(
            f"- Corel5K, CMRM (Jeon et al.'s model, smoothing tuned on held-out training images): "
            f"{cm['n_words_recall_gt0']} words with recall > 0 (paper 66), mean recall "
            f"{cm['mean_R']:.3f} (paper 0.09), mean precision {cm['mean_P']:.3f} (paper 0.10) "
            f"over {cm['n_words']} test words (those also seen in training). Words and recall "
            "reach the paper's CMRM row, precision does not; no Jelinek-Mercer setting of the "
            "plain model reached both (the formulation matches Jeon et al.; see 'Why plain CMRM "
            "precision falls short' below).")
    wide = corel.get(f"CMRM + temperature + word-prior normalisation ({WIDE_LABEL})", {})
    if wide.get("annotation"):
        a, r = wide["annotation"], wide["retrieval"]["all"]
        ok = a["n_words_recall_gt0"] >= 66 and a["mean_R"] >= 0.09 and a["mean_P"] >= 0.10
        w = next((v for k, v in nested.get("summary", {}).items() if "pre-registered" in k),
                 None)
        out.append(
            f"- **Corel5K, pre-registered calibrated CMRM** (posterior temperature and "
            "word-prior power over a wide grid, chosen by best mean F1 in 5-fold CV on the "
            "training set and committed before its single test evaluation; `xmodal eval -p "
            f"corel5k -m cmrm-wide`): {a['n_words_recall_gt0']} words with recall > 0, mean "
            f"recall {a['mean_R']:.3f}, mean precision {a['mean_P']:.3f} over {a['n_words']} "
            "words"
            + (", which reaches the paper's CMRM row (66, 0.09, 0.10)" if ok else
               ", still below the paper's CMRM row (66, 0.09, 0.10)")
            + f"; retrieval MAP {r['MAP']:.3f}."
            + (f" Nested CV on the training set (the rule re-run inside each of "
               f"{w['folds']} outer folds of 500 images) meets the row in {w['meets_paper_row']} "
               f"of {w['folds']} folds, mean P {w['mean_P_mean']:.3f} (lowest "
               f"{w['mean_P_min']:.3f}): the row is reached on average, not in every sample "
               "of 500 images." if w else "")
            + " Temperature and word-prior power are not in Jeon et al.; this is a modified "
            "CMRM (see 'Nested cross-validation of the selection rules').")
    cal = corel.get("CMRM + temperature + word-prior normalisation "
                    "(CV paper-row operating point)", {}).get("annotation")
    f1 = corel.get("CMRM + temperature + word-prior normalisation (best CV F1)",
                   {}).get("annotation")
    if cal:
        ok = (cal["n_words_recall_gt0"] >= 66 and cal["mean_R"] >= 0.09
              and cal["mean_P"] >= 0.10)
        out.append(
            f"- Corel5K, the first calibrated CMRM rows (temperature and word-prior "
            f"normalisation, chosen by 5-fold cross-validation on the training set): "
            f"{cal['n_words_recall_gt0']} words, mean recall {cal['mean_R']:.3f}, mean "
            f"precision {cal['mean_P']:.3f} at the paper-row operating point (highest CV "
            "precision among settings with >= 66 words and recall >= 0.09 in CV)"
            + (", which reaches the paper's CMRM row" if ok else
               ", still below the paper's CMRM row")
            + (f"; selecting by CV mean F1 instead gives {f1['n_words_recall_gt0']} words, R "
               f"{f1['mean_R']:.3f}, P {f1['mean_P']:.3f}" if f1 else "")
            + ". Nested cross-validation on the training set shows that the precision margin "
            "of these two earlier rules (grid with word-prior power up to 0.3) is not robust.")
    if crm.get("annotation"):
        a, r = crm["annotation"], crm["retrieval"]["all"]
        out.append(
            f"- Corel5K, CRM on blob embeddings: "
            f"{a['n_words_recall_gt0']} words, mean recall {a['mean_R']:.3f}, mean precision "
            f"{a['mean_P']:.3f}, retrieval MAP {r['MAP']:.3f} over {r['n_queries']} queries. "
            "It beats plain CMRM on precision and on retrieval at every query length, but "
            "stays below the paper's CRM row (107 words, 0.19 / 0.16), which used continuous "
            "36-d region features that this distribution of Corel5K does not contain.")
    crm_wide = corel.get(CRM_WIDE_NAME, {})
    crm_nested = nested.get("crm")
    c = next(iter(crm_nested["summary"].values())) if crm_nested else None
    if crm_wide.get("annotation"):
        a, r = crm_wide["annotation"], crm_wide["retrieval"]["all"]
        reached = (a["n_words_recall_gt0"] >= 107 and a["mean_R"] >= 0.19
                   and a["mean_P"] >= 0.16)
        out.append(
            "- **Corel5K, our best model: the CRM on blob embeddings with temperature and "
            "word-prior power** (pre-registered like the CMRM above; `xmodal eval -p corel5k "
            f"-m crm-wide`): {a['n_words_recall_gt0']} words, mean recall {a['mean_R']:.3f}, "
            f"mean precision {a['mean_P']:.3f}, F1 {a['mean_F1']:.3f}, retrieval MAP "
            f"{r['MAP']:.3f}. "
            + ("It reaches the paper's CRM row (107, 0.19, 0.16)." if reached else
               "The goal, the paper's CRM row (107 words, R 0.19, P 0.16), is not reached ("
               + ", ".join(f"{name} {have:.3g} vs {want:.3g}" for name, have, want in (
                   ("words", a["n_words_recall_gt0"], 107), ("R", a["mean_R"], 0.19),
                   ("P", a["mean_P"], 0.16)) if have < want)
               + "). The paper's CRM used continuous region features; this data has only "
               "blob ids.")
            + (f" Nested CV on the training set: it {nested_result(c)}." if c else ""))
    fl = results.get("flickr", {}).get("models", {})
    if fl:
        best = max(fl.items(), key=lambda kv: kv[1]["annotation"]["mean_F1"])
        a = best[1]["annotation"]
        out.append(
            f"- Flickr8K keywords: best model **{best[0]}** (mean P {a['mean_P']:.3f}, "
            f"R {a['mean_R']:.3f}, F1 {a['mean_F1']:.3f}, {a['n_words_recall_gt0']} of "
            f"{a['n_words']} words with recall > 0). On the same EfficientNet-Lite0 features the "
            "CRM (over 3x3 feature-map cells) is second; on hand-made grid colour/texture "
            "regions both relevance models are weak: colour and texture say little about the "
            "people, actions and objects that Flickr8K captions name.")
        crms = [(n, m["annotation"]) for n, m in fl.items() if n.startswith("CRM")]
        if "shipped" in best[0] and crms:
            keys = ("mean_P", "mean_R", "mean_F1", "n_words_recall_gt0")
            wins = all(a[k] > c[k] for _, c in crms for k in keys)
            out.append("- `xmodal tag` shipped that neural head (kept as "
                       "`src/xmodal/assets/tag-flickr8k/`, float16 weights, 1.3 MB; the default "
                       "tagger is now trained on Flickr8K + Conceptual Captions, "
                       "`reports/tagger.md`)" + (
                           ": it beats every CRM row on mean P, R, F1 and words with "
                           "recall > 0" if wins else "") +
                       ". A CRM tagger would have to ship its training regions (96,000 grid "
                       "regions x 30 dims = 5.8 MB in float16) and is slower per image.")
    secs = [m["seconds"].get("retrieval_all_queries") for m in corel.values()
            if m.get("retrieval")]
    if secs:
        n_queries = corel["CMRM (tuned)"]["retrieval"]["all"]["n_queries"]
        out.append(f"- Retrieval scores all {n_queries}"
                   f" Corel5K queries (1-4 words) against the 500 test images in "
                   f"{min(secs):.1f}-{max(secs):.1f} s on the shared 2-core CPU (vectorized; "
                   "`benchmarks/results/relevance_retrieval.json`).")
    return out


def cmrm_checks_section(corel: dict, nested: dict) -> list[str]:
    checks = corel.get("cmrm_checks")
    if not checks:
        return []
    bar = "\\|"  # a literal | inside a Markdown table cell
    out = [
        "### Why plain CMRM precision falls short", "",
        ("Checks of the formulation against Jeon et al. 2003 (P(w, b_1..b_m) = sum_J P(J) "
         "P(w|J) prod_i P(b_i|J), Jelinek-Mercer smoothing) on the test set at fixed settings:"),
        "",
        ("- The implementation is the paper's: |J| counts J's words and blobs; the test image's "
         "blobs enter once each (Corel5K as distributed has blob *presence*, so the blob "
         "multiset of the original data, with repeated blobs, cannot be used); words are "
         "ranked by P(w | image), proportional to P(w, b_1..b_m)."),
        ("- Variants of |J| (blobs only) and of the background (over the whole training set "
         "rather than per modality) move the numbers by about as much as a change of "
         "alpha/beta, not enough to reach the row."),
        "- No ties at the 5th word (the pessimistic tie rule of the metric never applies).",
        ("- Precision is the paper's per-word mean over all test words, a never-predicted word "
         "counting 0. Averaged over the predicted words only, it would be far higher (last "
         "column), so the definition is not the cause."),
        "",
        (f"| alpha | beta | {bar}J{bar} | background {bar}T{bar} | #words R>0 | mean R | mean P "
         "| ties at 5th | #words predicted | mean P over predicted words |"),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in checks:
        out.append(f"| {r['alpha']} | {r['beta']} | {r['|J|']} | {r['|T|']} | "
                   f"{r['n_words_recall_gt0']} | {r['mean_R']:.3f} | {r['mean_P']:.3f} | "
                   f"{r['ties_at_5th']} | {r['n_words_predicted']} | "
                   f"{r['mean_P_predicted_words_only']:.3f} |")
    post = corel.get("cmrm_posterior_checks") or []
    if post:
        out += ["", ("The posterior over training images is the cause. With blob presence the "
                     "plain posterior is extremely peaked, so annotation is a vote of a few "
                     "nearest training images: many words get predicted, each with low "
                     "precision. Test set, alpha = beta = 0.1 (t = posterior temperature, "
                     "g = word-prior power):"), "",
                ("| t | g | effective #training images (median exp entropy) | mass of the top "
                 "10 (median) | #words predicted | #words R>0 | mean R | mean P |"),
                "|---|---|---|---|---|---|---|---|"]
        out += [f"| {r['temperature']} | {r['prior_power']} | {r['effective_n_train']:.1f} | "
                f"{r['top10_mass']:.3f} | {r['n_words_predicted']} | "
                f"{r['n_words_recall_gt0']} | {r['mean_R']:.3f} | {r['mean_P']:.3f} |"
                for r in post]
    sel = corel.get("selected_cmrm_cv") or {}
    rows = corel.get("selection", {}).get("cmrm_cv", [])
    out += ["", (
        "What closes the gap: flattening the posterior with a temperature t < 1 "
        "(P(J | image) proportional to P(blobs | J)^t) averages over many more training images, "
        "which by itself favours frequent words; dividing the word scores by the word's "
        "training frequency to a power g (word-prior normalisation) rebalances them. Neither is "
        "in Jeon et al., so these rows are a modified CMRM. t, g, alpha and beta are chosen by "
        f"5-fold cross-validation on the 4,500 training images only ({len(rows)} settings: t in "
        "0.3..1, g in 0..0.3, alpha in 0.1..0.3, beta in 0.1..0.5). Two selection rules, both "
        f"on the training folds: best mean F1 -> {sel.get('mean_F1')}; the paper-row "
        "operating point (highest mean precision among settings with >= 66 words of recall "
        f"> 0 and mean recall >= 0.09 in cross-validation) -> {sel.get('paper_row')}. A single "
        "held-out split of 500 training images (instead of 5 folds) is noisier and picked "
        "t = 0.5, g = 0.25, which gave 81 words, mean recall 0.114 and mean precision 0.095 on "
        "the test set (an exploratory run with t in 0.5..3 and g in -0.25..0.25, not in these "
        "tables): the result depends on the selection protocol, and the margin above the "
        "paper's 0.10 is small."), ""]
    out += nested_cv_section(nested)
    top = sorted(rows, key=lambda r: -r["mean_F1"])[:8]
    if top:
        out += [("Top cross-validation settings by mean F1 (means over 5 folds of 900 images; "
                 "more words per fold than the 500-image test set):"), "",
                "| t | alpha | beta | g | #words R>0 | mean R | mean P | mean F1 |",
                "|---|---|---|---|---|---|---|---|"]
        out += [f"| {r['temperature']} | {r['alpha']} | {r['beta']} | {r['prior_power']} | "
                f"{r['n_words_recall_gt0']} | {r['mean_R']:.3f} | {r['mean_P']:.3f} | "
                f"{r['mean_F1']:.3f} |" for r in top]
        out.append("")
    return out


def nested_result(w: dict) -> str:
    """One nested-CV summary row as a phrase."""
    return (f"meets the paper's CMRM row in {w['meets_paper_row']} of {w['folds']} outer folds "
            f"(mean {w['n_words_recall_gt0_mean']:.1f} words / R {w['mean_R_mean']:.3f} / P "
            f"{w['mean_P_mean']:.3f}; lowest fold P {w['mean_P_min']:.3f})")


def nested_cv_section(nested: dict) -> list[str]:
    """The training-set-only check of the selection rules
    (:mod:`xmodal.reproduce.corel5k_nested`)."""
    if not nested:
        return []
    summ = nested["summary"]
    wide_name = next((k for k in summ if "pre-registered" in k), None)
    old = [k for k in summ if k.startswith("calibrated") and k != wide_name]
    cal = [summ[k] for k in old]
    n_folds = max(v["folds"] for v in summ.values())
    p_old = [f["results"][k]["mean_P"] for f in nested["folds"] for k in old]
    out = ["### Nested cross-validation of the selection rules (training set only)", "",
           "Because the paper-row rule was adopted after the F1 rule's test precision had been "
           f"seen, the rules were checked without the test set: `{nested['command']}` "
           f"({nested['elapsed_s'] / 60:.0f} min, commit {nested['git_commit']}; "
           "`benchmarks/results/corel_nested_cv.json`) cuts the 4,500 training images into "
           f"{n_folds} outer folds of 500 (the test set's size), applies each rule to a 5-fold CV "
           "on the other 4,000 exactly as above, and scores the chosen model on the held-out 500 "
           "(vocabulary: its words also seen in the 4,000). A bootstrap over the test images "
           "was tried instead and dropped: resampling with replacement repeats images and "
           "shrinks the vocabulary, which biases the per-word metrics (for plain CMRM the 95% "
           "interval of words with recall > 0 was 57-71 around a point value of 77).", "",
           "| Model (rule applied inside each outer fold) | folds meeting the paper's CMRM row "
           "| #words R>0 (mean, min) | mean R (mean, min) | mean P (mean, min) |",
           "|---|---|---|---|---|"]
    for n, v in summ.items():
        out.append(f"| {n} | {v['meets_paper_row']} / {v['folds']} | "
                   f"{v['n_words_recall_gt0_mean']:.1f}, {v['n_words_recall_gt0_min']:.0f} | "
                   f"{v['mean_R_mean']:.3f}, {v['mean_R_min']:.3f} | "
                   f"{v['mean_P_mean']:.3f}, {v['mean_P_min']:.3f} |")
    out += ["", "**What this says about the first two rules.** On unseen images of the training "
            "distribution their mean precision is about "
            f"{np.mean([v['mean_P_mean'] for v in cal]):.2f} ({min(p_old):.3f}-{max(p_old):.3f} "
            "across folds and rules), and they reach all three numbers of the paper's CMRM row "
            "in " + " and ".join(f"{v['meets_paper_row']}" for v in cal) + f" of {n_folds} "
            "folds. The test-set precision of the paper-row rule is at the favourable end of "
            "that spread: these rules reach the paper's words-with-recall and mean recall, but "
            "not robustly its mean precision of 0.10. "
            "Plain CMRM with Dirichlet instead of Jelinek-Mercer smoothing was also tried on "
            "5 training folds (word / blob priors m in {0.3, 1, 3, 10} x {1, 3, 10, 30, 100}): "
            "its best mean precision was 0.079, below the calibrated model's. Two other blob "
            "likelihoods, with temperature and word-prior power tuned the same way on 5 training "
            "folds, did not help either: IDF-weighted blobs (sum_b idf(b) log P(b|J); best-F1 "
            "setting P 0.075, R 0.096) and a multiple-Bernoulli likelihood that also scores "
            "absent blobs (P 0.073, R 0.099), against P 0.079, R 0.100 for the calibrated CMRM "
            "on the same folds.", ""]
    if wide_name:
        w, sel = summ[wide_name], nested.get("preregistered_full_training_selection", {})
        grid = nested.get("wide_grid", {})
        per_fold = [f["results"][wide_name]["params"] for f in nested["folds"]]
        out += [
            "#### The pre-registered wide-grid rule",
            "",
            "The first grid stopped at a word-prior power g of 0.3. Fixed-setting runs on the "
            "nine outer folds of the training set (an exploration, no test data) showed that "
            "precision and recall both keep rising up to g of about 0.8 at a low temperature, "
            "where the score P(w | image) / P(w)^g approaches the likelihood ratio "
            "P(image | w) / P(image). So a new rule was fixed **before any test evaluation of "
            "it**: the same CMRM (Jeon et al.'s Jelinek-Mercer formulation, with "
            "temperature and word-prior power), the grid "
            + ", ".join(f"{k} {tuple(v)}" for k, v in grid.items())
            + ", and the standard criterion, best mean F1 over a 5-fold CV of the training "
            "set. Nothing about the paper's row enters the rule.",
            "",
            f"- Nested CV (table above): it {nested_result(w)}, against 2 of 9 for the "
            "earlier rules. The settings it picks in the nine folds: " + "; ".join(
                f"t {p['temperature']}, g {p['prior_power']}, beta {p['beta']}"
                for p in per_fold) + ".",
            f"- Applied to all 4,500 training images (seed 0), the rule selects {sel}. The "
            "temperature is at the low end of the grid; a training-only check with t in "
            "{0.1, 0.15, 0.2} and g up to 1.2 still picks t 0.2, g 0.8.",
            "- This section, the grid, the rule and the selected setting were committed "
            "(25d306d) before the single test evaluation, whose result is the row 'CMRM + "
            f"temperature + word-prior normalisation ({WIDE_LABEL})' in the Corel5K tables.",
            "- Caveat: the grid's range was chosen after looking at the outer folds, so the "
            "nested-CV numbers for this rule are somewhat optimistic; the test set was not "
            "used for it.", ""]
    crm = nested.get("crm")
    if crm:
        (name, w), = crm["summary"].items()
        per_fold = [f["results"][name]["params"] for f in crm["folds"]]
        out += [
            "#### The pre-registered CRM rule",
            "",
            "The same two knobs were then tried on the CRM over blob embeddings (64-d "
            "embedding, as selected for its row), again on the outer folds of the training set "
            "only: with a temperature of 0.15-0.3 and a word-prior power of about 0.6 it beat "
            "the wide-grid CMRM on every metric there. Fixed before its single test "
            "evaluation: the grid " + ", ".join(f"{k} {tuple(v)}" for k, v in
                                                 crm["grid"].items())
            + " and the best mean F1 over a 5-fold CV of the training set (the blob embedding "
            f"re-learned on each fold's training part). `{crm['command']}` "
            f"({crm['elapsed_s'] / 60:.0f} min, commit {crm['git_commit']}):",
            "",
            f"- Nested CV: it {nested_result(w)}; the paper's CRM row (107, 0.19, 0.16) is not "
            "reached in any fold" + ("" if not any(
                f["results"][name]["n_words_recall_gt0"] >= 107
                and f["results"][name]["mean_R"] >= 0.19 and f["results"][name]["mean_P"] >= 0.16
                for f in crm["folds"]) else " (it is in some folds)") + ". Settings picked in "
            "the nine folds: " + "; ".join(
                f"beta {p['beta']}, mu {p['mu']}, t {p['temperature']}, g {p['prior_power']}"
                for p in per_fold) + ".",
            f"- Applied to all 4,500 training images (seed 0) the rule selects "
            f"{crm['preregistered_full_training_selection']}. Bandwidth and temperature "
            "trade off along a ridge, and both are at the low end of the grid; a training-only "
            "check with beta 0.025 and t 0.075 or 0.1 does not beat it (CV F1 0.1033 vs "
            "0.1043).",
            "- Committed (6ee263c) before the single test evaluation, whose result is the row "
            f"'{CRM_WIDE_NAME}' in the Corel5K tables. As for the CMRM, the grid's range was "
            "chosen after looking at the outer folds, so its nested-CV numbers are somewhat "
            "optimistic.", ""]
    return out
