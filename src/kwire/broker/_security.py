"""Listeners and transport security: ``listeners``, TLS contexts, certificate principals.

Approach, after Kafka 3.9's ``SocketServer``/``EndPoint``/``SslFactory``/``SslPrincipalMapper``:

- ``listeners`` (``NAME://host:port,...``), ``advertised.listeners`` and
  ``listener.security.protocol.map`` are parsed into ``Listener`` rows; a listener named after a
  security protocol needs no map entry. Without ``listeners`` the broker has one PLAINTEXT
  listener on the ``Broker``'s host and port (today's behaviour).
- A setting is looked up as Kafka does for listener configs: ``listener.name.<name>.<setting>``
  (the listener name in lower case), else ``<setting>``.
- TLS uses the standard ``ssl`` module with PEM files instead of Java key stores:
  ``ssl.certfile`` (the broker's certificate chain), ``ssl.keyfile`` (its key; may be inside the
  certfile), ``ssl.key.password``, ``ssl.cafile`` (CAs trusted for client certificates) and
  ``ssl.client.auth`` = ``required`` | ``requested`` | ``none`` (Kafka's names).
- A client certificate becomes a principal as Kafka's ``DefaultKafkaPrincipalBuilder`` does: the
  subject's RFC 2253 name passed through ``ssl.principal.mapping.rules`` (``RULE:pattern/
  replacement/[LU]``, ``DEFAULT``); no certificate gives ``User:ANONYMOUS``.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from typing import Any, Final

from kwire._lazy import lazy_dataclass

__all__ = [
    "ANONYMOUS",
    "SECURITY_PROTOCOLS",
    "Listener",
    "SslPrincipalMapper",
    "listener_config",
    "parse_listeners",
    "principal_from_certificate",
    "server_ssl_context",
]

ANONYMOUS: Final = "User:ANONYMOUS"
SECURITY_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_ENDPOINT: Final = re.compile(r"^([A-Za-z0-9_.-]+)://(\[[^\]]*\]|[^:]*):(-?\d+)$")


@lazy_dataclass(frozen=True, slots=True)
class Listener:
    """One listener: its name, security protocol, bind address and advertised address."""

    name: str
    protocol: str
    host: str
    port: int
    advertised_host: str | None = None
    advertised_port: int | None = None

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def _endpoints(text: str, setting: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        found = _ENDPOINT.match(item)
        if found is None:
            raise ValueError(f"Invalid value {text} for configuration {setting}: {item!r}")
        host = found.group(2).strip("[]")
        out.append((found.group(1).upper(), host, int(found.group(3))))
    return out


def parse_listeners(
    static: Mapping[str, str], default_host: str, default_port: int
) -> list[Listener]:
    """The listeners ``static`` configures (Kafka's ``listeners`` and friends)."""
    text = static.get("listeners")
    if not text:
        return [Listener("PLAINTEXT", "PLAINTEXT", default_host, default_port)]
    protocol_map = {p: p for p in SECURITY_PROTOCOLS}
    for item in (static.get("listener.security.protocol.map") or "").split(","):
        name, sep, protocol = item.strip().partition(":")
        if sep:
            protocol_map[name.strip().upper()] = protocol.strip().upper()
    advertised = {
        name: (host, port)
        for name, host, port in _endpoints(
            static.get("advertised.listeners", ""), "advertised.listeners"
        )
    }
    out: list[Listener] = []
    seen: set[str] = set()
    for name, host, port in _endpoints(text, "listeners"):
        if name in seen:
            raise ValueError(f"Each listener must have a different name, {name} is repeated")
        seen.add(name)
        found = protocol_map.get(name)
        if found is None:
            raise ValueError(f"No security protocol defined for listener {name}")
        if found not in SECURITY_PROTOCOLS:
            raise ValueError(f"No enum constant SecurityProtocol.{found}")
        protocol = found
        adv = advertised.get(name)
        out.append(
            Listener(
                name,
                protocol,
                host,
                port,
                adv[0] if adv else None,
                adv[1] if adv else None,
            )
        )
    return out


def listener_config(static: Mapping[str, str], listener: str, name: str) -> str | None:
    """``listener.name.<listener>.<name>``, else ``<name>`` (Kafka's listener prefix rule)."""
    prefixed = static.get(f"listener.name.{listener.lower()}.{name}")
    return prefixed if prefixed is not None else static.get(name)


def server_ssl_context(static: Mapping[str, str], listener: str) -> ssl.SSLContext:
    """The TLS context of ``listener`` (PEM files; see the module doc)."""

    def get(name: str) -> str | None:
        return listener_config(static, listener, name)

    certfile = get("ssl.certfile")
    if not certfile:
        raise ValueError(f"listener {listener} uses TLS but ssl.certfile is not set")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2  # ssl.enabled.protocols=TLSv1.2,TLSv1.3
    context.load_cert_chain(certfile, get("ssl.keyfile") or None, get("ssl.key.password") or None)
    cafile = get("ssl.cafile")
    if cafile:
        context.load_verify_locations(cafile)
    auth = (get("ssl.client.auth") or "none").lower()
    if auth not in ("required", "requested", "none"):
        raise ValueError(
            f"Invalid value {auth} for configuration ssl.client.auth: "
            "String must be one of: required, requested, none"
        )
    if auth != "none" and not cafile:
        raise ValueError(f"ssl.client.auth={auth} on listener {listener} needs ssl.cafile")
    context.verify_mode = {
        "required": ssl.CERT_REQUIRED,
        "requested": ssl.CERT_OPTIONAL,
        "none": ssl.CERT_NONE,
    }[auth]
    return context


# --- certificate principals -------------------------------------------------------------------

#: RFC 2253 keywords for the attribute names Python's ``getpeercert`` uses (X500Principal's).
_RFC2253: Final = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;=])', r"\\\1", value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def subject_name(cert: Mapping[str, Any]) -> str:
    """The subject of a ``getpeercert()`` dict as ``X500Principal.getName()`` prints it
    (RFC 2253: the most specific RDN first)."""
    rdns = []
    for rdn in reversed(cert.get("subject", ())):
        rdns.append("+".join(f"{_RFC2253.get(k, k)}={_escape(v)}" for k, v in rdn))
    return ",".join(rdns)


