"""Read a vLLM wheel's `vllm serve` flags statically, without importing vllm.

`vllm serve` builds its parser in `make_arg_parser` (vllm/entrypoints/openai/cli_args.py):
a few `parser.add_argument` calls, then `FrontendArgs.add_cli_args` (every field of the
frontend dataclasses, `--field-name`, after `_customize_cli_kwargs` edits the kwargs)
and `AsyncEngineArgs.add_cli_args` (`EngineArgs.add_cli_args`: one `add_argument` per
flag, its kwargs taken from `get_kwargs(<Config>)["field"]`). This module walks those
functions statement by statement and mirrors them:

- `get_kwargs(Cls)` is `_compute_kwargs` of vllm/engine/arg_utils.py, read from the
  field's annotation (type aliases and classes followed through the wheel's imports):
  a dataclass is a JSON value, `bool | str | None` an optional value (nargs "?"),
  bool a BooleanOptionalAction (`--no-` forms), Literal the sorted choices (none when
  the annotation also allows str), list/set/tuple nargs "+", int/float their type,
  and an optional field `optional_type(...)` with "None" added to its choices;
- the edits the functions make to those kwargs (`kw["f"]["type"] = ...`, `del`,
  `+=`, `{**kw["f"], "default": None}`) and the explicit keywords of each call.

A class or alias outside the wheel (torch.dtype, a transformers class) is a
non-builtin type that is not a dataclass; a name found nowhere, and choices no
static reading resolves, are recorded as unknown (`choices_expr`), never guessed.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from validators.manifest.pyread import (
    _KEYS,
    _NO_VALUE_ACTIONS,
    _json_value,
    _Module,
    _name,
    _Unresolved,
    _Wheel,
)
from validators.manifest.sglang import _Extractor

CLI_ARGS = "vllm/entrypoints/openai/cli_args.py"
ARG_UTILS = "vllm/engine/arg_utils.py"
ENTRY = "make_arg_parser"

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


class VllmExtractor(_Extractor):
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

    # -- the functions that build the parser --------------------------------------

    def function(self, module: _Module, cls: ast.ClassDef | None, name: str) -> ast.FunctionDef:
        body = cls.body if cls is not None else module.tree.body
        for node in body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return node
        raise _Unresolved

    def method(
        self, module: _Module, cls: ast.ClassDef, name: str
    ) -> tuple[_Module, ast.ClassDef, ast.FunctionDef]:
        """A class's own method, else its first base's (Python's lookup for single inheritance)."""
        try:
            return module, cls, self.function(module, cls, name)
        except _Unresolved:
            for base in cls.bases:
                owner, base_cls = self.cls(module, base)
                return self.method(owner, base_cls, name)
        raise _Unresolved

    def walk(
        self,
        module: _Module,
        body: list[ast.stmt],
        scope: dict[str, Any],
        cls: tuple[_Module, ast.ClassDef] | None,
    ) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                test = self._condition(module, stmt.test, scope)
                # A condition about the command line (`--help`) or an optional
                # argument is taken as `vllm serve` meets it: true unless known false.
                self.walk(module, stmt.body if test is not False else stmt.orelse, scope, cls)
            elif isinstance(stmt, ast.For):
                self._for(module, stmt, scope)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                self._assign(module, stmt.targets[0], stmt.value, scope, cls)
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add):
                container, key = self._slot(stmt.target, scope)
                try:
                    added = list(self._plain(self._eval(module, stmt.value)))
                    container[key] = (
                        container[key] + added
                        if isinstance(container.get(key), list)
                        else _Kwarg(ast.unparse(stmt.value))
                    )
                except (_Unresolved, TypeError):
                    container[key] = _Kwarg(f"{ast.unparse(stmt.target)} + {ast.unparse(stmt.value)}")
            elif isinstance(stmt, ast.Delete):
                for target in stmt.targets:
                    container, key = self._slot(target, scope)
                    container.pop(key, None)
            elif isinstance(stmt, (ast.Expr, ast.Return)) and isinstance(stmt.value, ast.Call):
                self._call(module, stmt.value, scope, cls)

    def _condition(self, module: _Module, test: ast.expr, scope: dict[str, Any]) -> bool | None:
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.In, ast.NotIn))
        ):
            try:
                key = self._eval(module, test.left)
                container, slot = self._slot(test.comparators[0], scope)
            except (_Unresolved, KeyError, TypeError):
                return None
            present = key in container[slot]
            return present if isinstance(test.ops[0], ast.In) else not present
        return None

    def _slot(self, node: ast.expr, scope: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """`kw["field"]["key"]` as (the dict that holds it, its key)."""
        if not isinstance(node, ast.Subscript) or not isinstance(node.slice, ast.Constant):
            raise _Unresolved
        if isinstance(node.value, ast.Name):
            if node.value.id not in scope:
                raise _Unresolved
            return scope[node.value.id], node.slice.value
        container, key = self._slot(node.value, scope)
        return container[key], node.slice.value

    def _assign(
        self,
        module: _Module,
        target: ast.expr,
        value: ast.expr,
        scope: dict[str, Any],
        cls: tuple[_Module, ast.ClassDef] | None,
    ) -> None:
        if isinstance(target, ast.Subscript):
            container, key = self._slot(target, scope)
            container[key] = self._kwarg(module, key, value)
        elif isinstance(target, ast.Name):
            if isinstance(value, ast.Call) and _name(value.func).split(".")[-1] == "get_kwargs":
                argument = value.args[0]
                if isinstance(argument, ast.Name) and argument.id == "cls" and cls is not None:
                    scope[target.id] = self.kwargs_of(cls[0], ast.Name(id=cls[1].name))
                else:
                    scope[target.id] = self.kwargs_of(module, argument)
            elif isinstance(value, ast.Subscript):
                try:
                    container, key = self._slot(value, scope)
                    scope[target.id] = container[key]
                except (_Unresolved, KeyError):
                    pass
            elif isinstance(value, ast.Call):
                result = self._call(module, value, scope, cls)
                if result is not None:
                    scope[target.id] = result

    def _call(
        self, module: _Module, call: ast.Call, scope: dict[str, Any], cls: tuple[_Module, ast.ClassDef] | None
    ) -> Any:
        method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
        if method == "add_argument":
            self._add_argument_call(module, call, scope)
            return None
        if method not in {"add_cli_args", "_customize_cli_kwargs"} or not isinstance(
            call.func, ast.Attribute
        ):
            return None
        holder = call.func.value
        defining = scope.get("__class__") or cls
        if isinstance(holder, ast.Call) and _name(holder.func) == "super" and defining is not None:
            owner, target = self.cls(defining[0], defining[1].bases[0])
        elif isinstance(holder, ast.Name) and holder.id == "cls" and cls is not None:
            owner, target = cls
        else:
            owner, target = self.cls(module, holder)
        where, defined_in, function = self.method(owner, target, method)
        # `cls` is the class the method was called on; super() starts above the one defining it.
        inner: dict[str, Any] = {"__class__": (where, defined_in)}
        params = [arg.arg for arg in function.args.args if arg.arg not in {"cls", "self"}]
        for param, argument in zip(params, call.args, strict=False):
            if isinstance(argument, ast.Name) and argument.id in scope:
                inner[param] = scope[argument.id]
        self.walk(where, function.body, inner, (owner, target))
        returned = [
            stmt.value
            for stmt in ast.walk(function)
            if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Name)
        ]
        return inner.get(returned[-1].id) if returned and method == "_customize_cli_kwargs" else None

    def _for(self, module: _Module, loop: ast.For, scope: dict[str, Any]) -> None:
        """BaseFrontendArgs.add_cli_args: one flag per kwargs entry, `--key` plus `flags`."""
        source = loop.iter
        if not (
            isinstance(source, ast.Call)
            and isinstance(source.func, ast.Attribute)
            and source.func.attr == "items"
        ):
            return
        table = scope.get(_name(source.func.value))
        if not isinstance(table, dict) or not isinstance(loop.target, ast.Tuple):
            return
        for key, kwargs in table.items():
            extra = kwargs.pop("flags", [])
            self._register(module, [*extra, "--" + key.replace("_", "-")], kwargs)

    def _kwarg(self, module: _Module, key: Any, node: ast.expr) -> Any:
        if key in {"type", "action"}:
            return _Kwarg(_label(node))
        if key == "deprecated":
            return self._try(module, node, default=True)
        try:
            return self._plain(self._eval(module, node))
        except _Unresolved:
            return _Kwarg(ast.unparse(node))

    def _add_argument_call(self, module: _Module, call: ast.Call, scope: dict[str, Any]) -> None:
        names = [
            arg.value for arg in call.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
        ]
        kwargs: dict[str, Any] = {}
        for keyword in call.keywords:
            if keyword.arg is None:
                kwargs.update(self._spread(module, keyword.value, scope))
            else:
                kwargs[keyword.arg] = self._kwarg(module, keyword.arg, keyword.value)
        self._register(module, names, kwargs)

    def _spread(self, module: _Module, node: ast.expr, scope: dict[str, Any]) -> dict[str, Any]:
        if isinstance(node, ast.Dict):
            merged: dict[str, Any] = {}
            for key, value in zip(node.keys, node.values, strict=True):
                if key is None:
                    merged.update(self._spread(module, value, scope))
                else:
                    name = self._eval(module, key)
                    merged[name] = self._kwarg(module, name, value)
            return merged
        if isinstance(node, ast.Name) and isinstance(scope.get(node.id), dict):
            return dict(scope[node.id])
        container, key = self._slot(node, scope)
        return dict(container[key])

    def _register(self, module: _Module, names: list[str], kwargs: dict[str, Any]) -> None:
        flags = [name for name in names if name.startswith("-")]
        action = (
            kwargs["action"].label
            if isinstance(kwargs.get("action"), _Kwarg)
            else kwargs.get("action") or "store"
        )
        if not flags:
            self.positionals.append({"dest": names[0] if names else None, "nargs": kwargs.get("nargs")})
            return
        long_flags = [name for name in flags if name.startswith("--")] or flags
        aliases = [name for name in flags if name != long_flags[0]]
        if action == "BooleanOptionalAction":
            aliases += ["--no-" + name[2:] for name in flags if name.startswith("--")]
        nargs = kwargs.get("nargs")
        choices = kwargs.get("choices")
        kind = kwargs.get("type")
        takes_value = action not in _NO_VALUE_ACTIONS and nargs != 0
        entry = {
            "flag": long_flags[0],
            "aliases": aliases,
            "dest": kwargs.get("dest")
            if isinstance(kwargs.get("dest"), str)
            else long_flags[0][2:].replace("-", "_"),
            "action": action,
            "nargs": nargs,
            "takes_value": takes_value,
            "type": (kind.label if isinstance(kind, _Kwarg) else "str" if kind is None else str(kind))
            if takes_value
            else None,
            "choices": None if isinstance(choices, _Kwarg) or not choices else _json_value(list(choices)),
            "choices_expr": choices.label if isinstance(choices, _Kwarg) else None,
            "choices_conditional": None,
            "default": _default_json(kwargs.get("default")),
            "deprecated": True if kwargs.get("deprecated") is True else None,
        }
        self.flags[entry["flag"]] = {key: entry.get(key) for key in _KEYS}


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


def read_wheel(wheel: _Wheel) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """(flags, positionals, modules read) of `vllm serve`, from make_arg_parser down."""
    extractor = VllmExtractor(wheel)
    module = extractor.load(CLI_ARGS)
    if module is None:
        raise _Unresolved
    extractor.walk(module, extractor.function(module, None, ENTRY).body, {}, None)
    return list(extractor.flags.values()), extractor.positionals, sorted(extractor.read)
