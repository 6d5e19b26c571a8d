"""kwire.errors holds every public exception; the layers re-export the ones they raise."""

from __future__ import annotations

import pickle

import kwire.errors as errors
from kwire.protocol import ErrorCode


def test_every_public_exception_lives_in_kwire_errors() -> None:
    from kwire.log import LogError, OffsetOutOfRangeError
    from kwire.log.storage import ProducerStateError
    from kwire.protocol import SpecError
    from kwire.records import AppendError, RecordError
    from kwire.spark import OptionError

    for cls in (
        LogError,
        OffsetOutOfRangeError,
        ProducerStateError,
        SpecError,
        AppendError,
        RecordError,
        OptionError,
    ):
        assert cls.__module__ == "kwire.errors", cls
        assert cls.__name__ in errors.__all__


def test_error_codes_are_the_generated_ones() -> None:
    for name in errors.APPEND_ERRORS:
        assert errors.AppendError(name, "x").error_code == ErrorCode[name]
    for name in errors.LOG_ERRORS:
        assert errors.LogError(name, "x").error_code == ErrorCode[name]


def test_errors_pickle() -> None:
    exc = errors.AppendError(
        "INVALID_RECORD", "bad", record_errors=[errors.RecordError(1, "x")], position=4
    )
    back = pickle.loads(pickle.dumps(exc))
    assert (back.error_name, back.record_errors, back.position) == (
        "INVALID_RECORD",
        exc.record_errors,
        4,
    )
    log = pickle.loads(pickle.dumps(errors.OffsetOutOfRangeError(message="m")))
    assert (log.error_code, log.message) == (1, "m")
