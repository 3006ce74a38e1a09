"""The mathematics and the wire contract of pobo: numpy, scipy, pydantic; no web framework.

Both parties' packages depend on this one and never on each other.
"""

__version__ = "0.1.0"
