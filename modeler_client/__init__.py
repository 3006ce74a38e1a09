"""The modeler's side of pobo: a typed HTTP client for a curator service, the remote GP-UCB loop
(PO-GP-UCB's Algorithm 2) over released inputs, resumable run files, plots and the ``pobo-modeler`` CLI."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pobo")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
