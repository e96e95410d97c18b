"""vLLM's `get_kwargs(Cls)`, read statically: a config dataclass's fields as argparse kwargs.

`_compute_kwargs` of vllm/engine/arg_utils.py turns each field's annotation into the
keywords of its `add_argument` call; `_FieldReader` does the same from the source,
following type aliases and classes through the wheel's imports. vllm.py walks the
functions that build the parser on top of it.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tools.flag_manifest.pyread import _json_value, _Module, _name, _Unresolved, _Wheel
from tools.flag_manifest.sglang import _Extractor

# _compute_kwargs gives these int fields a human-readable parser.
_HUMAN_INT_OR_AUTO = {"max_model_len"}
_HUMAN_INT = {"max_num_batched_tokens", "kv_cache_memory_bytes", "safetensors_prefetch_block_size"}
_BUILTINS = {"bool", "str", "int", "float", "dict", "list", "tuple", "set", "bytes", "type", "object"}
_ALIASES = {"Dict": "dict", "List": "list", "Tuple": "tuple", "Set": "set", "Type": "type"}
_DATACLASS_DECORATORS = {"config", "dataclass", "dataclasses.dataclass", "pydantic.dataclasses.dataclass"}


@dataclass(frozen=True)
class _Hint:
    """One member of get_type_hints(field.type): a builtin, a Literal, a class."""

    kind: str  # bool str int float none dict list tuple set literal dataclass other
    values: tuple[Any, ...] = ()  # a Literal's values
    args: tuple[_Hint | str, ...] = ()  # a collection's element hints; "..." for Ellipsis
    name: str = ""


class _Kwarg:
    """A kwarg the source sets to an expression that is not a value (a type, an action)."""

    def __init__(self, label: str) -> None:
        self.label = label


class _FieldReader(_Extractor):
    def __init__(self, wheel: _Wheel) -> None:
        super().__init__(wheel, [])
        self.positionals: list[dict[str, Any]] = []
        self._computed: dict[str, dict[str, dict[str, Any]]] = {}
        self.read: set[str] = set()

    # -- modules, names and classes across the wheel --------------------------------

    def load(self, path: str) -> _Module | None:
        module = self.wheel.module(path)
        if module is not None and path not in self.read:
            self.read.add(path)
            _imports_everywhere(module)
        return module

    def _module_of(self, dotted: str) -> _Module | None:
        base = dotted.replace(".", "/")
        return self.load(base + ".py") or self.load(base + "/__init__.py")

    def resolve(self, module: _Module, name: str, depth: int = 0) -> tuple[_Module, ast.AST] | None:
        """What `name` is in `module`: a class, a constant's expression, or None (outside the wheel)."""
        if depth > 12:
            raise _Unresolved
        if name in module.classes:
            return module, module.classes[name]
        if name in module.constants:
            return module, module.constants[name]
        if name in module.imports:
            dotted, target = module.imports[name]
            other = self._module_of(dotted)
            if other is None:
                if dotted.split(".")[0] == "vllm":
                    raise _Unresolved  # a module of the wheel the wheel lacks
                return None
            found = self.resolve(other, target, depth + 1)
            if found is None and other.path.startswith("vllm/") and target not in other.imports:
                raise _Unresolved
            return found
        raise _Unresolved

    def cls(self, module: _Module, node: ast.expr) -> tuple[_Module, ast.ClassDef]:
        found = (
            self.resolve(module, _name(node).split(".")[-1])
            if isinstance(node, (ast.Name, ast.Attribute))
            else None
        )
        if found is None or not isinstance(found[1], ast.ClassDef):
            raise _Unresolved
        return found[0], found[1]

    def _class_fields(
        self, module: _Module, cls: ast.ClassDef, seen: set[str]
    ) -> Iterator[tuple[_Module, ast.AnnAssign]]:
        # dataclasses.fields(): base-class fields first; ClassVar and InitVar are not fields.
        if cls.name in seen:
            return
        seen.add(cls.name)
        for base in cls.bases:
            try:
                owner, base_cls = self.cls(module, base)
            except _Unresolved:
                continue
            yield from self._class_fields(owner, base_cls, seen)
        for node in cls.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                head = _name(
                    node.annotation.value if isinstance(node.annotation, ast.Subscript) else node.annotation
                )
                if head.split(".")[-1] not in {"ClassVar", "InitVar"}:
                    yield module, node

    # -- get_kwargs: _compute_kwargs read from the annotations -------------------------

    def kwargs_of(self, module: _Module, node: ast.expr) -> dict[str, dict[str, Any]]:
        owner, cls = self.cls(module, node)
        key = f"{owner.path}:{cls.name}"
        if key not in self._computed:
            fields: dict[str, tuple[_Module, ast.AnnAssign]] = {}
            for where, field in self._class_fields(owner, cls, set()):
                fields[field.target.id] = (where, field)  # type: ignore[union-attr]
            self._computed[key] = {
                name: self._field_kwargs(where, name, field) for name, (where, field) in fields.items()
            }
        return copy.deepcopy(self._computed[key])

    def _field_kwargs(  # noqa: PLR0912 (mirrors _compute_kwargs branch by branch)
        self, module: _Module, name: str, node: ast.AnnAssign
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"default": self._default(module, node)}
        try:
            hints = self.hints(module, node.annotation)
        except _Unresolved:
            # The annotation names something the wheel does not define: its kind is unknown.
            kwargs["type"] = _Kwarg("unknown: " + ast.unparse(node.annotation))
            kwargs["choices"] = _Kwarg(ast.unparse(node.annotation))
            return kwargs
        kinds = {hint.kind for hint in hints}
        literal = next((hint for hint in hints if hint.kind == "literal"), None)
        dataclass_hint = next((hint for hint in hints if hint.kind == "dataclass"), None)
        if dataclass_hint is not None:
            kwargs["type"] = _Kwarg(f"parse_dataclass({dataclass_hint.name})")
        elif kinds == {"bool", "str", "none"} and len(hints) == 3:
            kwargs.update(type=_Kwarg("str"), nargs="?", const=True)
        elif "bool" in kinds:
            kwargs["action"] = _Kwarg("BooleanOptionalAction")
        elif literal is not None:
            kwargs.update(_literal_kwargs(literal, "str" in kinds))
        elif kinds & {"tuple", "list", "set"}:
            kind = next(k for k in ("tuple", "list", "set") if k in kinds)
            kwargs.update(_collection_kwargs(next(h for h in hints if h.kind == kind)))
        elif "int" in kinds:
            label = (
                "human_readable_int_or_auto"
                if name in _HUMAN_INT_OR_AUTO
                else "human_readable_int"
                if name in _HUMAN_INT
                else "int"
            )
            kwargs["type"] = _Kwarg(label)
        elif "float" in kinds:
            kwargs["type"] = _Kwarg("float")
        elif "dict" in kinds and ("str" in kinds or "other" in kinds):
            kwargs["type"] = _Kwarg("union_dict_and_str")
        elif "dict" in kinds:
            kwargs["type"] = _Kwarg("parse_type(json.loads)")
        elif "str" in kinds or "other" in kinds:
            kwargs["type"] = _Kwarg("str")
        else:
            kwargs["type"] = _Kwarg("unknown: " + ast.unparse(node.annotation))
        if "none" in kinds and "bool" not in kinds:
            kwargs["type"] = _Kwarg(f"optional_type({kwargs['type'].label})")
            if isinstance(kwargs.get("choices"), list) and kwargs["choices"]:
                kwargs["choices"].append("None")
        return kwargs

    def _default(self, module: _Module, node: ast.AnnAssign) -> Any:  # noqa: PLR0911 (one per default form)
        value = node.value
        if value is None:
            return None
        if isinstance(value, ast.Call) and _name(value.func).split(".")[-1] in {"field", "Field"}:
            for keyword in value.keywords:
                if keyword.arg == "default":
                    return self._json(module, keyword.value)
                if keyword.arg == "default_factory":
                    if isinstance(keyword.value, ast.Lambda):
                        return self._json(module, keyword.value.body)
                    factory = _name(keyword.value)
                    if factory in {"list", "dict"}:
                        return [] if factory == "list" else {}
                    return {"expr": ast.unparse(keyword.value) + "()"}
            return None
        return self._json(module, value)

    def hints(  # noqa: PLR0911, PLR0912 (one branch per annotation form)
        self, module: _Module, node: ast.expr, depth: int = 0
    ) -> list[_Hint]:
        """get_type_hints of arg_utils: Annotated and unions flattened to their members."""
        if depth > 20:
            raise _Unresolved
        if isinstance(node, ast.Constant):
            if node.value is None:
                return [_Hint("none")]
            if isinstance(node.value, str):  # a forward reference
                return self.hints(module, ast.parse(node.value, mode="eval").body, depth + 1)
            raise _Unresolved
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return _union(
                self.hints(module, node.left, depth + 1) + self.hints(module, node.right, depth + 1)
            )
        if isinstance(node, ast.Subscript):
            head = _name(node.value).split(".")[-1]
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head == "Annotated":
                return self.hints(module, items[0], depth + 1)
            if head == "Optional":
                return _union([*self.hints(module, items[0], depth + 1), _Hint("none")])
            if head == "Union":
                return _union([hint for item in items for hint in self.hints(module, item, depth + 1)])
            if head == "Literal":
                return [_Hint("literal", values=tuple(self._literal_values(module, items, depth + 1)))]
            kind = _ALIASES.get(head, head)
            if kind in {"list", "tuple", "set"}:
                args: list[_Hint | str] = []
                for item in items:
                    if isinstance(item, ast.Constant) and item.value is Ellipsis:
                        args.append("...")
                    else:
                        members = self.hints(module, item, depth + 1)
                        args.append(members[0] if len(members) == 1 else _Hint("union", args=tuple(members)))
                return [_Hint(kind, args=tuple(args))]
            if kind == "dict":
                return [_Hint("dict")]
            if kind == "type":
                return [_Hint("other", name="type")]
            return self._named(module, node.value, depth + 1)  # Callable[...], Sequence[...]: not builtin
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self._named(module, node, depth + 1)
        raise _Unresolved

    def _named(self, module: _Module, node: ast.expr, depth: int) -> list[_Hint]:
        name = _name(node)
        if name in _BUILTINS or _ALIASES.get(name) in _BUILTINS:
            kind = _ALIASES.get(name, name)
            return [_Hint(kind if kind in {"bool", "str", "int", "float", "dict"} else "other", name=kind)]
        if name in {"None", "NoneType"}:
            return [_Hint("none")]
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id not in module.imports
        ):
            return [_Hint("other", name=name)]  # `torch.dtype`: a module attribute outside the wheel
        found = self.resolve(module, name.split(".")[-1])
        if found is None:
            return [_Hint("other", name=name)]
        owner, target = found
        if isinstance(target, ast.ClassDef):
            decorated = any(
                _name(d.func if isinstance(d, ast.Call) else d) in _DATACLASS_DECORATORS
                for d in target.decorator_list
            )
            return [_Hint("dataclass" if decorated else "other", name=target.name)]
        assert isinstance(target, ast.expr)
        return self.hints(owner, target, depth + 1)

    def _literal_values(self, module: _Module, items: list[ast.expr], depth: int) -> list[Any]:
        values: list[Any] = []
        for item in items:
            if isinstance(item, ast.Constant):
                values.append(item.value)
            else:  # a nested Literal alias: typing flattens it
                for hint in self.hints(module, item, depth + 1):
                    if hint.kind != "literal":
                        raise _Unresolved
                    values.extend(hint.values)
        return values


