"""Random well-typed policy rules for the cost model's property test, biased towards what makes work:
nesting (comprehensions inside comprehensions, lists of lists), list comparisons (``==`` and ``in`` on
lists, which walk every item), and quantities (sums, products and quotients of exact fractions).

Each generator returns policy source text of one type; loop variables are bound in a scope the nested
generators can read, so bodies refer to the items they loop over. The vocabulary is the real schema's
(``node.labels``, ``node.taints``, ``pod.containers`` ...), so a rule can be evaluated on the random
clusters of :mod:`tests.gen.cluster`.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tests.gen.vocabulary import ZONE

__all__ = ["rules"]


_LONG = "[" + ", ".join(f'"s{i}"' for i in range(24)) + "]"
_DASHED = "-" * 30
"""``split`` of it gives 31 empty strings, the most its length allows: a list exactly at its bound."""


class _Gen:
    """One rule's expressions, drawn through hypothesis' ``draw`` (so failures shrink)."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.counter = 0
        self.strings: list[str] = []  # string-typed names in scope (loop variables)
        self.lists: list[str] = []  # list[string]-typed names in scope (lets, loop variables)

    def pick(self, options: list[str]) -> str:
        return self.draw(st.sampled_from(options))

    def fresh(self) -> str:
        self.counter += 1
        return f"v{self.counter}"

    def choose(self, depth: int, leaves: list[str], inner: list[str]) -> str:
        """A leaf at depth 0, else a leaf one time in four and an inner form otherwise (nesting bias)."""
        if depth <= 0 or self.draw(st.integers(0, 3)) == 0:
            return self.pick(leaves)
        return self.pick(inner)

    # -- strings
    def string(self, depth: int) -> str:
        kind = self.choose(depth, ["lit", "field", "var"], ["concat", "lower", "str", "index"])
        if kind == "var" and self.strings:
            return self.pick(self.strings)
        if kind in ("lit", "var"):
            return self.pick(['"a"', '"zone-a"', '""', '"gpu"'])
        if kind == "field":
            return self.pick(["node.name", "pod.name", f'node.labels["{ZONE}"]', 'pod.labels["app"]'])
        if kind == "concat":
            return f"({self.string(depth - 1)} + {self.string(depth - 1)})"
        if kind == "lower":
            return f"lower({self.string(depth - 1)})"
        if kind == "index":
            return f'node.labels[{self.string(depth - 1)}]'
        return f"str({self.integer(depth - 1)})"

    # -- list[string]
    def str_list(self, depth: int) -> str:
        kind = self.choose(depth, ["lit", "field", "var"], ["concat", "map", "filter", "split", "first"])
        if kind == "var" and self.lists:
            return self.pick(self.lists)
        if kind in ("lit", "var"):
            # literals are as long at run time as the checker assumes: there the bound is tight
            return self.pick(['["a", "b"]', '["zone-a"]', '["gpu", "a", "b", "c"]', _LONG, f'split("{_DASHED}", "-")'])
        if kind == "field":
            return self.pick(["[t.key for t in node.taints]", "[k for k in node.labels]", "pod.images",
                              "[t.key for t in pod.tolerations]", "[p.name for p in node.pods]",
                              "[v.claim_name for v in pod.volumes]", "[c.storage_class for c in cluster.claims()]",
                              "pod.resource_claims"])
        if kind == "concat":
            return f"({self.str_list(depth - 1)} + {self.str_list(depth - 1)})"
        if kind == "split":
            return f'split({self.string(depth - 1)}, "-")'
        if kind == "first":
            return f"first({self.str_list(depth - 1)})"
        src = self.str_list(depth - 1)
        x = self.fresh()
        self.strings.append(x)
        try:
            if kind == "map":
                return f"[{self.string(depth - 1)} + {x} for {x} in {src}]"
            return f"[{x} for {x} in {src} where {self.boolean(depth - 1)}]"
        finally:
            self.strings.pop()

    # -- list[list[string]]: the nesting that makes '==' and 'in' walk
    def nested(self, depth: int) -> str:
        kind = self.choose(depth, ["pair"], ["pair", "comp", "concat"])
        if kind == "pair":
            return f"[{self.str_list(depth - 1)}, {self.str_list(depth - 1)}]"
        if kind == "concat":
            return f"({self.nested(depth - 1)} + {self.nested(depth - 1)})"
        x = self.fresh()
        src = self.str_list(depth - 1)
        self.strings.append(x)
        try:
            return f"[{self.str_list(depth - 1)} for {x} in {src}]"
        finally:
            self.strings.pop()

    # -- quantities
    def quantity(self, depth: int) -> str:
        kind = self.choose(depth, ["lit", "field"], ["add", "sub", "mul", "div", "sum", "max", "conv"])
        if kind == "lit":
            return self.pick(["250m", "1Gi", "3", "1m", "7k"])
        if kind == "field":
            return self.pick(['node.allocatable["cpu"]', 'pod.requests["memory"]', 'node.requested["cpu"]',
                              'pod.requests["cpu"]'])
        if kind in ("add", "sub"):
            return f"({self.quantity(depth - 1)} {'+' if kind == 'add' else '-'} {self.quantity(depth - 1)})"
        if kind == "mul":
            return f"({self.quantity(depth - 1)} * {self.pick(['2', '3', '1m'])})"
        if kind == "div":
            return f"({self.quantity(depth - 1)} / {self.pick(['3', '7', '1Gi', '1m'])})"
        if kind == "conv":
            return f"quantity({self.string(depth - 1)}, default 1m)"
        x = self.fresh()
        if kind == "sum":
            if self.draw(st.booleans()):
                return f'sum({x} in node.pods: {x}.requests["cpu"] / {self.pick(["3", "7", "11"])})'
            return f"sum({x} in {self.str_list(depth - 1)}: {self.quantity(depth - 1)} / (len({x}) + 1))"
        return f"max({x} in {self.str_list(depth - 1)}: {self.quantity(depth - 1)}, default 0)"

    # -- ints
    def integer(self, depth: int) -> str:
        kind = self.choose(depth, ["lit", "len"], ["count", "sum", "len", "trunc", "add"])
        if kind == "lit":
            return self.pick(["0", "1", "7", "node.pod_count", "seconds(now - node.created) % 1000",
                              'cluster.count_in_cluster(cluster.pods_with("app", "a"))'])
        if kind == "len":
            return f"len({self.str_list(depth - 1)})"
        if kind == "trunc":
            return f"trunc({self.quantity(depth - 1)} / 1Mi)"
        if kind == "add":
            return f"({self.integer(depth - 1)} + {self.integer(depth - 1)})"
        x = self.fresh()
        src = self.str_list(depth - 1)
        self.strings.append(x)
        try:
            if kind == "count":
                return f"count({x} in {src} where {self.boolean(depth - 1)})"
            return f"sum({x} in {src}: len({x}))"
        finally:
            self.strings.pop()

    # -- bools
    def boolean(self, depth: int) -> str:
        kind = self.choose(depth, ["cmp", "lit"], ["list_eq", "list_in", "nested_eq", "nested_in", "item_in",
                                                   "qcmp", "any", "all", "and", "not"])
        if kind == "lit":
            return self.pick(["true", "false", "node.unschedulable", 'now - pod.created > duration("10m")',
                              'timestamp(node.annotations["t"], default node.created) < now'])
        if kind == "cmp":
            return f"{self.string(0)} == {self.string(0)}"
        if kind == "list_eq":
            return f"{self.str_list(depth - 1)} {self.pick(['==', '!='])} {self.str_list(depth - 1)}"
        if kind == "list_in":
            return f"{self.str_list(depth - 1)} in {self.nested(depth - 1)}"
        if kind == "nested_eq":
            return f"{self.nested(depth - 1)} == {self.nested(depth - 1)}"
        if kind == "nested_in":
            return f"{self.nested(depth - 1)} in [{self.nested(depth - 1)}]"
        if kind == "item_in":
            return f"{self.string(depth - 1)} {self.pick(['in', 'not in'])} {self.str_list(depth - 1)}"
        if kind == "qcmp":
            return f"{self.quantity(depth - 1)} {self.pick(['<', '>=', '=='])} {self.quantity(depth - 1)}"
        if kind == "and":
            return f"({self.boolean(depth - 1)} {self.pick(['and', 'or'])} {self.boolean(depth - 1)})"
        if kind == "not":
            return f"not ({self.boolean(depth - 1)})"
        x = self.fresh()
        src = self.str_list(depth - 1)
        self.strings.append(x)
        try:
            return f"({kind} {x} in {src}: {self.boolean(depth - 1)})"
        finally:
            self.strings.pop()


@st.composite
def rules(draw: st.DrawFn, max_depth: int = 4) -> str:
    """One filter or score rule (with a few lets of lists, so names carry sizes between clauses)."""
    g = _Gen(draw)
    depth = draw(st.integers(1, max_depth))
    lines: list[str] = []
    for i in range(draw(st.integers(0, 2))):
        lines.append(f"  let l{i} = {g.str_list(depth)}")
        g.lists.append(f"l{i}")
    if draw(st.booleans()):
        body = f"  require {g.boolean(depth)}"
        head = 'filter generated\n  reason "generated"'
    else:
        body = f"  value ({g.integer(depth)}) % 100"
        head = "score generated weight 1 normalize minmax"
    if lines:  # every let used, so the rule is lint-clean (no unused-binding)
        body += " or " if body.startswith("  require") else " + "
        body += " + ".join(f"len(l{i})" for i in range(len(lines))) if not body.startswith("  require") \
            else " or ".join(f"len(l{i}) == 3" for i in range(len(lines)))
    return "\n".join([head, *lines, body]) + "\n"
