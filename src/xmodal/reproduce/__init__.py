"""Reproductions: every number of ``reports/*.md`` comes from one function here.

``xmodal reproduce NAME`` (:mod:`xmodal.cli.reproduce_cmd`) runs them; each writes its JSON to
``benchmarks/results/`` with the command, commit and machine (:mod:`xmodal.reproduce.output`) and
renders the report's tables from that JSON. Model selection and significance tests come from
:mod:`xmodal.eval.selection` and :mod:`xmodal.eval.compare`.

- :mod:`~xmodal.reproduce.wikipedia`: Rasiwasia et al. 2010 (``reports/wikipedia.md``);
- :mod:`~xmodal.reproduce.corel5k`, :mod:`~xmodal.reproduce.corel5k_nested`,
  :mod:`~xmodal.reproduce.keywords_flickr`: CMRM / CRM (``reports/relevance_models.md``);
- :mod:`~xmodal.reproduce.hodosh`: Hodosh et al. 2013 (``reports/hodosh.md``);
- :mod:`~xmodal.reproduce.gist`: literal gist on Flickr8K (``reports/gist.md``);
- :mod:`~xmodal.reproduce.dual`: the dual encoder (``reports/dual_encoder.md``).
"""
