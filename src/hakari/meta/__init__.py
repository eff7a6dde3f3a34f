"""Meta-evaluation: agreement of metrics with human scores (levels, CIs, CAT/CIT/TFA).

Used elsewhere: `load_meta_input`, `meta_evaluate`, `print_meta`, `BootstrapSettings`.
"""

from hakari.meta.api import MetaInput, load_meta_input, meta_evaluate
from hakari.meta.correlation import BootstrapSettings
from hakari.meta.report import print_meta

__all__ = ["BootstrapSettings", "MetaInput", "load_meta_input", "meta_evaluate", "print_meta"]
