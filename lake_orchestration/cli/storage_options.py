"""``--storage-option KEY=VALUE`` and ``--storage-options-file FILE``: how CLI users point a command at a store.

One decorator, :func:`storage_options`, adds both options to every command that opens a table. The options are
the ``storage_options`` of :class:`~lake_orchestration.hudi.table.HudiTable` (for S3: ``region``,
``endpoint_override``, ``scheme``, ``force_virtual_addressing`` ...; see docs/how-to/object-stores.md).

Secrets never come from the command line (they would end up in shell history and ``ps`` output):
``--storage-option secret_key=...`` (and every other secret-like name, :func:`is_secret_key`) is a usage error that
points to the standard AWS environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
``AWS_PROFILE``) or to ``--storage-options-file FILE``. The file is a YAML mapping (JSON, being YAML, works too)
of option names to scalar values; it may hold secrets.

No option value is ever printed: errors name the option's key only, and :func:`redact` masks the values of
secret options and of the AWS secret environment variables in error messages, tracebacks and log records.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.io.storage_options import (
    MAPPING_OPTIONS,
    StorageOptions,
    is_secret_key,
    parse_storage_options,
)

F = TypeVar("F", bound=Callable[..., Any])

_META_KEY = "lake_orchestration.storage_options"
_SECRETS_META_KEY = "lake_orchestration.storage_secrets"
MASK = "***"
"""What a secret value is replaced with."""

SECRET_ENV_VARS = (
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "GOOGLE_SERVICE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCOUNT_KEY",
)
"""Environment variables whose values :func:`redact` masks (with any variable whose name is secret-like)."""


def _typed(raw: Mapping[str, Any], *, source: str, hint: str) -> StorageOptions:
    """``raw`` typed by the one storage-options model (:func:`~lake_orchestration.io.storage_options.
    parse_storage_options`, as Dagster and Airflow type theirs); its error (naming ``source`` and the key, never
    the value) as a usage error of ``hint``."""
    try:
        return parse_storage_options(raw, source=source)
    except InvalidOptionError as err:
        raise click.BadParameter(str(err), param_hint=hint) from None


def parse_storage_option_pairs(pairs: tuple[str, ...] | list[str]) -> StorageOptions:
    """``KEY=VALUE`` strings -> typed options (:func:`~lake_orchestration.io.storage_options.parse_storage_options`:
    ``true``/``false`` as booleans, pyarrow's numeric options as numbers, ``extra_conf`` as JSON text ...).

    Raises:
        click.BadParameter: a pair without ``=`` or with an empty key, a secret key (put secrets in the environment
            or a file), a key given twice, or a numeric option that is not a number. The message never shows a
            value.
    """
    out: dict[str, str] = {}
    for i, pair in enumerate(pairs, 1):
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            # the argument may be a secret typed without its key: never echo it
            raise click.BadParameter(
                f"argument {i} ({len(pair)} characters, not shown): expected KEY=VALUE, e.g. region=eu-west-1",
                param_hint="'--storage-option'",
            )
        if is_secret_key(key):
            raise click.BadParameter(
                f"{key} is a secret and is refused on the command line (shell history, ps output). Put credentials "
                "in the standard AWS environment variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
                "AWS_SESSION_TOKEN, or AWS_PROFILE) or in a file given with --storage-options-file FILE "
                "(a YAML mapping, e.g. 'secret_key: ...')",
                param_hint="'--storage-option'",
            )
        if key in out:
            raise click.BadParameter(f"{key} given twice", param_hint="'--storage-option'")
        out[key] = value
    return _typed(out, source="", hint="'--storage-option'")


def load_storage_options_file(path: str | Path) -> StorageOptions:
    """Read ``--storage-options-file``: a YAML (or JSON) mapping of option names to scalars (strings, numbers,
    booleans). Secrets are allowed here. Errors name the file and the key, never a value.

    Raises:
        click.BadParameter: unreadable, not YAML, not a mapping, or a value that is not a scalar.
    """
    import yaml

    hint = "'--storage-options-file'"
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise click.BadParameter(f"{path}: cannot read the file ({err.strerror or err})", param_hint=hint) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        # yaml's message quotes the offending text (maybe a secret): only say where
        raise click.BadParameter(f"{path}: not valid YAML{at}", param_hint=hint) from None
    if data is None:
        return StorageOptions()
    if not isinstance(data, Mapping):
        raise click.BadParameter(
            f"{path}: expected a mapping of storage option names to values (e.g. 'region: eu-west-1'), "
            f"got a {type(data).__name__}",
            param_hint=hint,
        )
    for k, v in data.items():
        if not isinstance(k, str) or not k.strip():
            raise click.BadParameter(f"{path}: option names must be non-empty strings", param_hint=hint)
        if not isinstance(v, str | int | float | bool) and not (
            k.strip() in MAPPING_OPTIONS and isinstance(v, Mapping)
        ):
            raise click.BadParameter(
                f"{path}: {k}: expected a string, number or boolean, got a {type(v).__name__} (value not shown)",
                param_hint=hint,
            )
    return _typed(data, source=str(path), hint=hint)


def _secret_values(options: Mapping[str, Any]) -> set[str]:
    # a very short value would mask ordinary words: 4+ characters from the file, 8+ from the environment (where
    # AWS_SECRET_ACCESS_KEY=test is a local emulator's convention, not a secret)
    vals = {str(v) for k, v in options.items() if is_secret_key(k) and len(str(v)) >= 4}
    for name, v in os.environ.items():
        if name in SECRET_ENV_VARS or (name.startswith(("AWS_", "GOOGLE_", "AZURE_")) and is_secret_key(name)):
            if len(v) >= 8:
                vals.add(v)
    return vals


def redact(text: str, secrets: set[str] | None = None) -> str:
    """``text`` with every secret value (of the current command's storage options and of the AWS secret
    environment variables) replaced by ``***``."""
    if secrets is None:
        ctx = click.get_current_context(silent=True)
        secrets = (ctx.meta.get(_SECRETS_META_KEY) if ctx is not None else None) or _secret_values({})
    for s in sorted(secrets, key=len, reverse=True):
        text = text.replace(s, MASK)
    return text


class _RedactFilter(logging.Filter):
    """Masks secret values in log records (message and arguments rendered first)."""

    def __init__(self, secrets: set[str]) -> None:
        super().__init__("lake_orchestration.redact")
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            msg = record.getMessage()
            clean = redact(msg, self.secrets)
            if clean != msg:
                record.msg, record.args = clean, None
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = redact(record.exc_text, self.secrets)
            if record.exc_info and record.exc_info[0] is not None:
                # the one-line form a handler without --verbose prints instead of the traceback, redacted too
                record.brief_exc_text = redact(f"{record.exc_info[0].__name__}: {record.exc_info[1]}", self.secrets)
        return True


def _install_log_filter(secrets: set[str]) -> None:
    for h in logging.getLogger().handlers:
        for f in list(h.filters):
            if isinstance(f, _RedactFilter):
                h.removeFilter(f)
        h.addFilter(_RedactFilter(secrets))


def current_storage_options() -> dict[str, Any]:
    """The storage options of the running command (empty outside a command decorated with
    :func:`storage_options`, or when none were given)."""
    ctx = click.get_current_context(silent=True)
    return dict((ctx.meta.get(_META_KEY) if ctx is not None else None) or {})


def storage_options(fn: F) -> F:
    """Add ``--storage-option KEY=VALUE`` (repeatable) and ``--storage-options-file FILE`` to a command; the
    command reads the merged options with :func:`current_storage_options` (command-line keys win over the file's)."""

    @click.option(
        "--storage-option",
        "storage_option_pairs",
        multiple=True,
        metavar="KEY=VALUE",
        help="Object-store option, e.g. region=eu-west-1, endpoint_override=http://127.0.0.1:9000 (repeatable). "
        "Secrets are refused here: use the AWS_* environment variables or --storage-options-file.",
    )
    @click.option(
        "--storage-options-file",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        metavar="FILE",
        help="YAML (or JSON) mapping of storage options; may hold secrets (access_key, secret_key, session_token).",
    )
    @functools.wraps(fn)
    def wrapper(*args: Any, storage_option_pairs: tuple[str, ...], storage_options_file: str | None, **kw: Any) -> Any:
        opts = load_storage_options_file(storage_options_file) if storage_options_file else StorageOptions()
        opts = opts.merged(parse_storage_option_pairs(storage_option_pairs))
        ctx = click.get_current_context()
        secrets = _secret_values(opts)
        ctx.meta[_META_KEY] = opts
        ctx.meta[_SECRETS_META_KEY] = secrets
        _install_log_filter(secrets)
        return fn(*args, **kw)

    return wrapper  # type: ignore[return-value]


_DENIED = re.compile(r"ACCESS_DENIED|AccessDenied|\b403\b|MISSING_AUTHENTICATION_TOKEN|No credentials|NoCredentials")
_CREDENTIAL_ENV_VARS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)
_CREDENTIAL_OPTIONS = ("access_key", "secret_key", "session_token", "anonymous", "role_arn")


def _aws_credentials_configured(options: Mapping[str, Any]) -> bool:
    """True if this process has any AWS credential source besides an instance role: an option (``access_key``,
    ``anonymous``, ``role_arn`` ...), a standard ``AWS_*`` variable, or a shared credentials/config file."""
    if any(options.get(k) not in (None, "", False) for k in _CREDENTIAL_OPTIONS):
        return True
    if any(os.environ.get(v) for v in _CREDENTIAL_ENV_VARS):
        return True
    files = [
        os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or str(Path.home() / ".aws" / "credentials"),
        os.environ.get("AWS_CONFIG_FILE") or str(Path.home() / ".aws" / "config"),
    ]
    return any(Path(f).is_file() for f in files)


def missing_credentials_hint(message: str) -> str:
    """What to add to the error ``message`` of the running command when an S3 request was refused (403, access
    denied) and no AWS credentials are configured at all: the usual cause in a first run, which the store's answer
    does not say. Empty otherwise."""
    if not re.search(r"\bs3a?://", message) or not _DENIED.search(message):
        return ""
    if _aws_credentials_configured(current_storage_options()):
        return ""
    return (
        " -- no AWS credentials are configured for this process (no AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or "
        "AWS_PROFILE in the environment, no ~/.aws/credentials, no access_key in the storage options): set the AWS_* "
        "environment variables, or pass --storage-options-file FILE with access_key and secret_key (anonymous: true "
        "for a public bucket), unless an instance or pod role should have answered"
    )