def _literal_kwargs(hint: _Hint, with_str: bool) -> dict[str, Any]:
    """literal_to_kwargs: the values' type; choices sorted, or only a metavar beside str."""
    values = list(hint.values)
    first = type(values[0]).__name__ if values else "str"
    kwargs: dict[str, Any] = {"type": _Kwarg(first if first in {"int", "float", "str"} else "str")}
    if not with_str:
        kwargs["choices"] = sorted(values)
    return kwargs


def _collection_kwargs(hint: _Hint) -> dict[str, Any]:
    """collection_to_kwargs: the element's type, nargs "+" (a fixed tuple: its length)."""
    args = [arg for arg in hint.args if arg != "..."]
    if not args or not isinstance(args[0], _Hint):
        raise _Unresolved
    element = args[0]
    kwargs: dict[str, Any] = {"nargs": "+" if hint.kind != "tuple" or "..." in hint.args else len(hint.args)}
    if element.kind == "union":
        kwargs["type"] = _Kwarg("str")
    elif element.kind == "literal":
        # A sequence of literals: literal_to_kwargs on the element type, so choices.
        kwargs.update(_literal_kwargs(element, with_str=False))
    else:
        kwargs["type"] = _Kwarg(
            element.kind if element.kind in {"int", "float", "str", "bool"} else element.name or "str"
        )
    return kwargs


