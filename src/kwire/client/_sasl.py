"""The client side of SASL, without I/O: PLAIN and SCRAM-SHA-256/512 token exchanges.

``SaslMechanism.tokens`` is a generator: it yields each token the client sends and receives the
broker's answer by ``send``; it ends once the exchange is done (SCRAM checks the broker's
signature last, so a broker that does not know the password is refused too). The connection
carries the tokens in SaslAuthenticate requests after a SaslHandshake v1 (KIP-152), as Kafka's
``SaslClientAuthenticator`` does. Credentials come from ``sasl.jaas.config`` (Kafka's JAAS line,
as Spark passes it) or librdkafka's ``sasl.username`` / ``sasl.password``.
"""

from __future__ import annotations

import base64
import re
import secrets
from collections.abc import Generator

from kwire._lazy import lazy_dataclass
from kwire.client._errors import AuthenticationError
from kwire.errors import OptionError
from kwire.protocol._scram import SCRAM_HASHES, client_proof, salted_password, server_signature

__all__ = ["SaslCredentials", "parse_jaas", "sasl_tokens"]

MECHANISMS = ("PLAIN", *SCRAM_HASHES)

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


@lazy_dataclass(frozen=True, slots=True)
class SaslCredentials:
    mechanism: str
    username: str
    password: str

    def __repr__(self) -> str:  # never print the password
        return f"SaslCredentials({self.mechanism!r}, {self.username!r}, password=***)"


def parse_jaas(text: str) -> tuple[str, str]:
    """username and password from a JAAS line such as Kafka's
    ``org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";``
    """
    options = {k: v.replace('\\"', '"') for k, v in _JAAS_OPTION.findall(text)}
    if "username" not in options or "password" not in options:
        raise OptionError('sasl.jaas.config: expected username="..." password="..."')
    return options["username"], options["password"]


def sasl_tokens(credentials: SaslCredentials) -> Generator[bytes, bytes, None]:
    """The client's tokens of one exchange (see the module comment)."""
    if credentials.mechanism == "PLAIN":
        yield b"\0" + credentials.username.encode() + b"\0" + credentials.password.encode()
        return
    mechanism = credentials.mechanism
    if mechanism not in SCRAM_HASHES:
        raise OptionError(f"sasl.mechanism {mechanism} is not one of {', '.join(MECHANISMS)}")
    user = credentials.username.replace("=", "=3D").replace(",", "=2C")
    nonce = base64.b64encode(secrets.token_bytes(24)).decode()
    first_bare = f"n={user},r={nonce}"
    server_first = (yield f"n,,{first_bare}".encode()).decode()
    fields = dict(part.split("=", 1) for part in server_first.split(",") if "=" in part)
    if not fields.get("r", "").startswith(nonce) or "s" not in fields or "i" not in fields:
        raise AuthenticationError(
            f"SCRAM: the broker's first message is not valid: {server_first!r}"
        )
    salted = salted_password(
        mechanism, credentials.password, base64.b64decode(fields["s"]), int(fields["i"])
    )
    final_bare = f"c=biws,r={fields['r']}"
    auth_message = f"{first_bare},{server_first},{final_bare}".encode()
    proof = base64.b64encode(client_proof(mechanism, salted, auth_message)).decode()
    server_final = (yield f"{final_bare},p={proof}".encode()).decode()
    if server_final.startswith("e="):
        raise AuthenticationError(f"SCRAM: the broker refused: {server_final[2:]}")
    expected = base64.b64encode(server_signature(mechanism, salted, auth_message)).decode()
    if server_final != f"v={expected}":
        raise AuthenticationError(
            "SCRAM: the broker's signature does not match (not the real broker?)"
        )
