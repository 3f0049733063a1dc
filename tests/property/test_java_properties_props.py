"""Property tests: ``java.util.Properties`` text as ``hoodie.properties`` stores it — escape/unescape round trip."""

from __future__ import annotations

import pendulum
from hypothesis import example, given
from hypothesis import strategies as st

from lake_orchestration.hudi.model.properties import format_properties, parse_properties

NOW = pendulum.datetime(2025, 6, 18, 5, 47, 10, tz="UTC")

# Basic Multilingual Plane text, heavy on the characters Properties escapes.
_tricky = st.sampled_from([*"=:#! \t\n\r\f\\u", "é", "中", "\x00", "\x7f", "\x85", "\u2028"])
bmp_text = st.lists(
    st.one_of(_tricky, st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)), st.just("\\u0041")),
    max_size=12,
).map("".join)
# Any Unicode scalar value, including supplementary characters (emoji, CJK extension B ...).
any_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)


def _round_trip(props: dict[str, str]) -> dict[str, str]:
    text = format_properties(props, now=NOW)
    # Properties.store writes ISO-8859-1: everything else must be \uXXXX escaped.
    text.encode("latin-1")
    return parse_properties(text, path="/t/.hoodie/hoodie.properties")


@given(st.dictionaries(bmp_text, bmp_text, max_size=6))
@example({"hoodie.table.create.schema": '{"type":"record","fields":[{"name":"a"}]}'})
@example({" lead": " value with  spaces ", "": "", "k": "ends with \\"})
@example({"#comment": "!bang", "a=b": "c:d"})
def test_properties_format_then_parse_bmp_text_identity(props: dict[str, str]) -> None:
    assert _round_trip(props) == props


@given(st.dictionaries(any_text, any_text, max_size=4))
@example({"emoji": "\U0001F600"})
def test_properties_format_then_parse_supplementary_characters_identity(props: dict[str, str]) -> None:
    """Java escapes a supplementary character as its UTF-16 surrogate pair (two ``\\uXXXX``)."""
    assert _round_trip(props) == props


def test_properties_format_supplementary_character_as_surrogate_pair_escapes() -> None:
    text = format_properties({"k": "\U0001F600"}, now=NOW)
    assert text.splitlines()[-1] == "k=\\uD83D\\uDE00"
    assert parse_properties("k=\\uD83D\\uDE00\n", path="p") == {"k": "\U0001F600"}


@given(st.dictionaries(bmp_text, bmp_text, max_size=6))
def test_properties_format_header_comments_two_lines_then_one_line_per_key(props: dict[str, str]) -> None:
    lines = format_properties(props, now=NOW).splitlines()
    assert lines[0] == "#Updated at 2025-06-18T05:47:10.000000Z"
    assert lines[1] == "#Wed Jun 18 05:47:10 UTC 2025"
    assert len(lines) == 2 + len(props)
