"""Built-in stages by Lucille name: ``lucille.stages.CopyFields(fieldMapping={"a": "b"})``.

Each call validates the config at once (every problem listed in one ``ValueError``) and
returns a stage to put in a :class:`lucille.Pipeline`.
"""

from __future__ import annotations

from typing import Any, Callable

from lucille._lucille import BuiltinStage, builtin_stage_keys, builtin_stage_names, common_stage_keys

_NAMES = frozenset(builtin_stage_names())


def _factory(class_name: str) -> Callable[..., BuiltinStage]:
    def build(**config: Any) -> BuiltinStage:
        return BuiltinStage(class_name, config)

    build.__name__ = build.__qualname__ = class_name
    build.__doc__ = _doc(class_name)
    return build


def _doc(class_name: str) -> str:
    """The stage's config keys, from the same spec that validates them."""
    lines = [f"The built-in {class_name} stage; keyword arguments are its config keys:", ""]
    for key, required, kind in builtin_stage_keys(class_name) or []:
        lines.append(f"    {key}{' (required)' if required else ''}: {kind}")
    if len(lines) == 2:
        lines.append("    (none of its own)")
    lines += ["", "Keys every stage takes: " + ", ".join(common_stage_keys()) + "."]
    return "\n".join(lines)


def __getattr__(name: str) -> Callable[..., BuiltinStage]:
    if name in _NAMES:
        return _factory(name)
    raise AttributeError(f"lucille.stages has no built-in stage {name!r}")


def __dir__() -> list[str]:
    return sorted(_NAMES)