def _union(hints: list[_Hint]) -> list[_Hint]:
    unique: list[_Hint] = []
    for hint in hints:
        if hint not in unique:
            unique.append(hint)
    return unique


def _label(node: ast.expr) -> str:
    """A type or action as the source names it: `int`, `json.loads`, `optional_type(int)`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, (ast.Name, ast.Attribute)):
        name = _name(node)
        return name.split(".")[-1] if name.startswith("argparse.") else name
    return ast.unparse(node)


def _default_json(value: Any) -> Any:
    if isinstance(value, _Kwarg):
        return {"expr": value.label}
    try:
        return _json_value(value)
    except _Unresolved:
        return {"expr": repr(value)}


def _imports_everywhere(module: _Module) -> None:
    """Every `from X import Y` of the module (under `if TYPE_CHECKING:` too), relative ones
    made absolute; a name an `else:` branch assigns at run time is a constant."""
    package = module.path.rsplit("/", 1)[0].split("/")
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            dotted = ".".join([*base, *(node.module.split(".") if node.module else [])])
            for alias in node.names:
                module.imports[alias.asname or alias.name] = (dotted, alias.name)
    for node in module.tree.body:
        if isinstance(node, ast.If):
            for item in node.orelse:
                if (
                    isinstance(item, ast.Assign)
                    and len(item.targets) == 1
                    and isinstance(item.targets[0], ast.Name)
                ):
                    module.constants.setdefault(item.targets[0].id, item.value)
