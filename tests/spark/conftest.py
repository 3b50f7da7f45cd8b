"""One local SparkSession per test run, shared by every Spark test.

pyspark or Java missing: the tests skip locally with the reason, and fail
when the CI environment variable is set (a CI run must never go green by
skipping the whole Spark suite).
"""

from __future__ import annotations

import os
import random
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_PANDAS_WARNING = "ignore:PySpark does not yet fully support pandas:FutureWarning"


def _missing() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install sowlib[spark])"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime on PATH and JAVA_HOME is unset"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            # pyspark warns about the pandas version on first use; not our concern
            item.add_marker(pytest.mark.filterwarnings(_PANDAS_WARNING))
            item.add_marker(pytest.mark.filterwarnings("ignore::DeprecationWarning:pyspark"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The shared ``local[2]`` SparkSession."""
    reason = _missing()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"Spark tests cannot run in CI: {reason}")
        pytest.skip(reason)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from sowlib.spark import local_session

    session = local_session(2, app_name="sowlib-tests", conf={"spark.driver.memory": "1g"})
    yield session
    session.stop()


def orders(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """The standard workload: ``n`` orders, 500 symbols, 8 regions; seeded."""
    rng = random.Random(seed)
    regions = [f"R{i}" for i in range(8)]
    out = [
        {
            "orderId": i,
            "customerId": rng.randrange(2000),
            "symbol": f"S{rng.randrange(500):03d}",
            "price": round(rng.uniform(1, 500), 2),
            "qty": rng.randrange(1, 1000),
            "side": rng.choice(("B", "S")),
            "region": rng.choice(regions),
            "ts": 1_700_000_000 + i,
        }
        for i in range(n)
    ]
    return out


@pytest.fixture(scope="session")
def workload() -> list[dict[str, Any]]:
    """20,000 standard orders."""
    return orders(20_000)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on a free loopback port, for the whole run; sets the standard
    AWS variables (endpoint, test credentials, region) that s3fs and boto read."""
    import socket

    from moto.server import ThreadedMotoServer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in _AWS}
    os.environ.update(
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
    )
    try:
        yield endpoint
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


_AWS = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")


@pytest.fixture
def bucket(s3_endpoint: str, request: pytest.FixtureRequest) -> str:
    """A new bucket on the moto server; its ``s3://`` URL."""
    import uuid

    import s3fs

    name = f"t-{uuid.uuid4().hex[:20]}"
    s3fs.S3FileSystem(skip_instance_cache=True).mkdir(name)
    return f"s3://{name}"


@pytest.fixture
def s3_options(s3_endpoint: str) -> dict[str, str]:
    """fsspec options naming the moto server: Spark's Python workers started before the
    endpoint variables were set, so the tests pass it explicitly (as a cluster would
    pass a non-default endpoint)."""
    return {"endpoint_url": s3_endpoint, "key": "testing", "secret": "testing"}
