"""Static reading of a wheel's Python source, for the flag-manifest extractors.

Neither engine can be imported here (both drag in torch and CUDA), so their argument
parsers are read with `ast`: a wheel's modules (`_Wheel`), their constants, classes,
enums and imports (`_Module`), and the helpers that evaluate literal expressions. What
cannot be evaluated raises `_Unresolved`; the extractors record it, never guess.
"""

from __future__ import annotations

import ast
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tierops.errors import InputError

# argparse actions that never take a value.
# argparse actions that never take a value.
_NO_VALUE_ACTIONS = {
    "store_true",
    "store_false",
    "store_const",
    "count",
    "help",
    "version",
    "BooleanOptionalAction",
}


# The keys of one manifest entry, in the order they are written.
_KEYS = (
    "flag",
    "aliases",
    "dest",
    "action",
    "nargs",
    "takes_value",
    "type",
    "choices",
    "choices_expr",
    "choices_conditional",
    "default",
    "deprecated",
)


class _Unresolved(Exception):
    pass


@dataclass
class _Module:
    path: str
    tree: ast.Module
    constants: dict[str, ast.expr] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)  # local name -> (module, name)
    # Module-level `NAME.add(x)` / `.append` / `.extend` / `.update` / `NAME += x` after
    # NAME's definition: (method, argument, condition source or None), in source order.
    mutations: dict[str, list[tuple[str, ast.expr, str | None]]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Member:
    """An enum member as the evaluator sees it: `.name`, and `.value` evaluated on demand."""

    owner: _Module
    name: str
    value: ast.expr


@dataclass(frozen=True)
class _Enum:
    """An Enum subclass named in an expression (`for m in Mode`, `Mode.FAST`)."""

    owner: _Module
    cls: ast.ClassDef

    def members(self) -> list[_Member]:
        found: list[_Member] = []
        for item in self.cls.body:
            if isinstance(item, ast.Assign) and len(item.targets) == 1:
                target = item.targets[0]
                if isinstance(target, ast.Name) and not target.id.startswith("_"):
                    found.append(_Member(self.owner, target.id, item.value))
            elif (
                isinstance(item, ast.AnnAssign)
                and isinstance(item.target, ast.Name)
                and item.value is not None
                and not item.target.id.startswith("_")
            ):
                found.append(_Member(self.owner, item.target.id, item.value))
        return found


_ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}
_MUTATORS = {"add", "append", "extend", "update"}
# str methods a choice expression may apply to each value.
_STR_METHODS = {"lower", "upper", "strip", "title", "replace", "removeprefix", "removesuffix"}


class _Wheel:
    """Modules of one wheel, parsed on demand."""

    def __init__(self, archive: zipfile.ZipFile) -> None:
        self.archive = archive
        self.names = set(archive.namelist())
        self.modules: dict[str, _Module] = {}

    def module(self, path: str) -> _Module | None:
        if path in self.modules:
            return self.modules[path]
        if path not in self.names:
            return None
        source = self.archive.read(path).decode("utf-8")
        try:
            tree = ast.parse(source, filename=path)
        except SyntaxError as exc:
            raise InputError(f"cannot parse {path}: {exc.msg} (line {exc.lineno})") from None
        module = _Module(path, tree)
        _record_mutations(module, tree.body, None)
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                module.constants[node.targets[0].id] = node.value
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.value is not None
            ):
                module.constants[node.target.id] = node.value
            elif isinstance(node, ast.ClassDef):
                module.classes[node.name] = node
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    module.imports[alias.asname or alias.name] = (node.module, alias.name)
        self.modules[path] = module
        return module

    def module_by_name(self, dotted: str) -> _Module | None:
        base = dotted.replace(".", "/")
        return self.module(base + ".py") or self.module(base + "/__init__.py")


def _calls(tree: ast.AST, method: str) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func).split(".")[-1] == method:
            yield node


def _name(node: ast.expr | None) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _name(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return ""


def _is_text(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_text(node.left) or _is_text(node.right)
    return False


def _subscript_base(node: ast.expr) -> ast.expr | None:
    return node.value if isinstance(node, ast.Subscript) else None


def _unwrap_optional(node: ast.expr) -> tuple[ast.expr, bool]:
    if isinstance(node, ast.Subscript) and _name(node.value) in {"Optional", "typing.Optional"}:
        return node.slice, True
    if isinstance(node, ast.Subscript) and _name(node.value) in {"Union", "typing.Union"}:
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        rest = [item for item in items if not (isinstance(item, ast.Constant) and item.value is None)]
        if len(rest) == 1 and len(items) == 2:
            return rest[0], True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [node.left, node.right]
        rest = [side for side in sides if not (isinstance(side, ast.Constant) and side.value is None)]
        if len(rest) == 1:
            return rest[0], True
    return node, False


def _literal_values(node: ast.expr) -> list[Any] | None:
    if isinstance(node, ast.Subscript) and _name(node.value) in {"Literal", "typing.Literal"}:
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [item.value for item in items if isinstance(item, ast.Constant)]
    return None


def _python_type(value: Any) -> str:
    """arg_utils._infer_type_func applied to type(value): int, float, else str."""
    if isinstance(value, bool) or value is None:
        return "str"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str"


def _scalar_type(node: ast.expr | None) -> str:
    # Mirrors arg_utils._infer_type_func: int, float, else str.
    name = _name(node) if node is not None else ""
    return name if name in {"int", "float"} else "str"


def _type_name(node: ast.expr) -> str:
    name = _name(node)
    return name if name else ast.unparse(node)


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _json_value(item) for key, item in value.items()}
    raise _Unresolved


def _iterable(value: Any) -> list[Any]:
    if isinstance(value, _Enum):
        return list(value.members())
    if isinstance(value, dict):
        return list(value)
    if isinstance(value, (list, tuple, str)):
        return list(value)
    raise _Unresolved


def _dedupe(values: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen


def _bind(target: ast.expr, value: Any, env: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif (
        isinstance(target, ast.Tuple) and isinstance(value, (list, tuple)) and len(value) == len(target.elts)
    ):
        for item, part in zip(target.elts, value, strict=True):
            _bind(item, part, env)
    else:
        raise _Unresolved


def _record_mutations(module: _Module, body: list[ast.stmt], condition: str | None) -> None:
    """Module-level statements that extend a constant, in order, with the `if` they sit under."""
    for node in body:
        if isinstance(node, ast.If):
            test = ast.unparse(node.test)
            _record_mutations(module, node.body, test if condition is None else f"{condition} and {test}")
            negated = f"not ({test})"
            _record_mutations(
                module, node.orelse, negated if condition is None else f"{condition} and {negated}"
            )
        elif isinstance(node, ast.Try):
            _record_mutations(module, node.body, condition)
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and isinstance(node.value.func.value, ast.Name)
            and node.value.func.attr in _MUTATORS
            and len(node.value.args) == 1
        ):
            name = node.value.func.value.id
            module.mutations.setdefault(name, []).append(
                (node.value.func.attr, node.value.args[0], condition)
            )
        elif (
            isinstance(node, ast.AugAssign)
            and isinstance(node.op, ast.Add)
            and isinstance(node.target, ast.Name)
        ):
            module.mutations.setdefault(node.target.id, []).append(("extend", node.value, condition))
