"""A small, safe evaluator of a wheel's Python source: the values argparse would see.

Literals, names, class attributes, enum members, comprehensions, f-strings, `+` and
`*`, a few builtins and str methods, resolved through the wheel's modules and one hop
of `from X import Y`. What it cannot resolve raises `_Unresolved`: the extractors
record such a value as its source expression, never a guess.
"""

from __future__ import annotations

import ast
from typing import Any

from tools.flag_manifest.pyread import (
    _ENUM_BASES,
    _STR_METHODS,
    _bind,
    _dedupe,
    _Enum,
    _iterable,
    _json_value,
    _Member,
    _Module,
    _name,
    _Unresolved,
    _Wheel,
)


class _Evaluator:
    def __init__(self, wheel: _Wheel, modules: list[_Module]) -> None:
        self.wheel = wheel
        self.modules = modules
        # Values added to a choice list under a condition while evaluating one flag's
        # choices: value -> condition source. Reset per flag by the extractor.
        self.conditional: dict[str, str] = {}
        self._class_scopes: dict[int, _Module] = {}

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
