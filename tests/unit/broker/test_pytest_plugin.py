"""The pytest plugin (``pytest11`` entry point ``kwire.broker.pytest_plugin``) costs nothing until a
test uses its fixtures: loading it imports no kwire module but itself (and its two empty parent
packages), and kwire's modules are not rewritten by pytest's assertion rewriting.

Each test runs a fresh interpreter (a pytest session of its own where pytest is involved), since
this one has imported kwire long ago.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3] / "src"
#: the packages ``import kwire.broker.pytest_plugin`` cannot help executing (both import nothing)
PLUGIN_ONLY = ["kwire", "kwire.broker", "kwire.broker.pytest_plugin"]

pytest_plugins = ["pytester"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return env


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120, check=False
    )


def test_importing_the_plugin_imports_no_other_kwire_module(tmp_path: Path) -> None:
    code = (
        "import sys, kwire.broker.pytest_plugin\n"
        "print(sorted(m for m in sys.modules if m == 'kwire' or m.startswith('kwire.')))"
    )
    done = _run([sys.executable, "-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr(PLUGIN_ONLY)


def _session(tmp_path: Path, test_source: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_probe.py").write_text(textwrap.dedent(test_source))
    # the plugin is loaded through its entry point, as in any project that installed kwire
    return _run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_probe.py"],
        tmp_path,
    )


def test_a_session_that_uses_no_fixture_loads_only_the_plugin(tmp_path: Path) -> None:
    done = _session(
        tmp_path,
        f"""
        import sys

        def test_nothing_of_kwire_loaded():
            loaded = sorted(m for m in sys.modules if m == "kwire" or m.startswith("kwire."))
            assert loaded == {PLUGIN_ONLY!r}
        """,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_kwire_modules_are_not_rewritten_by_pytest(tmp_path: Path) -> None:
    # the plugin and its two parent packages are loaded (and rewritten) before the plugin can
    # say anything; every other kwire module must come from its bytecode, as outside pytest
    done = _session(
        tmp_path,
        f"""
        import sys
        import kwire.records
        from kwire.broker import Broker

        def test_loaded_from_bytecode_not_rewritten():
            loaded = [m for n, m in sys.modules.items() if n.startswith("kwire.")]
            assert len(loaded) > 50  # the broker, not its handlers (loaded on first use)
            for module in loaded:
                if module.__name__ not in {PLUGIN_ONLY!r}:
                    assert type(module.__loader__).__name__ != "AssertionRewritingHook", module

        def test_the_fixture_works(kwire_broker):
            kwire_broker.create_topic("probe", partitions=2)
            assert "probe" in kwire_broker.topics()
        """,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_a_broker_submodule_imported_first_then_the_package(tmp_path: Path) -> None:
    # the package loads lazily: a submodule first must still import, and the first public name
    # still serves every handler of the table
    code = (
        "import kwire.broker._state, kwire.broker._apis as apis\n"
        "from kwire.broker import Broker, implemented_versions\n"
        "print(len(apis.HANDLERS) == len(implemented_versions()) == len(apis.TABLE) > 50)"
    )
    done = _run([sys.executable, "-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_a_marker_s_unknown_config_key_is_a_pytest_warning(tmp_path: Path) -> None:
    # Kafka logs a WARN and starts; in a test suite a log line is only shown when the test fails,
    # so a typo in a marker's config (a setting silently not applied) must reach pytest's
    # warnings summary, and fail suites that run with warnings as errors
    done = _session(
        tmp_path,
        """
        import pytest

        @pytest.mark.kwire_broker(config={"num.partitons": "4", "num.partitions": "2"})
        def test_typo(kwire_broker):
            assert kwire_broker.bootstrap
        """,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 1 warning" in done.stdout, done.stdout
    assert (
        "UserWarning: kwire_broker: The configuration 'num.partitons' was supplied but isn't a "
        "known config." in done.stdout
    ), done.stdout


# --- as a user runs it: pytester sessions in this interpreter (the plugin is already loaded) -----

DOCS = Path(__file__).resolve().parents[3] / "docs" / "broker.md"


def _docs_example(containing: str) -> str:
    """The ```python block of docs/broker.md that contains ``containing``."""
    blocks = DOCS.read_text().split("```python\n")[1:]
    return next(block.split("```")[0] for block in blocks if containing in block)


