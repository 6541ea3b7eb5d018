"""Name resolution, type checking and the static cost bound of expressions.

One walk does all three: it returns each expression's type, records what the compiler needs (types,
call targets, decoded literals) in :class:`Info`, and adds the node's cost times the product of the
bounds of the loops around it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable

from policyscheduler.checker.conversions import parse_float, parse_int
from policyscheduler.checker.env import GENERIC_BUILTINS, FuncSig, Schema
from policyscheduler.checker.types import (
    BOOL,
    DURATION,
    ERROR,
    FLOAT,
    INT,
    NOTHING,
    QUANTITY,
    STRING,
    TIME,
    TIMESTAMP,
    ListT,
    MapT,
    Prim,
    RecordT,
    Type,
    arith,
    assignable,
    is_numeric,
    join,
    time_arith,
)
from policyscheduler.diagnostics import Diagnostic, Span, close_names, error, warning
from policyscheduler.quantity import MAX_EXPONENT, parse_quantity
from policyscheduler.syntax import ast
from policyscheduler.syntax.printer import to_source
from policyscheduler.syntax.visitor import ExprVisitor
from policyscheduler.times import parse_duration, parse_timestamp

DEFAULT_LIST_BOUND = 256
"""Items assumed in a list whose schema annotation carries no ``Bound``."""
DEFAULT_MAP_BOUND = 64
"""Entries assumed in a map (labels, annotations, resources)."""
DEFAULT_STRING_BOUND = 512
"""Characters assumed in a string read from an object with no tighter bound: names (253), label keys and
resource names (317), images; annotation values have their own bound."""
ANNOTATION_VALUE_BOUND = 256 * 1024
"""Characters in an annotation value (the API server limits all of an object's annotations to 256 KiB)."""
MAX_STRING_BOUND = 2**20
"""Largest string a rule may build (concatenation adds lengths): 1 MiB. Above, the rule is refused (``cost-limit``)."""
LABEL_VALUE_BOUND = 63
"""Characters in a label value (the API server's limit)."""
MAP_KEY_BOUND = 317
"""Characters in a map key: a qualified name, 253 (DNS prefix) + 1 + 63."""
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""Integers are 64-bit, as in the API server: a literal beyond is ``too-large``, a result beyond is a runtime
``overflow`` error at the operator."""
WALK_CAP = 2**62
"""Where the bound of a nested list comparison stops growing (far above any limit: the rule is refused)."""
MAX_QUANTITY_DIGITS = 40
"""Digits a quantity literal may have (a 5,000-digit quantity is ``too-large``)."""

_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Bidirectional control characters ("Trojan Source", CVE-2021-42574): reordering marks, embeddings, overrides
and isolates."""

_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}
_LOOP_EXPRS = (ast.Quantifier, ast.Comprehension, ast.Aggregate)


@dataclasses.dataclass
class Info:
    """What the checker learned about the expressions of one rule (keyed by ``id(node)``)."""

    types: dict[int, Type] = dataclasses.field(default_factory=dict)
    calls: dict[int, tuple[str, str]] = dataclasses.field(default_factory=dict)  # ("generic"|"builtin"|"method", name)
    literals: dict[int, object] = dataclasses.field(default_factory=dict)
    signatures: dict[int, FuncSig] = dataclasses.field(default_factory=dict)
    sizes: dict[int, int] = dataclasses.field(default_factory=dict)
    """Upper bound of the length of each string-typed expression (for the cost of concatenation)."""
    constants: dict[int, int] = dataclasses.field(default_factory=dict)
    """The value of each int expression built from literals and constant lets only (folded within 64 bits)."""


@dataclasses.dataclass
class Binding:
    type: Type
    span: Span | None
    kind: str  # "root" | "let" | "loop"
    used: bool = False
    size: int | None = None
    """For a string: the bound of its length (a let of a concatenation), None for the default bound."""
    constant: int | None = None
    """For an int let of a constant expression: its value (so ``let a1 = a0 * a0`` folds, within 64 bits)."""


class Scope:
    """Names visible at a point of a rule; lookups mark bindings used."""

    def __init__(self, names: dict[str, Binding], parent: Scope | None = None) -> None:
        self.names = names
        self.parent = parent

    def lookup(self, name: str) -> Binding | None:
        s: Scope | None = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None

    def all_names(self) -> list[str]:
        out: list[str] = []
        s: Scope | None = self
        while s is not None:
            out.extend(s.names)
            s = s.parent
        return out


