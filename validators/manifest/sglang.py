"""Read an SGLang wheel's CLI flags statically, without importing sglang.

Importing sglang drags in torch and CUDA, so the flags are read from the source with
`ast`:

- `parser.add_argument("--flag", ...)` calls anywhere in `sglang/srt/server_args.py`
  and `sglang/srt/arg_groups/fields/*.py`;
- dataclass fields annotated `A[T, "help"]` / `A[T, Arg(...)]` (`A` is
  `typing.Annotated`) of every class handed to `add_cli_args_from_dataclass`, with
  its dataclass bases, turned into flags the way sglang's `arg_utils.py` does:
  `--field-name` plus `Arg.aliases`, Literal -> choices, List -> nargs "+",
  bool -> store_true, `type_parser` -> type.

Names (choice lists, defaults) are resolved through module constants, class
attributes (`Backend.ALL = (FULL, ...)` in the class's own scope), enum members
(`[m.name.lower() for m in Mode]`), list/set comprehensions and f-strings over
literals, and, one hop, `from X import Y` into other modules of the same wheel.
A module-level choice list that is extended after its definition
(`CHOICES.add("token_oracle")`, `.append`, `.extend`, `+=`), also under an `if`, is
read whole: a value added under a condition is recorded in `choices_conditional`
with the condition's source (`--sampling-backend` lost `token_oracle`).

What cannot be resolved statically is recorded as `{"expr": "<source>"}` (defaults)
or as `choices: null` with `choices_expr` set: the flag's choices are *unknown*, and
engine-flags warns on every use instead of accepting any value. Never guessed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from validators.manifest.pyread import (
    _ENUM_BASES,
    _KEYS,
    _NO_VALUE_ACTIONS,
    _STR_METHODS,
    _bind,
    _calls,
    _dedupe,
    _Enum,
    _is_text,
    _iterable,
    _json_value,
    _literal_values,
    _Member,
    _Module,
    _name,
    _python_type,
    _scalar_type,
    _subscript_base,
    _type_name,
    _Unresolved,
    _unwrap_optional,
    _Wheel,
)

SERVER_ARGS = "sglang/srt/server_args.py"
FIELDS_DIR = "sglang/srt/arg_groups/fields/"


class _Extractor:
    def __init__(self, wheel: _Wheel, modules: list[_Module]) -> None:
        self.wheel = wheel
        self.modules = modules
        self.flags: dict[str, dict[str, Any]] = {}
        # Values added to a choice list under a condition while evaluating one flag's
        # choices: value -> condition source. Reset per flag by _choices.
        self.conditional: dict[str, str] = {}
        self._class_scopes: dict[int, _Module] = {}

    def run(self) -> list[dict[str, Any]]:
        for module in self.modules:
            for call in _calls(module.tree, "add_cli_args_from_dataclass"):
                if len(call.args) >= 2:
                    only = None
                    for keyword in call.keywords:
                        if keyword.arg == "fields":
                            only = {str(name) for name in self._eval(module, keyword.value)}
                    cls = self._class(module, call.args[1])
                    if cls is not None:
                        self._dataclass(cls[0], cls[1], only)
        for module in self.modules:
            for function in [node for node in ast.walk(module.tree) if isinstance(node, ast.FunctionDef)]:
                # Choice lists are often computed into a local first
                # (`choices = list(X.keys())`), so locals resolve like constants.
                local = _Module(
                    module.path,
                    module.tree,
                    dict(module.constants),
                    module.classes,
                    module.imports,
                    module.mutations,
                )
                for node in ast.walk(function):
                    if (
                        isinstance(node, ast.Assign)
                        and len(node.targets) == 1
                        and isinstance(node.targets[0], ast.Name)
                    ):
                        local.constants[node.targets[0].id] = node.value
                for call in _calls(function, "add_argument"):
                    self._add_argument(local, call)
        return list(self.flags.values())

    # -- dataclass fields ---------------------------------------------------------

    def _class(self, module: _Module, node: ast.expr) -> tuple[_Module, ast.ClassDef] | None:
        name = (
            node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        )
        if name is None:
            return None
        for candidate in [module, *self.modules]:
            if name in candidate.classes:
                return candidate, candidate.classes[name]
        if name in module.imports:
            other = self.wheel.module_by_name(module.imports[name][0])
            if other is not None and module.imports[name][1] in other.classes:
                return other, other.classes[module.imports[name][1]]
        return None

    def _fields(
        self, module: _Module, cls: ast.ClassDef, seen: set[str]
    ) -> Iterator[tuple[_Module, ast.AnnAssign]]:
        # dataclasses.fields() lists base-class fields first (reversed MRO order).
        if cls.name in seen:
            return
        seen.add(cls.name)
        for base in reversed(cls.bases):
            found = self._class(module, base)
            if found is not None:
                yield from self._fields(found[0], found[1], seen)
        for node in cls.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                yield module, node

    def _dataclass(self, module: _Module, cls: ast.ClassDef, only: set[str] | None) -> None:
        fields: dict[str, tuple[_Module, ast.AnnAssign]] = {}
        for owner, node in self._fields(module, cls, set()):
            fields[node.target.id] = (owner, node)  # type: ignore[union-attr]
        for name, (owner, node) in fields.items():
            if only is not None and name not in only:
                continue
            entry = self._field(owner, name, node)
            if entry is not None:
                self._add(entry)

    def _field(  # noqa: PLR0912, PLR0915 (mirrors arg_utils.add_cli_args_from_dataclass case by case)
        self, module: _Module, name: str, node: ast.AnnAssign
    ) -> dict[str, Any] | None:
        annotation = node.annotation
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            annotation = ast.parse(annotation.value, mode="eval").body
        if not (isinstance(annotation, ast.Subscript) and _name(annotation.value) in {"A", "Annotated"}):
            return None
        parts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        raw_type, metas = parts[0], parts[1:]
        meta: dict[str, ast.expr] | None = None
        for item in metas:
            if isinstance(item, ast.Call) and _name(item.func) == "Arg":
                meta = {keyword.arg: keyword.value for keyword in item.keywords if keyword.arg}
                break
            if _is_text(item):
                meta = {}
                break
        if meta is None:
            return None  # no Arg metadata: sglang skips the field too
        if "no_cli" in meta and self._try(module, meta["no_cli"]) is True:
            return None
        cli_name = self._try(module, meta["cli_name"]) if "cli_name" in meta else None
        flag = cli_name if isinstance(cli_name, str) and cli_name else "--" + name.replace("_", "-")
        aliases = [str(alias) for alias in self._try(module, meta.get("aliases"), default=[]) or []]
        entry: dict[str, Any] = {
            "flag": flag,
            "aliases": aliases,
            "dest": name,
            "action": "store",
            "nargs": None,
            "type": "str",
            "default": self._field_default(module, node),
        }
        if "action" in meta:
            # A custom action gets only what action_kwargs carries: arg_utils passes
            # neither Arg.choices nor Arg.nargs nor type_parser along with it.
            entry["action"] = self._action_name(meta["action"])
            kwargs = meta.get("action_kwargs")
            choices_node: ast.expr | None = None
            if isinstance(kwargs, ast.Dict):
                for key_node, value_node in zip(kwargs.keys, kwargs.values, strict=True):
                    key = self._try(module, key_node) if key_node is not None else None
                    if key == "nargs":
                        entry["nargs"] = self._try(module, value_node)
                    elif key == "type":
                        entry["type"] = _type_name(value_node)
                    elif key == "choices":
                        choices_node = value_node
            self._finish(module, entry, choices_node)
            return entry
        inner, _optional = _unwrap_optional(raw_type)
        literal = _literal_values(inner)
        type_parser = meta.get("type_parser")
        if literal is not None:
            # arg_utils: choices = Arg.choices or the Literal's values; type from the
            # first value through _infer_type_func (so Literal[None, ...] is str).
            first = literal[0] if literal else ""
            entry["type"] = _type_name(type_parser) if type_parser is not None else _python_type(first)
            self._finish(module, entry, meta.get("choices"), fallback=literal)
        elif _name(_subscript_base(inner)) in {"List", "list"} and type_parser is None:
            elem = inner.slice if isinstance(inner, ast.Subscript) else None
            entry["type"] = _scalar_type(elem)
            nargs = self._try(module, meta["nargs"]) if "nargs" in meta else None
            entry["nargs"] = nargs or "+"
            self._finish(module, entry, meta.get("choices"))
        elif _name(inner) == "bool":
            entry["action"] = "store_true"
            entry["type"] = None
            self._finish(module, entry, None)
        else:
            entry["type"] = _type_name(type_parser) if type_parser is not None else _scalar_type(inner)
            if "nargs" in meta:
                entry["nargs"] = self._try(module, meta["nargs"]) or None
            self._finish(module, entry, meta.get("choices"))
        return entry

    def _field_default(self, module: _Module, node: ast.AnnAssign) -> Any:
        value = node.value
        if value is None:
            return None
        if isinstance(value, ast.Call) and _name(value.func) in {"field", "dataclasses.field"}:
            for keyword in value.keywords:
                if keyword.arg == "default":
                    return self._json(module, keyword.value)
                if keyword.arg == "default_factory":
                    factory = _name(keyword.value)
                    if factory in {"list", "dict"}:
                        return [] if factory == "list" else {}
                    return {"expr": ast.unparse(keyword.value) + "()"}
            return None
        return self._json(module, value)

    # -- add_argument calls -------------------------------------------------------

    def _add_argument(self, module: _Module, call: ast.Call) -> None:
        names = [
            arg.value for arg in call.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
        ]
        flags = [name for name in names if name.startswith("-")]
        if not flags:
            return
        kwargs = {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}
        long_flags = [name for name in flags if name.startswith("--")] or flags
        dest = self._try(module, kwargs.get("dest"))
        entry: dict[str, Any] = {
            "flag": long_flags[0],
            "aliases": [name for name in flags if name != long_flags[0]],
            "dest": dest if isinstance(dest, str) else long_flags[0].lstrip("-").replace("-", "_"),
            "action": self._action_name(kwargs["action"]) if "action" in kwargs else "store",
            "nargs": self._try(module, kwargs.get("nargs")),
            "type": _type_name(kwargs["type"]) if "type" in kwargs else "str",
            "default": self._json(module, kwargs["default"]) if "default" in kwargs else None,
        }
        if entry["action"] in _NO_VALUE_ACTIONS and "type" not in kwargs:
            entry["type"] = None
        if "new_flag" in kwargs:
            entry["deprecated"] = self._try(module, kwargs["new_flag"], default=True)
        self._finish(module, entry, kwargs.get("choices"))
        self._add(entry)

    # -- shared -------------------------------------------------------------------

    def _finish(
        self,
        module: _Module,
        entry: dict[str, Any],
        choices_node: ast.expr | None,
        fallback: list[Any] | None = None,
    ) -> None:
        action = entry["action"]
        custom_nargs = self._custom_action_nargs(module, action)
        if custom_nargs is not None and entry["nargs"] is None:
            entry["nargs"] = custom_nargs
        if action.startswith("Deprecated") and "deprecated" not in entry:
            entry["deprecated"] = True
        entry.setdefault("deprecated", None)
        if action == "BooleanOptionalAction":
            entry["aliases"] = entry["aliases"] + ["--no-" + entry["flag"][2:]]
        entry["takes_value"] = action not in _NO_VALUE_ACTIONS and entry["nargs"] != 0
        if entry["takes_value"] is False:
            entry["type"] = None
        entry["choices"], entry["choices_expr"], entry["choices_conditional"] = self._choices(
            module, choices_node, fallback
        )

    def _choices(
        self, module: _Module, node: ast.expr | None, fallback: list[Any] | None
    ) -> tuple[list[Any] | None, str | None, dict[str, str] | None]:
        """(choices, the expression when unresolvable, values that depend on a condition)."""
        if node is None:
            return fallback, None, None
        self.conditional = {}
        try:
            values = self._eval(module, node)
            choices = _dedupe([_json_value(self._plain(value)) for value in _iterable(values)])
        except _Unresolved:
            return None, ast.unparse(node), None
        if not choices:
            # arg_utils tests `if arg_meta.choices` / `arg_meta.choices or literal`.
            return fallback, None, None
        conditional = {
            str(value): self.conditional[str(value)] for value in choices if str(value) in self.conditional
        }
        return choices, None, conditional or None

    def _custom_action_nargs(self, module: _Module, action: str) -> int | None:
        """nargs=0 declared in a custom Action's __init__ (sglang's Deprecated*Action)."""
        if action in _NO_VALUE_ACTIONS or action in {"store", "append", "extend"}:
            return None
        found = self._class(module, ast.Name(id=action))
        if found is None:
            return None
        for node in found[1].body:
            if isinstance(node, ast.FunctionDef) and node.name == "__init__":
                args = node.args.args
                defaults = node.args.defaults
                for arg, default in zip(args[len(args) - len(defaults) :], defaults, strict=True):
                    if (
                        arg.arg == "nargs"
                        and isinstance(default, ast.Constant)
                        and isinstance(default.value, int)
                    ):
                        return int(default.value)
        return None

    def _action_name(self, node: ast.expr) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Attribute):
            return node.attr
        if isinstance(node, ast.Name):
            return node.id
        return ast.unparse(node)

    def _add(self, entry: dict[str, Any]) -> None:
        # A later registration of the same flag replaces an earlier one, as argparse
        # would refuse a real conflict at import time anyway.
        self.flags[entry["flag"]] = {key: entry.get(key) for key in _KEYS}

    def _json(self, module: _Module, node: ast.expr) -> Any:
        try:
            return _json_value(self._plain(self._eval(module, node)))
        except _Unresolved:
            return {"expr": ast.unparse(node)}

    def _try(self, module: _Module, node: ast.expr | None, default: Any = None) -> Any:
        if node is None:
            return default
        try:
            return self._plain(self._eval(module, node))
        except _Unresolved:
            return default

    def _plain(self, value: Any) -> Any:
        """An evaluated value with enum members replaced by what argparse would store."""
        if isinstance(value, _Member):
            return self._eval(value.owner, value.value)
        if isinstance(value, _Enum):
            raise _Unresolved
        if isinstance(value, list):
            return [self._plain(item) for item in value]
        return value

    # -- the evaluator ------------------------------------------------------------

    def _eval(  # noqa: PLR0911, PLR0912 (one branch per node kind)
        self, module: _Module, node: ast.expr, depth: int = 0, env: dict[str, Any] | None = None
    ) -> Any:
        """A small, safe evaluator: literals, names, class attributes, enums,
        comprehensions, f-strings, + and *, a few builtins and str methods."""
        if depth > 30:
            raise _Unresolved
        env = env or {}
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items: list[Any] = []
            for item in node.elts:
                if isinstance(item, ast.Starred):
                    items.extend(_iterable(self._eval(module, item.value, depth + 1, env)))
                else:
                    items.append(self._eval(module, item, depth + 1, env))
            return items
        if isinstance(node, ast.Dict):
            if any(key is None for key in node.keys):
                raise _Unresolved
            return {
                self._eval(module, key, depth + 1, env): self._eval(module, value, depth + 1, env)  # type: ignore[arg-type]
                for key, value in zip(node.keys, node.values, strict=True)
            }
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self._eval(module, node.operand, depth + 1, env)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self._eval(module, node.operand, depth + 1, env)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.BitOr)):
            left = self._eval(module, node.left, depth + 1, env)
            right = self._eval(module, node.right, depth + 1, env)
            try:
                if isinstance(node.op, ast.Add):
                    return left + right
                if isinstance(node.op, ast.Mult):
                    return left * right
                return _dedupe([*_iterable(left), *_iterable(right)])  # set union
            except TypeError:
                raise _Unresolved from None
        if isinstance(node, ast.JoinedStr):
            return "".join(self._format(module, part, depth + 1, env) for part in node.values)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self._comprehension(module, node, depth + 1, env)
        if isinstance(node, (ast.Compare, ast.BoolOp)):
            return self._test(module, node, depth + 1, env)
        if isinstance(node, ast.Name) and node.id in env:
            return env[node.id]
        if isinstance(node, ast.Attribute):
            # `m.name` / `m.value` on an enum member bound by a comprehension.
            if isinstance(node.value, ast.Name) and node.value.id in env:
                return self._member_attr(env[node.value.id], node.attr)
            if not isinstance(node.value, ast.Name):
                return self._member_attr(self._eval(module, node.value, depth + 1, env), node.attr)
        if isinstance(node, (ast.Name, ast.Attribute)):
            enum = self._enum(module, node)
            if enum is not None:
                return enum
            owner, target = self._node(module, node, depth + 1)
            value = self._eval(owner, target, depth + 1)
            if isinstance(node, ast.Name):
                # An imported name was already extended in its own module (`target` is
                # a Name there); here only this module's own calls apply.
                return self._mutated(module, node.id, value, depth + 1)
            return value
        if isinstance(node, ast.Call):
            return self._eval_call(module, node, depth + 1, env)
        raise _Unresolved

    def _format(self, module: _Module, part: ast.expr, depth: int, env: dict[str, Any]) -> str:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            return part.value
        if isinstance(part, ast.FormattedValue) and part.conversion == -1 and part.format_spec is None:
            return str(self._plain(self._eval(module, part.value, depth, env)))
        raise _Unresolved

    def _comprehension(
        self,
        module: _Module,
        node: ast.ListComp | ast.SetComp | ast.GeneratorExp,
        depth: int,
        env: dict[str, Any],
    ) -> list[Any]:
        scopes = [dict(env)]
        for generator in node.generators:
            if generator.is_async:
                raise _Unresolved
            following: list[dict[str, Any]] = []
            for scope in scopes:
                for item in _iterable(self._eval(module, generator.iter, depth + 1, scope)):
                    bound = dict(scope)
                    _bind(generator.target, item, bound)
                    if all(self._eval(module, test, depth + 1, bound) for test in generator.ifs):
                        following.append(bound)
            scopes = following
        values = [self._eval(module, node.elt, depth + 1, scope) for scope in scopes]
        return _dedupe(values) if isinstance(node, ast.SetComp) else values

    def _test(self, module: _Module, node: ast.Compare | ast.BoolOp, depth: int, env: dict[str, Any]) -> bool:
        if isinstance(node, ast.BoolOp):
            results = (bool(self._eval(module, value, depth + 1, env)) for value in node.values)
            return all(results) if isinstance(node.op, ast.And) else any(results)
        left = self._plain(self._eval(module, node.left, depth + 1, env))
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self._plain(self._eval(module, comparator, depth + 1, env))
            if isinstance(op, ast.Eq):
                ok = left == right
            elif isinstance(op, ast.NotEq):
                ok = left != right
            elif isinstance(op, ast.In):
                ok = left in _iterable(right)
            elif isinstance(op, ast.NotIn):
                ok = left not in _iterable(right)
            else:
                raise _Unresolved
            if not ok:
                return False
            left = right
        return True

    def _member_attr(self, value: Any, attr: str) -> Any:
        if isinstance(value, _Member):
            if attr == "name":
                return value.name
            if attr == "value":
                return self._eval(value.owner, value.value)
        raise _Unresolved

    def _enum(self, module: _Module, node: ast.Name | ast.Attribute) -> _Enum | _Member | None:
        """The Enum class a name stands for, or `Enum.MEMBER`."""
        if isinstance(node, ast.Name):
            found = self._class(module, node) if node.id not in module.constants else None
            if found is not None and any(
                _name(base).split(".")[-1] in _ENUM_BASES for base in found[1].bases
            ):
                return _Enum(found[0], found[1])
            return None
        if isinstance(node.value, ast.Name):
            owner = self._enum(module, node.value)
            if isinstance(owner, _Enum):
                for member in owner.members():
                    if member.name == node.attr:
                        return member
        return None

    def _mutated(self, owner: _Module, name: str, value: Any, depth: int) -> Any:
        """A module constant after the module-level calls that extend it."""
        mutations = owner.mutations.get(name)
        if not mutations:
            return value
        values = list(_iterable(value))
        for method, argument, condition in mutations:
            added = self._eval(owner, argument, depth + 1)
            # add/append take one value; extend, update and += take an iterable.
            new = [added] if method in {"add", "append"} else list(_iterable(added))
            for item in new:
                plain = self._plain(item)
                if condition is not None and plain not in values:
                    self.conditional[str(plain)] = condition
                values.append(plain)
        return _dedupe(values)

    def _class_scope(self, owner: _Module, cls: ast.ClassDef) -> _Module:
        """The names a class body's own statements see: module constants, then the class's."""
        key = id(cls)
        if key not in self._class_scopes:
            constants = dict(owner.constants)
            for item in cls.body:
                if isinstance(item, ast.Assign):
                    for target in item.targets:
                        if isinstance(target, ast.Name):
                            constants[target.id] = item.value
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value:
                    constants[item.target.id] = item.value
            self._class_scopes[key] = _Module(
                owner.path, owner.tree, constants, owner.classes, owner.imports, owner.mutations
            )
        return self._class_scopes[key]

    def _node(self, module: _Module, node: ast.expr, depth: int) -> tuple[_Module, ast.expr]:
        """The expression a name or `Class.attr` stands for, and the scope it lives in."""
        if depth > 30:
            raise _Unresolved
        if isinstance(node, ast.Name):
            if node.id in module.constants:
                return module, module.constants[node.id]
            if node.id in module.imports:
                other = self.wheel.module_by_name(module.imports[node.id][0])
                target = module.imports[node.id][1]
                if other is not None and target in other.constants:
                    return other, ast.Name(id=target)
            raise _Unresolved
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            # `ServerArgs.field` (a field default) or `ImportedClass.ATTR`.
            found = self._class(module, node.value)
            if found is not None:
                owner, cls = found
                scope = self._class_scope(owner, cls)
                for item in cls.body:
                    if (
                        isinstance(item, ast.AnnAssign)
                        and isinstance(item.target, ast.Name)
                        and item.target.id == node.attr
                    ):
                        return scope, item.value if item.value is not None else ast.Constant(value=None)
                    if isinstance(item, ast.Assign) and any(
                        isinstance(target, ast.Name) and target.id == node.attr for target in item.targets
                    ):
                        return scope, item.value
        raise _Unresolved

    def _eval_call(self, module: _Module, node: ast.Call, depth: int, env: dict[str, Any]) -> Any:
        func = _name(node.func)
        if (
            func in {"list", "sorted", "tuple", "set", "frozenset"}
            and len(node.args) == 1
            and not node.keywords
        ):
            values = list(_iterable(self._eval(module, node.args[0], depth + 1, env)))
            if func == "sorted":
                return sorted(self._plain(values))
            return _dedupe(values) if func in {"set", "frozenset"} else values
        if func == "str" and len(node.args) == 1 and not node.keywords:
            return str(self._plain(self._eval(module, node.args[0], depth + 1, env)))
        if isinstance(node.func, ast.Attribute) and node.func.attr == "keys" and not node.args:
            # Only the keys are needed: the values are often classes.
            target_node = node.func.value
            if isinstance(target_node, ast.Name) and target_node.id in env:
                raise _Unresolved
            owner, target = self._node(module, target_node, depth + 1)
            while isinstance(target, ast.Name) and target.id in owner.constants:
                owner, target = self._node(owner, target, depth + 1)
            if isinstance(target, ast.Dict) and all(key is not None for key in target.keys):
                return [self._eval(owner, key, depth + 1) for key in target.keys if key is not None]
            raise _Unresolved
        if isinstance(node.func, ast.Attribute) and node.func.attr in _STR_METHODS:
            subject = self._plain(self._eval(module, node.func.value, depth + 1, env))
            args = [self._plain(self._eval(module, arg, depth + 1, env)) for arg in node.args]
            if isinstance(subject, str) and all(isinstance(arg, str) for arg in args) and not node.keywords:
                return getattr(subject, node.func.attr)(*args)
        raise _Unresolved
