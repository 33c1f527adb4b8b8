"""`config set` and `config unset` edit the user's file in place: only the edited key's line changes;
every other key, comment, blank line, the order, the quoting, the indentation and the line endings stay."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from servotool.io import atomic
from servotool.io.user_config import KEYS, UserConfigError, load_config, set_value

COMMENTED = (
    "# servotool defaults (edited by hand)\n"
    "\n"
    "# the lab arm\n"
    "robot: 'fairino://192.168.58.2'   # not the spare\n"
    "\n"
    'out: "/data/runs"  # big disk\n'
    "# limits: params/old.yaml\n"
)


def _edit(tmp_path, text: str | bytes, key: str, value: str | None) -> bytes:
    path = tmp_path / "config.yaml"
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    set_value(path, key, value)
    return path.read_bytes()


def test_a_new_key_is_appended_and_every_comment_is_kept(tmp_path):
    out = _edit(tmp_path, COMMENTED, "limits", "params/arm.yaml").decode()
    assert out == COMMENTED + "limits: params/arm.yaml\n"


def test_setting_a_key_changes_its_value_only_keeping_quotes_and_its_line_comment(tmp_path):
    out = _edit(tmp_path, COMMENTED, "robot", "sim:fr3").decode()
    assert out == COMMENTED.replace("'fairino://192.168.58.2'", "'sim:fr3'")
    out = _edit(tmp_path, COMMENTED, "out", "/tmp/x").decode()
    assert out == COMMENTED.replace('"/data/runs"', '"/tmp/x"')


def test_unset_removes_the_key_line_only(tmp_path):
    out = _edit(tmp_path, COMMENTED, "robot", None).decode()
    assert out == COMMENTED.replace("robot: 'fairino://192.168.58.2'   # not the spare\n", "")
    # the comment lines below the last key stay (they are no part of its line)
    out = _edit(tmp_path, COMMENTED, "out", None).decode()
    assert out == COMMENTED.replace('out: "/data/runs"  # big disk\n', "")
    assert load_config(tmp_path / "config.yaml") == {"robot": "fairino://192.168.58.2"}


def test_the_key_order_is_kept(tmp_path):
    text = "out: runs\nrobot: sim:fr3\nbus: sim:rosorin-arm\n"
    assert _edit(tmp_path, text, "robot", "sim:fr20").decode() == text.replace("fr3", "fr20")
    assert _edit(tmp_path, text, "limits", "l.yaml").decode() == text + "limits: l.yaml\n"


def test_unicode_text_and_values_are_kept(tmp_path):
    text = "# Prüfstand, 実験室\nout: /données/runs  # ünïcode\n"
    out = _edit(tmp_path, text, "limits", "/données/läimits ☃.yaml").decode()
    assert out == text + "limits: /données/läimits ☃.yaml\n"
    assert load_config(tmp_path / "config.yaml")["limits"] == "/données/läimits ☃.yaml"
    # a no-break space is text to YAML: it ends the old value and goes with it
    text = "out: runs\u00a0  # nbsp\n"
    assert _edit(tmp_path, text, "out", "x").decode() == "out: x  # nbsp\n"


def test_crlf_line_endings_are_kept(tmp_path):
    text = "# windows\r\nout: runs  # here\r\n\r\nrobot: sim:fr3\r\n"
    assert _edit(tmp_path, text, "limits", "l.yaml") == (text + "limits: l.yaml\r\n").encode()
    assert _edit(tmp_path, text, "out", "elsewhere") == text.replace("runs", "elsewhere").encode()
    assert _edit(tmp_path, text, "out", None) == text.replace("out: runs  # here\r\n", "").encode()


def test_a_document_start_and_a_directive_are_kept(tmp_path):
    for head in ("---\n", "--- # defaults\n", "%YAML 1.1\n---\n"):
        text = head + "out: runs\n"
        assert _edit(tmp_path, text, "robot", "sim:fr3").decode() == text + "robot: sim:fr3\n"
        assert _edit(tmp_path, text, "out", None).decode() == head
        assert load_config(tmp_path / "config.yaml") == {}
        assert _edit(tmp_path, head, "out", "x").decode() == head + "out: x\n"


def test_an_empty_file_gets_one_line_and_unset_of_the_last_key_leaves_an_empty_file(tmp_path):
    assert _edit(tmp_path, "", "out", "runs").decode() == "out: runs\n"
    assert _edit(tmp_path, "out: runs\n", "out", None).decode() == ""
    assert load_config(tmp_path / "config.yaml") == {}


def test_a_file_of_comments_only_keeps_them(tmp_path):
    text = "# nothing set yet\n\n# robot: fairino://192.168.58.2\n"
    assert _edit(tmp_path, text, "out", "runs").decode() == text + "out: runs\n"
    assert _edit(tmp_path, text + "out: runs\n", "out", None).decode() == text


def test_an_indented_mapping_and_a_last_line_without_newline_are_kept(tmp_path):
    text = "  out: runs\n  # the arm\n  robot: sim:fr3"
    assert _edit(tmp_path, text, "limits", "l.yaml").decode() == text + "\n  limits: l.yaml"
    assert _edit(tmp_path, text, "robot", None).decode() == "  out: runs\n  # the arm"
    assert load_config(tmp_path / "config.yaml") == {"out": "runs"}


def test_a_value_on_its_own_line_or_folded_is_replaced_whole(tmp_path):
    text = "out:\n  runs\nrobot: >\n  sim:fr3\n\n# end\n"
    assert _edit(tmp_path, text, "out", "x").decode() == "out:\n  x\nrobot: >\n  sim:fr3\n\n# end\n"
    assert _edit(tmp_path, text, "robot", "sim:fr20").decode() == "out:\n  runs\nrobot: sim:fr20\n\n# end\n"
    assert _edit(tmp_path, text, "robot", None).decode() == "out:\n  runs\n\n# end\n"


def test_an_inline_mapping_is_edited_inline(tmp_path):
    text = "{out: runs, robot: sim:fr3}  # inline\n"
    out = _edit(tmp_path, text, "limits", "l.yaml").decode()
    assert load_config(tmp_path / "config.yaml") == {"out": "runs", "robot": "sim:fr3", "limits": "l.yaml"}
    assert out.startswith("{") and "# inline" in out
    _edit(tmp_path, text, "out", None)
    assert load_config(tmp_path / "config.yaml") == {"robot": "sim:fr3"}


@pytest.mark.parametrize(
    "value",
    [
        "yes",
        "no",
        "on",
        "null",
        "~",
        "010",
        "0o10",
        "1:30",
        "1_0",
        "1.5",
        "true",
        "a #b",
        "x: y",
        "'q'",
        '"q"',
        "- x",
        "[x]",
        "{x}",
        "&a",
        "*a",
        "!x",
        "%x",
        "@x",
        "`x",
        " lead",
        "trail ",
        "a\\b",
        "ü'\"\\",
    ],
)
def test_a_value_yaml_would_read_as_something_else_is_quoted(tmp_path, value):
    _edit(tmp_path, "out: runs  # here\n", "limits", value)
    assert load_config(tmp_path / "config.yaml") == {"out": "runs", "limits": value}
    _edit(tmp_path, "out: runs  # here\n", "out", value)
    assert load_config(tmp_path / "config.yaml") == {"out": value}
    assert (tmp_path / "config.yaml").read_text(encoding="utf-8").endswith("  # here\n")


@pytest.mark.parametrize(
    "text,message",
    [
        ("out: [runs\n", "not YAML"),
        ("colour: red\n", "unknown key 'colour'"),
        ("out: 12\n", "out must be a non-empty string, not 12"),
        ("out: a\nout: b\n", "written twice"),
        ("- out\n", "expected a mapping"),
    ],
)
@pytest.mark.parametrize("value", ["x", None])
def test_a_file_that_cannot_be_read_is_refused_and_left_alone(tmp_path, text, message, value):
    path = tmp_path / "config.yaml"
    path.write_text("# keep me\n" + text, encoding="utf-8")
    path.chmod(0o640)
    with pytest.raises(UserConfigError, match=message):
        set_value(path, "out", value)
    assert path.read_text(encoding="utf-8") == "# keep me\n" + text
    assert path.stat().st_mode & 0o777 == 0o640 and list(tmp_path.iterdir()) == [path]


def test_an_oversize_file_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "config.yaml"
    text = "# " + "x" * (1 << 20) + "\nout: runs\n"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserConfigError, match="larger than"):
        set_value(path, "robot", "sim:fr3")
    assert path.read_text(encoding="utf-8") == text


def test_unset_of_a_key_not_in_the_file_leaves_it_alone(tmp_path):
    path = tmp_path / "config.yaml"
    assert set_value(path, "out", None) == {} and not path.exists()
    path.write_bytes(b"# mine\nrobot: sim:fr3")
    assert set_value(path, "out", None) == {"robot": "sim:fr3"}
    assert path.read_bytes() == b"# mine\nrobot: sim:fr3"


def test_an_edit_that_would_change_another_key_is_refused(tmp_path):
    # `out` is an alias of `robot`'s text: writing either would change the other
    path = tmp_path / "config.yaml"
    path.write_text("robot: &r sim:fr3\nbus: *r\n", encoding="utf-8")
    with pytest.raises(UserConfigError, match="edit the file by hand"):
        set_value(path, "robot", "sim:fr20")
    with pytest.raises(UserConfigError, match="edit the file by hand"):
        set_value(path, "robot", None)
    assert path.read_text(encoding="utf-8") == "robot: &r sim:fr3\nbus: *r\n"


# --- the property: set then unset of a key the file does not hold gives the file back byte for byte ------

_COMMENT_TEXT = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Cn", "Zl", "Zp")), max_size=12)
_VALUE = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp", "Co", "Cn", "Cf")), min_size=1, max_size=16
).filter(lambda v: v.strip() != "" and v.isprintable())
_SPELLINGS = ["sim:fr3", "'sim:fr3'", '"sim:fr3"', "'it''s'", '"a\\\\b"', "ü/ß ☃"]


@st.composite
def config_files(draw) -> tuple[str, set[str]]:
    """A hand-written config file (comments, blank lines, quoting, indentation, line endings, a document
    start, no final newline) and the keys it holds."""
    keys = draw(st.permutations(list(KEYS)))[: draw(st.integers(0, 3))]
    indent = " " * draw(st.sampled_from([0, 0, 2]))
    lines = [draw(st.sampled_from(["---", "--- # c", "%YAML 1.1\n---"]))] if draw(st.booleans()) else []
    for key in keys:
        lines += draw(
            st.lists(st.one_of(st.just(""), _COMMENT_TEXT.map(lambda c: indent + "#" + c)), max_size=2)
        )
        spacing = draw(st.sampled_from([" ", "   "]))
        eol = draw(st.one_of(st.just(""), _COMMENT_TEXT.map(lambda c: "  #" + c)))
        lines.append(f"{indent}{key}:{spacing}{draw(st.sampled_from(_SPELLINGS))}{eol}")
    lines += draw(st.lists(st.one_of(st.just(""), _COMMENT_TEXT.map(lambda c: "#" + c)), max_size=2))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = "\n".join(lines).replace("\n", newline)
    if lines and draw(st.booleans()):
        text += newline
    return text, set(keys)


@given(config_files(), st.data())
def test_set_then_unset_of_a_new_key_gives_the_file_back_byte_for_byte(tmp_path_factory, case, data):
    text, held = case
    key = data.draw(st.sampled_from(sorted(set(KEYS) - held)))
    value = data.draw(_VALUE)
    path = tmp_path_factory.mktemp("cfg") / "config.yaml"
    path.write_bytes(text.encode("utf-8"))
    before = load_config(path)
    with pytest.MonkeyPatch.context() as mp:
        # the text is what is checked here; syncing to disk (test_atomic_config.py) only costs time
        mp.setattr(atomic, "fsync_path", lambda path: None)
        assert set_value(path, key, value) == {**before, key: value}
        assert load_config(path) == {**before, key: value}
        assert set_value(path, key, None) == before
    assert path.read_bytes() == text.encode("utf-8")
