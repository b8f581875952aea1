"""Which pickle globals a model file may import: one table per framework, extended by the user's entries.

An entry is ``module.name`` (exactly that global), or ``module:name`` with ``*`` wildcards on either side
(``sklearn.*:[A-Z]*``: every class-like name in sklearn's modules). A wildcard name never matches a dotted
name (``Class.method``, reached through ``getattr`` at load) or a dunder; only an exact entry does. Exact
entries are what a user adds (``security.artifacts.allow_globals``): the fix an error names.

The tables allow what the frameworks' own pickles need and nothing that runs a command, opens a file or
evaluates code when called with arguments of the file's choosing: classes whose construction only stores
state (estimators, boosters, tensors, dtypes) and the reconstructors NumPy, joblib and torch write. Their
source: what ``joblib.dump`` / ``pickle.dump`` write for each framework's models (tests/packaging), and for
torch the globals ``torch.load(weights_only=True)`` allows (torch/_weights_only_unpickler.py). Not on them:
``builtins.eval``/``exec``/``getattr``/``__import__``, ``os``/``posix``/``subprocess``, ``functools.partial``,
and sklearn's test and dataset helpers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from smkit.pickle_scan import Global

_TORCH_DTYPES = [
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "complex32",
    "complex64",
    "complex128",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "int8",
    "int16",
    "int32",
    "int64",
    "bool",
    "qint8",
    "quint8",
    "qint32",
    "quint4x2",
    "float8_e4m3fn",
    "float8_e5m2",
    "half",
    "float",
    "double",
    "long",
    "int",
    "short",
    "cfloat",
    "cdouble",
]
_TORCH_STORAGES = [
    "Float",
    "Double",
    "Half",
    "BFloat16",
    "Long",
    "Int",
    "Short",
    "Char",
    "Byte",
    "Bool",
    "ComplexFloat",
    "ComplexDouble",
    "QInt8",
    "QUInt8",
    "QInt32",
    "QUInt4x2",
    "Untyped",
]

_NUMPY_SCALARS = [
    *(
        f"{kind}{bits}"
        for kind in ("float", "int", "uint")
        for bits in (8, 16, 32, 64)
        if f"{kind}{bits}" != "float8"
    ),
    *(
        [
            "complex64",
            "complex128",
            "longdouble",
            "clongdouble",
            "bool_",
            "object_",
            "str_",
            "bytes_",
            "void",
            "datetime64",
            "timedelta64",
        ]
    ),
    *(
        [
            "intc",
            "uintc",
            "intp",
            "uintp",
            "byte",
            "ubyte",
            "short",
            "ushort",
            "longlong",
            "ulonglong",
            "half",
            "single",
            "double",
            "csingle",
            "cdouble",
        ]
    ),
    *(
        [
            "generic",
            "number",
            "integer",
            "signedinteger",
            "unsignedinteger",
            "inexact",
            "floating",
            "complexfloating",
            "bool",
        ]
    ),
]
ALLOW: dict[str, tuple[str, ...]] = {
    "python": (
        "builtins:set",
        "builtins:frozenset",
        "builtins:bytearray",
        "builtins:complex",
        "builtins:slice",
        "builtins:range",
        "builtins:object",
        "__builtin__:set",
        "copyreg:_reconstructor",
        "copy_reg:_reconstructor",
        "_codecs:encode",
        "collections:OrderedDict",
        "collections:defaultdict",
        "collections:Counter",
        "collections:deque",
        "datetime:datetime",
        "datetime:date",
        "datetime:time",
        "datetime:timedelta",
        "datetime:timezone",
        "decimal:Decimal",
        "fractions:Fraction",
        "uuid:UUID",
    ),
    "numpy": (
        "numpy:ndarray",
        "numpy:dtype",
        "numpy.core.multiarray:_reconstruct",
        "numpy._core.multiarray:_reconstruct",
        "numpy.core.multiarray:scalar",
        "numpy._core.multiarray:scalar",
        "numpy.core.numeric:_frombuffer",
        "numpy._core.numeric:_frombuffer",
        "numpy.dtypes:[A-Z]*",
        "numpy.random._pickle:__*_ctor",
        "numpy.random.*:[A-Z]*",
        "numpy.random.*:__pyx_unpickle_*",
        # Scalar types stored as parameters (OneHotEncoder(dtype=np.float64), SimpleImputer, ...).
        *(f"numpy:{name}" for name in _NUMPY_SCALARS),
        "numpy.ma.core:_mareconstruct",
        "numpy.ma.core:MaskedArray",
    ),
    "joblib": ("joblib.numpy_pickle:NumpyArrayWrapper",),
    "scikit-learn": (
        "sklearn.*:[A-Z]*",
        "sklearn.*:_[A-Z]*",  # private classes: _BinMapper of HistGradientBoosting, ...
        "sklearn.*:__pyx_unpickle_*",
        "sklearn.feature_selection._univariate_selection:f_classif",
        "sklearn.feature_selection._univariate_selection:f_regression",
        "sklearn.feature_selection._univariate_selection:chi2",
        "sklearn.feature_selection._univariate_selection:r_regression",
        "sklearn.feature_selection._mutual_info:mutual_info_classif",
        "sklearn.feature_selection._mutual_info:mutual_info_regression",
        "sklearn.metrics._scorer:_passthrough_scorer",
    ),
    "scipy": ("scipy.sparse.*:[a-z]*_matrix", "scipy.sparse.*:[a-z]*_array", "scipy.sparse.*:[A-Z]*"),
    "pandas": (
        "pandas.*:[A-Z]*",
        "pandas._libs.*:__pyx_unpickle_*",
        "pandas._libs.internals:_unpickle_block",
        "pandas.core.internals.blocks:new_block",
        "pandas.core.arrays.*:[A-Z]*",
        "pandas._libs.tslibs.*:_[a-z]*_unpickle",
        "pandas.core.indexes.base:_new_Index",
        "pandas._libs.arrays:__pyx_unpickle_NDArrayBacked",
    ),
    "xgboost": ("xgboost.core:Booster", "xgboost.sklearn:XGB*", "xgboost.sklearn:_SklObjWProto"),
    "lightgbm": ("lightgbm.basic:Booster", "lightgbm.sklearn:LGBM*", "lightgbm.sklearn:_*Function*"),
    "torch": (
        "torch._utils:_rebuild_tensor",
        "torch._utils:_rebuild_tensor_v2",
        "torch._utils:_rebuild_tensor_v3",
        "torch._utils:_rebuild_parameter",
        "torch._utils:_rebuild_parameter_with_state",
        "torch._utils:_rebuild_qtensor",
        "torch._utils:_rebuild_sparse_tensor",
        "torch._utils:_rebuild_meta_tensor_no_storage",
        "torch._utils:_rebuild_nested_tensor",
        "torch._utils:_rebuild_device_tensor_from_numpy",
        "torch.serialization:_get_layout",
        "torch:Size",
        "torch:device",
        "torch:Tensor",
        "torch.nn.parameter:Parameter",
        "torch:per_tensor_affine",
        "torch:per_channel_affine",
        "torch:strided",
        "torch:sparse_coo",
        "torch.storage:UntypedStorage",
        "torch.storage:TypedStorage",
        *(f"torch:{name}" for name in _TORCH_DTYPES),
        *(f"torch:{name}Storage" for name in _TORCH_STORAGES),
        # TorchScript archives (torch.jit.save): their classes are TorchScript types, resolved by
        # torch.jit.load's own unpickler, never imported as Python.
        "__torch__:*",
        "__torch__.*:*",
        "torch.jit._pickle:build_*",
        "torch.jit._pickle:restore_type_tag",
    ),
}

# Never matched by a wildcard entry: helpers that run code, read files or reach the network when called.
NEVER_BY_WILDCARD = (
    "sklearn.utils._testing",
    "sklearn.utils.estimator_checks",
    "sklearn.datasets",
    "sklearn.externals",
)
ENTRY = re.compile(r"^[A-Za-z_*][\w.*]*(:[\w*\[\]\-]+)?$")


@dataclass(frozen=True)
class Allow:
    """Parsed allow entries; ``matches`` decides a global."""

    entries: tuple[tuple[str, str, bool], ...]  # (module pattern, name pattern, exact)

    @classmethod
    def of(cls, extra: Iterable[str] = ()) -> Allow:
        """Every framework table plus the user's ``extra`` entries (checked with :func:`entry_problem`)."""
        parsed = [_parse(e) for table in ALLOW.values() for e in table]
        parsed.extend(_parse(e) for e in extra)
        return cls(tuple(parsed))

    def matches(self, found: Global) -> bool:
        return any(_match(entry, found) for entry in self.entries)


