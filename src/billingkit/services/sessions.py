"""Signing in: a user's email and password checked, a session token issued for it, and a
``Bearer`` session token resolved to its caller (API keys are :mod:`billingkit.services.access`)."""

from __future__ import annotations

from datetime import datetime

from billingkit.domain.access import Account, AccountType, Actor, EnvironmentType
from billingkit.domain.credentials import hash_password, issue_token, verify_password, verify_token
from billingkit.domain.queries import ListQuery
from billingkit.domain.resources import Status
from billingkit.errors import PermissionDenied, Unauthorized, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.access import Principal, environment_choice, live_account

__all__ = ["authenticate_token", "check_password", "login", "start_session"]


def check_password(uow: UnitOfWork, *, email: str, password: str, tenant_id: str | None = None) -> Account:
    """The user account ``email`` and ``password`` name, else :class:`Unauthorized`.

    The password is checked against the email's user account in every tenant (or in ``tenant_id``);
    only a match counts, so an email that also exists in another tenant neither blocks its owner
    nor reveals the other account. Two tenants matching the same password need ``tenant_id``.
    An unknown email costs one password hash too, so timing does not tell which emails exist.
    The account is returned without its password hash."""
    candidates = [
        a
        for a in uow.find_accounts_by_email(email)
        if a.type is AccountType.USER and a.password_hash and (tenant_id is None or a.tenant_id == tenant_id)
    ]
    if not candidates:
        hash_password(password)
        raise Unauthorized("invalid email or password")
    matched = [a for a in candidates if a.password_hash and verify_password(password, a.password_hash)]
    if not matched:
        raise Unauthorized("invalid email or password")
    if len(matched) > 1:
        raise ValidationError("this email has accounts in several tenants; pass tenant_id", field="tenant_id")
    return matched[0].model_copy(update={"password_hash": None})


def start_session(
    uow: UnitOfWork, *, account: Account, secret: bytes, now: datetime, environment_id: str | None = None
) -> str:
    """A session token for ``account`` (whose password was checked). The token's
    ``environment_id`` claim is the given environment or the tenant's first development one."""
    envs = uow.for_scope(account.tenant_id, None).environments
    environment_id = environment_choice(environment_id)
    if environment_id is not None:
        env = envs.find(environment_id)
        if env is None or env.status is not Status.PUBLISHED:
            raise ValidationError("unknown environment_id", field="environment_id")
    else:
        listed = envs.list(ListQuery.where(type=EnvironmentType.DEVELOPMENT)).items
        environment_id = min(listed, key=lambda e: (e.created_at, e.id)).id if listed else None
    return issue_token(
        secret,
        tenant_id=account.tenant_id,
        user_id=account.id,
        environment_id=environment_id,
        now=now,
    )


def login(
    uow: UnitOfWork,
    *,
    email: str,
    password: str,
    secret: bytes,
    now: datetime,
    tenant_id: str | None = None,
    environment_id: str | None = None,
) -> tuple[str, Account]:
    """:func:`check_password` then :func:`start_session` (no throttling: ``Billing.login`` adds it)."""
    account = check_password(uow, email=email, password=password, tenant_id=tenant_id)
    token = start_session(uow, account=account, secret=secret, now=now, environment_id=environment_id)
    return token, account


def authenticate_token(
    uow: UnitOfWork,
    *,
    token: str,
    secret: bytes,
    now: datetime,
    environment_id: str | None = None,
) -> Principal:
    """Resolve a ``Bearer`` session token. ``environment_id`` (the ``X-Environment-ID`` header)
    selects another environment of the same tenant (empty counts as absent); one of another tenant
    is ``PermissionDenied``."""
    environment_id = environment_choice(environment_id)
    claims = verify_token(secret, token, now=now)
    account = live_account(uow, claims.tenant_id, claims.user_id)
    if account is None or account.type is not AccountType.USER:
        raise Unauthorized("the user of this token no longer exists")
    chosen = environment_id or claims.environment_id
    if chosen is not None:
        env = uow.for_scope(claims.tenant_id, None).environments.find(chosen)
        if env is None or env.status is not Status.PUBLISHED:
            raise PermissionDenied("invalid or inaccessible environment")
    actor = Actor(id=account.id, roles=account.roles, account_type=account.type.value)
    return Principal(tenant_id=claims.tenant_id, environment_id=chosen, actor=actor)
