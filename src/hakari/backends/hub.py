"""Is a hub model there before the run starts? One metadata request, bounded in time.

Without this, a hub id that is neither in the local Hugging Face cache nor reachable
(no network, a typo, a private model) is found out when the model loads, after
transformers' own retries (~25-60 s here), and a cached model on a machine without a
network pays the same wait before transformers falls back to the cache. `hub_model` asks
the hub once (`huggingface_hub.model_info`, `timeout` seconds) and answers:

* reachable and the model (and revision) exists → load normally (it may download);
* not reachable, or `HF_HUB_OFFLINE` set, but the model is in the local cache → load with
  `local_files_only` (no network wait);
* otherwise one clear `ModelLoadError` that says which of the three it is.

Results are remembered per process: preflight and loading ask once.
"""

from __future__ import annotations

import functools
import logging
import re
from pathlib import Path

from hakari.errors import ModelLoadError, one_line

log = logging.getLogger(__name__)
PROBE_TIMEOUT = 5.0  # seconds for the one metadata request


@functools.cache
def hub_model(repo_id: str, revision: str | None) -> bool:
    """Whether `repo_id` must load from the local cache only (True) or may use the hub
    (False); raises `ModelLoadError` when it can do neither."""
    from huggingface_hub import constants, model_info, try_to_load_from_cache
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    name = f"{repo_id}@{revision}" if revision else repo_id
    cached = isinstance(try_to_load_from_cache(repo_id, "config.json", revision=revision), str)
    offline = getattr(constants, "is_offline_mode", lambda: constants.HF_HUB_OFFLINE)
    if offline():
        if cached:
            return True
        raise ModelLoadError(
            f"hf:{name} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set: "
            "download it first (hf download ...) or pass hf:<local folder>",
            field="--model",
        )
    try:
        model_info(repo_id, revision=revision, timeout=PROBE_TIMEOUT)
        return False
    except RevisionNotFoundError:
        raise ModelLoadError(
            f"hf:{name}: the hub has model {repo_id!r} but no revision {revision!r}",
            field="--model",
        ) from None
    except RepositoryNotFoundError:
        raise ModelLoadError(
            f"hf:{name}: no such model on the hub (a private or gated one needs HF_TOKEN)",
            field="--model",
        ) from None
    except Exception as exc:  # no network, DNS, a timeout, a 5xx (HfHubHTTPError)
        if cached:
            log.warning("the hub cannot be reached (%s): %s loads from the local cache",
                        one_line(exc, 100), name)  # fmt: skip
            return True
        raise ModelLoadError(
            f"hf:{name} is not in the local Hugging Face cache and the hub cannot be reached "
            f"({type(exc).__name__}: {one_line(exc, 120)}); download it where there is a "
            "network (hf download ...), set HF_ENDPOINT for a mirror, or pass "
            "hf:<local folder>",
            field="--model",
        ) from None


def cached_commit(repo_id: str, revision: str | None, cache_dir: str | None = None) -> str | None:
    """The commit that `repo_id@revision` resolved to in the local Hugging Face cache (the
    snapshot folder a load just read), or None when no snapshot holds its config.json.

    Model identities need it: transformers ≥ 5.18 no longer keeps `config._commit_hash`,
    so a hub id asked for at a branch (`main`) would otherwise be recorded without the
    commit whose weights produced the answers."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache_dir, revision=revision)
    if not isinstance(found, str):
        return None
    snapshot = Path(found).parent.name
    return snapshot if re.fullmatch(r"[0-9a-f]{40}", snapshot) else None


@functools.cache
def hub_dataset_problem(repo_id: str, revision: str | None) -> str | None:
    """Why the hub cannot serve dataset `repo_id` now, in a few words, or None when it
    answers for it (one metadata request, `PROBE_TIMEOUT` seconds). Asked before
    `datasets.load_dataset`, which otherwise retries for half a minute without a
    network; where this answers, the load should use the local cache only."""
    from huggingface_hub import constants, dataset_info
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    offline = getattr(constants, "is_offline_mode", lambda: constants.HF_HUB_OFFLINE)
    if offline():
        return "HF_HUB_OFFLINE is set"
    try:
        dataset_info(repo_id, revision=revision, timeout=PROBE_TIMEOUT)
        return None
    except RevisionNotFoundError:
        return f"the hub has no revision {revision!r} of it"
    except RepositoryNotFoundError:
        return "no such dataset on the hub (a private or gated one needs HF_TOKEN)"
    except Exception as exc:  # no network, DNS, a timeout, a 5xx
        return f"the hub cannot be reached ({type(exc).__name__}: {one_line(exc, 100)})"
