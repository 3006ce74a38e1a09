"""How a job ends early: the exceptions a kind's ``run`` (and the engine around it) raise."""


class JobFailed(Exception):
    """A failure whose message is safe to show to the submitter (a sentence, no data values)."""


class JobCancelled(Exception):
    """Raised by a job's ``run`` when ``ctx.cancelled()`` turned true."""
