"""API keys: created by the curator, scoped to releases, with a query budget; stored hashed; revocable.

A ``modeler`` key may see the releases it is scoped to and spend up to ``max_queries`` measurements over all its
sessions. A ``curator`` key has the curator's powers (its ``release_ids`` do not limit it). A modeler key is never
scoped to both a release with private measurements and a release of the same dataset that returns y as computed
(the second would hand it what the first hides). A key may carry a policy (an ε/δ cap, the job kinds it may run,
an expiry, governance; :mod:`.key_policy`, whose rules decide who may create, revoke and change keys).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from curator_service.persistence.db import get_or_404
from curator_service.persistence.models import ApiKey, Release
from curator_service.services.audit import record
from curator_service.services.console_sessions import end_sessions_of_key
from curator_service.services.key_policy import (
    GovernanceRefusal,
    check_fits_inside,
    check_governance_shape,
    check_governs,
    check_policy,
    lock_live_caller,
    policy_out,
    store_policy,
    stored_policy,
)
from curator_service.services.policy import Principal, hash_token, new_token
from shared.api.errors import ApiError
from shared.api.governance import KeyPolicy, KeyPolicyOut
from shared.api.schemas import KeyCreate, KeyCreated, KeyOut


def key_out(key: ApiKey) -> KeyOut:
    return KeyOut.model_validate(key, from_attributes=True)


def check_measurements_kinds(scope: Sequence[tuple[int, int, bool]]) -> None:
    """Refuses a key that would read one dataset's y both privately and as computed: the plain release's answers
    are the true y_i, so the private release's noise on row i would hide nothing from this key.

    ``scope``: (release id, dataset id, has private measurements) of every release in the key's scope."""
    for dataset_id in sorted({dataset for _, dataset, _ in scope}):
        private = sorted(r for r, d, p in scope if d == dataset_id and p)
        plain = sorted(r for r, d, p in scope if d == dataset_id and not p)
        if private and plain:
            raise ApiError(422, "validation_error",
                           f"'release_ids' mixes releases of dataset {dataset_id} with private measurements "
                           f"{private} and releases that return y as computed {plain}: the plain ones would give "
                           "this key the true y that the private ones hide; scope the key to one kind only")


def create_key(session: Session, principal: Principal, body: KeyCreate, policy: KeyPolicy | None = None) -> KeyCreated:
    """A new key and its token (the only time the token exists outside the caller's hands), with ``policy`` if
    given (else its role's defaults). A key creates only keys whose policy lies inside its own
    (:func:`~.key_policy.check_fits_inside`), and only while it is live in this transaction: a key revoked while its
    request was in flight mints nothing (:func:`~.key_policy.lock_live_caller`)."""
    policy = policy or KeyPolicy()
    check_policy(body.role, policy)
    check_governance_shape(body.role, policy)
    lock_live_caller(session, principal)
    check_fits_inside(session, principal, body.role, policy, "key.create", f"new {body.role} key")
    token = new_token()
    scope = session.execute(select(Release.id, Release.dataset_id, Release.measurements.is_not(None))
                            .where(Release.id.in_(body.release_ids))).all()
    missing = sorted(set(body.release_ids) - {release_id for release_id, _, _ in scope})
    if missing:
        raise ApiError(422, "validation_error",
                       f"'release_ids' names releases that do not exist: {missing}; list them with GET /v1/releases")
    if body.role == "modeler":
        check_measurements_kinds(scope)
    key = ApiKey(name=body.name, role=body.role, token_hash=hash_token(token),
                 release_ids=sorted(set(body.release_ids)),
                 max_queries=body.max_queries, used_queries=0, revoked=False)
    session.add(key)
    session.flush()
    store_policy(session, key, policy)
    record(session, principal, "key.create", f"key:{key.id}")
    return KeyCreated(**key_out(key).model_dump(), token=token)


def list_keys(session: Session) -> list[KeyOut]:
    return [key_out(key) for key in session.scalars(select(ApiKey).order_by(ApiKey.id))]


def revoke_key(session: Session, principal: Principal, key_id: int) -> KeyOut:
    """Revokes a key at once: its token stops authenticating, its sessions stop answering and its console sessions
    end. The admin token or a governance key only."""
    check_governs(session, principal, "key.revoke", f"key:{key_id}", key_id)
    key = get_or_404(session, ApiKey, key_id, lock=True)
    key.revoked = True
    end_sessions_of_key(session, key.id)
    record(session, principal, "key.revoke", f"key:{key.id}")
    return key_out(key)


def get_policy(session: Session, key_id: int) -> KeyPolicyOut:
    """A key's policy as it applies, and what the key has spent against its caps."""
    return policy_out(session, get_or_404(session, ApiKey, key_id))


def set_policy(session: Session, principal: Principal, key_id: int, changes: KeyPolicy) -> KeyPolicyOut:
    """Changes the policy fields that ``changes`` sends and keeps the others (a merge: sending only
    ``expires_at`` must not drop the caps); an explicit null returns a field to the role's default. Audited with
    the names of the fields sent. The admin token or a governance key only, never on its own policy, and a key
    only within its own policy (:mod:`.key_policy`)."""
    target = f"key:{key_id}"
    if principal.key_id == key_id:
        raise GovernanceRefusal("key.policy", target, "its own policy", "a key may not change its own policy (it "
                                "could lift its own limits); ask the admin or a governance key to change it")
    check_governs(session, principal, "key.policy", target, key_id)
    key = get_or_404(session, ApiKey, key_id, lock=True)
    check_policy(key.role, changes)
    sent = sorted(changes.model_fields_set)
    merged = stored_policy(session, key).model_copy(update=changes.model_dump(include=set(sent)))
    check_governance_shape(key.role, merged)
    check_fits_inside(session, principal, key.role, merged, "key.policy", target)
    store_policy(session, key, merged)
    record(session, principal, "key.policy", f"key:{key.id} (set: {', '.join(sent) or 'nothing'})")
    session.flush()
    return policy_out(session, key)
