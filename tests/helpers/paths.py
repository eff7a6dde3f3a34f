"""Where the tests find the repository, its stand-ins and `../shared` (the data CI puts
beside the checkout; tests that need it skip with a reason when it is absent), and the
one way a test imports a script of the repository that is not a package module."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
STAND_INS = REPO / "tests" / "stand_ins"
FIXTURES = REPO / "tests" / "fixtures"
# a results.json of an older format (the published Japanese run before issue 7)
OLDER_RESULTS = FIXTURES / "older_results" / "japanese-zero-shot.previous.results.json"


def script_module(path: Path, name: str) -> ModuleType:
    """The Python file `path` (a benchmark, a script) imported as a module named `name`,
    registered in `sys.modules` (dataclasses of the file look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