def _suggest(name: str, options: list[str]) -> str:
    close = close_names(name, options, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def _near(name: str, options: list[str]) -> str:
    close = close_names(name, options)
    return "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?" if close else ""


_NULL_NAMES = {"null", "nil", "None", "none", "undefined", "NULL"}
_NULL_HINT = ("there is no null: reading a missing map key gives the zero value (\"\", 0, false); test presence "
              "with 'key in map', e.g. \"gpu\" in node.labels")
_MEMBERSHIP_FUNCS = {"has", "has_key", "contains", "includes", "exists", "hasKey", "haskey", "in_"}
_MEMBERSHIP_HINT = ("use the 'in' operator: \"gpu\" in node.labels (map key), \"NoSchedule\" in effects (list "
                    "item), \"-gpu\" in node.name (substring)")
_STRING_METHODS = {
    "startswith": "starts_with(s, prefix)", "starts_with": "starts_with(s, prefix)",
    "endswith": "ends_with(s, suffix)", "ends_with": "ends_with(s, suffix)",
    "lower": "lower(s)", "split": "split(s, sep)", "len": "len(x)", "length": "len(x)", "size": "len(x)",
    "keys": "a loop 'k in M' (or 'k, v in M')", "values": "a loop 'k, v in M'",
}
_CONVERT = {"int": "int", "float": "float", "quantity": "quantity"}
_PARSED = {"int": INT, "float": FLOAT, "quantity": QUANTITY, "timestamp": TIMESTAMP, "duration": DURATION}
"""The builtins that parse a string (and take ``default``), with their result types."""
_TIME_HINT = ("; timestamp - timestamp is a duration, compared with a duration (duration(\"10m\")); seconds(d) "
              "converts a duration to an int of seconds")
_BUILTIN_LIST_HINT = "the builtins are listed in grammar/LANGUAGE.md, section 'Builtins'"


def _members(record: str, fields: Iterable[str], methods: Iterable[str]) -> str:
    """``; Cluster has: node_count, spread_count(), ...`` -- what the user can write instead."""
    names = sorted(fields) + sorted(f"{m}()" for m in methods)
    return f"; {record} has: " + ", ".join(names) if names else ""


def _numeric_hint(string_side: ast.Expr, number_type: Type, op: str, other: ast.Expr, string_left: bool) -> str:
    """``int(node.labels["x"], default 0) >= 4``: the comparison with the string side converted."""
    conv = _CONVERT.get(str(number_type), "float")
    converted = f"{conv}({to_source(string_side)}, default 0)"
    other_text = to_source(other)
    shown = f"{converted} {op} {other_text}" if string_left else f"{other_text} {op} {converted}"
    return (f"; label and annotation values are strings, so convert the string to compare numbers: {shown} "
            "(int(), float() and quantity() parse text; 'default' is used when it does not parse)")


class ExprChecker(ExprVisitor[Type]):
    """Checks the expressions of one rule against a schema (one ``_<Class>`` method per expression class)."""

    def __init__(self, schema: Schema, info: Info, diags: list[Diagnostic]) -> None:
        self.schema = schema
        self.info = info
        self.diags = diags
        self.cost = 0
        self._string_limit_reported = False
        self.loops: list[tuple[int, ast.Expr]] = []
        """Each loop expression (quantifier, comprehension, aggregate) with the cost it added, so a cost
        diagnostic can point at the loop that dominates the bound rather than at the rule."""
        self.pod_level: str | None = None
        """The pod-level clause being checked ("'applies when'"): it runs before any node, so 'node' is out of reach."""

    # -- helpers
    def err(self, code: str, message: str, span: Span) -> Type:
        self.diags.append(error(code, message, span))
        return ERROR

    def expect(self, e: ast.Expr, scope: Scope, want: Type, what: str, mult: int) -> Type:
        t = self.check(e, scope, mult)
        if not assignable(t, want):
            return self.err("type-mismatch", f"{what} must be {want}, got {t}", e.span)
        return t

    # -- dispatch
    def check(self, e: ast.Expr, scope: Scope, mult: int) -> Type:
        before = self.cost
        self.cost += mult
        t = self.visit(e, scope, mult)
        self.info.types[id(e)] = t
        if isinstance(e, _LOOP_EXPRS):
            self.loops.append((self.cost - before, e))
        return t

    def costliest_loop(self) -> tuple[int, ast.Expr] | None:
        """The loop that adds the most to the cost bound (an outermost one: a loop's cost includes the
        loops inside it), with what it adds; None for a rule without loops."""
        return max(self.loops, key=lambda c: c[0]) if self.loops else None

    def size(self, e: ast.Expr) -> int:
        """The bound of the length of string expression ``e`` (after it was checked)."""
        return self.info.sizes.get(id(e), DEFAULT_STRING_BOUND)

    def _string_size(self, e: ast.Expr, size: int) -> None:
        """Record the length bound of a string ``e`` builds; refuse one above :data:`MAX_STRING_BOUND`."""
        self.info.sizes[id(e)] = size
        if size > MAX_STRING_BOUND and not self._string_limit_reported:
            self._string_limit_reported = True
            self.diags.append(error("cost-limit", f"this may build a string of up to {size:,} characters (limit "
                                    f"{MAX_STRING_BOUND:,}); concatenation adds the lengths of its operands",
                                    e.span))

    def _walked(self, t: Type) -> int:
        """Steps of comparing a value of type ``t`` item by item (``==``, ``in``): every item of a list, and
        the items of the lists inside it. 0 for a scalar (one step, already counted for the expression)."""
        if not isinstance(t, ListT):
            return 0
        return min(self._list_bound(t) * (1 + self._walked(t.elem)), WALK_CAP)

    def _list_bound(self, t: Type) -> int:
        return t.bound if isinstance(t, ListT) and t.bound is not None else DEFAULT_LIST_BOUND

    def _IntLit(self, e: ast.IntLit, scope: Scope, mult: int) -> Type:
        if not INT64_MIN <= e.value <= INT64_MAX:
            return self.err("too-large", "this integer is outside the 64-bit range (-9223372036854775808.."
                            "9223372036854775807) that integers have", e.span)
        self.info.constants[id(e)] = e.value
        return INT

    def _FloatLit(self, e: ast.FloatLit, scope: Scope, mult: int) -> Type:
        return FLOAT

    def _BoolLit(self, e: ast.BoolLit, scope: Scope, mult: int) -> Type:
        return BOOL

    def _QuantityLit(self, e: ast.QuantityLit, scope: Scope, mult: int) -> Type:
        digits = len(re.match(r"\d*(\.\d*)?", e.text).group(0))  # type: ignore[union-attr]
        exp = re.fullmatch(r"[\d.]+[eE]([+-]?\d+)", e.text)
        if exp and (len(exp.group(1)) > 6 or abs(int(exp.group(1))) > MAX_EXPONENT):
            return self.err("too-large", f"the exponent of {e.text[:40]} is out of range (at most {MAX_EXPONENT})",
                            e.span)
        if digits > MAX_QUANTITY_DIGITS:
            return self.err("too-large", f"this quantity has {digits:,} digits; a quantity literal may have at most "
                            f"{MAX_QUANTITY_DIGITS} (the API server keeps quantities in 64 bits)", e.span)
        value = parse_quantity(e.text)
        if value is None:
            unit = re.sub(r"^\d+(\.\d+)?", "", e.text)
            return self.err("bad-quantity", f"unknown unit '{unit}' in quantity {e.text}; units are "
                            "n u m k M G T P E Ki Mi Gi Ti Pi Ei (or an exponent like 1e3)", e.span)
        self.info.literals[id(e)] = value
        return QUANTITY

    def _StringLit(self, e: ast.StringLit, scope: Scope, mult: int) -> Type:
        value = decode_string(e.raw)
        if value is None:
            return self.err("bad-string", "unknown escape in string; use \\\" \\\\ \\n or \\t", e.span)
        self.info.literals[id(e)] = value
        self.info.sizes[id(e)] = len(value)
        bidi = _BIDI.search(value)
        if bidi is not None:
            self.diags.append(warning("bidi-control", f"this string holds the invisible bidirectional control "
                                      f"character U+{ord(bidi.group(0)):04X}, which can make the text (and the "
                                      "rule around it) display differently from what it is; remove it", e.span))
        return STRING

    def _ListLit(self, e: ast.ListLit, scope: Scope, mult: int) -> Type:
        elem: Type = NOTHING
        for item in e.items:
            t = self.check(item, scope, mult)
            j = join(elem, t)
            if j is None:
                self.err("type-mismatch", f"list items must have one type: {elem} and {t}", item.span)
                elem = ERROR
            else:
                elem = j
        if elem == STRING and e.items:
            self.info.sizes[id(e)] = max(self.size(i) for i in e.items)  # the bound of each item
        return ListT(elem, len(e.items))

    def _Name(self, e: ast.Name, scope: Scope, mult: int) -> Type:
        b = scope.lookup(e.id)
        if b is not None:
            if self.pod_level is not None and b.kind == "root" and e.id == "node":
                return self.err("applies-uses-node",
                                f"{self.pod_level} cannot use '{e.id}': it is evaluated once per pod, "
                                "before any node is looked at", e.span)
            if self.pod_level is not None and b.kind == "root" and e.id == "target":
                return self.err("applies-uses-target",
                                f"{self.pod_level} cannot use 'target': it is evaluated once per preemptor, "
                                "before any victim is looked at", e.span)
            b.used = True
            if b.size is not None:
                self.info.sizes[id(e)] = b.size
            if b.constant is not None:
                self.info.constants[id(e)] = b.constant
            return b.type
        if e.id in GENERIC_BUILTINS or e.id in self.schema.builtins:
            return self.err("type-mismatch", f"function '{e.id}' must be called", e.span)
        if e.id in _NULL_NAMES:
            return self.err("unknown-name", f"unknown name '{e.id}': {_NULL_HINT}", e.span)
        return self.err("unknown-name", f"unknown name '{e.id}'{_suggest(e.id, scope.all_names())}", e.span)

    def _Attr(self, e: ast.Attr, scope: Scope, mult: int) -> Type:
        t = self.check(e.obj, scope, mult)
        if t == ERROR:
            return ERROR
        if not isinstance(t, RecordT):
            hint = f'; use [\"{e.name}\"] to read a map key' if isinstance(t, MapT) else ""
            return self.err("type-mismatch", f"{t} has no fields (reading '.{e.name}'){hint}", e.name_span)
        rec = self.schema.records.get(t.name)
        if rec is None:
            return self.err("unknown-field", f"record type {t.name} is not in the schema", e.name_span)
        if e.name in rec.fields:
            return rec.fields[e.name]
        if e.name in rec.methods:
            return self.err("type-mismatch", f"method '{t.name}.{e.name}' must be called", e.name_span)
        near = _suggest(e.name, list(rec.fields))  # a read: fields (a method named here would need a call)
        return self.err("unknown-field", f"{t.name} has no field or method '{e.name}'"
                        + (near or _members(t.name, rec.fields, rec.methods)), e.name_span)

    def _Index(self, e: ast.Index, scope: Scope, mult: int) -> Type:
        t = self.check(e.obj, scope, mult)
        if isinstance(t, ListT):
            self.expect(e.index, scope, INT, "a list index", mult)
            return t.elem
        if isinstance(t, MapT):
            self.expect(e.index, scope, STRING, "a map key", mult)
            if isinstance(e.obj, ast.Attr) and e.obj.name in ("labels", "node_selector", "nodeSelector"):
                self.info.sizes[id(e)] = LABEL_VALUE_BOUND
            elif isinstance(e.obj, ast.Attr) and e.obj.name == "annotations":
                self.info.sizes[id(e)] = ANNOTATION_VALUE_BOUND
            return t.value
        self.check(e.index, scope, mult)
        if t == ERROR:
            return ERROR
        return self.err("type-mismatch", f"cannot index a {t}; only lists and maps can be indexed", e.span)

    def _Unary(self, e: ast.Unary, scope: Scope, mult: int) -> Type:
        if e.op == "not":
            self.expect(e.operand, scope, BOOL, "the operand of 'not'", mult)
            return BOOL
        if isinstance(e.operand, ast.IntLit) and e.operand.value == -INT64_MIN:
            # -9223372036854775808: the literal alone is one past INT64_MAX, its negation is INT64_MIN
            self.cost += mult
            self.info.types[id(e.operand)] = INT
            self.info.constants[id(e)] = INT64_MIN
            return INT
        t = self.check(e.operand, scope, mult)
        if t == INT:
            self._fold(e, "-", self.info.constants.get(id(e.operand)), 0)
        if t in (ERROR, DURATION) or is_numeric(t):
            return t
        return self.err("type-mismatch", f"unary '-' needs a number or a duration, got {t}", e.span)

    def _fold(self, e: ast.Expr, op: str, a: int | None, b: int | None) -> None:
        """Fold an int operation over constants, always within 64 bits: a result outside them is an
        ``overflow`` error here (it would fail on every node), and folding stops, so no chain of lets can
        make the checker compute with unbounded integers (24 squarings of 3 have 11 million digits)."""
        if a is None or b is None:
            return
        if op == "-" and isinstance(e, ast.Unary):
            r = -a
        elif op == "+":
            r = a + b
        elif op == "-":
            r = a - b
        elif op == "*":
            r = a * b
        elif op in ("/", "%") and b != 0:
            q = abs(a) // abs(b)
            q = q if (a >= 0) == (b >= 0) else -q
            r = q if op == "/" else a - q * b
        else:
            return
        if INT64_MIN <= r <= INT64_MAX:
            self.info.constants[id(e)] = r
            return
        self.err("overflow", f"the result of '{op}' here is always outside the 64-bit integer range "
                 "(-9223372036854775808..9223372036854775807): it would fail on every node that evaluates it",
                 _op_span(e) if isinstance(e, ast.Binary) else e.span)

    def _Binary(self, e: ast.Binary, scope: Scope, mult: int) -> Type:
        op = e.op
        at = _op_span(e)
        if op in ("and", "or"):
            self.expect(e.left, scope, BOOL, f"the left operand of '{op}'", mult)
            self.expect(e.right, scope, BOOL, f"the right operand of '{op}'", mult)
            return BOOL
        a = self.check(e.left, scope, mult)
        b = self.check(e.right, scope, mult)
        if ERROR in (a, b):
            return BOOL if op in ("==", "!=", "<", "<=", ">", ">=", "in", "not in") else ERROR
        if op in ("in", "not in"):
            if isinstance(b, ListT) and (join(a, b.elem) is not None):
                self.cost += mult * self._walked(b)  # each item of the list, each compared item by item
                return BOOL
            if isinstance(b, MapT) and a == STRING:
                return BOOL
            if a == STRING and b == STRING:
                return BOOL
            return self.err("type-mismatch", f"'{op}' needs an item and a list of it, a key and a map, or two "
                            f"strings; got {a} {op} {b}", at)
        if op in ("==", "!="):
            if join(a, b) is None:
                return self.err("type-mismatch", f"cannot compare {a} with {b}" + self._mixed_hint(e, a, b), at)
            self.cost += mult * min(self._walked(a), self._walked(b))  # lists compare item by item, nested too
            return BOOL
        if op in ("<", "<=", ">", ">="):
            if (is_numeric(a) and is_numeric(b)) or (a == STRING and b == STRING) or (a == b and a in TIME):
                return BOOL
            return self.err("type-mismatch", f"'{op}' needs two numbers, two strings, two timestamps or two "
                            f"durations, got {a} and {b}" + self._mixed_hint(e, a, b), at)
        if op == "+" and a == STRING and b == STRING:
            self._string_size(e, self.size(e.left) + self.size(e.right))  # concatenation adds lengths
            return STRING
        if op == "+" and isinstance(a, ListT) and isinstance(b, ListT):
            j = join(a, b)
            if j is None:
                return self.err("type-mismatch", f"cannot join {a} and {b}", at)
            assert isinstance(j, ListT)
            bound = self._list_bound(a) + self._list_bound(b)  # concatenation adds sizes (and copies them)
            self.cost += mult * bound
            if j.elem == STRING:
                self.info.sizes[id(e)] = max(self.size(e.left), self.size(e.right))
            return ListT(j.elem, bound)
        if op in ("/", "%") and is_numeric(b) and _constant(e.right) == 0:
            why = "" if isinstance(e.right, (ast.IntLit, ast.FloatLit, ast.QuantityLit)) else \
                f" ({to_source(e.right)} is always 0)"
            self.err("division-by-zero", f"'{op}' by zero{why}: this fails on every node", at)
        if a in TIME or b in TIME:
            r = time_arith(op, a, b)
            if r is None:
                return self.err("type-mismatch", f"'{op}' is not defined for {a} and {b}: timestamp - timestamp is "
                                "a duration, timestamp ± duration a timestamp, durations add, subtract and scale by "
                                "an int (d * n, d / n)", at)
            return r
        if op == "%":
            if a == INT and b == INT:
                self._fold(e, op, self.info.constants.get(id(e.left)), self.info.constants.get(id(e.right)))
                return INT
            return self.err("type-mismatch", f"'%' needs two ints, got {a} and {b}", at)
        r = arith(a, b)
        if r is None:
            return self.err("type-mismatch", f"'{op}' needs numbers{' (or two strings/lists)' if op == '+' else ''}, "
                            f"got {a} and {b}", at)
        if r == INT:
            self._fold(e, op, self.info.constants.get(id(e.left)), self.info.constants.get(id(e.right)))
        return r

    def _mixed_hint(self, e: ast.Binary, a: Type, b: Type) -> str:
        if (a in TIME) != (b in TIME) and STRING not in (a, b):
            return _TIME_HINT
        if a == STRING and is_numeric(b):
            return _numeric_hint(e.left, b, e.op, e.right, True)
        if b == STRING and is_numeric(a):
            return _numeric_hint(e.right, a, e.op, e.left, False)
        return ""

    def _IfExpr(self, e: ast.IfExpr, scope: Scope, mult: int) -> Type:
        self.expect(e.cond, scope, BOOL, "the condition of 'if'", mult)
        a = self.check(e.then, scope, mult)
        b = self.check(e.else_, scope, mult)
        if a == STRING and b == STRING:
            self.info.sizes[id(e)] = max(self.size(e.then), self.size(e.else_))
        j = join(a, b)
        if j is None:
            return self.err("type-mismatch", f"'then' and 'else' have different types: {a} and {b}", e.else_.span)
        return j

    # -- loops
    def _loop(self, loop: ast.Loop, scope: Scope, mult: int) -> tuple[Scope, int]:
        """Check the iterable, bind the loop variables, check ``where``; returns the inner scope and multiplier."""
        t = self.check(loop.iterable, scope, mult)
        names: dict[str, Binding] = {}
        if isinstance(t, ListT):
            bound = self._list_bound(t)
            types = [t.elem] if len(loop.binders) == 1 else [INT, t.elem]
        elif isinstance(t, MapT):
            bound = DEFAULT_MAP_BOUND
            types = [STRING] if len(loop.binders) == 1 else [STRING, t.value]
        else:
            bound = 1
            types = [ERROR] * len(loop.binders)
            if t != ERROR:
                self.err("type-mismatch", f"can only loop over a list or a map, got {t}", loop.iterable.span)
        for i, (b, bt) in enumerate(zip(loop.binders, types)):
            if scope.lookup(b.name) is not None or b.name in names:
                self.err("shadowed-name", f"'{b.name}' is already bound; choose another name", b.span)
            size = None
            if isinstance(t, MapT) and i == 0:
                size = MAP_KEY_BOUND
            elif isinstance(t, ListT) and bt == STRING:
                size = self.info.sizes.get(id(loop.iterable))  # the bound of each item of a list of strings
            names[b.name] = Binding(bt, b.span, "loop", size=size)
        self.info.types[id(loop)] = t
        inner = Scope(names, scope)
        inner_mult = min(mult * max(1, bound), WALK_CAP)  # far above the limit: no need for bigger numbers
        self.cost += inner_mult  # one step per item visited, whatever the body (count(x in L) has none)
        if loop.where is not None:
            self.expect(loop.where, inner, BOOL, "a 'where' condition", inner_mult)
        return inner, inner_mult

    def _Quantifier(self, e: ast.Quantifier, scope: Scope, mult: int) -> Type:
        inner, m = self._loop(e.loop, scope, mult)
        self.expect(e.body, inner, BOOL, f"the body of '{e.kind}'", m)
        return BOOL

    def _Comprehension(self, e: ast.Comprehension, scope: Scope, mult: int) -> Type:
        inner, m = self._loop(e.loop, scope, mult)
        t = self.check(e.value, inner, m)
        if t == STRING:
            self.info.sizes[id(e)] = self.size(e.value)
        it = self.info.types.get(id(e.loop))
        bound = self._list_bound(it) if isinstance(it, ListT) else DEFAULT_MAP_BOUND
        return ListT(t, bound)

    def _Aggregate(self, e: ast.Aggregate, scope: Scope, mult: int) -> Type:
        inner, m = self._loop(e.loop, scope, mult)
        if e.kind == "count":
            return INT
        assert e.value is not None
        t = self.check(e.value, inner, m)
        if t == ERROR:
            if e.default is not None:
                self.check(e.default, scope, mult)
            return ERROR
        if e.kind == "sum" and not is_numeric(t):
            return self.err("type-mismatch", f"sum needs numbers, got {t}", e.value.span)
        if e.kind in ("max", "min") and not (is_numeric(t) or t == STRING or t in TIME):
            return self.err("type-mismatch", f"{e.kind} needs numbers, strings or times, got {t}", e.value.span)
        if e.kind in ("max", "min") and e.default is None and not _never_empty(e.loop):
            self.diags.append(warning("empty-aggregate", f"{e.kind}(...) has no 'default' and its list may be empty "
                                      f"on some node, where it fails (a score rule then gives that node 0 and "
                                      f"reports it); add ', default D' before the closing parenthesis", e.span))
        if e.default is not None:
            d = self.check(e.default, scope, mult)
            j = join(t, d)
            if j is None:
                return self.err("type-mismatch", f"default must be {t}, got {d}", e.default.span)
            return j
        return t

    # -- calls
    def _Call(self, e: ast.Call, scope: Scope, mult: int) -> Type:
        f = e.func
        if isinstance(f, ast.Name) and scope.lookup(f.id) is None:
            if f.id in GENERIC_BUILTINS:
                self.info.calls[id(e)] = ("generic", f.id)
                return self._generic(e, f.id, scope, mult)
            sig = self.schema.builtins.get(f.id)
            if sig is None:
                options = list(GENERIC_BUILTINS) + list(self.schema.builtins)
                for a in e.args:
                    self.check(a, scope, mult)
                if e.default is not None:
                    self.check(e.default, scope, mult)
                if f.id in _MEMBERSHIP_FUNCS:
                    return self.err("unknown-function", f"unknown function '{f.id}': {_MEMBERSHIP_HINT}", f.span)
                if f.id in _NULL_NAMES or f.id in ("isnull", "is_null", "isNull"):
                    return self.err("unknown-function", f"unknown function '{f.id}': {_NULL_HINT}", f.span)
                alias = f.id if f.id in _STRING_METHODS else next(iter(close_names(f.id, list(_STRING_METHODS), 1)), "")
                instead = _STRING_METHODS.get(alias)
                if instead is not None and not instead.startswith(f"{f.id}("):
                    return self.err("unknown-function", f"unknown function '{f.id}'; use {instead}", f.span)
                return self.err("unknown-function", f"unknown function '{f.id}'{_near(f.id, options)}; "
                                f"builtins: {', '.join(sorted(options))} ({_BUILTIN_LIST_HINT})", f.span)
            self._no_default(e, scope, mult, f"'{f.id}'")
            self.info.calls[id(e)] = ("builtin", f.id)
            self.info.signatures[id(e)] = sig
            return self._apply(e, sig, f"'{f.id}'", scope, mult)
        if isinstance(f, ast.Attr):
            t = self.check(f.obj, scope, mult)
            if t == ERROR:
                for a in e.args:
                    self.check(a, scope, mult)
                return ERROR
            rec = self.schema.records.get(t.name) if isinstance(t, RecordT) else None
            if rec is None and isinstance(t, (Prim, ListT, MapT)):
                for a in e.args:
                    self.check(a, scope, mult)
                if f.name in _MEMBERSHIP_FUNCS:
                    return self.err("unknown-field", f"a {t} has no method '{f.name}': {_MEMBERSHIP_HINT}", f.name_span)
                instead = _STRING_METHODS.get(f.name)
                hint = f"; use {instead}" if instead else f"; values of type {t} have no methods ({_BUILTIN_LIST_HINT})"
                return self.err("unknown-field", f"a {t} has no method '{f.name}'{hint}", f.name_span)
            if rec is not None and f.name in rec.methods:
                self._no_default(e, scope, mult, f"'{t}.{f.name}'")
                sig = rec.methods[f.name]
                self.info.calls[id(e)] = ("method", f.name)
                self.info.signatures[id(e)] = sig
                return self._apply(e, sig, f"'{t}.{f.name}'", scope, mult)
            if rec is not None and f.name not in rec.fields:
                near = _suggest(f.name, list(rec.methods))  # a call: methods, not fields
                self.err("unknown-field", f"{t} has no method '{f.name}'"
                         + (near or _members(rec.name, rec.fields, rec.methods)), f.name_span)
                return ERROR
        t = self.check(f, scope, mult)
        for a in e.args:
            self.check(a, scope, mult)
        if t == ERROR:
            return ERROR
        return self.err("not-callable", f"a {t} cannot be called", f.span)

    def _no_default(self, e: ast.Call, scope: Scope, mult: int, what: str) -> None:
        if e.default is not None:
            self.check(e.default, scope, mult)
            self.err("type-mismatch", f"{what} takes no 'default'; only int(), float() and quantity() of a string do",
                     e.default.span)

    def _apply(self, e: ast.Call, sig: FuncSig, what: str, scope: Scope, mult: int) -> Type:
        n = len(e.args)
        if not sig.min_args <= n <= len(sig.params):
            want = str(len(sig.params)) if sig.min_args == len(sig.params) else f"{sig.min_args}..{len(sig.params)}"
            for a in e.args:
                self.check(a, scope, mult)
            return self.err("bad-arity", f"{what} takes {want} argument(s), got {n}", e.span)
        for i, (a, p) in enumerate(zip(e.args, sig.params)):
            self.expect(a, scope, p, f"argument {i + 1} of {what}", mult)
        return sig.ret

    def _generic(self, e: ast.Call, name: str, scope: Scope, mult: int) -> Type:
        ts = [self.check(a, scope, mult) for a in e.args]
        n = len(ts)
        d = self.check(e.default, scope, mult) if e.default is not None else None
        if e.default is not None and name not in _PARSED:
            return self.err("type-mismatch", f"'{name}' takes no 'default'; only int(), float(), quantity(), "
                            "timestamp() and duration() of a string do", e.default.span)
        two = ("starts_with", "ends_with", "split")
        if name in ("min", "max"):
            if n < 2:
                return self.err("bad-arity", f"'{name}' takes 2 or more arguments (or use {name}(x in L: V))", e.span)
        elif name in two:
            if n != 2:
                return self.err("bad-arity", f"'{name}' takes 2 arguments, got {n}", e.span)
        elif n != 1:
            return self.err("bad-arity", f"'{name}' takes 1 argument, got {n}", e.span)
        if ERROR in ts:
            return ERROR
        t = ts[0]
        if name == "len":
            if isinstance(t, (ListT, MapT)) or t == STRING:
                return INT
            return self.err("type-mismatch", f"'len' needs a list, map or string, got {t}", e.args[0].span)
        if name == "first":
            if isinstance(t, ListT):
                return ListT(t.elem, 1)
            return self.err("type-mismatch", f"'first' needs a list, got {t}", e.args[0].span)
        if name in ("min", "max"):
            acc: Type | None = t
            for other in ts[1:]:
                acc = None if acc is None else join(acc, other)
            if acc is None or not (is_numeric(acc) or acc == STRING or acc in TIME):
                return self.err("type-mismatch", f"'{name}' needs numbers or strings of one kind, got "
                                + ", ".join(map(str, ts)), e.span)
            return acc
        if name in two or name in ("lower", "is_int", "is_float", "is_quantity"):
            for a, at in zip(e.args, ts):
                if at != STRING:
                    return self.err("type-mismatch", f"'{name}' needs strings, got {at}"
                                    + ("; convert a number with str(x)" if is_numeric(at) else ""), a.span)
            if name == "split":
                size = self.size(e.args[0])
                self.info.sizes[id(e)] = size  # for a list of strings: the bound of each item
                return ListT(STRING, size + 1)
            if name == "lower":
                self.info.sizes[id(e)] = self.size(e.args[0])
                return STRING
            return BOOL
        if name == "str":
            if t in (BOOL, INT, FLOAT, QUANTITY, STRING, TIMESTAMP, DURATION):
                self.info.sizes[id(e)] = self.size(e.args[0]) if t == STRING else 64
                return STRING
            return self.err("type-mismatch", f"'str' needs a number, bool, string or time, got {t}", e.args[0].span)
        if name in ("timestamp", "duration"):
            if t != STRING:
                return self.err("type-mismatch", f"'{name}' needs a string, got {t}", e.args[0].span)
            result = _PARSED[name]
            self._check_literal_conversion(name, e.args[0], e.default is not None)
            if d is not None and d != ERROR and not assignable(d, result):
                return self.err("type-mismatch", f"the default of {name}() must be a {result}, got {d}",
                                e.default.span if e.default is not None else e.span)
            return result
        if name == "seconds":
            if t != DURATION:
                return self.err("type-mismatch", f"'seconds' needs a duration, got {t}"
                                + ("; a timestamp minus a timestamp is a duration" if t == TIMESTAMP else ""),
                                e.args[0].span)
            return INT
        if name in ("int", "float", "quantity"):
            result = {"int": INT, "float": FLOAT, "quantity": QUANTITY}[name]
            if t == STRING:
                self._check_literal_conversion(name, e.args[0], e.default is not None)
                if d is not None and d != ERROR and not assignable(d, result):
                    return self.err("type-mismatch", f"the default of {name}() must be {result}, got {d}",
                                    e.default.span if e.default is not None else e.span)
                return result
            if e.default is not None:
                return self.err("type-mismatch", f"'default' is for strings that may not parse; {name}() of a {t} "
                                "always succeeds", e.default.span)
            if name == "quantity" and t in (INT, QUANTITY):
                return QUANTITY
            if name != "quantity" and is_numeric(t):
                return result
            return self.err("type-mismatch", f"'{name}' needs a string" + (" or a number" if name != "quantity"
                            else " or an int") + f", got {t}", e.args[0].span)
        if not is_numeric(t):
            return self.err("type-mismatch", f"'{name}' needs a number, got {t}"
                            + ("; a string is converted with float(s) or int(s)" if t == STRING else ""),
                            e.args[0].span)
        if name == "abs":
            return t
        if name in ("trunc", "round"):
            return INT
        return FLOAT  # ln, sqrt

    def _check_literal_conversion(self, name: str, arg: ast.Expr, has_default: bool) -> None:
        """``int("4x")``: a literal that can never parse is an error now, not on every node later."""
        if not isinstance(arg, ast.StringLit):
            return
        text = self.info.literals.get(id(arg))
        if not isinstance(text, str):
            return
        parsers: dict[str, Callable[[str], object]] = {
            "int": parse_int, "float": parse_float, "quantity": parse_quantity, "timestamp": parse_timestamp,
            "duration": parse_duration}
        parse = parsers[name]
        what = {"int": "an integer", "float": "a number", "quantity": "a quantity",
                "timestamp": "an RFC 3339 timestamp (or 20261204T101500Z)",
                "duration": "a duration (\"10m\", \"1h30m\", \"1.5s\")"}[name]
        if parse(text) is None and not has_default:
            self.err("bad-conversion", f"{name}({to_source(arg)}) can never succeed: {to_source(arg)} is not "
                     f"{what}", arg.span)


def _op_span(e: ast.Binary) -> Span:
    """Where a diagnostic about a binary operation points: its operator (the whole expression when the
    node was built without one, e.g. a ``skip when`` condition the loader joined)."""
    return e.op_span if e.op_span is not None else e.span


def _constant(e: ast.Expr) -> int | float | None:
    """The value of a numeric expression built from literals only (``0``, ``1 - 1``, ``-0.0``), else None."""
    if isinstance(e, (ast.IntLit, ast.FloatLit)):
        return e.value
    if isinstance(e, ast.QuantityLit):
        q = parse_quantity(e.text)
        return None if q is None else float(q)
    if isinstance(e, ast.Unary) and e.op == "-":
        v = _constant(e.operand)
        return None if v is None else -v
    if isinstance(e, ast.Binary) and e.op in ("+", "-", "*"):
        a, b = _constant(e.left), _constant(e.right)
        if a is None or b is None:
            return None
        r = a + b if e.op == "+" else a - b if e.op == "-" else a * b
        # bounded values only: an int past 64 bits is the checker's ``overflow`` error, not something to
        # keep multiplying (a float past its range is inf, which compares as it should)
        return None if isinstance(r, int) and not INT64_MIN <= r <= INT64_MAX else r
    return None


def constant_leaves(e: ast.Expr) -> list[tuple[int | float | None, ast.Expr]]:
    """The possible results of ``e`` through ``if``/``else`` branches, each with its constant value (or None)."""
    if isinstance(e, ast.IfExpr):
        return constant_leaves(e.then) + constant_leaves(e.else_)
    return [(_constant(e), e)]


def _never_empty(loop: ast.Loop) -> bool:
    """A loop over a non-empty list literal without ``where``: an aggregate over it always has a value."""
    return loop.where is None and isinstance(loop.iterable, ast.ListLit) and len(loop.iterable.items) > 0


def decode_string(raw: str) -> str | None:
    """The value of a string literal's body, None for an unknown escape.

    Copies the runs between escapes whole (a character at a time, a 20 MiB literal took a list of 20
    million one-character strings), and most literals have no escape at all."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i = 0
    while True:
        j = raw.find("\\", i)
        if j < 0:
            out.append(raw[i:])
            return "".join(out)
        out.append(raw[i:j])
        nxt = raw[j + 1] if j + 1 < len(raw) else ""
        if nxt not in _ESCAPES:
            return None
        out.append(_ESCAPES[nxt])
        i = j + 2
