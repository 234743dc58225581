"""Loading: file discovery, safe YAML parsing (YAML 1.2 core schema), locations, hostile input."""

from __future__ import annotations

import os
import textwrap
import tracemalloc
from pathlib import Path

import pytest

from controller.errors import UsageError
from controller.manifests import loading


def parse(text: str, source: str = "m.yaml") -> list[loading.Document]:
    return loading.parse_text(textwrap.dedent(text), source=source, base_dir=Path("."))


def problem(text: str | bytes, tmp_path: Path):
    path = tmp_path / "m.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    documents, problems = loading.load_files([str(path)])
    assert documents == []
    assert len(problems) == 1
    return problems[0]


# --- discovery -------------------------------------------------------------------------------


def test_discover_lists_manifest_files_of_a_folder_sorted(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.yml", "c.json", "d.txt", ".e.yaml"):
        (tmp_path / name).write_text("x: 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f.yaml").write_text("x: 1\n")
    assert loading.discover([str(tmp_path)], recursive=False) == [str(tmp_path / n) for n in ("a.yml", "b.yaml", "c.json")]
    assert loading.discover([str(tmp_path)])[-1] == str(tmp_path / "sub" / "f.yaml")  # sub-folders by default


def test_discover_recursive_walks_sub_folders_but_skips_hidden_ones(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("x: 1\n")
    for folder in ("sub/deeper", ".git"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "m.yaml").write_text("x: 1\n")
    assert loading.discover([str(tmp_path)], recursive=True) == [
        str(tmp_path / "a.yaml"),
        str(tmp_path / "sub/deeper/m.yaml"),
    ]


def test_discover_skips_encrypted_secret_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("bots.yaml", "secrets.enc.yaml", "keys.sops.yml", "sub/more.enc.json", "sub/rooms.yml", ".sops.yaml"):
        (tmp_path / name).write_text("a: 1\n")
    assert loading.discover([str(tmp_path)]) == [str(tmp_path / "bots.yaml"), str(tmp_path / "sub" / "rooms.yml")]
    assert loading.discover([str(tmp_path)], recursive=False) == [str(tmp_path / "bots.yaml")]
    with pytest.raises(UsageError, match=r"secrets\.enc\.yaml: an encrypted secrets file .* is never read as a manifest"):
        loading.discover([str(tmp_path / "secrets.enc.yaml")])


def test_discover_keeps_stdin_and_drops_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text("x: 1\n")
    assert loading.discover([str(path), "-", str(path), str(tmp_path)]) == [str(path), "-"]


def test_discover_refuses_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file or folder"):
        loading.discover([str(tmp_path / "missing")])


def test_discover_refuses_a_folder_without_manifests(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "m.md").write_text("x: 1\n")
    with pytest.raises(UsageError) as info:
        loading.discover([str(tmp_path)])
    assert "sub-folders are searched" in str(info.value.hint)


# --- parsing ---------------------------------------------------------------------------------


def test_several_documents_per_file_and_empty_ones_are_skipped() -> None:
    docs = parse("""\
        a: 1
        ---
        # only a comment
        ---
        b: 2
        ...
    """)
    assert [d.data for d in docs] == [{"a": 1}, {"b": 2}]
    assert [d.index for d in docs] == [0, 2]


@pytest.mark.parametrize(
    ("scalar", "value"),
    [
        # YAML 1.1's words are strings, marked as such (manifests/yaml11.py gives them Hermes'
        # meaning under config:); quoted, they are plain strings.
        pytest.param("yes", loading.Yaml11Word("yes"), id="yes-is-a-string"),
        pytest.param("no", loading.Yaml11Word("no"), id="norway-problem"),
        pytest.param("on", loading.Yaml11Word("on"), id="on-is-a-string"),
        pytest.param("OFF", loading.Yaml11Word("OFF"), id="OFF-is-a-string"),
        pytest.param("'off'", "off", id="quoted-off"),
        pytest.param("y", "y", id="y-is-no-word"),
        pytest.param("oFF", "oFF", id="mixed-case-is-no-word"),
        pytest.param("true", True, id="true"),
        pytest.param("False", False, id="False"),
        pytest.param("~", None, id="tilde"),
        pytest.param("null", None, id="null"),
        pytest.param("", None, id="empty"),
        pytest.param("42", 42, id="int"),
        pytest.param("-7", -7, id="negative"),
        pytest.param("0o17", 15, id="octal"),
        pytest.param("0x1f", 31, id="hex"),
        pytest.param("012", 12, id="leading-zero-is-decimal"),
        pytest.param("1.5", 1.5, id="float"),
        pytest.param("1e3", 1000.0, id="exponent"),
        pytest.param("1_000", "1_000", id="underscore-is-a-string"),
        pytest.param("12:30", "12:30", id="sexagesimal-is-a-string"),
        pytest.param("2030-01-02", "2030-01-02", id="date-stays-a-string"),
        pytest.param("'true'", "true", id="quoted-true"),
        pytest.param('"42"', "42", id="quoted-number"),
        pytest.param(
            "!!str 5",
            "5",
            id="explicit-str",
            marks=pytest.mark.xfail(
                strict=True, reason="ruamel's C composer gives '!!str 5' the same tag and style as a plain 5"
            ),
        ),
        pytest.param("!!int '5'", 5, id="explicit-int"),
    ],
)
def test_scalars_follow_the_yaml_1_2_core_schema(scalar: str, value: object) -> None:
    (doc,) = parse(f"v: {scalar}\n")
    assert doc.data["v"] == value
    assert type(doc.data["v"]) is type(value)


@pytest.mark.parametrize("scalar", [".nan", ".NaN", ".inf", "-.inf", "+.Inf", "1e400", "-1e999"])
def test_non_finite_numbers_are_refused_where_they_stand(scalar: str) -> None:
    """NaN never equals itself (the plan would never converge) and infinity is no number a config carries."""
    with pytest.raises(loading._FileProblem) as caught:
        parse(f"a: 1\nv: {scalar}\n")
    assert (caught.value.code, caught.value.line, caught.value.column) == ("invalid_value", 2, 4)
    assert "not a finite number" in caught.value.message


@pytest.mark.parametrize(
    "scalar",
    ["9" * 5000, "-" + "9" * 19, "9223372036854775808", "0x" + "f" * 17, "0o" + "7" * 23, "!!int " + "1" * 4301],
)
def test_integers_beyond_64_bits_are_refused_before_python_converts_them(scalar: str) -> None:
    with pytest.raises(loading._FileProblem) as caught:
        parse(f"v: {scalar}\n")
    assert (caught.value.code, caught.value.line) == ("invalid_value", 1)
    assert "out of range" in caught.value.message and len(caught.value.message) < 300


@pytest.mark.parametrize(
    "scalar", ["9223372036854775807", "-9223372036854775808", "0x7fffffffffffffff", "000000000000000000000001"]
)
def test_integers_within_64_bits_are_kept(scalar: str) -> None:
    (doc,) = parse(f"v: {scalar}\n")
    assert doc.data["v"] == int(scalar, 0) if scalar.startswith("0x") else int(scalar)


def test_strings_and_collections_are_bounded() -> None:
    with pytest.raises(loading._FileProblem) as caught:
        parse("v: " + "x" * (loading.MAX_STRING + 1) + "\n")
    assert caught.value.code == "invalid_value" and "1,000,001 characters" in caught.value.message
    with pytest.raises(loading._FileProblem) as caught:
        parse("v: [" + ",".join("1" * (loading.MAX_ITEMS + 1)) + "]\n")
    assert caught.value.code == "invalid_value" and "100,001 entries" in caught.value.message


def test_merge_keys_fill_in_and_own_keys_win() -> None:
    (doc,) = parse("""\
        base: &base {provider: openrouter, default: m1}
        model:
          <<: *base
          default: m2
    """)
    assert doc.data["model"] == {"provider": "openrouter", "default": "m2"}


def test_locate_points_at_the_key_of_a_field_path() -> None:
    (doc,) = parse("""\
        spec:
          bots:
            - name: a
            - name: b
              title: B
    """)
    assert doc.locate(("spec", "bots", 1, "title")) == (5, 7)
    assert doc.locate(("spec", "bots", 1)) == (4, 7)
    assert doc.locate(("spec", "bots", 9, "title")) == (2, 3)  # deepest node that exists
    assert doc.locate(()) == (1, 1)


def test_locate_follows_keys_that_came_through_a_merge() -> None:
    (doc,) = parse("""\
        base: &base
          provider: openrouter
        model:
          <<: *base
          default: m
    """)
    assert doc.locate(("model", "provider")) == (2, 3)


def test_locations_count_from_the_start_of_the_file_in_later_documents() -> None:
    docs = parse("a: 1\n---\nb:\n  c: 2\n")
    assert docs[1].locate(("b", "c")) == (4, 3)


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(b"\xef\xbb\xbfa: 1\n")
    documents, problems = loading.load_files([str(path)])
    assert problems == []
    assert documents[0].data == {"a": 1}
    assert documents[0].base_dir == tmp_path


# --- hostile input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where", "message", "hint"),
    [
        pytest.param("a:\n\tb: 1\n", (2, 1), "tab character", "indent with spaces", id="tab-indent"),
        pytest.param("a: {b: 1\n", (2, 1), "YAML syntax error", "fix the YAML syntax", id="unclosed-flow"),
        pytest.param("a: *nothing\n", (1, 4), "YAML syntax error", "define the &anchor", id="undefined-alias"),
        pytest.param("a: 1\nb: 2\na: 3\n", (3, 1), "duplicate key 'a'", "keeps only the last", id="duplicate-key"),
        pytest.param("x:\n  a: 1\n  a: 1\n", (3, 3), "duplicate key 'a'", "remove one", id="nested-duplicate"),
        pytest.param("? [a]\n: 1\n", (1, 3), "mapping keys must be plain strings", "quote the key", id="complex-key"),
        pytest.param("a: &a\n  b: *a\n", (1, 4), "recursive structure", "remove the recursive", id="recursive"),
        pytest.param(
            "a: !!python/object:os.system x\n",
            (1, 4),
            "unsupported YAML tag",
            "remove the tag",
            id="python-scalar-tag",
        ),
        pytest.param(
            "a: !!python/object/apply:os.system [ls]\n",
            (1, 4),
            "unsupported YAML tag",
            "remove the tag",
            id="python-sequence-tag",
        ),
        pytest.param("a: !!set {x, y}\n", (1, 4), "unsupported YAML tag", "remove the tag", id="set-tag"),
        pytest.param("a: !custom 1\n", (1, 4), "unsupported YAML tag", "remove the tag", id="local-tag"),
        pytest.param("a: !!int abc\n", (1, 4), "unsupported YAML tag", "remove the tag", id="bad-int-tag"),
        pytest.param("a: b\nc: \x01\n", (2, 4), "control character U+0001", "escape", id="control-character"),
        pytest.param("<<: 5\n", (1, 5), "'<<' merge key needs a mapping", "", id="bad-merge"),
        pytest.param(
            "a: " + "[" * 70 + "]" * 70 + "\n",
            (1, None),
            "nesting is deeper than 64",
            "flatten",
            id="deep-flow",
        ),
    ],
)
def test_yaml_problems_are_located_and_explained(tmp_path: Path, text, where, message, hint) -> None:
    diag = problem(text, tmp_path)
    assert diag.severity == "error"
    assert diag.file == str(tmp_path / "m.yaml")
    assert diag.line == where[0]
    if where[1] is not None:
        assert diag.column == where[1]
    assert message in diag.message
    assert hint in diag.hint
    assert diag.code == "yaml"


def bomb(levels: int, width: int = 10) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_with_bounded_memory(tmp_path: Path) -> None:
    text = bomb(9)  # 10**9 values if expanded
    tracemalloc.start()
    try:
        diag = problem(text, tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "expands to more than" in diag.message
    assert "alias bomb" in diag.hint
    assert diag.line >= 1
    assert peak < 64 * 1024 * 1024, f"peak {peak:,} bytes"


def test_the_alias_budget_scales_with_the_file_so_honest_reuse_still_works() -> None:
    # 300 bots reusing one anchor: legitimate, and far below the budget
    text = "base: &base {provider: p, default: m}\nbots:\n" + "".join(f"  - {{name: b{i}, model: *base}}\n" for i in range(300))
    (doc,) = parse(text)
    assert len(doc.data["bots"]) == 300
    assert doc.data["bots"][299]["model"] == {"provider": "p", "default": "m"}


def test_binary_file_is_refused(tmp_path: Path) -> None:
    diag = problem(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", tmp_path)
    assert (diag.code, diag.line, diag.column) == ("binary", 3, 1)  # the first NUL byte
    assert "binary file" in diag.message


def test_non_utf8_file_is_refused(tmp_path: Path) -> None:
    diag = problem("name: caf\xe9\n".encode("latin-1"), tmp_path)
    assert (diag.code, diag.line, diag.column) == ("encoding", 1, 10)
    assert "offset 9" in diag.message
    assert diag.hint == "save the file as UTF-8"


def test_file_over_the_size_limit_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    with path.open("wb") as handle:
        handle.truncate(loading.MAX_FILE_BYTES + 1)  # sparse
    tracemalloc.start()
    try:
        documents, problems = loading.load_files([str(path)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert documents == []
    assert problems[0].code == "too_large"
    assert peak < 1024 * 1024


def test_unreadable_path_is_a_file_problem(tmp_path: Path) -> None:
    documents, problems = loading.load_files([str(tmp_path)])  # a folder cannot be read as a file
    assert documents == []
    assert problems[0].code == "unreadable"
    assert "a folder, not a regular file" in problems[0].message
    documents, problems = loading.load_files([str(tmp_path / "missing.yaml")])
    assert problems[0].code == "unreadable" and "cannot read the file" in problems[0].message


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_is_refused_without_reading_it(tmp_path: Path, kind: str) -> None:
    """A FIFO would block a plain open() forever; /dev/zero would never end."""
    if kind == "fifo":
        path = tmp_path / "pipe.yaml"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    documents, problems = loading.load_files([str(path)])
    assert documents == []
    assert problems[0].code == "unreadable"
    assert ("FIFO" if kind == "fifo" else "character device") in problems[0].message


def test_one_bad_file_does_not_hide_the_good_ones(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("a: 1\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [\n")
    documents, problems = loading.load_files([str(bad), str(good)])
    assert [d.source for d in documents] == [str(good)]
    assert [p.file for p in problems] == [str(bad)]


def test_the_light_event_classes_go_into_ruamel_only_when_they_build_alike() -> None:
    from ruamel.yaml import events

    parser_module = pytest.importorskip("_ruamel_yaml")
    loading._event_classes()
    for name in ("ScalarEvent", "MappingStartEvent", "SequenceStartEvent", "MappingEndEvent", "SequenceEndEvent"):
        light = getattr(parser_module, name)
        assert issubclass(light, getattr(events, name)) and loading._builds_alike(light, getattr(events, name))

    class Changed(events.ScalarEvent):  # a ruamel release whose events set their slots otherwise
        __slots__ = ()

        def __init__(self, *args: object, **kwargs: object) -> None:
            events.ScalarEvent.__init__(self, *args, **kwargs)  # type: ignore[arg-type]
            self.style = "|"

    assert not loading._builds_alike(Changed, events.ScalarEvent)
