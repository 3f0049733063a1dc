"""Object-store settings and atomic create-if-absent through ``obstore`` (Rust ``object_store``).

``pyarrow.fs`` moves the bulk data, but it cannot create an object only if it is absent. Timeline files and the
table lock need exactly that, so on S3 and GCS :class:`AtomicCreator` writes them with ``obstore.put(...,
mode="create")``: S3 sends ``If-None-Match: *`` (the store answers ``412 Precondition Failed`` if the object
exists), GCS sends ``x-goog-if-generation-match: 0``. One request, atomic on the store's side.

Both clients are configured from the same storage options (pyarrow's names: ``endpoint_override``, ``region``,
``access_key``, ``secret_key``, ``session_token``, ``scheme``, ``anonymous``, ``force_virtual_addressing``) and,
for what the options leave out, from the standard AWS environment (:func:`resolve_s3`). One option is the
project's own and never reaches a client:

``conditional_put``
    ``auto`` (default): AWS S3 itself (no custom endpoint) is trusted to honour ``If-None-Match`` (it does since
    August 2024); a custom endpoint (an S3-compatible store) is probed once per process and bucket: an object is
    created twice with ``If-None-Match: *`` and the second create must be refused. ``true``: trust the store, no
    probe. ``false``: the store has no conditional writes; creates are a check then a PUT (not atomic), accepted
    only because the user said so, and the file-based table lock refuses such a store (use a lock provider that
    does not depend on atomic creates).

A store that answers ``501 Not Implemented`` to a conditional PUT, or silently overwrites, raises
:class:`~lake_orchestration.errors.ConditionalWriteUnsupportedError`: never a silent fallback to check-then-PUT.
"""

from __future__ import annotations

import configparser
import os
import re
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lake_orchestration.errors import (
    AmbiguousWriteError,
    ConditionalWriteUnsupportedError,
    FileAlreadyExistsError,
    StorageError,
)

CONDITIONAL_PUT = "conditional_put"
"""The project's storage option: ``auto`` (default), ``true`` or ``false`` (see the module doc)."""
PROJECT_OPTIONS = frozenset({CONDITIONAL_PUT})
"""Storage options of this project (never handed to pyarrow or obstore)."""
S3_SCHEMES = ("s3", "s3a")
GCS_SCHEMES = ("gs", "gcs")

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
_PROBE_RETRIES = 1  # a store without conditional writes answers 501, which object_store would retry for minutes


def conditional_put_mode(options: Mapping[str, Any], *, uri: str) -> str:
    """``auto``, ``true`` or ``false`` from the ``conditional_put`` storage option.

    Raises:
        StorageError: any other value (the message names it).
    """
    raw = options.get(CONDITIONAL_PUT, "auto")
    if isinstance(raw, bool):
        return "true" if raw else "false"
    text = str(raw).strip().lower()
    if text in _TRUE:
        return "true"
    if text in _FALSE:
        return "false"
    if text in ("", "auto"):
        return "auto"
    raise StorageError(f"Invalid storage option {CONDITIONAL_PUT}={raw!r}: expected auto, true or false", path=uri)


def _truthy(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() in _TRUE)


@dataclass(frozen=True)
class S3Settings:
    """Where and as whom to reach S3, resolved from the storage options, then the environment."""

    endpoint: str | None
    """``http(s)://host:port`` of an S3-compatible store; None for AWS S3 itself."""
    region: str | None
    access_key: str | None
    secret_key: str | None = None
    session_token: str | None = None
    anonymous: bool = False
    virtual_hosted: bool = False
    role_arn: str | None = None
    """pyarrow's ``role_arn`` (STS AssumeRole): not available to obstore, so atomic creates refuse it."""

    def __repr__(self) -> str:  # never show the secrets
        return f"S3Settings(endpoint={self.endpoint!r}, region={self.region!r})"


