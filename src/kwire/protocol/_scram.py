"""SCRAM's arithmetic (RFC 5802, Kafka's ``ScramFormatter``), shared by the client and the broker.

Kafka's SASL/SCRAM mechanisms (KIP-84) are SCRAM-SHA-256 and SCRAM-SHA-512 with no SASLprep of
the password. Everything here is a pure function of bytes: SaltedPassword = Hi(password, salt, i),
ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey = H(ClientKey), ServerKey =
HMAC(SaltedPassword, "Server Key"), ClientProof = ClientKey XOR HMAC(StoredKey, AuthMessage),
ServerSignature = HMAC(ServerKey, AuthMessage).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

__all__ = [
    "SCRAM_HASHES",
    "client_key",
    "client_proof",
    "hmac_digest",
    "salted_password",
    "server_key",
    "server_signature",
    "stored_key",
]

#: Kafka's SCRAM mechanism names and their hash functions.
SCRAM_HASHES: Final = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


def hmac_digest(mechanism: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, SCRAM_HASHES[mechanism]).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's Hi(): PBKDF2 with the mechanism's HMAC (Kafka does not SASLprep)."""
    return hashlib.pbkdf2_hmac(SCRAM_HASHES[mechanism], password.encode("utf-8"), salt, iterations)


def client_key(mechanism: str, salted: bytes) -> bytes:
    return hmac_digest(mechanism, salted, b"Client Key")


def stored_key(mechanism: str, key: bytes) -> bytes:
    return hashlib.new(SCRAM_HASHES[mechanism], key).digest()


def server_key(mechanism: str, salted: bytes) -> bytes:
    return hmac_digest(mechanism, salted, b"Server Key")


def client_proof(mechanism: str, salted: bytes, auth_message: bytes) -> bytes:
    key = client_key(mechanism, salted)
    signature = hmac_digest(mechanism, stored_key(mechanism, key), auth_message)
    return bytes(a ^ b for a, b in zip(key, signature, strict=True))


def server_signature(mechanism: str, salted: bytes, auth_message: bytes) -> bytes:
    return hmac_digest(mechanism, server_key(mechanism, salted), auth_message)
