"""The Python side of the built-in ``EmbeddedPython`` and ``ExternalPython`` stages.

The Rust core validates their config keys and reads their scripts (``src/python/stages/``);
this module compiles and runs the code in this CPython interpreter, in-process. Both stages
are ordinary :class:`lucille.Stage` objects, so a Python exception while processing fails that
document and the run goes on, as with any Python stage.

``EmbeddedPython`` binds ``doc`` to :class:`DocView`, a live view of the document that works
both as a dict (``doc["title"]``) and through attributes (``doc.title``), as Lucille's GraalPy
proxy does; nested objects and lists come back as views too, so ``doc.a.b = 1`` and
``doc["tags"][0] = "x"`` write through to the document. ``rawDoc`` is the
:class:`lucille.Document` itself.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import sys
import types
from collections.abc import MutableMapping, MutableSequence
from typing import Any, Callable, Iterator, Optional, Union

from lucille._lucille import Document
from lucille.stage import Stage

# The document's reserved fields (Rust: document::RESERVED_FIELDS).
RESERVED = frozenset({"id", "run_id", "___dropped", "___skipped", "___children"})

_Key = Union[str, int]


class StageConfigError(Exception):
    """A config problem found while building a Python-backed stage; ``key`` names the key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


def _syntax_error(key: str, err: SyntaxError) -> StageConfigError:
    where = f"line {err.lineno}" if err.lineno is not None else "an unknown line"
    if err.offset:
        where += f", column {err.offset}"
    text = (err.text or "").strip()
    detail = f": {text!r}" if text else ""
    return StageConfigError(key, f"Python syntax error at {where}: {err.msg}{detail}")


def plain(value: Any) -> Any:
    """A view's value as plain dicts and lists (a copy); other values pass through."""
    if isinstance(value, (_NodeView, _ListView)):
        return value._plain()
    if isinstance(value, DocView):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _wrap(raw: Document, field: str, path: tuple[_Key, ...], value: Any) -> Any:
    if isinstance(value, dict):
        return _NodeView(raw, field, path)
    if isinstance(value, list):
        return _ListView(raw, field, path)
    return value


class _Nested:
    """A live view of a container inside field ``field`` at ``path``: every read fetches the
    field from the document, every write stores the whole field back."""

    __slots__ = ("_raw", "_field", "_path")
    _raw: Document
    _field: str
    _path: tuple[_Key, ...]

    def __init__(self, raw: Document, field: str, path: tuple[_Key, ...]) -> None:
        object.__setattr__(self, "_raw", raw)
        object.__setattr__(self, "_field", field)
        object.__setattr__(self, "_path", path)

    def _root(self) -> Any:
        try:
            return self._raw[self._field]
        except KeyError:
            raise KeyError(f"field {self._field!r} no longer exists") from None

    @staticmethod
    def _walk(node: Any, path: tuple[_Key, ...]) -> Any:
        for step in path:
            node = node[step]
        return node

    def _node(self) -> Any:
        return self._walk(self._root(), self._path)

    def _update(self, change: Callable[[Any], Any]) -> Any:
        root = self._root()
        result = change(self._walk(root, self._path))
        self._raw.set_field(self._field, root)
        return result

    def _plain(self) -> Any:
        return self._node()

    def __eq__(self, other: object) -> bool:
        return bool(self._node() == plain(other))

    def __repr__(self) -> str:
        return repr(self._node())

    def __len__(self) -> int:
        return len(self._node())


class _NodeView(_Nested, MutableMapping):  # type: ignore[misc]
    """An object inside a field: ``doc.meta.flag``, ``doc["meta"]["flag"] = 1``."""

    __slots__ = ()

    def __getitem__(self, key: Any) -> Any:
        return _wrap(self._raw, self._field, self._path + (key,), self._node()[key])

    def __setitem__(self, key: Any, value: Any) -> None:
        new = plain(value)
        self._update(lambda node: node.__setitem__(key, new))

    def __delitem__(self, key: Any) -> None:
        self._update(lambda node: node.__delitem__(key))

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._node()))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None


class _ListView(_Nested, MutableSequence):  # type: ignore[misc]
    """A list inside a field (a multi-valued field is one): ``doc.tags[0]``, ``del doc.a[1]``."""

    __slots__ = ()

    def __getitem__(self, index: Any) -> Any:
        node = self._node()
        if isinstance(index, slice):
            return node[index]
        if index < 0:
            index += len(node)
        return _wrap(self._raw, self._field, self._path + (index,), node[index])

    def __setitem__(self, index: Any, value: Any) -> None:
        new = plain(value)
        self._update(lambda node: node.__setitem__(index, new))

    def __delitem__(self, index: Any) -> None:
        self._update(lambda node: node.__delitem__(index))

    def insert(self, index: int, value: Any) -> None:
        new = plain(value)
        self._update(lambda node: node.insert(index, new))

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self._node())))


class DocView(MutableMapping):  # type: ignore[misc]
    """The ``doc`` of an ``EmbeddedPython`` script: a live dict- and attribute-style view of a
    :class:`lucille.Document`.

    ``doc["f"]`` / ``doc.f`` read a field (a missing one raises ``KeyError`` /
    ``AttributeError``, so ``getattr(doc, "f", None)`` works); objects and lists come back as
    views that write through. Assigning stores a copy of the value; ``None`` stores JSON null.
    ``doc.id`` and ``doc.run_id`` read the reserved fields, which cannot be written. Keys are
    ``id``, ``run_id`` (once set) and the fields, in order, as in Lucille.
    """

    __slots__ = ("_raw",)
    _raw: Document

    def __init__(self, raw: Document) -> None:
        object.__setattr__(self, "_raw", raw)

    def _names(self) -> list[str]:
        names = ["id"]
        if self._raw.run_id is not None:
            names.append("run_id")
        return names + self._raw.field_names()

    def __getitem__(self, name: Any) -> Any:
        if name == "id":
            return self._raw.id
        if name == "run_id" and self._raw.run_id is not None:
            return self._raw.run_id
        if not isinstance(name, str):
            raise KeyError(name)
        return _wrap(self._raw, name, (), self._raw[name])

    def __setitem__(self, name: str, value: Any) -> None:
        self._raw.set_field(name, plain(value))

    def __delitem__(self, name: str) -> None:
        del self._raw[name]

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"document {self._raw.id!r} has no field {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(f"document {self._raw.id!r} has no field {name!r}") from None

    def __repr__(self) -> str:
        return f"DocView({self._raw!r})"


