"""Reading simulate's PATHs: YAML/JSON files and folders of Kubernetes objects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policyscheduler.inputs import ReadResult, read_objects, read_texts


def kinds(result: ReadResult) -> list[tuple[str, str]]:
    return [(o["kind"], o["metadata"]["name"]) for o in result.objects]


def test_multi_document_yaml_and_empty_documents() -> None:
    text = "kind: Node\nmetadata: {name: n1}\n---\n---\nkind: Pod\nmetadata: {name: p1}\n---\n"
    result = read_texts([("a.yaml", text)])
    assert result.errors == []
    assert kinds(result) == [("Node", "n1"), ("Pod", "p1")]


def test_kubectl_list_and_api_list_kinds_are_flattened() -> None:
    kubectl = "apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: p1}\n- kind: Node\n  metadata: {name: n1}\n"
    api = json.dumps({"apiVersion": "v1", "kind": "PodList", "items": [{"metadata": {"name": "p2"}}]})
    result = read_texts([("k.yaml", kubectl), ("api.json", api)])
    assert result.errors == []
    assert kinds(result) == [("Pod", "p1"), ("Node", "n1"), ("Pod", "p2")]
    assert result.objects[2]["apiVersion"] == "v1"


def test_lists_inside_lists_are_flattened_in_order() -> None:
    nested = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"kind": "Pod", "metadata": {"name": "p1"}},
        {"apiVersion": "v1", "kind": "NodeList", "items": [{"metadata": {"name": "n1"}}]},
        {"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p2"}}]}]})
    result = read_texts([("nested.json", nested)])
    assert result.errors == [] and result.warnings == []
    assert kinds(result) == [("Pod", "p1"), ("Node", "n1"), ("Pod", "p2")]


def test_unknown_kinds_are_skipped_with_one_warning_per_kind_and_file() -> None:
    text = "\n---\n".join(
        ["kind: Deployment\nmetadata: {name: d1}", "kind: Deployment\nmetadata: {name: d2}",
         "kind: ConfigMap\nmetadata: {name: c}", "kind: Pod\nmetadata: {name: p}"]
    )
    result = read_texts([("x.yaml", text)])
    assert result.errors == []
    assert kinds(result) == [("Pod", "p")]
    assert result.warnings == [
        "skipped 1 object of kind ConfigMap in x.yaml",
        "skipped 2 objects of kind Deployment in x.yaml",
    ]


def test_timestamps_stay_strings() -> None:
    result = read_texts([("a.yaml", "kind: Pod\nmetadata: {name: p, creationTimestamp: 2026-01-01T00:00:00Z}\n")])
    assert result.objects[0]["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"


def test_yaml_syntax_error_is_located() -> None:
    result = read_texts([("bad.yaml", "kind: Pod\nmetadata: {name: [oops}\n")])
    assert len(result.errors) == 1
    assert result.errors[0].startswith("bad.yaml:2:")
    assert "invalid YAML" in result.errors[0]


def test_json_syntax_error_is_located() -> None:
    result = read_texts([("bad.json", '{"kind": "Pod",\n "metadata": }')])
    assert result.errors and result.errors[0].startswith("bad.json:2:")


def test_non_object_documents_and_missing_names_are_errors() -> None:
    result = read_texts([("x.yaml", "- 1\n- 2\n---\njust a string\n---\nkind: Pod\nmetadata: {}\n---\nmetadata: {name: x}\n")])
    assert len(result.errors) == 4
    assert "document 1" in result.errors[0] and "mapping" in result.errors[0]
    assert "document 3" in result.errors[2] and "metadata.name" in result.errors[2]
    assert "no 'kind'" in result.errors[3]


def test_folders_are_read_recursively_in_sorted_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "b" / "2.yml").write_text("kind: Pod\nmetadata: {name: second}\n")
    (tmp_path / "a.json").write_text(json.dumps({"kind": "Node", "metadata": {"name": "first"}}))
    (tmp_path / "c.txt").write_text("kind: Pod\nmetadata: {name: ignored}\n")
    (tmp_path / ".hidden" / "x.yaml").write_text("kind: Pod\nmetadata: {name: hidden}\n")
    result = read_objects([tmp_path])
    assert result.errors == []
    assert kinds(result) == [("Node", "first"), ("Pod", "second")]


def test_missing_path_and_unreadable_file(tmp_path: Path) -> None:
    binary = tmp_path / "x.yaml"
    binary.write_bytes(b"\xff\xfe\x00kind")
    result = read_objects([tmp_path / "nope.yaml", binary])
    assert len(result.errors) == 2
    assert "no such file" in result.errors[0]
    assert "UTF-8" in result.errors[1]


def test_empty_folder_warns(tmp_path: Path) -> None:
    result = read_objects([tmp_path])
    assert result.errors == [] and result.objects == []
    assert len(result.warnings) == 1


def test_stdin_is_read_as_utf8_and_named_in_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xff\xfe kind: Pod")))
    result = read_objects(["-"])
    assert result.errors == ["<stdin>:1:1: not UTF-8 text (byte 0xff)"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(
        "kind: Pod\nmetadata: {name: cafe, annotations: {menu: caf\u00e9}}\n".encode())))
    objs = read_objects(["-"]).objects
    assert [o["metadata"]["annotations"]["menu"] for o in objs] == ["caf\u00e9"]
