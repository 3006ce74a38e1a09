"""What a ledger entry spent, as data: DP events in the style of Google's dp-accounting.

An event is a JSON dict named like dp-accounting's classes (``class_name``), with the fields those classes take
(``noise_multiplier`` = noise std or scale / sensitivity) plus the two numbers the multiplier hides: the noise
``std`` (Gaussian) or ``scale`` (Laplace) and the ``sensitivity`` it was calibrated for. :func:`to_dp_accounting`
rebuilds the dp-accounting event, so an entry can be re-accounted by their accountants (a test does, with the
PLD accountant, and gets the charged ε back).

* a ``gaussian`` release: one ``GaussianDpEvent`` per part (inputs, DP-PCA's Gram matrix, private measurements),
  composed when there are several;
* ``po-gp-ucb``: ``NonPrivateDpEvent`` (it is not differentially private; docs/design.md §4);
* a job: the event its kind states (``JobKind.event``; ``dp-mean``: a ``LaplaceDpEvent``), else
  ``UnsupportedDpEvent`` naming the kind: its (ε, δ) is the composition the kind's module documents.
"""

from __future__ import annotations

from typing import Any

import dp_accounting

from shared.api.schemas import ReleaseParameters

Event = dict[str, Any]

NON_PRIVATE: Event = {"class_name": "NonPrivateDpEvent"}


def gaussian_event(std: float, sensitivity: float, part: str) -> Event:
    return {"class_name": "GaussianDpEvent", "noise_multiplier": std / sensitivity, "std": std,
            "sensitivity": sensitivity, "part": part}


def laplace_event(scale: float, sensitivity: float, part: str) -> Event:
    return {"class_name": "LaplaceDpEvent", "noise_multiplier": scale / sensitivity, "scale": scale,
            "sensitivity": sensitivity, "part": part}


def composed_event(events: list[Event]) -> Event:
    return events[0] if len(events) == 1 else {"class_name": "ComposedDpEvent", "events": events}


def unsupported_event(reason: str) -> Event:
    return {"class_name": "UnsupportedDpEvent", "reason": reason}


def gaussian_release_event(parameters: ReleaseParameters) -> Event:
    """The parts of a gaussian release, each a Gaussian mechanism with its own σ and Δ."""
    parts = [gaussian_event(parameters.noise_std, parameters.sensitivity, "inputs")]
    if parameters.pca is not None:
        parts.append(gaussian_event(parameters.pca.noise_std, parameters.pca.sensitivity, "pca gram matrix"))
    if parameters.measurements is not None:
        m = parameters.measurements
        parts.append(gaussian_event(m.noise_std, m.sensitivity, "measurements"))
    return composed_event(parts)


def job_event(kind: str) -> Event:
    return unsupported_event(f"job kind {kind!r}: charged the ε and δ it was given; its documentation says how its "
                             "steps add up to them (no dp-accounting event describes them)")


def to_dp_accounting(event: Event) -> dp_accounting.DpEvent:
    """The dp-accounting event a stored event stands for."""
    name = event["class_name"]
    if name == "GaussianDpEvent":
        return dp_accounting.GaussianDpEvent(event["noise_multiplier"])
    if name == "LaplaceDpEvent":
        return dp_accounting.LaplaceDpEvent(event["noise_multiplier"])
    if name == "ComposedDpEvent":
        return dp_accounting.ComposedDpEvent([to_dp_accounting(part) for part in event["events"]])
    if name == "NonPrivateDpEvent":
        return dp_accounting.NonPrivateDpEvent()
    return dp_accounting.UnsupportedDpEvent()
