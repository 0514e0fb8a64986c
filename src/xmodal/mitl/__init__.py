"""Machine-in-the-loop discovery of missing positives (ECCV Caption, Chun et al. 2022, §3).

Machine annotators propose candidate pairs (:mod:`.propose`), HITs bundle them with golden pairs
(:mod:`.hits`), people judge them in the browser (``/judge``) or simulated workers answer from
recorded judgments (:mod:`.simulate`), verdicts are aggregated (:mod:`.aggregate`) and the
extended positives exported for ``xmodal eval --positives`` (:mod:`.export`). Everything lives
in one SQLite campaign database (:mod:`.store`).
"""