def resolve_s3(options: Mapping[str, Any], env: Mapping[str, str] | None = None) -> S3Settings:
    """S3 settings: each storage option first, then the standard AWS environment.

    - endpoint: ``endpoint_override`` (with ``scheme``, default https), else ``AWS_ENDPOINT_URL_S3``, else
      ``AWS_ENDPOINT_URL``. pyarrow's ``S3FileSystem()`` ignores those variables (checked with pyarrow 26: only
      ``FileSystem.from_uri`` reads them), so they are resolved here for both clients.
    - region: ``region``, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION``, else the region of the ``AWS_PROFILE``
      profile in the AWS config file.
    - credentials: ``access_key``/``secret_key``/``session_token``, else ``AWS_ACCESS_KEY_ID``/
      ``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, else the static keys of the profile (``AWS_PROFILE``, default
      ``default``) in the shared credentials file; else None (pyarrow then uses the AWS SDK's default chain).
    """
    env = os.environ if env is None else env
    endpoint = options.get("endpoint_override")
    if endpoint:
        endpoint = str(endpoint)
        if "://" not in endpoint:
            endpoint = f"{options.get('scheme') or 'https'}://{endpoint}"
    else:
        endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None
    profile = _profile(env)
    region = options.get("region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or profile.get("region")
    if options.get("access_key"):
        access, secret, token = options.get("access_key"), options.get("secret_key"), options.get("session_token")
    elif env.get("AWS_ACCESS_KEY_ID"):
        access, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
        token = env.get("AWS_SESSION_TOKEN") or env.get("AWS_SECURITY_TOKEN")
    else:
        access, secret = profile.get("aws_access_key_id"), profile.get("aws_secret_access_key")
        token = profile.get("aws_session_token")
    return S3Settings(
        endpoint=endpoint.rstrip("/") if endpoint else None,
        region=str(region) if region else None,
        access_key=str(access) if access else None,
        secret_key=str(secret) if secret else None,
        session_token=str(token) if token else None,
        anonymous=_truthy(options.get("anonymous")),
        virtual_hosted=_truthy(options.get("force_virtual_addressing")),
        role_arn=str(options["role_arn"]) if options.get("role_arn") else None,
    )


def _profile(env: Mapping[str, str]) -> dict[str, str]:
    """Static keys and region of the ``AWS_PROFILE`` profile (``default`` if unset), from the AWS files."""
    name = env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE") or "default"
    home = os.path.expanduser("~")
    out: dict[str, str] = {}
    config_section = "default" if name == "default" else f"profile {name}"
    files = (
        (env.get("AWS_CONFIG_FILE") or os.path.join(home, ".aws", "config"), config_section),
        (env.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.join(home, ".aws", "credentials"), name),
    )
    for path, section in files:
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error):
            continue
        if parser.has_section(section):
            out.update({k: v.strip() for k, v in parser.items(section) if v.strip()})
    return out


