"""The one TOML reader (fencepost.inputs.toml): typed fields, file:line errors, hostile input.

Contracts and scenarios both read through it; these tests pin what every file
format gets for free: unknown keys refused with a did-you-mean, and hostile
shapes (deep nesting, huge integers, oversized or endless files) refused with a
clean error naming the place instead of a Python limit's traceback.
"""

from __future__ import annotations

import enum
from pathlib import Path

import pytest

from fencepost.inputs.toml import MAX_BYTES, MAX_DEPTH, MAX_DIGITS, Document, InputError


class Kind(enum.Enum):
    INTEGER = "integer"
    STRING = "string"


def root(text: str, allowed: tuple[str, ...] = ("a", "b", "t")) -> object:
    return Document(text, "f.toml").root(allowed)


def test_fields_are_typed_and_errors_name_file_line_and_field() -> None:
    doc = Document('a = "x"\n\n[t]\nkind = "integr"\n', "f.toml")
    top = doc.root(("a", "t"))
    assert top.text("a") == "x"
    with pytest.raises(InputError) as info:
        top.table("t", ("kind",)).choice("kind", Kind)
    assert str(info.value).startswith("f.toml:4: t.kind: must be one of: integer, string")
    assert "did you mean 'integer'?" in str(info.value)


def test_an_unknown_key_is_refused_with_a_hint() -> None:
    with pytest.raises(InputError) as info:
        root("a = 1\nbb = 2\n", ("a", "b"))
    assert info.value.line == 2 and info.value.field == "bb"
    assert "unknown field" in info.value.problem and "did you mean 'b'?" in info.value.problem


def test_syntax_errors_carry_their_line() -> None:
    with pytest.raises(InputError) as info:
        root("a = 1\nb = = 2\n")
    assert info.value.line == 2 and "TOML syntax" in info.value.problem


def test_deep_nesting_is_refused_before_the_parser_recurses() -> None:
    text = "a = " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(InputError) as info:
        root(text)
    assert info.value.line == 1 and f"more than {MAX_DEPTH} levels" in info.value.problem
    inline = "a = " + "{b = " * 3000 + "1" + "}" * 3000 + "\n"
    with pytest.raises(InputError, match="levels deep"):
        root(inline)


def test_brackets_inside_strings_and_comments_do_not_count_as_nesting() -> None:
    deep_text = "[" * (MAX_DEPTH + 10)
    doc = Document(f'a = "{deep_text}"\n# {deep_text}\nb = """\n{deep_text}\n"""\n', "f.toml")
    top = doc.root(("a", "b"))
    assert top.text("a") == deep_text


def test_huge_integers_are_refused_by_place() -> None:
    digits = "9" * 5000
    with pytest.raises(InputError) as info:
        root(f"a = {digits}\n")
    assert "too large" in info.value.problem or "digits" in info.value.problem
    with pytest.raises(InputError) as info:
        root(f"[t]\nb = [1, {'9' * (MAX_DIGITS + 1)}]\n")
    assert info.value.line == 2 and f"more than {MAX_DIGITS} digits" in info.value.problem
    assert Document(f"a = {'9' * MAX_DIGITS}\n", "f.toml").root(("a",)).get("a") == int(
        "9" * MAX_DIGITS
    )


def test_oversized_and_endless_files_are_refused_without_reading_them_whole(
    tmp_path: Path,
) -> None:
    big = tmp_path / "big.toml"
    big.write_bytes(b"# " + b"x" * (MAX_BYTES + 10) + b"\n")
    with pytest.raises(InputError, match="larger than"):
        Document.from_file(str(big))
    with pytest.raises(InputError, match="a character device, not a regular file"):
        Document.from_file("/dev/zero")  # refused by what it is, before any read
    with pytest.raises(InputError, match="no such file"):
        Document.from_file(str(tmp_path / "absent.toml"))
    with pytest.raises(InputError, match="is a directory"):
        Document.from_file(str(tmp_path))


def test_text_that_is_not_utf8_names_its_line() -> None:
    with pytest.raises(InputError) as info:
        Document.from_bytes(b'a = "ok"\nb = "\xff"\n', "f.toml")
    assert info.value.line == 2 and "not UTF-8" in info.value.problem
