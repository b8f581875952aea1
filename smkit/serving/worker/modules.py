"""Importing a model's ``code/<program>`` module, shared or isolated.

Single-model mode does what the toolkit does: ``model_dir/code`` goes on ``sys.path`` and the module is
imported under its own name (``inference``). Multi-model mode imports every model's module in isolation
(fixing the toolkit's defect of never importing it, docs/handler-semantics.md): the module gets a private name, and
helper modules from the model's ``code/`` directory (``import helper``) are taken out of ``sys.modules``
after the import and put back only while that model's hooks run, so two models whose code directories
both hold a ``helper.py`` each see their own. A package of the model's installed requirements that this
interpreter provides itself (numpy, installed again into the model's folder as a dependency of LightGBM)
is the interpreter's copy: a second copy of a compiled package in one process breaks it (numpy's
``__getattr__`` recurses between the two copies' submodules).

Interpreters a handler starts (joblib's ``loky`` workers, ``multiprocessing`` with ``spawn``,
``subprocess.run([sys.executable, ...])``) do not inherit ``sys.path``: the model's ``code/`` directory and
its installed requirements are also put on ``PYTHONPATH`` (in shared mode for the worker's lifetime, in
isolated mode while that model's hooks run), as the toolkit puts ``code/`` there and installs the
requirements into site-packages (docs/handler-semantics.md).
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from types import ModuleType

from smkit.hosting.childpath import PYTHONPATH, child_path

_counter = itertools.count(1)


def _top_level_names(directory: str) -> set[str]:
    """Module names a directory provides: ``x.py``, ``x/`` packages, extension modules."""
    names: set[str] = set()
    try:
        entries = os.listdir(directory)
    except OSError:
        return names
    for entry in entries:
        path = os.path.join(directory, entry)
        if entry.endswith(".py"):
            names.add(entry[:-3])
        elif entry.endswith((".so", ".pyd")):
            names.add(entry.split(".", 1)[0])
        elif os.path.isdir(path) and entry.isidentifier():
            names.add(entry)
    return names


def _provided_here(names: set[str]) -> set[str]:
    """The names this interpreter imports from its own paths; each is imported now (one copy per process)."""
    provided: set[str] = set()
    for name in sorted(names):
        if name not in sys.modules:
            try:
                found = importlib.util.find_spec(name) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                continue
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - unusable here: the model's own copy is imported instead
                continue
        provided.add(name)
    return provided


def _is_under(module: ModuleType | None, roots: tuple[str, ...]) -> bool:
    location = getattr(module, "__file__", None)
    if not location:
        paths = getattr(module, "__path__", None)
        location = next(iter(paths), None) if paths is not None else None
    if not location:
        return False
    location = os.path.realpath(location)
    return any(location == root or location.startswith(root + os.sep) for root in roots)


@dataclass
class UserModule:
    """A model's imported handler module (or None when the file does not exist).

    In isolated mode :meth:`active` makes the model's private modules and paths visible for the
    duration of a hook call; in shared mode it does nothing.
    """

    module: ModuleType | None
    roots: tuple[str, ...]
    isolated: bool
    private: dict[str, ModuleType] = field(default_factory=dict)
    shadowed: frozenset[str] = frozenset()

    @contextmanager
    def active(self) -> Iterator[None]:
        """Run the body with this model's code directory and helper modules in place."""
        if not self.isolated:
            yield
            return
        saved = _swap_in(self.roots, self.private, self.shadowed)
        previous = os.environ.get(PYTHONPATH)
        os.environ[PYTHONPATH] = child_path(self.roots, previous)
        count = len(sys.modules)
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop(PYTHONPATH, None)
            else:
                os.environ[PYTHONPATH] = previous
            _swap_out(self.roots, self.private, saved, scan=len(sys.modules) != count)


def _swap_in(
    roots: tuple[str, ...], private: dict[str, ModuleType], shadowed: frozenset[str]
) -> dict[str, ModuleType | None]:
    saved: dict[str, ModuleType | None] = {}
    for name in shadowed | private.keys():
        saved[name] = sys.modules.pop(name, None)
    sys.modules.update(private)
    sys.path[0:0] = roots
    return saved


def _swap_out(
    roots: tuple[str, ...],
    private: dict[str, ModuleType],
    saved: dict[str, ModuleType | None],
    *,
    scan: bool,
) -> None:
    for root in roots:
        with suppress(ValueError):
            sys.path.remove(root)
    if scan:
        for name, module in list(sys.modules.items()):
            if name not in private and _is_under(module, roots):
                private[name] = module
    for name in private:
        sys.modules.pop(name, None)
    for name, previous in saved.items():
        if previous is not None:
            sys.modules[name] = previous


def import_user_module(
    code_dir: str, program: str, *, isolated: bool, extra_paths: tuple[str, ...] = ()
) -> UserModule:
    """Import ``code_dir/program``; exceptions raised by the module itself propagate.

    ``extra_paths`` are directories with the model's own installed requirements; they are searched
    right after ``code_dir``.
    """
    module_name = program[:-3] if program.endswith(".py") else program
    code_dir = os.path.realpath(code_dir)
    roots = (code_dir, *(os.path.realpath(p) for p in extra_paths))
    source = os.path.join(code_dir, program)
    if not isolated:
        for root in reversed(roots):
            if root not in sys.path:
                sys.path.insert(0, root)
        os.environ[PYTHONPATH] = child_path(roots, os.environ.get(PYTHONPATH))
        importlib.invalidate_caches()
        if not os.path.isfile(source):
            return UserModule(None, roots, isolated=False)
        return UserModule(importlib.import_module(module_name), roots, isolated=False)
    if not os.path.isfile(source):
        return UserModule(None, roots, isolated=True)
    installed = set().union(*(_top_level_names(root) for root in roots[1:]))
    shared = _provided_here(installed)
    shadowed = frozenset((_top_level_names(code_dir) | installed) - shared)
    private: dict[str, ModuleType] = {}
    saved = _swap_in(roots, private, shadowed)
    importlib.invalidate_caches()
    unique = f"smkit_model_{next(_counter)}_{module_name}"
    try:
        spec = importlib.util.spec_from_file_location(unique, source)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {source}")
        module = importlib.util.module_from_spec(spec)
        private[unique] = module
        sys.modules[unique] = module
        spec.loader.exec_module(module)
    finally:
        _swap_out(roots, private, saved, scan=True)
    return UserModule(module, roots, isolated=True, private=private, shadowed=shadowed)


def forget(user_module: UserModule) -> None:
    """Drop the references an unloaded model's modules hold in this process."""
    user_module.private.clear()
    user_module.module = None