class EmbeddedPython(Stage):
    """Runs a script once per document with ``doc`` (a :class:`DocView`) and ``rawDoc`` (the
    :class:`lucille.Document`) bound. The script's other globals persist between the documents
    of one stage instance (one per worker thread), as in Lucille's GraalPy context."""

    def __init__(self, config: dict[str, Any], source: str, filename: str, key: str) -> None:
        super().__init__(config)
        try:
            self._code = compile(source, filename, "exec")
        except SyntaxError as e:
            raise _syntax_error(key, e) from None
        except ValueError as e:  # e.g. a NUL byte in the source
            raise StageConfigError(key, f"cannot compile the script: {e}") from None
        self._globals: dict[str, Any] = {"__name__": "__lucille_embedded__", "__builtins__": __builtins__}

    def process_document(self, doc: Document) -> None:
        g = self._globals
        g["doc"] = DocView(doc)
        g["rawDoc"] = doc
        try:
            exec(self._code, g)
        finally:
            # The Document object is lent for this call only.
            g.pop("doc", None)
            g.pop("rawDoc", None)


_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _requirement_names(path: str, seen: Optional[set[str]] = None) -> list[str]:
    """Distribution names in a requirements file (``-r`` includes followed; other pip options,
    which choose where and how to install, say nothing about what must be importable)."""
    seen = seen if seen is not None else set()
    real = os.path.realpath(path)
    if real in seen:
        return []
    seen.add(real)
    names: list[str] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith(("-r ", "--requirement ", "--requirement=")):
                inc = line.split("=", 1)[1] if line.startswith("--requirement=") else line.split(None, 1)[1]
                inc = inc.strip()
                if not os.path.isabs(inc):
                    inc = os.path.join(os.path.dirname(path), inc)
                names += _requirement_names(inc, seen)
                continue
            if line.startswith("-"):
                continue
            m = _REQ_NAME.match(line)
            if m:
                names.append(m.group(1))
    return names


def _installed(name: str) -> bool:
    """True if a distribution of that name is installed or a module of that name imports."""
    try:
        importlib.metadata.distribution(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        pass
    module = name.replace("-", "_")
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_requirements(path: str) -> list[str]:
    """The requirements in ``path`` that this Python environment cannot import."""
    return [n for n in _requirement_names(path) if not _installed(n)]


class ExternalPython(Stage):
    """Calls ``functionName`` of ``scriptPath`` once per document, in this interpreter.

    The function receives the document as a dict (``id``, ``run_id`` and the fields, as
    Lucille sends it) and returns ``None`` (the document is unchanged) or the document's new
    fields: a dict, or a JSON object as a string. As in Lucille, each returned field is set,
    fields it leaves out are removed, and reserved fields in it (``id``, ``run_id``, ...) are
    ignored.
    """

    def __init__(
        self,
        config: dict[str, Any],
        script_path: str,
        function_name: str,
        requirements_path: Optional[str],
    ) -> None:
        super().__init__(config)
        if requirements_path is not None:
            try:
                missing = missing_requirements(requirements_path)
            except OSError as e:
                raise StageConfigError("requirementsPath", f"cannot read {requirements_path!r}: {e}") from None
            if missing:
                raise StageConfigError(
                    "requirementsPath",
                    f"these requirements are not installed in this Python ({sys.executable}): "
                    f"{', '.join(missing)}; ExternalPython runs the function in-process, so "
                    f"install them there (pip install -r {requirements_path})",
                )
        try:
            with open(script_path, encoding="utf-8") as f:
                source = f.read()
        except OSError as e:
            raise StageConfigError("scriptPath", f"cannot read {script_path!r}: {e}") from None
        try:
            code = compile(source, script_path, "exec")
        except SyntaxError as e:
            raise _syntax_error("scriptPath", e) from None
        stem = os.path.splitext(os.path.basename(script_path))[0]
        module = types.ModuleType(f"lucille_external_{stem}")
        module.__file__ = os.path.abspath(script_path)
        folder = os.path.dirname(module.__file__)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        exec(code, module.__dict__)
        fn = getattr(module, function_name, None)
        if not callable(fn):
            defined = sorted(
                n for n, v in vars(module).items() if callable(v) and isinstance(v, types.FunctionType)
            )
            hint = f"; it defines: {', '.join(defined)}" if defined else ""
            raise StageConfigError(
                "functionName", f"{script_path!r} has no function {function_name!r}{hint}"
            )
        self._fn = fn
        self._function_name = function_name

    def process_document(self, doc: Document) -> None:
        result = self._fn(doc.to_dict())
        if result is None:
            return
        if isinstance(result, (str, bytes)):
            if not result:
                return
            result = json.loads(result)
        if not isinstance(result, dict):
            raise TypeError(
                f"{self._function_name} must return a dict, a JSON object string or None, "
                f"returned {type(result).__name__}"
            )
        for name, value in result.items():
            if name not in RESERVED:
                doc.set_field(name, value)
        for name in doc.field_names():
            if name not in result:
                doc.remove_field(name)
