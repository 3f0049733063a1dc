"""Our side of Hudi's ``DynamoDBBasedLockProvider`` (hudi-aws 0.15), the table lock Java writers use on S3, where
Java refuses the file-system provider.

What Java does (read from ``org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider`` 0.15 and the
``com.amazonaws:dynamodb-lock-client`` 1.2.0 it drives):

- One DynamoDB table (``hoodie.write.lock.dynamodb.table``, default ``hudi_locks``; created with the hash key ``key``
  (string) if missing), one item per Hudi table: ``key`` = ``hoodie.write.lock.dynamodb.partition_key`` (default:
  the Hudi table name).
- The item of a held lock: ``key``, ``ownerName``, ``leaseDuration`` (milliseconds, a string),
  ``recordVersionNumber`` (a UUID, a string); ``isReleased`` = ``"1"`` on a released item that was kept.
- The lease is ``hoodie.write.lock.wait_time_ms`` (default 60 s); the holder's heartbeat thread replaces
  ``recordVersionNumber`` every lease / 3 (``SET leaseDuration, recordVersionNumber`` on the condition that the item
  still has its owner and its previous version number).
- Acquire: no item -> put with ``attribute_not_exists(key)``; a released item -> put on the condition that its
  version number did not change and it is released; a held item -> wait; an item whose version number did not
  change for its lease duration since first seen is expired: put on the condition that its version number is still
  the one seen (a steal).
- Release: delete the item on the condition that it is still the owner's, with the version number last written.

We speak exactly that protocol with boto3, so our services and a Java writer with this provider exclude each other;
time is measured locally (monotonic) like the lock client does, never from clocks of other machines.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.config.options import option
from lake_orchestration.errors import StorageError

log = logging.getLogger(__name__)

DYNAMODB_LOCK_PROVIDER = "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"
PARTITION_KEY_ATTR = "key"
"""``DynamoDBBasedLockProvider``'s hash key attribute name."""
OWNER_NAME = "ownerName"
LEASE_DURATION = "leaseDuration"
RECORD_VERSION_NUMBER = "recordVersionNumber"
IS_RELEASED = "isReleased"
IS_RELEASED_VALUE = "1"
DATA = "data"


@dataclass(frozen=True, kw_only=True)
class DynamoDBLockConfig:
    """``hoodie.write.lock.dynamodb.*``: where the lock item lives (the lease is ``hoodie.write.lock.wait_time_ms``,
    as in Java)."""

    table: str = option(HoodieKey.LOCK_DYNAMODB_TABLE, "hudi_locks")
    """``hoodie.write.lock.dynamodb.table``: the DynamoDB table holding the lock items."""
    partition_key: str | None = option(HoodieKey.LOCK_DYNAMODB_PARTITION_KEY, None)
    """``hoodie.write.lock.dynamodb.partition_key``: this Hudi table's item; default the Hudi table name."""
    region: str | None = option(HoodieKey.LOCK_DYNAMODB_REGION, None)
    """``hoodie.write.lock.dynamodb.region``: default ``AWS_REGION``, else ``us-east-1``."""
    endpoint_url: str | None = option(HoodieKey.LOCK_DYNAMODB_ENDPOINT_URL, None)
    """``hoodie.write.lock.dynamodb.endpoint_url``: a DynamoDB-compatible endpoint (local development, tests)."""
    billing_mode: str = option(HoodieKey.LOCK_DYNAMODB_BILLING_MODE, "PAY_PER_REQUEST")
    """``hoodie.write.lock.dynamodb.billing_mode`` of a lock table we create: ``PAY_PER_REQUEST`` or ``PROVISIONED``
    (then 20 read and 10 write capacity units, Java's defaults)."""

    def resolved_region(self) -> str:
        return self.region or os.environ.get("AWS_REGION") or "us-east-1"


