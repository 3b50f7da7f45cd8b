"""The official AMPS Python client's samples, fetched at test time (never stored here).

They are the client vendor's copyrighted files: the fixture downloads the client's
source distribution of one exact version with pip into the pytest cache and
extracts its ``samples/`` directory. ``SOWLIB_AMPS_SAMPLES`` may name an already
extracted ``samples/`` directory instead (offline runs), and
``SOWLIB_AMPS_SAMPLES_CACHE`` the download cache (the nox sessions keep it under
``.nox/``; without either, the pytest cache or a temporary directory). When the download fails
the tests fail in CI (``CI=true``) and are skipped elsewhere, with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

VERSION = "5.3.5.14"
PACKAGE = "amps-python-client"


def _fetch(cache: Path) -> Path:
    """``samples/`` of the client's sdist, downloaded into ``cache`` once."""
    samples = cache / f"{PACKAGE}-{VERSION}" / "samples"
    if (samples / "sample.xml").is_file():
        return samples
    command = [sys.executable, "-m", "pip", "download", f"{PACKAGE}=={VERSION}"]
    command += ["--no-deps", "--no-binary", ":all:", "--disable-pip-version-check", "-d"]
    subprocess.run([*command, str(cache)], check=True, capture_output=True, timeout=600)
    tarballs = sorted(cache.glob(f"{PACKAGE.replace('-', '_')}-{VERSION}.tar.gz"))
    tarballs += sorted(cache.glob(f"{PACKAGE}-{VERSION}.tar.gz"))
    if not tarballs:
        raise FileNotFoundError(f"pip download left no {PACKAGE} {VERSION} sdist in {cache}")
    with tarfile.open(tarballs[0]) as tar:
        members = [m for m in tar.getmembers() if "/samples/" in m.name and m.isfile()]
        tar.extractall(cache, members, filter="data")
    if not (samples / "sample.xml").is_file():
        raise FileNotFoundError(f"the {PACKAGE} {VERSION} sdist has no samples/sample.xml")
    return samples


@pytest.fixture(scope="session")
def samples_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extracted ``samples/`` directory of the official client's sdist."""
    given = os.environ.get("SOWLIB_AMPS_SAMPLES")
    if given:
        return Path(given).resolve()
    cache_api = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    if os.environ.get("SOWLIB_AMPS_SAMPLES_CACHE"):
        cache = Path(os.environ["SOWLIB_AMPS_SAMPLES_CACHE"]).resolve()  # runners run elsewhere
        cache.mkdir(parents=True, exist_ok=True)
    elif cache_api is not None:
        cache = Path(cache_api.mkdir("amps-python-client"))
    else:
        cache = tmp_path_factory.mktemp("amps-python-client")
    try:
        return _fetch(cache)
    except (OSError, subprocess.SubprocessError, tarfile.TarError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        reason = f"could not fetch {PACKAGE}=={VERSION} samples: {exc} {detail.decode()[-500:]}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
