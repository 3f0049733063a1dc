"""Storage options for tasks that run in other processes (Spark executors).

A Spark task opens the table's storage itself, from the storage options shipped to it. The options a user gave may
leave things to the standard AWS environment of the driver (``AWS_ENDPOINT_URL``, ``AWS_REGION``,
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, ``AWS_PROFILE``), which an executor does not
have: on a cluster it runs elsewhere, and even in ``local[*]`` mode its Python workers inherit the environment the
JVM started with, not the driver's later changes. :func:`options_for_executors` completes the options with what the
driver resolved, so the executors reach the same store as the same identity — as Spark itself does for S3A, whose
``SparkHadoopUtil`` copies the driver's ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN`` into the
``fs.s3a.*`` settings the executors get.

The result holds secrets: it travels only inside pickled task functions, never in a DataFrame, a Spark
configuration, a job description or a log line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from lake_orchestration.io.object_store import S3_SCHEMES, resolve_s3


def options_for_executors(base_uri: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` completed with the endpoint, region and static credentials the driver resolves from its standard
    AWS environment (S3 only; the options given always win). Credentials the driver cannot resolve statically (an
    instance profile, web identity) are left to each executor's own AWS credential chain.

    Example:
        >>> options_for_executors("/tmp/t", {})
        {}
    """
    out = dict(options or {})
    if urlparse(base_uri).scheme.lower() not in S3_SCHEMES:
        return out
    s = resolve_s3(out)
    if s.endpoint and not out.get("endpoint_override"):
        out["endpoint_override"] = s.endpoint
    if s.region and not out.get("region"):
        out["region"] = s.region
    if not s.anonymous and not out.get("access_key") and s.access_key and s.secret_key:
        out["access_key"] = s.access_key
        out["secret_key"] = s.secret_key
        if s.session_token:
            out["session_token"] = s.session_token
    return out
