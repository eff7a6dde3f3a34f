"""`hakari pfgen fetch-data`: the pfgen-bench data folder from the upstream repository at a
pinned commit, into hakari's cache.

Only `data/` and `LICENSE` are extracted, member by member (regular files only, no links,
no path leaving the target). The result is checked against the question files' hash that
every published `result.json` of that commit records, so a corrupted or different
download is refused instead of silently changing scores.
"""

from __future__ import annotations

import io
import tarfile
import urllib.request
from pathlib import Path, PurePosixPath

from hakari._util.atomic import staged_folder
from hakari.backends.cache import checked_cache_dir, default_cache_dir
from hakari.errors import HakariInputError
from hakari.pfgen.data import data_fingerprint

REPOSITORY = "pfnet-research/pfgen-bench"
PINNED_COMMIT = "03db7c4310c651171627ab327a4830d75d6bb1d0"
PINNED_FINGERPRINT = "13581cc9df3fb849ec9293bcec2b03de1a48ecc2"  # metadata_hash at that commit


def archive_url(commit: str = PINNED_COMMIT) -> str:
    return f"https://codeload.github.com/{REPOSITORY}/tar.gz/{commit}"


def data_root(cache_dir: Path | None, commit: str = PINNED_COMMIT) -> Path:
    return (cache_dir or default_cache_dir()) / "pfgen" / "data" / commit


def default_data_dir(cache_dir: Path | None) -> Path | None:
    """The fetched data folder, when `fetch-data` has been run."""
    path = data_root(cache_dir) / "data"
    return path if (path / "Q01.json").is_file() else None


def _download(url: str, timeout: float) -> bytes:
    if "://" not in url:  # a local archive
        try:
            return Path(url).read_bytes()
        except OSError as exc:
            raise HakariInputError(
                f"cannot read the archive: {exc.strerror or exc}", file=url, field="--url"
            ) from None
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bytes(response.read())
    except (OSError, ValueError) as exc:  # ValueError: a URL urllib cannot parse
        raise HakariInputError(f"download failed: {exc}", file=url, field="--url") from None


def _wanted(name: str) -> PurePosixPath | None:
    """The path inside the repository for the members we keep (archives have one top
    folder, `pfgen-bench-<commit>/`)."""
    parts = PurePosixPath(name).parts
    if len(parts) < 2 or any(p in ("..", "") for p in parts) or parts[0].startswith("/"):
        return None
    inner = PurePosixPath(*parts[1:])
    if inner.parts[0] == "data" or inner == PurePosixPath("LICENSE"):
        return inner
    return None


def extract_data(archive: bytes, target: Path, *, source: str) -> int:
    """Extract `data/**` and `LICENSE` into `target`; returns the number of files."""
    count = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
            for member in tar:
                inner = _wanted(member.name)
                if inner is None or not member.isfile():
                    continue
                out = target.joinpath(*inner.parts)
                out.parent.mkdir(parents=True, exist_ok=True)
                handle = tar.extractfile(member)
                assert handle is not None
                out.write_bytes(handle.read())
                count += 1
    except tarfile.TarError as exc:
        raise HakariInputError(f"not a readable tar archive: {exc}", file=source) from exc
    return count


def fetch_data(
    cache_dir: Path | None = None,
    *,
    commit: str = PINNED_COMMIT,
    url: str | None = None,
    expected_fingerprint: str | None = PINNED_FINGERPRINT,
    timeout: float = 120.0,
    force: bool = False,
) -> Path:
    """Download (unless present) and return the data folder."""
    root = data_root(checked_cache_dir(cache_dir), commit)
    if not force and (root / "data" / "Q01.json").is_file():
        return root / "data"
    source = url or archive_url(commit)
    archive = _download(source, timeout)
    with staged_folder(root) as staging:  # replaces an older download (--force)
        if extract_data(archive, staging, source=source) == 0 or not (staging / "data").is_dir():
            raise HakariInputError("the archive has no data/ folder", file=source)
        fingerprint = data_fingerprint(staging / "data")
        if expected_fingerprint is not None and fingerprint != expected_fingerprint:
            raise HakariInputError(
                f"the question files hash to {fingerprint}, expected {expected_fingerprint} "
                f"for commit {commit}",
                file=source,
            )
    return root / "data"
