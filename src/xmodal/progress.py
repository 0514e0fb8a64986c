"""Progress bars that cost nothing when off: tqdm is imported only for a bar that shows (a
one-shot search embeds its sentence without one, and ``tqdm.auto`` takes ~30 ms to import)."""

from __future__ import annotations

from typing import Any


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, desc: str, unit: str, show: bool) -> Any:
    """A ``tqdm.auto`` bar over ``total`` items when ``show``, else one that does nothing."""
    if not show:
        return _Silent()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit)
