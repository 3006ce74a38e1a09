"""A progress bar that works in Jupyter and in a plain terminal, for runs driven from Python, and the parameter
importance of a run as a figure (:func:`importance_figure`).

In a notebook it is one HTML bar updated in place (``IPython.display`` with a display id, no widget extension
needed); elsewhere one text line per update. Pass it as the ``on_event`` of :class:`modeler_client.loop.RemoteGPUCB`
or the ``on_step`` of :func:`modeler_client.batch.run_batched`.
"""

from __future__ import annotations

import html
import sys

from modeler_client.importance import ImportanceWarning, parameter_importance
from modeler_client.plot import figure_importance, run_title
from modeler_client.remote import RemoteRelease
from modeler_client.runfile import RunRecord

__all__ = ["ImportanceWarning", "RunProgress", "importance_figure", "in_notebook", "status_line"]


def importance_figure(release: RemoteRelease, record: RunRecord):
    """The bar chart of :func:`modeler_client.plot.figure_importance` for ``record``'s answers on ``release``'s
    inputs (shown inline when it is a cell's result), with its intervals; when the numbers may mean little (a
    release whose noise exceeds the rows' spread, few answers, an unsettled ranking) each reason is raised as an
    :class:`~modeler_client.importance.ImportanceWarning` and printed in red under the bars."""
    return figure_importance(parameter_importance(release.Z, record), run_title([record]))


def in_notebook() -> bool:
    """True inside a Jupyter kernel (an IPython shell with a kernel attached)."""
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None else None
    return ip is not None and getattr(ip, "kernel", None) is not None


def status_line(record: RunRecord) -> tuple[int, int, str]:
    """(answered, total, text): answered queries of T, pending ones and the best value so far."""
    done, total = len(record.done()), record.settings.iterations
    best = record.best()
    text = f"{done}/{total} answered"
    if record.pending():
        text += f", {len(record.pending())} pending"
    if best is not None:
        text += f", best {best.value:.6g} (row {best.index})"
    return done, total, text


class RunProgress:
    """``progress(kind, record)`` or ``progress(event)`` (a :class:`~modeler_client.loop.LoopEvent`)."""

    def __init__(self, *, notebook: bool | None = None) -> None:
        self.notebook = in_notebook() if notebook is None else notebook
        self._handle = None

    def __call__(self, kind_or_event, record: RunRecord | None = None) -> None:
        record = record if record is not None else kind_or_event.record
        done, total, text = status_line(record)
        if not self.notebook:
            print(text, flush=True)
            return
        from IPython.display import HTML, display

        width = 100 * done / max(total, 1)
        bar = (f'<div style="font-family:monospace">'
               f'<div style="width:24em;border:1px solid #888;height:0.9em;display:inline-block;vertical-align:middle">'
               f'<div style="width:{width:.1f}%;background:#4a8;height:100%"></div></div> {html.escape(text)}</div>')
        if self._handle is None:
            self._handle = display(HTML(bar), display_id=True)
        else:
            self._handle.update(HTML(bar))
