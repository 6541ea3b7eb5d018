"""Layering: user files add to the bundled defaults; replace / override / disable / use defaults none."""

from __future__ import annotations

from pathlib import Path

import pytest

from policyscheduler.loader import LoadResult, bundled_defaults_dir, load_layered, load_policy_set

pytestmark = pytest.mark.usefixtures("cli_schema")

EXTRA = """\
filter no_red
  reason "node(s) are red"
  require node.labels["color"] != "red"
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _codes(result: LoadResult) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line if d.span else 0, d.span.col if d.span else 0) for d in result.diagnostics]


def test_user_rules_are_added_after_the_defaults_in_argument_order(tmp_path: Path) -> None:
    defaults = load_layered([]).policy_set
    assert defaults is not None
    b = _write(tmp_path, "b/10-b.policy", EXTRA.replace("no_red", "no_blue"))
    a = _write(tmp_path, "a/99-a.policy", EXTRA)
    ps = load_layered([b.parent, a.parent]).policy_set
    assert ps is not None
    names = [f.name for f in ps.filters]
    assert names[: len(defaults.filters)] == [f.name for f in defaults.filters]
    assert names[len(defaults.filters):] == ["no_blue", "no_red"]  # argument order, not base-name order
    assert [s.name for s in ps.scores] == [s.name for s in defaults.scores]


def test_directories_are_searched_recursively_skipping_hidden_ones(tmp_path: Path) -> None:
    _write(tmp_path, "team/deep/x.policy", EXTRA)
    _write(tmp_path, "..data/x.policy", EXTRA.replace("no_red", "hidden"))  # a ConfigMap volume's internals
    ps = load_layered([tmp_path]).policy_set
    assert ps is not None and ps.filters[-1].name == "no_red" and "hidden" not in {f.name for f in ps.filters}


def test_the_default_directory_given_as_a_path_is_the_defaults(tmp_path: Path) -> None:
    alone = load_layered([])
    again = load_layered([bundled_defaults_dir()])
    plain = load_policy_set([bundled_defaults_dir()])
    assert alone.policy_set is not None and again.policy_set is not None and plain.policy_set is not None
    assert alone.policy_set.digest == again.policy_set.digest == plain.policy_set.digest
    assert again.user_files == ()


def test_override_weight_normalize_and_skip(tmp_path: Path) -> None:
    f = _write(tmp_path, "o.policy", "override score taint_toleration weight 1\n"
                                     "override score node_affinity normalize none\n"
                                     "override filter node_ports skip when pod.labels[\"free-ports\"] == \"yes\"\n")
    ps = load_layered([f]).policy_set
    assert ps is not None
    scores = {s.name: s for s in ps.scores}
    assert (scores["taint_toleration"].weight, scores["taint_toleration"].normalize) == (1, "reverse")
    assert scores["node_affinity"].normalize == "none"
    ports = {r.name: r for r in ps.filters}["node_ports"]
    from policyscheduler.state import ClusterSnapshot

    snap = ClusterSnapshot.from_objects([])
    for labels, want in (({}, False), ({"free-ports": "yes"}, False)):
        p = {"kind": "Pod", "metadata": {"name": "p", "labels": labels}, "spec": {"containers": [{"name": "c"}]}}
        rec = snap.pod_record(p)
        assert ports.applies({"pod": rec, "cluster": snap.context(rec)}) is want  # no host ports: never applied
    # position kept: the overridden filter is still where the default put it
    defaults = load_layered([]).policy_set
    assert defaults is not None
    assert [r.name for r in ps.filters].index("node_ports") == [r.name for r in defaults.filters].index("node_ports")


def test_disable_and_replace_keep_the_place_of_the_rule(tmp_path: Path) -> None:
    f = _write(tmp_path, "r.policy", "disable score image_locality\n"
                                     "replace filter node_unschedulable\n  reason \"cordoned\"\n"
                                     "  require not node.unschedulable\n"
                                     "replace score node_resources_fit\n  value 50\n")
    result = load_layered([f])
    ps = result.policy_set
    assert ps is not None, result.diagnostics
    defaults = load_layered([]).policy_set
    assert defaults is not None
    assert [s.name for s in ps.scores] == [s.name for s in defaults.scores if s.name != "image_locality"]
    assert [r.name for r in ps.filters] == [r.name for r in defaults.filters]
    unsched = {r.name: r for r in ps.filters}["node_unschedulable"]
    assert unsched.reason == "cordoned" and unsched.span.file == str(f)
    fit = {s.name: s for s in ps.scores}["node_resources_fit"]
    assert (fit.weight, fit.normalize, fit.span.file) == (1, "none", str(f))  # weight/normalize kept


@pytest.mark.parametrize(("text", "code", "line", "col", "words"), [
    ("disable score image_localty\n", "unknown-rule", 1, 15, "did you mean 'image_locality'"),
    ("replace filter nope\n  reason \"x\"\n  require true\n", "unknown-rule", 1, 16, "there is no filter rule named 'nope'"),
    ("override score taint_toleration weight 0\n", "weight-range", 1, 40, "disable score taint_toleration"),
    ("override filter node_ports weight 2\n", "clause-not-allowed", 1, 28, "a filter has no weight"),
    ("override score taint_toleration\n", "empty-override", 1, 16, "changes nothing"),
    ("disable score image_locality\ndisable score image_locality\n", "conflicting-statements", 2, 15, "already changed"),
    ("use defaults some\n", "unknown-use", 1, 14, "use defaults none"),
    ("use defaults none\ndisable score image_locality\nfilter f\n  reason \"x\"\n  require true\n", "unknown-rule", 2, 15,
     "'use defaults none' leaves the defaults out"),
    ("filter taint_toleration\n  reason \"x\"\n  require true\n", "duplicate-rule", 1, 8, "replace filter taint_toleration"),
])
def test_statement_errors_are_located_in_the_users_file(tmp_path: Path, text: str, code: str, line: int, col: int,
                                                        words: str) -> None:
    f = _write(tmp_path, "00-first.policy", text)
    result = load_layered([f])
    assert result.policy_set is None
    found = [d for d in result.diagnostics if d.code == code]
    assert found, result.diagnostics
    d = found[0]
    assert d.span is not None and (d.span.file, d.span.line, d.span.col) == (str(f), line, col)
    assert words in d.message
    assert all(x.span is None or x.span.file == str(f) for x in result.diagnostics)  # never on a default file


def test_empty_sets_are_errors_unless_allowed(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for paths in ([empty], ["/dev/null"]):
        result = load_layered(paths)
        assert result.policy_set is None and [d.code for d in result.errors] == ["no-policy-files"]
        assert load_layered(paths, allow_empty=True).policy_set is not None
    only_scores = _write(tmp_path, "s/s.policy", "use defaults none\nscore s weight 1\n  value 1\n")
    result = load_layered([only_scores])
    assert result.policy_set is None and [d.code for d in result.errors] == ["no-filters"]
    assert result.errors[0].span is not None and result.errors[0].span.line == 1
    assert load_layered([only_scores], allow_empty=True).policy_set is not None


def test_configmap_texts_layer_like_files(tmp_path: Path) -> None:
    f = _write(tmp_path, "10-x.policy", EXTRA)
    from_files = load_layered([tmp_path]).policy_set
    from_texts = load_layered(texts=[("10-x.policy", EXTRA)]).policy_set
    assert from_files is not None and from_texts is not None and from_files.digest == from_texts.digest
    assert f.exists()


def test_replace_score_keeps_what_it_does_not_state(tmp_path: Path) -> None:
    f = _write(tmp_path, "r.policy", "replace score taint_toleration weight 2\n  value 0\n"
                                     "replace score node_affinity normalize none\n  value 0\n")
    ps = load_layered([f]).policy_set
    assert ps is not None
    scores = {s.name: s for s in ps.scores}
    assert (scores["taint_toleration"].weight, scores["taint_toleration"].normalize) == (2, "reverse")
    assert (scores["node_affinity"].weight, scores["node_affinity"].normalize) == (2, "none")
