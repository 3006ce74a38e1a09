"""A key's policy: an (ε, δ) cap across everything it triggers, the job kinds it may run, and an expiry.

* **Cap.** A key's spend is the sum of the ledger charges whose actor is the key (releases a curator key creates,
  jobs any key submits), on every dataset; a charge that would take it past the cap is refused (409
  ``budget_exceeded``) and nothing is stored. Composition is basic (sums), like the datasets' budgets.
* **Jobs.** A modeler key runs only the job kinds its policy lists (none by default: it cannot spend a dataset's
  budget); a curator key runs every kind unless its policy lists fewer. Anything else is a 403. Kinds created by
  their own endpoint (releases) are outside the list: their endpoint and the kind's roles decide.
* **Expiry.** From ``expires_at`` on the key authenticates nothing (401), like a revoked key
  (:func:`curator_service.services.policy.live_key`).
* **Governance.** Raising a dataset's budget, revoking a key and changing a key's policy need the admin token or a
  curator key marked ``governance`` (which has no cap and no job list). No key changes its own policy. A key that
  creates a key, or changes another's policy, gives it a policy inside its own: no cap of its own (a cap cannot be
  shared out), only job kinds it may run itself, an expiry no later than its own, governance only if it has it.
  Each refusal is a 403 with a sentence, audited as ``<action>.refused`` with the reason
  (:func:`write_audited`).

The cap is checked by the ledger's charge itself (:func:`curator_service.services.ledger.check_key_cap`), so it
holds wherever a charge is recorded: a service in the API process, a job's commit on a Dask worker. The job
permission is checked where a job is created (:func:`curator_service.services.jobs.submit_job` calls
:func:`check_may_run` before anything looks at the dataset).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from curator_service.persistence.db import Database
from curator_service.persistence.models import ApiKey, utcnow
from curator_service.persistence.models import KeyPolicy as PolicyRow
from curator_service.services.audit import record
from curator_service.services.job_kinds import KINDS
from curator_service.services.ledger import key_spent
from curator_service.services.policy import Principal
from shared.api.errors import ApiError
from shared.api.governance import KeyPolicy, KeyPolicyOut


def check_policy(role: str, policy: KeyPolicy) -> None:
    """422 with a sentence for a policy that names unknown job kinds, gives a modeler a curator-only kind, or has
    already expired."""
    for name in policy.jobs or ():
        kind = KINDS.get(name)
        if kind is None:
            raise ApiError(422, "validation_error", f"'jobs' names {name!r}, which is not a job kind on this server; "
                           f"the kinds are {sorted(KINDS)}")
        if role not in kind.roles:
            raise ApiError(422, "validation_error", f"'jobs' names {name!r}, which is for the "
                           f"{' or '.join(sorted(kind.roles))} role only; leave it out of a {role} key's jobs")
    if policy.expires_at is not None and as_utc(policy.expires_at) <= utcnow():
        raise ApiError(422, "validation_error", "'expires_at' is not in the future; give a later moment "
                       "(ISO 8601, UTC when no zone is given)")


def check_governance_shape(role: str, policy: KeyPolicy) -> None:
    """422 for a policy marked ``governance`` that is not a curator's, or has a cap or a job list (a governance key
    could otherwise lift its own limits through a key it makes)."""
    if not policy.governance:
        return
    if role != "curator":
        raise ApiError(422, "validation_error", "'governance' is for curator keys only; leave it out of a "
                       f"{role} key's policy")
    if policy.epsilon_cap is not None or policy.delta_cap is not None or policy.jobs is not None:
        raise ApiError(422, "validation_error", "'governance' needs a key with no 'epsilon_cap', 'delta_cap' or "
                       "'jobs' (a governance key could lift any of them); set them to null or leave 'governance' out")


def as_utc(moment: datetime) -> datetime:
    """A moment with no zone is read as UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


ACTS = {"key.create": "creating a key", "key.policy": "changing a key's policy", "key.revoke": "revoking a key",
        "dataset.budget_raise": "raising a dataset's budget"}
"""The acts of key governance, by their audit action, and how a refusal's sentence names them."""