def s3_filesystem_options(options: Mapping[str, Any], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The options for ``pyarrow.fs.S3FileSystem``: the given ones without the project's own, completed with
    the endpoint and region of the environment (which pyarrow's constructor does not read)."""
    out = {k: v for k, v in options.items() if k not in PROJECT_OPTIONS}
    settings = resolve_s3(options, env)
    if settings.endpoint and not out.get("endpoint_override"):
        out["endpoint_override"] = settings.endpoint
    if settings.region and not out.get("region"):
        out["region"] = settings.region
    return out


class AtomicCreator:
    """Creates objects only if absent, with the store's conditional write (one per :class:`Storage`).

    Args:
        scheme: ``s3``/``s3a`` or ``gs``/``gcs``.
        bucket: the bucket name.
        options: the storage options (pyarrow's names, plus ``conditional_put``).
        uri: the table's base URI (for messages).
    """

    def __init__(self, scheme: str, bucket: str, options: Mapping[str, Any], *, uri: str) -> None:
        self.scheme = scheme
        self.bucket = bucket
        self.uri = uri
        self.mode = conditional_put_mode(options, uri=uri)
        self._options = dict(options)
        self._store: Any = None
        if scheme in S3_SCHEMES:
            self._s3 = resolve_s3(options)
            self._store_key = ("s3", self._s3.endpoint or "aws", bucket)
        elif scheme in GCS_SCHEMES:
            self._store_key = ("gcs", str(options.get("endpoint_override") or "google"), bucket)
        else:
            raise StorageError(f"No conditional writes for scheme {scheme!r}", path=uri)

    def store(self, *, retries: int | None = None) -> Any:
        """The obstore store (built once; ``retries`` builds a separate one with that retry limit)."""
        if retries is None and self._store is not None:
            return self._store
        retry = {"max_retries": retries, "retry_timeout": _seconds(30)} if retries is not None else None
        if self.scheme in S3_SCHEMES:
            if self._s3.role_arn:
                # obstore would sign with the base identity, not the role: never write as someone else
                raise StorageError(
                    "Storage option role_arn is not supported for timeline files (written with S3 conditional PUTs "
                    "through obstore, which cannot assume a role from it): assume the role outside (AWS_PROFILE with "
                    "static keys, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN of the role)",
                    path=self.uri,
                )
            store = _s3_store(self.bucket, self._s3, retry)
        else:
            store = _gcs_store(self.bucket, self._options, retry, uri=self.uri)
        if retries is None:
            self._store = store
        return store

    def create(self, key: str, data: bytes, *, display: str) -> None:
        """Create ``key`` (relative to the bucket) with ``data``; :class:`FileAlreadyExistsError` if it exists.

        Raises:
            FileAlreadyExistsError: the object exists (the store refused the conditional write).
            ConditionalWriteUnsupportedError: the store has no conditional writes (probe or 501 answer).
            StorageError: any other failure (nothing was created).
        """
        if self.mode == "auto" and self.scheme in S3_SCHEMES and self._s3.endpoint:
            self._probe_once(key.rsplit("/", 1)[0] if "/" in key else "", display=display)
        self._put_create(self.store(), key, data, display=display)

    def _put_create(self, store: Any, key: str, data: bytes, *, display: str) -> None:
        import obstore
        from obstore.exceptions import (
            AlreadyExistsError,
            BaseError,
            InvalidPathError,
            NotSupportedError,
            PermissionDeniedError,
            PreconditionError,
            UnauthenticatedError,
            UnknownConfigurationKeyError,
        )

        try:
            obstore.put(store, key, data, mode="create", use_multipart=False)
        except (AlreadyExistsError, PreconditionError) as err:
            raise FileAlreadyExistsError(display, ambiguous=_retried(err)) from err
        except NotSupportedError as err:
            raise ConditionalWriteUnsupportedError(display, "the client refused a create-only PUT") from err
        except BaseError as err:
            detail = _first_line(err)
            if _is_not_implemented(str(err)):
                raise ConditionalWriteUnsupportedError(
                    display, "the store answered 501 Not Implemented to a PUT with If-None-Match: *"
                ) from err
            refused = (PermissionDeniedError, UnauthenticatedError, InvalidPathError, UnknownConfigurationKeyError)
            if isinstance(err, refused):
                raise StorageError(f"Cannot create file ({detail})", path=display) from err
            # transport errors, timeouts, 5xx past the retries: the store may have applied the PUT
            raise AmbiguousWriteError(f"Cannot create file ({detail})", path=display) from err

    def _probe_once(self, directory: str, *, display: str) -> None:
        with _PROBED_GUARD:
            verdict = _PROBED.get(self._store_key)
        if verdict is None:
            verdict = self._probe(directory, display=display)
            with _PROBED_GUARD:
                _PROBED[self._store_key] = verdict
        if verdict:
            raise ConditionalWriteUnsupportedError(display, verdict)

    def _probe(self, directory: str, *, display: str) -> str:
        """'' if the store refuses a second create of the same object, else how it failed to."""
        import obstore

        store = self.store(retries=_PROBE_RETRIES)
        # a hidden name next to the file (timeline readers skip names starting with "."); deleted right after,
        # only a crash in between leaves it behind, and nothing reads it
        key = f"{directory}/.conditional-put-probe.{uuid.uuid4().hex}.tmp".lstrip("/")
        try:
            try:
                self._put_create(store, key, b"probe 1", display=display)
            except ConditionalWriteUnsupportedError as err:
                return err.reason
            try:
                self._put_create(store, key, b"probe 2", display=display)
            except FileAlreadyExistsError:
                return ""
            except ConditionalWriteUnsupportedError as err:
                return err.reason
            return "the store accepted a second PUT with If-None-Match: * of an existing object (it ignores the header)"
        finally:
            try:
                obstore.delete(store, key)
            except Exception:  # a leftover hidden probe object is harmless; the verdict matters
                pass


_PROBED: dict[tuple[str, str, str], str] = {}
"""Per (kind, endpoint, bucket): '' if the store has conditional writes, else why not. One probe per process."""
_PROBED_GUARD = threading.Lock()


def _s3_store(bucket: str, s: S3Settings, retry: dict[str, Any] | None) -> Any:
    from obstore.store import S3Store

    config: dict[str, Any] = {"conditional_put": "etag"}
    client: dict[str, Any] = {}
    if s.endpoint:
        # aws_endpoint_url_s3 wins over endpoint inside obstore, and obstore reads AWS_ENDPOINT_URL_S3 itself
        config["endpoint"] = s.endpoint
        config["aws_endpoint_url_s3"] = s.endpoint
        if s.endpoint.startswith("http://"):
            client["allow_http"] = True
    if s.region:
        config["region"] = s.region
    if s.virtual_hosted:
        config["virtual_hosted_style_request"] = True
    kwargs: dict[str, Any] = {"config": config, "client_options": client or None}
    if retry is not None:
        kwargs["retry_config"] = retry
    if s.anonymous:
        config["skip_signature"] = True
    elif s.access_key and s.secret_key:
        # explicit credentials: a provider, so that no AWS_* variable of the environment is mixed in
        creds = {"access_key_id": s.access_key, "secret_access_key": s.secret_key, "token": s.session_token}
        kwargs["credential_provider"] = _StaticS3Credentials(creds)
    return S3Store(bucket, **kwargs)


class _StaticS3Credentials:
    """An obstore credential provider returning fixed keys (never printed)."""

    def __init__(self, creds: dict[str, Any]) -> None:
        self._creds = {**creds, "expires_at": None}

    def __call__(self) -> dict[str, Any]:
        return dict(self._creds)

    def __repr__(self) -> str:
        return "_StaticS3Credentials(***)"


def _gcs_store(bucket: str, options: Mapping[str, Any], retry: dict[str, Any] | None, *, uri: str) -> Any:
    from obstore.store import GCSStore

    config: dict[str, Any] = {}
    client: dict[str, Any] = {}
    if _truthy(options.get("anonymous")):
        config["skip_signature"] = True
    if options.get("access_token"):
        config["bearer_token"] = str(options["access_token"])
    if options.get("endpoint_override"):
        base = str(options["endpoint_override"])
        if "://" not in base:
            base = f"{options.get('scheme') or 'https'}://{base}"
        config["base_url"] = base
        if base.startswith("http://"):
            client["allow_http"] = True
    if options.get("target_service_account"):
        raise StorageError(
            "Storage option target_service_account is not supported for atomic creates on GCS (obstore uses "
            "GOOGLE_APPLICATION_CREDENTIALS / GOOGLE_SERVICE_ACCOUNT or access_token)",
            path=uri,
        )
    kwargs: dict[str, Any] = {"config": config, "client_options": client or None}
    if retry is not None:
        kwargs["retry_config"] = retry
    return GCSStore(bucket, **kwargs)


def _seconds(n: int) -> Any:
    from datetime import timedelta

    return timedelta(seconds=n)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0][:300] if text else type(err).__name__


_RETRIES = re.compile(r"\bretries: (\d+)|after (\d+) retries")


def _retried(err: BaseException) -> bool:
    """True unless object_store's error says the answer came to the first request (``retries: 0``): a refusal of a
    retried create may refuse this attempt's own first PUT, applied by the store but whose answer was lost."""
    m = _RETRIES.search(str(err))
    if m is None:
        return True  # unknown: treat as ambiguous (the object is read back)
    return int(m.group(1) or m.group(2)) > 0


def _is_not_implemented(text: str) -> bool:
    return "501" in text and ("Not Implemented" in text or "NotImplemented" in text)
