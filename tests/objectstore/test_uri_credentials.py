"""Credentials written into a table URI (``s3://KEY:SECRET@bucket/t``, which pyarrow would accept) are refused
before anything is opened, and the message never shows them (issue 12: secrets never echoed)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from lake_orchestration.cli.app import cli
from lake_orchestration.errors import StorageError
from lake_orchestration.io.storage import Storage

KEY, SECRET = "AKIAEXAMPLEKEY", "wJalrXUtnFEMIEXAMPLESECRET"


@pytest.mark.parametrize(
    "uri",
    [
        f"s3://{KEY}:{SECRET}@bucket/t",
        f"s3a://{KEY}:{SECRET}@bucket/t",
        f"gs://{KEY}:{SECRET}@bucket/t",
        f"hdfs://user:{SECRET}@namenode:8020/t",
    ],
)
def test_uri_with_credentials_is_refused_without_showing_them(uri: str) -> None:
    with pytest.raises(StorageError) as info:
        Storage(uri)
    message = str(info.value)
    assert "Credentials in the URI are refused" in message, message
    assert SECRET not in message and KEY not in message
    assert "***@" in message


def test_cli_refuses_uri_with_credentials_and_never_prints_them() -> None:
    result = CliRunner().invoke(cli, ["timeline", "show", f"s3://{KEY}:{SECRET}@bucket/t"])
    assert result.exit_code != 0
    assert "Credentials in the URI are refused" in result.output, result.output
    assert SECRET not in result.output and KEY not in result.output
