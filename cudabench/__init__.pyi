# The package as type checkers see it: __init__.py loads the Python API on first use (its
# module __getattr__), which a checker would type as Any, letting a misspelt keyword to
# run() through. The stub names the API's own definitions. (A TYPE_CHECKING import in
# __init__.py would do the same, but the import-linter's layers would read it as the
# package importing the API, above every module that imports the package.)
from cudabench.api import Comparison as Comparison
from cudabench.api import Results as Results
from cudabench.api import TimingPolicy as TimingPolicy
from cudabench.api import compare as compare
from cudabench.api import load as load
from cudabench.api import run as run
from cudabench.api import run_suite as run_suite
from cudabench.api import stopped_results as stopped_results

__version__: str
__all__ = ["__version__", "Comparison", "Results", "TimingPolicy", "compare", "load", "run",
           "run_suite", "stopped_results"]
