"""SCRAM-SHA-256 password authentication, the server's side (RFC 5802 and RFC 7677, as
PostgreSQL runs it: no channel binding, the user name taken from the startup packet).

Written here rather than on ``scramp``: libpq sends an empty SCRAM user name (``n=,``),
which PostgreSQL accepts and ``scramp``'s server refuses ("attribute values must be at
least one character long"); the name is part of the signed message, so it cannot be
rewritten before ``scramp`` reads it."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

MECHANISM = "SCRAM-SHA-256"
ITERATIONS = 4096


class AuthFailed(Exception):
    """The client's SASL messages are malformed or its proof is wrong."""


def _hmac(key: bytes, text: bytes) -> bytes:
    """HMAC-SHA-256 of ``text`` with ``key``."""
    return hmac.new(key, text, hashlib.sha256).digest()


def _attributes(text: str) -> dict[str, str]:
    """``a=1,b=2`` as a dict (values may hold ``=``)."""
    out = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or len(key) != 1:
            raise AuthFailed(f"malformed SCRAM attribute {part!r}")
        out[key] = value
    return out


class ScramExchange:
    """One SCRAM-SHA-256 exchange for ``password``: ``first`` answers the client-first
    message, ``final`` checks the client-final message and returns the server's signature
    message."""

    def __init__(self, password: str) -> None:
        self.salt = secrets.token_bytes(16)
        self.salted = hashlib.pbkdf2_hmac("sha256", password.encode(), self.salt, ITERATIONS)
        self.nonce = ""
        self.client_first_bare = ""
        self.server_first = ""

    def first(self, client_first: bytes) -> bytes:
        """The server-first message for ``client_first`` (``n,,n=user,r=nonce``)."""
        text = client_first.decode(errors="replace")
        header, sep, bare = text.partition(",,")
        if not sep or header not in ("n", "y") and not header.startswith("n,"):
            raise AuthFailed("SCRAM channel binding is not supported")
        client_nonce = _attributes(bare).get("r")
        if not client_nonce:
            raise AuthFailed("SCRAM client-first message has no nonce")
        self.client_first_bare = bare
        self.nonce = client_nonce + base64.b64encode(secrets.token_bytes(18)).decode()
        salt = base64.b64encode(self.salt).decode()
        self.server_first = f"r={self.nonce},s={salt},i={ITERATIONS}"
        return self.server_first.encode()

    def final(self, client_final: bytes) -> bytes:
        """Check ``client_final`` (``c=...,r=...,p=proof``); the server-final message."""
        text = client_final.decode(errors="replace")
        without_proof, sep, proof_part = text.rpartition(",p=")
        if not sep:
            raise AuthFailed("SCRAM client-final message has no proof")
        if _attributes(without_proof).get("r") != self.nonce:
            raise AuthFailed("SCRAM nonce does not match")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError as error:
            raise AuthFailed("SCRAM proof is not base64") from error
        auth_message = ",".join((self.client_first_bare, self.server_first,
                                 without_proof)).encode()
        stored = hashlib.sha256(_hmac(self.salted, b"Client Key")).digest()
        signature = _hmac(stored, auth_message)
        if len(proof) != len(signature):
            raise AuthFailed("password authentication failed")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(hashlib.sha256(client_key).digest(), stored):
            raise AuthFailed("password authentication failed")
        server = _hmac(_hmac(self.salted, b"Server Key"), auth_message)
        return b"v=" + base64.b64encode(server)
