"""Client settings under Kafka's own names (the ``kafka.*`` options Spark passes to Kafka's Java client).

``ClientConfig.from_options`` takes a mapping of Kafka client property names (with or without
Spark's ``kafka.`` prefix), converts their values and refuses what it cannot honour, so a setting
is never silently ignored: an unknown name is warned about as Kafka's ``AbstractConfig`` does
("supplied but isn't a known config").
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping

from kwire._lazy import lazy_dataclass
from kwire.client._sasl import MECHANISMS, SaslCredentials, parse_jaas
from kwire.errors import OptionError

__all__ = ["ClientConfig"]

log = logging.getLogger("kwire.client")

#: Settings that only matter to Kafka's Java client internals and are accepted without effect.
_ACCEPTED_WITHOUT_EFFECT = frozenset(
    {
        "key.deserializer",
        "value.deserializer",
        "key.serializer",
        "value.serializer",
        "enable.auto.commit",
        "auto.offset.reset",
        "group.id",
        "receive.buffer.bytes",
        "send.buffer.bytes",
    }
)


@lazy_dataclass(frozen=True, slots=True)
class ClientConfig:
    bootstrap_servers: tuple[tuple[str, int], ...]
    client_id: str = "kwire"
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 52_428_800
    max_partition_fetch_bytes: int = 1_048_576
    isolation_level: str = "read_uncommitted"
    broker_version_fallback: str = "0.9.0"
    security_protocol: str = "PLAINTEXT"
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_check_hostname: bool = True
    acks: int = -1
    enable_idempotence: bool = True
    compression_type: str = "none"
    batch_size: int = 16_384
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60_000
    sasl: SaslCredentials | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ClientConfig:
        values = {k.removeprefix("kafka."): str(v) for k, v in options.items()}
        known: dict[str, object] = {}
        servers = values.pop("bootstrap.servers", None)
        if not servers:
            raise OptionError("bootstrap.servers is required (host:port[,host:port...])")
        known["bootstrap_servers"] = parse_bootstrap(servers)
        ints = {
            "request.timeout.ms": "request_timeout_ms",
            "retry.backoff.ms": "retry_backoff_ms",
            "retry.backoff.max.ms": "retry_backoff_max_ms",
            "fetch.max.wait.ms": "fetch_max_wait_ms",
            "fetch.max.bytes": "fetch_max_bytes",
            "max.partition.fetch.bytes": "max_partition_fetch_bytes",
            "transaction.timeout.ms": "transaction_timeout_ms",
        }
        for name, attr in ints.items():
            if name in values:
                text = values.pop(name)
                try:
                    number = int(text)
                except ValueError:
                    raise OptionError(f"{name} must be an integer, not {text!r}") from None
                if number < 0:
                    raise OptionError(f"{name} must be >= 0, not {number}")
                known[attr] = number
        if "batch.size" in values:
            text = values.pop("batch.size")
            if not text.isdigit():
                raise OptionError(f"batch.size must be an integer, not {text!r}")
            known["batch_size"] = int(text)
        acks_text = values.pop("acks", "all").lower()
        if acks_text not in ("all", "-1", "1", "0"):
            raise OptionError(f"acks must be all, -1, 0 or 1, not {acks_text!r}")
        known["acks"] = -1 if acks_text == "all" else int(acks_text)
        idempotence_text = values.pop("enable.idempotence", None)
        if idempotence_text is not None and idempotence_text.lower() not in ("true", "false"):
            raise OptionError(f"enable.idempotence must be true or false, not {idempotence_text!r}")
        idempotent = idempotence_text is None or idempotence_text.lower() == "true"
        if known["acks"] != -1:
            if idempotence_text is not None and idempotent:
                # Kafka's ProducerConfig: idempotence needs acks=all
                raise OptionError(
                    "Must set acks to all in order to use the idempotent producer. Otherwise we "
                    "cannot guarantee idempotence."
                )
            idempotent = False  # Kafka 3.x: an explicit acks turns the default idempotence off
        if known["acks"] == 0:
            raise OptionError("acks=0 is not supported by kwire.client (use 1 or all)")
        transactional_id = values.pop("transactional.id", None) or None
        if transactional_id is not None:
            if idempotence_text is not None and not idempotent:
                # Kafka's ProducerConfig.postProcessAndValidateIdempotenceConfigs
                raise OptionError(
                    "Cannot set a transactional.id without also enabling idempotence."
                )
            if known["acks"] != -1:
                raise OptionError("transactional.id needs acks=all (an idempotent producer)")
            known["transactional_id"] = transactional_id
        known["enable_idempotence"] = idempotent
        compression = values.pop("compression.type", "none").lower()
        if compression not in ("none", "gzip", "snappy", "lz4", "zstd"):
            raise OptionError(
                f"compression.type must be none, gzip, snappy, lz4 or zstd, not {compression!r}"
            )
        known["compression_type"] = compression
        if "client.id" in values:
            known["client_id"] = values.pop("client.id")
        if "isolation.level" in values:
            level = values.pop("isolation.level")
            if level not in ("read_committed", "read_uncommitted"):
                raise OptionError(
                    f"isolation.level must be read_committed or read_uncommitted, not {level!r}"
                )
            known["isolation_level"] = level
        if "broker.version.fallback" in values:
            known["broker_version_fallback"] = values.pop("broker.version.fallback")
        protocol = values.pop("security.protocol", "PLAINTEXT").upper()
        if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise OptionError(
                f"security.protocol must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, not "
                f"{protocol!r}"
            )
        known["security_protocol"] = protocol
        mechanism = values.pop("sasl.mechanism", "GSSAPI").upper()
        jaas = values.pop("sasl.jaas.config", None)
        username = values.pop("sasl.username", None)
        password = values.pop("sasl.password", None)
        if protocol.startswith("SASL_"):
            if mechanism not in MECHANISMS:
                raise OptionError(
                    f"sasl.mechanism {mechanism} is not supported by kwire.client "
                    f"({', '.join(MECHANISMS)} are)"
                )
            if jaas is not None:
                username, password = parse_jaas(jaas)
            if username is None or password is None:
                raise OptionError(
                    f"{protocol} needs credentials: sasl.jaas.config, or sasl.username and "
                    "sasl.password"
                )
            known["sasl"] = SaslCredentials(mechanism, username, password)
        for name, attr in (
            ("ssl.truststore.location", "ssl_cafile"),
            ("ssl.ca.location", "ssl_cafile"),
            ("ssl.certificate.location", "ssl_certfile"),
            ("ssl.key.location", "ssl_keyfile"),
        ):
            if name in values:
                known[attr] = values.pop(name)
        truststore_type = values.pop("ssl.truststore.type", "PEM").upper()
        if truststore_type != "PEM":
            raise OptionError(f"ssl.truststore.type {truststore_type}: only PEM files are read")
        if "ssl.endpoint.identification.algorithm" in values:
            known["ssl_check_hostname"] = bool(values.pop("ssl.endpoint.identification.algorithm"))
        for name in sorted(values):
            if name not in _ACCEPTED_WITHOUT_EFFECT:
                log.warning("The configuration '%s' was supplied but isn't a known config.", name)
        return cls(**known)  # type: ignore[arg-type]

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == "read_committed"

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.security_protocol not in ("SSL", "SASL_SSL"):
            return None
        context = ssl.create_default_context(cafile=self.ssl_cafile)
        context.check_hostname = self.ssl_check_hostname
        if self.ssl_certfile:
            context.load_cert_chain(self.ssl_certfile, self.ssl_keyfile)
        return context


def parse_bootstrap(text: str) -> tuple[tuple[str, int], ...]:
    """``host:port[,host:port...]`` (IPv6 hosts in brackets) as (host, port) pairs."""
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise OptionError(f"bootstrap.servers: {item!r} is not host:port")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise OptionError("bootstrap.servers names no broker")
    return tuple(out)
