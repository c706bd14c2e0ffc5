"""The bearer tokens the sim knows and whom they name: its admin token (`Sim(token=...)`) and
the ServiceAccount tokens it issued through TokenRequest (serviceaccounts/<name>/token).

A ServiceAccount token names `system:serviceaccount:<namespace>:<name>` with the groups the real
server gives it, for the API audience or the audiences asked for, until it expires or its
ServiceAccount is deleted (or recreated: the uid must match). Tokens are opaque random strings,
not signed JWTs. At most `max_issued` are kept; the oldest are forgotten first.
"""

from __future__ import annotations

import hmac
import secrets
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

JsonObj = dict[str, Any]
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
# the sim's one user: named as the real local cluster's admin certificate (cluster/pki.py)
ADMIN_USER: JsonObj = {"username": "jobset-infra-admin",
                       "groups": ["system:masters", "system:authenticated"]}


@dataclass(frozen=True)
class Issued:
    namespace: str
    name: str
    uid: str
    audiences: tuple[str, ...]
    expires: datetime
    jti: str


class Tokens:
    def __init__(self, admin: str | None, max_issued: int = 10_000) -> None:
        self.admin = admin
        self.max_issued = max_issued
        self._issued: OrderedDict[str, Issued] = OrderedDict()

    def issue(self, account: JsonObj, audiences: tuple[str, ...], expires: datetime,
              jti: str) -> str:
        token = "sim-sa." + secrets.token_urlsafe(32)
        meta = account["metadata"]
        self._issued[token] = Issued(meta["namespace"], meta["name"], meta["uid"], audiences,
                                     expires, jti)
        while len(self._issued) > self.max_issued:
            self._issued.popitem(last=False)
        return token

    def is_admin(self, token: str) -> bool:
        # constant time: how long the compare takes must not tell how much of a guess was right
        return self.admin is not None and hmac.compare_digest(token.encode(), self.admin.encode())

    def issued(self, token: str, now: datetime) -> Issued | None:
        found = self._issued.get(token)
        return found if found is not None and now < found.expires else None

    def known(self, token: str, now: datetime) -> bool:
        return self.is_admin(token) or self.issued(token, now) is not None


def account_user(issued: Issued) -> JsonObj:
    """The user a ServiceAccount token authenticates as."""
    return {"username": f"system:serviceaccount:{issued.namespace}:{issued.name}",
            "uid": issued.uid,
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{issued.namespace}",
                       "system:authenticated"],
            "extra": {"authentication.kubernetes.io/credential-id": [f"JTI={issued.jti}"]}}
