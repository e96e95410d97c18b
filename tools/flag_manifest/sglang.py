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

from tools.flag_manifest.pyeval import _Evaluator
from tools.flag_manifest.pyread import (
    _KEYS,
    _NO_VALUE_ACTIONS,
    _calls,
    _dedupe,
    _is_text,
    _iterable,
    _json_value,
    _literal_values,
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


class _Extractor(_Evaluator):
    def __init__(self, wheel: _Wheel, modules: list[_Module]) -> None:
        super().__init__(wheel, modules)
        self.flags: dict[str, dict[str, Any]] = {}

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
