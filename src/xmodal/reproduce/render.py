"""The one rendering layer of the generated reports: the results JSON they read, Markdown
templates filled from named values, tables, the helpers of the prose and a frame for figures.

``render_template(name, values, claims)`` fills ``templates/<name>.md`` with ``values`` once the
``claims`` (the conclusions its words state) hold: a claim that no longer holds stops rendering
with :class:`ClaimFailed`, and a person rewrites the sentence; the code never picks the verb.
"""
from __future__ import annotations

import json
import math
import re
import string
import textwrap
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib.resources import files
from pathlib import Path

from xmodal.errors import XmodalError
from xmodal.eval.compare import stars
from xmodal.reproduce.output import read_json

TEMPLATES = "templates"


class ClaimFailed(XmodalError):
    """A report's template states a conclusion that the results being rendered contradict."""

    def __init__(self, template: str, claim: str):
        self.template, self.claim = template, claim
        super().__init__(f"claim {claim!r} of the report template {template}.md does not hold for "
                         f"these results: rewrite the sentence of templates/{template}.md that "
                         f"states it (and the claim), then render again")


def template_text(name: str) -> str:
    """The text of ``templates/<name>.md`` shipped with the package."""
    path = files("xmodal.reproduce").joinpath(TEMPLATES, f"{name}.md")
    if not path.is_file():
        raise XmodalError(f"no report template {name}.md in xmodal/reproduce/{TEMPLATES}/")
    return path.read_text(encoding="utf-8")


def reference_data(name: str) -> dict:
    """``data/<name>.json`` shipped with the package: a report's fixed reference numbers."""
    return json.loads(files("xmodal.reproduce").joinpath("data", f"{name}.json").read_text("utf-8"))


def load_results(folder: Path, names: Iterable[str], report: str, how: str,
                 also: Path | None = None) -> dict[str, dict]:
    """The results ``names`` (``folder/<name>.json``, else ``also/<name>.json``), by name; those
    missing raise one error: "``report`` needs a.json and b.json, not in ``folder``; ``how``"."""
    def read(name: str) -> dict:
        return read_json(Path(folder) / f"{name}.json") or (
            read_json(Path(also) / f"{name}.json") if also else {})

    found = {name: read(name) for name in names}
    missing = [f"{name}.json" for name, v in found.items() if not v]
    if missing:
        raise XmodalError(f"{report} needs {and_list(missing)}, not in {folder}; {how}")
    return found


def check_claims(name: str, claims: Mapping[str, bool]) -> None:
    """Raise :class:`ClaimFailed` for the first claim of template ``name`` that is false."""
    for claim, holds in claims.items():
        if not holds:
            raise ClaimFailed(name, claim)


class Fields(string.Formatter):
    """``str.format`` whose field names may be paths into the values: ``{res.test.dual.R@1}``
    (dots separate dict keys, list indices or attributes); ``!p`` prints a fraction as a
    percentage (``{x!p:.1f}``: 0.2534 -> "25.3")."""

    def get_field(self, field_name, args, kwargs):
        obj = kwargs
        for part in field_name.split("."):
            try:
                obj = (obj[part] if isinstance(obj, Mapping) else
                       obj[int(part)] if isinstance(obj, Sequence) else getattr(obj, part))
            except (KeyError, IndexError, ValueError, TypeError, AttributeError):
                raise XmodalError(f"no value for the field {field_name!r} ({part!r} is "
                                  "missing)") from None
        return obj, field_name

    def convert_field(self, value, conversion):
        return 100 * value if conversion == "p" else super().convert_field(value, conversion)


def fill(template: str, values: Mapping[str, object], name: str = "<text>") -> str:
    """``template`` with its ``{field}``s replaced (``str.format`` syntax, fields as in
    :class:`Fields`); a field without a value is an error naming it."""
    try:
        return Fields().vformat(template, (), values)
    except XmodalError as exc:
        raise XmodalError(f"report template {name}: {exc}") from None


def render_template(name: str, values: Mapping[str, object],
                    claims: Mapping[str, bool] | None = None) -> str:
    """Check the ``claims`` and fill ``templates/<name>.md`` with ``values``."""
    check_claims(name, claims or {})
    return fill(template_text(name), values, f"{name}.md")