class GovernanceRefusal(ApiError):
    """A 403 of key governance, audited as ``<action>.refused`` with its target and reason by :func:`write_audited`."""

    def __init__(self, action: str, target: str, why: str, detail: str) -> None:
        super().__init__(403, "forbidden", detail)
        self.action, self.target, self.why = action, target, why


@contextmanager
def write_audited(db: Database, principal: Principal) -> Iterator[Session]:
    """A write transaction, and a :class:`GovernanceRefusal` raised in it audited in a transaction of its own (this
    one rolls back with nothing written) before it leaves. The router marks the refusal audited, so the generic
    ``refused.<code>`` event (:func:`curator_service.routers.auth.audit_refusals`), which would not say why, is not
    written too."""
    try:
        with db.write() as session:
            yield session
    except GovernanceRefusal as refusal:
        with db.write() as session:
            record(session, principal, f"{refusal.action}.refused", f"{refusal.target} ({refusal.why})")
        raise


def governs(session: Session, principal: Principal) -> bool:
    """Whether ``principal`` may raise budgets, revoke keys and change other keys' policies: the admin token, or a
    curator key marked for governance that has no cap and no job list."""
    if principal.key_id is None:
        return principal.is_curator
    row = session.get(PolicyRow, principal.key_id)
    return (principal.is_curator and row is not None and bool(row.governance) and row.epsilon_cap is None
            and row.delta_cap is None and row.jobs is None)


def lock_live_caller(session: Session, principal: Principal, target_key_id: int | None = None) -> None:
    """Locks the principal's key row (and ``target_key_id``'s, the key the act changes, in id order so two acts never
    wait on each other) in this write transaction and re-checks that the key is live: a revocation or a policy change
    of that key commits either before this check, which then refuses, or after this transaction. The principal was
    authenticated before the transaction began, so a key revoked or expired since is refused here (401), never
    trusted for a key-management or governance act. The admin token has no row."""
    if principal.key_id is None:
        return
    ids = sorted({principal.key_id} | ({target_key_id} if target_key_id is not None else set()))
    rows = {key.id: key for key in session.scalars(select(ApiKey).where(ApiKey.id.in_(ids))
                                                   .order_by(ApiKey.id).with_for_update())}
    own = rows.get(principal.key_id)
    if own is None or own.revoked:
        raise ApiError(401, "unauthorized", "this key was revoked; ask the curator for a new key")
    row = session.get(PolicyRow, principal.key_id)
    if row is not None and row.expires_at is not None and as_utc(row.expires_at) <= utcnow():
        raise ApiError(401, "unauthorized", f"this key expired at {row.expires_at.isoformat()}; ask the curator "
                       "for a new key")


def check_governs(session: Session, principal: Principal, action: str, target: str,
                  target_key_id: int | None = None) -> None:
    """403 unless ``principal`` governs (:func:`governs`), read in this write transaction after
    :func:`lock_live_caller` (401 for a key revoked or expired since it authenticated)."""
    lock_live_caller(session, principal, target_key_id)
    if not governs(session, principal):
        raise GovernanceRefusal(action, target, "not a governance key",
                                f"{ACTS[action]} needs the admin token or a curator key marked for governance (no "
                                "cap, no job list); this key is not one: ask the admin to do it")


