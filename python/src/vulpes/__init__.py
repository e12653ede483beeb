"""vulpes from Python: training runs and backtests (train, backtest) with pandas results, a
checkpoint's network in PyTorch (load) and ONNX (export_onnx), and Gymnasium environments over the
C market environments (VectorEnv, VulpesEnv), all through the shared library libvulpes.so.
Errors of the library raise VulpesError with its message. docs/python.md describes the API."""
from ._lib import VulpesError, library_path

__all__ = ["VulpesError", "library_path", "train", "backtest", "read_run", "RunResult", "load", "CModel",
           "VulpesNet", "VulpesPPONet", "export_onnx", "VectorEnv", "VulpesEnv"]
__all__ += ["VulpesIQLNet"]

__version__ = "0.1.0"

_LAZY = {
    "train": "jobs", "backtest": "jobs", "read_run": "jobs", "RunResult": "jobs",
    "load": "model", "CModel": "model", "VulpesNet": "model", "VulpesPPONet": "model",
    "export_onnx": "onnx_export",
    "VectorEnv": "env", "VulpesEnv": "env",
    "VulpesIQLNet": "model",
}


def __getattr__(name):
    # torch, gymnasium and pandas are imported when their part is first used
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'vulpes' has no attribute {name!r}")