class SslPrincipalMapper:
    """Kafka's ``SslPrincipalMapper``: the first rule that matches the distinguished name wins."""

    def __init__(self, rules: str | None) -> None:
        self.rules: list[tuple[re.Pattern[str], str, str] | None] = []  # None: DEFAULT
        text = (rules or "DEFAULT").strip()
        for item in _split_rules(text):
            if item == "DEFAULT":
                self.rules.append(None)
                continue
            if not item.startswith("RULE:"):
                raise ValueError(f"Invalid rule: {item}")
            body = item[5:]
            parts = _split_unescaped(body)
            if len(parts) != 3:
                raise ValueError(f"Invalid rule: {item}")
            pattern, replacement, flag = parts
            if flag not in ("", "L", "U"):
                raise ValueError(f"Invalid rule: {item}")
            self.rules.append((re.compile(pattern), _java_replacement(replacement), flag))

    def name(self, distinguished_name: str) -> str:
        for rule in self.rules:
            if rule is None:
                return distinguished_name
            pattern, replacement, flag = rule
            if pattern.fullmatch(distinguished_name) is None:
                continue
            out = pattern.sub(replacement, distinguished_name, count=0)
            if flag == "L":
                out = out.lower()
            elif flag == "U":
                out = out.upper()
            return out
        raise ValueError(f"No rules apply to {distinguished_name}, rules {self.rules}")


def _split_rules(text: str) -> list[str]:
    """Rules separated by commas outside ``RULE:.../.../`` bodies (a DN pattern has commas)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        while i < len(text) and text[i] in ", \t\n":
            i += 1
        if i >= len(text):
            break
        if text.startswith("DEFAULT", i):
            out.append("DEFAULT")
            i += len("DEFAULT")
            continue
        if not text.startswith("RULE:", i):
            end = text.find(",", i)
            out.append(text[i : end if end >= 0 else len(text)].strip())
            i = end + 1 if end >= 0 else len(text)
            continue
        j, slashes = i + 5, 0
        while j < len(text) and slashes < 2:
            if text[j] == "\\":
                j += 2
                continue
            if text[j] == "/":
                slashes += 1
            j += 1
        while j < len(text) and text[j] in "LU":
            j += 1
        out.append(text[i:j])
        i = j
    return out


def _split_unescaped(body: str) -> list[str]:
    parts, current, i = [], "", 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body) and body[i + 1] == "/":
            current += "/"
            i += 2
            continue
        if body[i] == "/":
            parts.append(current)
            current = ""
        else:
            current += body[i]
        i += 1
    parts.append(current)
    return parts


def _java_replacement(text: str) -> str:
    """Java's ``$1`` group references in Python's ``\\g<1>`` form."""
    return re.sub(r"\$(\d+)", r"\\g<\1>", text.replace("\\", "\\\\"))


def principal_from_certificate(cert: Mapping[str, Any] | None, mapper: SslPrincipalMapper) -> str:
    """``User:<mapped subject>`` for a verified client certificate, else ``User:ANONYMOUS``."""
    if not cert or not cert.get("subject"):
        return ANONYMOUS
    return "User:" + mapper.name(subject_name(cert))
