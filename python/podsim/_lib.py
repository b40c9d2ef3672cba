"""libpodsim.so through ctypes: where it is found and the podsim_api_result it fills.

The struct mirrors scenarios/api.h; PODSIM_API_PATH and PODSIM_API_TEXT are its sizes.
"""
import ctypes
import os

PODSIM_API_PATH = 4096
PODSIM_API_TEXT = 16384


class ApiResult(ctypes.Structure):
    _fields_ = [
        ("status", ctypes.c_int),
        ("line", ctypes.c_int),
        ("col", ctypes.c_int),
        ("file", ctypes.c_char * PODSIM_API_PATH),
        ("key", ctypes.c_char * 256),
        ("out_dir", ctypes.c_char * PODSIM_API_PATH),
        ("run_hash", ctypes.c_char * 24),
        ("output", ctypes.c_char * PODSIM_API_TEXT),
        ("messages", ctypes.c_char * PODSIM_API_TEXT),
    ]


def library_path():
    """PODSIM_LIB when set (a libpodsim.so built elsewhere), else the one installed beside this file."""
    env = os.environ.get("PODSIM_LIB")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libpodsim.so")


_lib = None


def lib():
    """The loaded library, its three calls typed (loaded on first use, so `import podsim` works
    without it and the error says how to build it)."""
    global _lib
    if _lib is None:
        path = library_path()
        if not os.path.exists(path):
            raise ImportError(f"podsim: no libpodsim.so at {path}: run `make python` at the repository's root "
                              "(then `pip install ./python`), or set PODSIM_LIB to a libpodsim.so")
        so = ctypes.CDLL(path)
        strings = ctypes.POINTER(ctypes.c_char_p)
        result = ctypes.POINTER(ApiResult)
        so.podsim_api_run.argtypes = [ctypes.c_char_p, strings, ctypes.c_char_p, result]
        so.podsim_api_check.argtypes = [ctypes.c_char_p, strings, result]
        so.podsim_api_plan.argtypes = [ctypes.c_char_p, strings, ctypes.c_char_p, ctypes.c_int, result]
        for f in (so.podsim_api_run, so.podsim_api_check, so.podsim_api_plan):
            f.restype = ctypes.c_int
        _lib = so
    return _lib


def overrides_array(overrides):
    """A NULL-terminated char *[] of KEY=VALUE texts, from a dict ({'training.steps': 20}) or a list."""
    if overrides is None:
        items = []
    elif isinstance(overrides, dict):
        items = [f"{k}={_yaml_scalar(v)}" for k, v in overrides.items()]
    else:
        items = [str(o) for o in overrides]
    arr = (ctypes.c_char_p * (len(items) + 1))()
    for i, text in enumerate(items):
        arr[i] = text.encode()
    arr[len(items)] = None
    return arr


def _yaml_scalar(v):
    """A Python value as --set's YAML text: booleans as YAML writes them, the rest as str()."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
