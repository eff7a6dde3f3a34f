"""Meta-evaluation: agreement of metrics with human scores (levels, CIs, CAT/CIT/TFA).

Used elsewhere: `load_meta_input`, `meta_evaluate`, `print_meta`, `BootstrapSettings`.

Modules: `api.py` (`hakari meta` as one JSON document), `correlation.py` (agreement at the
three levels of the literature), `ifteval.py` (IFTEval's Table 1 numbers as its code
computes them), `report.py` (the printed form).
"""

from hakari.meta.api import MetaInput, load_meta_input, meta_evaluate
from hakari.meta.correlation import BootstrapSettings
from hakari.meta.report import print_meta

__all__ = ["BootstrapSettings", "MetaInput", "load_meta_input", "meta_evaluate", "print_meta"]