def _client(cfg: DynamoDBLockConfig) -> Any:
    try:
        import boto3
    except ImportError as err:  # an optional dependency: only this provider needs it
        raise StorageError(
            f"{DYNAMODB_LOCK_PROVIDER} needs boto3 (pip install boto3)", path=f"dynamodb://{cfg.table}"
        ) from err
    return boto3.client("dynamodb", region_name=cfg.resolved_region(), endpoint_url=cfg.endpoint_url)


def _is_conditional_failure(err: Exception) -> bool:
    response = getattr(err, "response", None) or {}
    return response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


@dataclass(frozen=True)
class LockItem:
    """The lock item as read from DynamoDB."""

    owner: str
    lease_ms: int
    version: str
    released: bool


class DynamoDBLockClient:
    """The lock item of one Hudi table (``partition_key``) in the lock table, as the Java lock client handles it."""

    def __init__(self, cfg: DynamoDBLockConfig, partition_key: str, *, lease_ms: int) -> None:
        self.cfg = cfg
        self.partition_key = partition_key
        self.lease_ms = lease_ms
        self.owner = f"{socket.gethostname()}{uuid.uuid4()}"  # the lock client's default: host name + a UUID
        self.client = _client(cfg)
        self._seen: tuple[str, float] | None = None
        """(version number, monotonic time first seen) of another holder's item, to judge its lease."""

    @property
    def uri(self) -> str:
        return f"dynamodb://{self.cfg.table}/{self.partition_key}"

    def ensure_table(self) -> None:
        """Create the lock table as Java does (hash key ``key``, string) when it does not exist."""
        try:
            self.client.describe_table(TableName=self.cfg.table)
            return
        except self.client.exceptions.ResourceNotFoundException:
            pass
        args: dict[str, Any] = {
            "TableName": self.cfg.table,
            "KeySchema": [{"AttributeName": PARTITION_KEY_ATTR, "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": PARTITION_KEY_ATTR, "AttributeType": "S"}],
            "BillingMode": self.cfg.billing_mode,
        }
        if self.cfg.billing_mode == "PROVISIONED":
            args["ProvisionedThroughput"] = {"ReadCapacityUnits": 20, "WriteCapacityUnits": 10}
        try:
            self.client.create_table(**args)
        except self.client.exceptions.ResourceInUseException:
            pass  # created by another process meanwhile
        self.client.get_waiter("table_exists").wait(TableName=self.cfg.table)

    def read(self) -> LockItem | None:
        got = self.client.get_item(
            TableName=self.cfg.table, Key={PARTITION_KEY_ATTR: {"S": self.partition_key}}, ConsistentRead=True
        )
        item = got.get("Item")
        if not item:
            return None
        return LockItem(
            owner=item.get(OWNER_NAME, {}).get("S", ""),
            lease_ms=int(item.get(LEASE_DURATION, {}).get("S", "0") or 0),
            version=item.get(RECORD_VERSION_NUMBER, {}).get("S", ""),
            released=item.get(IS_RELEASED, {}).get("S") == IS_RELEASED_VALUE,
        )

    def _put(self, version: str, condition: str, values: dict[str, Any]) -> bool:
        names = {"#pk": PARTITION_KEY_ATTR}
        if ":rvn" in values:
            names["#rvn"] = RECORD_VERSION_NUMBER
        if ":ir" in values:
            names["#ir"] = IS_RELEASED
        try:
            self.client.put_item(
                TableName=self.cfg.table,
                Item={
                    PARTITION_KEY_ATTR: {"S": self.partition_key},
                    OWNER_NAME: {"S": self.owner},
                    LEASE_DURATION: {"S": str(self.lease_ms)},
                    RECORD_VERSION_NUMBER: {"S": version},
                },
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                **({"ExpressionAttributeValues": values} if values else {}),
            )
        except Exception as err:
            if _is_conditional_failure(err):
                return False
            raise
        return True

    def try_acquire(self) -> str | LockItem:
        """One attempt: our new version number when acquired, else the item that blocks us."""
        version = str(uuid.uuid4())
        current = self.read()
        if current is None:
            if self._put(version, "attribute_not_exists(#pk)", {}):
                self._seen = None
                return version
            return self.read() or LockItem(owner="another process", lease_ms=self.lease_ms, version="", released=False)
        if current.released:
            cond = "(attribute_exists(#pk) AND #rvn = :rvn AND #ir = :ir)"
            values = {":rvn": {"S": current.version}, ":ir": {"S": IS_RELEASED_VALUE}}
            if self._put(version, cond, values):
                self._seen = None
                return version
            return current
        now = time.monotonic()
        if self._seen is None or self._seen[0] != current.version:
            self._seen = (current.version, now)  # a new version: its lease starts now, as the lock client judges
            return current
        if (now - self._seen[1]) * 1000 > current.lease_ms:
            log.warning(
                "Taking over the expired DynamoDB table lock %s of %s: its version %s did not change for %d ms",
                self.uri,
                current.owner,
                current.version,
                current.lease_ms,
            )
            if self._put(version, "attribute_exists(#pk) AND #rvn = :rvn", {":rvn": {"S": current.version}}):
                self._seen = None
                return version
        return current

    def heartbeat(self, version: str) -> str | None:
        """Replace the version number if the item is still ours; the new one, or None if the lock was lost."""
        new = str(uuid.uuid4())
        try:
            self.client.update_item(
                TableName=self.cfg.table,
                Key={PARTITION_KEY_ATTR: {"S": self.partition_key}},
                UpdateExpression="SET #ld = :ld, #rvn = :newRvn",
                ConditionExpression="attribute_exists(#pk) AND #rvn = :rvn AND #on = :on",
                ExpressionAttributeNames={
                    "#pk": PARTITION_KEY_ATTR,
                    "#ld": LEASE_DURATION,
                    "#rvn": RECORD_VERSION_NUMBER,
                    "#on": OWNER_NAME,
                },
                ExpressionAttributeValues={
                    ":ld": {"S": str(self.lease_ms)},
                    ":newRvn": {"S": new},
                    ":rvn": {"S": version},
                    ":on": {"S": self.owner},
                },
            )
        except Exception as err:
            if _is_conditional_failure(err):
                return None
            raise
        return new

    def release(self, version: str) -> bool:
        """Delete the item if it is still ours with ``version``; False if it was not (stolen, or already gone)."""
        try:
            self.client.delete_item(
                TableName=self.cfg.table,
                Key={PARTITION_KEY_ATTR: {"S": self.partition_key}},
                ConditionExpression="attribute_exists(#pk) AND #rvn = :rvn AND #on = :on",
                ExpressionAttributeNames={"#pk": PARTITION_KEY_ATTR, "#rvn": RECORD_VERSION_NUMBER, "#on": OWNER_NAME},
                ExpressionAttributeValues={":rvn": {"S": version}, ":on": {"S": self.owner}},
            )
        except Exception as err:
            if _is_conditional_failure(err):
                return False
            raise
        return True


class DynamoDBHeld:
    """A DynamoDB lock held by this process: heartbeats every lease / 3 (Java's period), loss detection, release."""

    def __init__(self, client: DynamoDBLockClient, version: str) -> None:
        self.client = client
        self.version = version
        self.lost = False
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"hudi-dynamodb-lock-heartbeat-{version[:8]}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.client.lease_ms / 3 / 1000):
            try:
                self.beat()
            except Exception:  # boundary of a daemon thread: never die silently, keep beating
                log.exception("Heartbeat of the DynamoDB table lock %s failed", self.client.uri)

    def beat(self) -> None:
        with self._guard:
            if self.lost:
                return
            new = self.client.heartbeat(self.version)
            if new is None:
                self.lost = True
                log.error("DynamoDB table lock %s of this process was lost (taken over or deleted)", self.client.uri)
            else:
                self.version = new

    def release(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        with self._guard:
            if not self.lost and not self.client.release(self.version):
                log.error("DynamoDB table lock %s was no longer ours at release; left untouched", self.client.uri)
