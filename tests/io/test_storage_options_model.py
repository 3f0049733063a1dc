"""The one typed storage-options model (lake_orchestration.io.storage_options): the CLI's text, a YAML file's or a
Dagster config's typed scalars and an Airflow extra's JSON parse into the same options; errors name the source
and the key, never a value; secrets never show in a repr."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.io.storage import Storage
from lake_orchestration.io.storage_options import (
    MASK,
    StorageOptions,
    is_secret_key,
    parse_storage_options,
)

TYPED = {
    "region": "eu-west-1",
    "endpoint_override": "http://127.0.0.1:9000",
    "anonymous": True,
    "force_virtual_addressing": False,
    "replication": 3,
    "connect_timeout": 2.5,
    "credential_token_expiration": datetime(2030, 1, 1, tzinfo=timezone.utc),
    "extra_conf": {"dfs.replication": "2"},
    "conditional_put": False,
}


def test_parse_storage_options_text_and_typed_sources_equal() -> None:
    # the command line / an Airflow extra (every value text) and a Dagster config / YAML file (typed scalars)
    as_text = {
        "region": "eu-west-1",
        "endpoint_override": "http://127.0.0.1:9000",
        "anonymous": "true",
        "force_virtual_addressing": "False",
        "replication": "3",
        "connect_timeout": "2.5",
        "credential_token_expiration": "2030-01-01T00:00:00+00:00",
        "extra_conf": '{"dfs.replication": "2"}',
        "conditional_put": "false",
    }
    assert parse_storage_options(as_text, source="cli") == TYPED
    assert parse_storage_options(TYPED, source="dagster") == TYPED
    opts = parse_storage_options(as_text)
    assert type(opts["anonymous"]) is bool and type(opts["replication"]) is int
    assert type(opts["connect_timeout"]) is float and isinstance(opts["credential_token_expiration"], datetime)


def test_parse_storage_options_untyped_keys_keep_text() -> None:
    opts = parse_storage_options({"access_key": 12345, "scheme": "http", "custom": "true", "conditional_put": "auto"})
    # a YAML number where the store wants a string; true/false is a boolean for any key (the CLI's rule)
    assert opts == {"access_key": "12345", "scheme": "http", "custom": True, "conditional_put": "auto"}


def test_parse_storage_options_bool_words_for_bool_options() -> None:
    for word, want in (("yes", True), ("on", True), ("1", True), ("no", False), ("off", False), ("0", False)):
        assert parse_storage_options({"anonymous": word})["anonymous"] is want


def test_parse_storage_options_none_values_left_out() -> None:
    assert parse_storage_options({"region": None, "scheme": "https"}) == {"scheme": "https"}
    assert parse_storage_options(None) == {}


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("replication", "three", "an integer"),
        ("replication", "true", "an integer"),
        ("replication", 2.5, "an integer"),
        ("connect_timeout", "soon", "a number"),
        ("anonymous", "maybe", "true or false"),
        ("anonymous", 1, "true or false"),
        ("credential_token_expiration", "next year", "ISO 8601"),
        ("extra_conf", "dfs.replication=2", "a mapping"),
        ("region", ["eu-west-1"], "a string, number or boolean"),
    ],
)
def test_parse_storage_options_bad_value_names_source_and_key_not_value(key: str, value: object, expected: str) -> None:
    with pytest.raises(InvalidOptionError) as err:
        parse_storage_options({key: value}, source="Airflow connection 'trips'")
    msg = str(err.value)
    assert msg.startswith(f"Airflow connection 'trips': {key}: expected") and expected in msg
    assert "value not shown" in msg and str(value) not in msg.replace(key, "")


def test_parse_storage_options_empty_key_refused() -> None:
    with pytest.raises(InvalidOptionError, match="non-empty"):
        parse_storage_options({" ": "x"}, source="cli")


def test_parse_storage_options_secrets_added_last_and_masked_in_repr() -> None:
    opts = parse_storage_options(
        {"region": "eu-west-1"}, secrets={"access_key": "AKIAEXAMPLE", "secret_key": "s3cr3t-value", "x": None}
    )
    assert opts == {"region": "eu-west-1", "access_key": "AKIAEXAMPLE", "secret_key": "s3cr3t-value"}
    shown = repr(opts)
    assert "s3cr3t-value" not in shown and "AKIAEXAMPLE" not in shown and MASK in shown and "eu-west-1" in shown
    assert opts.secrets() == {"AKIAEXAMPLE", "s3cr3t-value"}
    assert is_secret_key("session_token") and is_secret_key("access_token") and not is_secret_key("region")
    assert not is_secret_key("credential_token_expiration")


def test_storage_options_mapping_merged_and_plain_dict() -> None:
    base = parse_storage_options({"region": "eu-west-1", "scheme": "https"})
    top = base.merged(parse_storage_options({"scheme": "http"}))
    assert top == {"region": "eu-west-1", "scheme": "http"} and base["scheme"] == "https"
    assert top.to_dict() == {"region": "eu-west-1", "scheme": "http"} and type(top.to_dict()) is dict
    assert isinstance(top, StorageOptions) and len(top) == 2 and set(top) == {"region", "scheme"}


def test_storage_options_open_a_local_storage(tmp_path) -> None:  # type: ignore[no-untyped-def]
    st = Storage(str(tmp_path), options=parse_storage_options({"conditional_put": "true"}))
    assert st.options == {"conditional_put": True}