def check_fits_inside(session: Session, principal: Principal, role: str, policy: KeyPolicy, action: str,
                      target: str) -> None:
    """403 unless ``policy`` (of a ``role`` key that ``principal`` creates or changes) lies inside the principal's
    own: no cap of its own, job kinds it may run itself, an expiry no later than its own, governance only if it has
    it. The admin token has no limits."""
    if principal.key_id is None:
        return
    own = session.get(PolicyRow, principal.key_id)
    if own is None:
        own = PolicyRow(key_id=principal.key_id, governance=False)
    act = ACTS[action]

    def refuse(why: str, sentence: str) -> GovernanceRefusal:
        return GovernanceRefusal(action, target, why, f"{act} refused: {sentence}")

    if own.epsilon_cap is not None or own.delta_cap is not None:
        raise refuse("caller has a cap", "this key has an epsilon/delta cap of its own, which it cannot share out, "
                     "so it may not create keys or change key policies (it could lift its own cap); use the admin "
                     "token or a curator key without a cap")
    if own.jobs is not None:
        wanted = set(policy.jobs) if policy.jobs is not None else set(allowed_jobs(role, None))
        if wider := sorted(wanted - set(own.jobs)):
            raise refuse("job kinds wider than the caller's",
                         f"the policy would let the key run {wider}, which this key may not run itself; give 'jobs' "
                         f"within {sorted(own.jobs) or 'no job kind'}")
    if own.expires_at is not None and (policy.expires_at is None or as_utc(policy.expires_at) > own.expires_at):
        raise refuse("expiry later than the caller's",
                     f"this key expires at {own.expires_at.isoformat()}, so a key it makes or changes must too: give "
                     "'expires_at' no later than that")
    if policy.governance and not own.governance:
        raise refuse("governance the caller lacks", "only the admin token or a governance key may mark a key for "
                     "governance")


def stored_policy(session: Session, key: ApiKey) -> KeyPolicy:
    """The key's policy as stored (no row: every field null, the role's defaults)."""
    row = session.get(PolicyRow, key.id)
    if row is None:
        return KeyPolicy()
    return KeyPolicy(epsilon_cap=row.epsilon_cap, delta_cap=row.delta_cap, jobs=row.jobs, expires_at=row.expires_at,
                     governance=row.governance or None)


def store_policy(session: Session, key: ApiKey, policy: KeyPolicy) -> None:
    """Sets the key's policy (checked by the caller with :func:`check_policy` and :func:`check_governance_shape`;
    replaces an earlier one)."""
    row = session.get(PolicyRow, key.id) or PolicyRow(key_id=key.id)
    row.epsilon_cap, row.delta_cap = policy.epsilon_cap, policy.delta_cap
    row.jobs = None if policy.jobs is None else sorted(set(policy.jobs))
    row.expires_at = None if policy.expires_at is None else as_utc(policy.expires_at)
    row.governance = bool(policy.governance)
    session.add(row)


def allowed_jobs(role: str, row: PolicyRow | None) -> list[str]:
    """The job kinds a key may run: its policy's list, else every kind for a curator key and none for a modeler."""
    if row is not None and row.jobs is not None:
        return list(row.jobs)
    return sorted(KINDS) if role == "curator" else []


def policy_out(session: Session, key: ApiKey) -> KeyPolicyOut:
    row = session.get(PolicyRow, key.id) or PolicyRow(key_id=key.id)  # no row: every field at its default
    spent_epsilon, spent_delta = key_spent(session, key.id)
    return KeyPolicyOut(key_id=key.id, role=key.role, epsilon_cap=row.epsilon_cap, delta_cap=row.delta_cap,
                        jobs=allowed_jobs(key.role, row), expires_at=row.expires_at,
                        governance=bool(row.governance), spent_epsilon=spent_epsilon,
                        spent_delta=spent_delta, max_queries=key.max_queries, used_queries=key.used_queries)


def check_may_run(session: Session, key_id: int, kind: str) -> None:
    """403 unless the key's policy lets it run ``kind``. The same sentence whatever the job's parameters, dataset
    or budget, so a key without the permission learns nothing from a submission.

    A kind created by its own endpoint (``JobKind.endpoint``: releases) is governed by that endpoint's rules and the
    kind's roles, not by the ``jobs`` list: a curator key listing only ``dp-mean`` still makes releases. The ε/δ cap
    applies to their charges all the same (:func:`~curator_service.services.ledger.check_key_cap`)."""
    key = session.get_one(ApiKey, key_id)
    job_kind = KINDS.get(kind)
    if job_kind is not None and job_kind.endpoint is not None and key.role in job_kind.roles:
        return
    allowed = allowed_jobs(key.role, session.get(PolicyRow, key.id))
    if kind not in allowed:
        raise ApiError(403, "forbidden", f"this key may not run job kind {kind!r} (it may run: "
                       f"{', '.join(allowed) or 'no job kind'}); ask the curator for a key that allows it "
                       f"(pobo-curator key create --jobs {kind})")
