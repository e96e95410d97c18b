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
from typing import Any

from tools.flag_manifest.pyread import (
    _KEYS,
    _NO_VALUE_ACTIONS,
    _json_value,
    _Module,
    _name,
    _Unresolved,
    _Wheel,
)
from tools.flag_manifest.vllm_fields import _default_json, _FieldReader, _Kwarg, _label

CLI_ARGS = "vllm/entrypoints/openai/cli_args.py"
ARG_UTILS = "vllm/engine/arg_utils.py"
ENTRY = "make_arg_parser"


class VllmExtractor(_FieldReader):
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


def read_wheel(wheel: _Wheel) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """(flags, positionals, modules read) of `vllm serve`, from make_arg_parser down."""
    extractor = VllmExtractor(wheel)
    module = extractor.load(CLI_ARGS)
    if module is None:
        raise _Unresolved
    extractor.walk(module, extractor.function(module, None, ENTRY).body, {}, None)
    return list(extractor.flags.values()), extractor.positionals, sorted(extractor.read)
