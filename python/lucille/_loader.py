"""Finds the Python class named by a config's ``class: "module:Class"`` or ``"dir/file.py:Class"``.

Called by the Rust core. As with every relative path in a config, a file is looked up in the
working directory first, then beside the config file; a module is imported from the working
directory, the config's folder or `sys.path`.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import os
import sys
import types
from typing import Any, Optional


def load_object(reference: str, base_dir: Optional[str] = None) -> Any:
    module_part, sep, attr = reference.rpartition(":")
    if not sep or not module_part or not attr:
        raise ValueError(f"{reference!r} is not of the form 'module:Class' or 'path/file.py:Class'")
    for folder in (base_dir, os.getcwd()):
        if folder and folder not in sys.path:
            sys.path.insert(0, folder)
    if module_part.endswith(".py") or "/" in module_part or os.sep in module_part:
        path = module_part
        if base_dir and not os.path.isabs(path) and not os.path.isfile(path):
            path = os.path.join(base_dir, path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"Python file {path!r} (from {reference!r}) does not exist")
        name = "lucille_user_" + os.path.splitext(os.path.basename(path))[0]
        module = sys.modules.get(name)
        if module is None or getattr(module, "__file__", None) != os.path.abspath(path):
            spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load Python file {path!r}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_part)
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AttributeError(f"{module_part!r} has no attribute {attr!r}") from None
    return obj


# Objects handed to ``lucille.run(stages=..., connector=..., indexer=...)``: the run's config names
# each as ``lucille._loader:given.oN``, so the Rust core finds them as it finds any class, and
# uses the object itself instead of making one.
given = types.SimpleNamespace()
_given_count = itertools.count(1)


def register_given(obj: Any) -> str:
    """Names ``obj`` for one run; `release_given` forgets it afterwards."""
    key = f"o{next(_given_count)}"
    setattr(given, key, obj)
    try:
        # How many worker threads use the object: start() runs for the first, stop() for the last.
        obj._lucille_users = 0
    except AttributeError:  # __slots__: start() and stop() then run once per worker thread
        pass
    return f"lucille._loader:given.{key}"


def release_given(reference: str) -> None:
    key = reference.rpartition(".")[2]
    if hasattr(given, key):
        delattr(given, key)


def _check(reference: str, obj: Any, method: str, what: str) -> Any:
    # A class, or (from lucille.run(...)) an object to use as it is.
    if not callable(getattr(obj, method, None)):
        raise TypeError(f"{reference!r} is not a {what} class (a class with a {method} method)")
    return obj


def load_stage_class(reference: str, base_dir: Optional[str] = None) -> Any:
    return _check(reference, load_object(reference, base_dir), "process_document", "stage")


def load_connector_class(reference: str, base_dir: Optional[str] = None) -> Any:
    return _check(reference, load_object(reference, base_dir), "execute", "connector")


def load_indexer_class(reference: str, base_dir: Optional[str] = None) -> Any:
    return _check(reference, load_object(reference, base_dir), "send_batch", "indexer")


# Modules made from configured scripts (PythonConnector / PythonIndexer), by file name and code,
# so that validation and the run share one class and the code runs once.
_script_modules: dict[tuple[str, str], Any] = {}


def load_script_class(source: str, filename: str, key: str, class_name: Optional[str], kind: str) -> type:
    """The ``lucille.Connector`` / ``lucille.Indexer`` subclass (``kind``: "connector" or
    "indexer") that a configured script defines: the one named ``class_name``, else the only
    one it defines. Problems are ``StageConfigError`` at the key they concern."""
    from lucille._python_stages import StageConfigError, _syntax_error
    from lucille.connector import Connector
    from lucille.indexer import Indexer

    base: type = {"connector": Connector, "indexer": Indexer}[kind]
    module = _script_modules.get((filename, source))
    if module is None:
        try:
            code = compile(source, filename, "exec")
        except SyntaxError as e:
            raise _syntax_error(key, e) from None
        module = types.ModuleType(f"lucille_script_{len(_script_modules) + 1}")
        module.__file__ = filename
        exec(code, module.__dict__)
        _script_modules[(filename, source)] = module
    if class_name:
        cls = getattr(module, class_name, None)
        if not isinstance(cls, type) or not issubclass(cls, base):
            raise StageConfigError(
                "className", f"the script defines no lucille.{base.__name__} subclass named {class_name!r}"
            )
        return cls
    found = [
        v for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, base) and v is not base and v.__module__ == module.__name__
    ]
    if len(found) != 1:
        names = ", ".join(sorted(c.__name__ for c in found)) or "none"
        raise StageConfigError(
            "className" if found else key,
            f"the script must define one lucille.{base.__name__} subclass, or className must name "
            f"one (found: {names})",
        )
    return found[0]