def _kwire_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("kwire-")]


def test_the_documented_fixture_example_runs_as_written(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_docs=_docs_example("def test_orders("))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    assert _kwire_threads() == []


def test_the_documented_session_fixture_of_one_s_own_runs_as_written(
    pytester: pytest.Pytester,
) -> None:
    example = _docs_example("def old_kafka(")
    pytester.makepyfile(
        test_docs=example
        + textwrap.dedent(
            """
            def test_it(old_kafka):
                assert old_kafka.personality.release == "2.0"
                assert old_kafka.config["num.partitions"] == "4"
                assert old_kafka.config["group.initial.rebalance.delay.ms"] == "0"
            """
        )
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert _kwire_threads() == []


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            'kwire_broker(kafka_verison="2.0")',
            "*@pytest.mark.kwire_broker: unknown argument 'kafka_verison'"
            " (did you mean 'kafka_version'?)*",
        ),
        (
            'kwire_broker("2.0")',
            "*@pytest.mark.kwire_broker takes keyword arguments only, not ('2.0',)*",
        ),
        (
            "kwire_cluster(node=5)",
            "*@pytest.mark.kwire_cluster: unknown argument 'node' (did you mean 'nodes'?)*",
        ),
    ],
)
def test_a_marker_s_unknown_argument_is_a_setup_error_that_names_it(
    pytester: pytest.Pytester, marker: str, message: str
) -> None:
    # a positional argument was ignored (the test ran on the defaults); a misspelt keyword was
    # Broker.__init__'s TypeError, deep in the plugin's traceback
    fixture = marker.split("(")[0]
    pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.{marker}
        def test_marked({fixture}):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message])
    result.stdout.no_fnmatch_line("*TypeError*")
    assert _kwire_threads() == []


def test_a_config_warning_points_at_the_test_not_at_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_typo="""
        import pytest

        @pytest.mark.kwire_broker(config={"num.partition": "4"})
        def test_marked(kwire_broker):
            pass

        def test_factory(kwire_broker_factory):
            kwire_broker_factory(config={"log.segment.byte": "1024"})
        """
    )
    # this suite's ``filterwarnings = error`` is in force in the inner session too
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "always::UserWarning")
    result.assert_outcomes(passed=2, warnings=2)
    result.stdout.fnmatch_lines(
        [
            "*test_typo.py:3: UserWarning: kwire_broker: The configuration 'num.partition' *",
            "*test_typo.py:7: UserWarning: kwire_broker: The configuration 'log.segment.byte' *",
        ]
    )
    result.stdout.no_fnmatch_line("*pytest_plugin.py*")


def test_a_session_broker_is_shared_by_the_session_s_tests_and_stopped_at_its_end(
    pytester: pytest.Pytester,
) -> None:
    # a function-scoped fixture cannot serve a session fixture (pytest's ScopeMismatch): one
    # broker for the whole run (per xdist worker) is kwire_session_broker
    pytester.makepyfile(
        test_shared="""
        import pytest

        @pytest.fixture(scope="session")
        def orders(kwire_session_broker):
            kwire_session_broker.create_topic("orders", partitions=2)
            return kwire_session_broker

        def test_first(orders, kwire_session_broker):
            assert orders is kwire_session_broker
            assert kwire_session_broker.topics()["orders"] == 2

        def test_second(kwire_session_broker, kwire_broker):
            assert kwire_session_broker.topics()["orders"] == 2
            assert kwire_broker.bootstrap != kwire_session_broker.bootstrap
            assert "orders" not in kwire_broker.topics()
            config = kwire_session_broker.config
            assert config["group.initial.rebalance.delay.ms"] == "0"
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert _kwire_threads() == []
