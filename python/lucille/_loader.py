"""Finds the Python class named by a config's ``class: "module:Class"`` or ``"dir/file.py:Class"``.

Called by the Rust core. As with every relative path in a config, a file is looked up in the
working directory first, then beside the config file; a module is imported from the working
directory, the config's folder or `sys.path`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
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


def load_stage_class(reference: str, base_dir: Optional[str] = None) -> type:
    cls = load_object(reference, base_dir)
    if not isinstance(cls, type) or not callable(getattr(cls, "process_document", None)):
        raise TypeError(f"{reference!r} is not a stage class (a class with a process_document method)")
    return cls


def load_connector_class(reference: str, base_dir: Optional[str] = None) -> type:
    cls = load_object(reference, base_dir)
    if not isinstance(cls, type) or not callable(getattr(cls, "execute", None)):
        raise TypeError(f"{reference!r} is not a connector class (a class with an execute method)")
    return cls


def load_indexer_class(reference: str, base_dir: Optional[str] = None) -> type:
    cls = load_object(reference, base_dir)
    if not isinstance(cls, type) or not callable(getattr(cls, "send_batch", None)):
        raise TypeError(f"{reference!r} is not an indexer class (a class with a send_batch method)")
    return cls