def entry_problem(entry: str) -> str | None:
    """Why ``entry`` is not an allow entry, or None."""
    if not ENTRY.match(entry):
        return "is not module.name or module:name (letters, digits, _, . and * wildcards)"
    if ":" not in entry and "." not in entry:
        return "names no module: write module.name, e.g. mypackage.model.MyModel"
    if ":" not in entry and "*" in entry:
        return "uses a wildcard without ':' between module and name: write module:name, e.g. mypackage.*:*"
    return None


def _parse(entry: str) -> tuple[str, str, bool]:
    if ":" in entry:
        module, _, name = entry.partition(":")
    else:
        module, _, name = entry.rpartition(".")
    exact = not any(c in entry for c in "*[")
    return module, name, exact


def _match(entry: tuple[str, str, bool], found: Global) -> bool:
    module, name, exact = entry
    if exact:
        return found.module == module and found.name == name
    if "." in found.name or (found.name.startswith("__") and found.name.endswith("__")):
        return False
    if any(found.module == m or found.module.startswith(m + ".") for m in NEVER_BY_WILDCARD):
        return False
    return fnmatchcase(found.module, module) and fnmatchcase(found.name, name)


# What a refused global is better known as (os.system pickles as posix.system on Linux).
ALIASES = {"posix": "os", "nt": "os", "__builtin__": "builtins"}


def known_as(found: Global) -> str:
    """``posix.system (os.system)``: the global as written, and the name a reader knows it by."""
    alias = ALIASES.get(found.module)
    return f"{found} ({alias}.{found.name})" if alias else str(found)