# -- numbers --------------------------------------------------------------------------------------
def pct(v: float | None, digits: int = 1, missing: str = "–") -> str:
    """A fraction as a percentage without the sign: 0.2534 -> "25.3"; ``missing`` for None."""
    return missing if v is None else f"{100 * v:.{digits}f}"


def metric_cell(metric: str, value: float, p: float | None = None, note: str = "") -> str:
    """A metric as a table prints it: a rank (medR, meanR) whole, the others as percentages
    with one decimal; then the significance stars of ``p`` (:func:`~xmodal.eval.compare.stars`)
    and ``note``."""
    return (f"{value:.0f}" if metric in ("medR", "meanR") else pct(value)) + stars(p) + note


def span(values, fmt: str = "{:.1f}", sep: str = "-") -> str:
    """"lo-hi" of numbers as ``fmt`` prints them (one value if both print alike); "lo to hi"
    when a printed bound is negative, so that the dash cannot read as a minus sign."""
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    if lo == hi:
        return lo
    return f"{lo} to {hi}" if "-" in lo + hi else f"{lo}{sep}{hi}"


def gain_span(values) -> str:
    """Gains as whole points, rounded outwards: "+2 to 3" (one number if both round alike)."""
    lo, hi = math.floor(round(min(values), 1)), math.ceil(round(max(values), 1))
    return f"{lo:+d}" if lo == hi else f"{lo:+d} to {hi:+d}".replace(" to +", " to ")


def minutes(seconds: float) -> str:
    """A duration in whole minutes (at least one): 1310.4 -> "22 minutes", 50 -> "1 minute"."""
    m = max(1, round(seconds / 60))
    return f"{m} minute{'s' * (m != 1)}"


# -- words ----------------------------------------------------------------------------------------
def wrap(text: str, prefix: str = "") -> list[str]:
    """A paragraph or list item wrapped at 96 columns under its marker, no line starting with a
    token Markdown would read as a list, heading or quote ("- w", "= 30", ">= 9")."""
    glued = re.sub(r" (?=(?:[-+*=]|#+|\d+[.)])(?: |$)|>)", "\xa0", text)
    lines = textwrap.wrap(glued, 96, initial_indent=prefix, subsequent_indent=" " * len(prefix),
                          break_long_words=False, break_on_hyphens=False)
    return [line.replace("\xa0", " ") for line in lines]


def and_list(items) -> str:
    """ "a, b and c"."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# -- tables ---------------------------------------------------------------------------------------
def md_row(cells: Sequence[object]) -> str:
    """One Markdown table row: ``| a | b |``."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table: header, ``|---|`` rule, one line per row."""
    return "\n".join([md_row(header), "|" + "---|" * len(header), *(md_row(r) for r in rows)])


def records_table(columns: Mapping[str, str], records: Iterable) -> str:
    """A Markdown table of a row per record: ``columns`` maps each title to its cells' template,
    whose fields are paths into the record (:class:`Fields`): ``{"mean R": "{mean_R:.3f}"}``."""
    return markdown_table(list(columns), [[fill(cell, r) for cell in columns.values()]
                                          for r in records])


def rewrap(text: str) -> str:
    """``text`` with each line over 96 columns wrapped by :func:`wrap` under its list marker,
    headings and table rows left as they are: a template holds a paragraph on one line."""
    out = []
    for line in text.split("\n"):
        if len(line) <= 96 or line.startswith(("#", "|")):
            out.append(line)
            continue
        prefix = re.match(r"\s*(?:[-*] |\d+\. )?", line).group(0)
        out += wrap(line[len(prefix):], prefix)
    return "\n".join(out)


@contextmanager
def saved_figure(path: Path, *grid, dpi: int = 80, rect=(0, 0, 1, 1), **options) -> Iterator:
    """``(fig, axes)`` of ``matplotlib.pyplot.subplots(*grid, **options)`` to draw on in a
    ``with`` block; then laid out (within ``rect``) and saved to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(*grid, **options)
    yield fig, axes
    fig.tight_layout(rect=rect)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
