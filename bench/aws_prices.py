"""AWS's public on-demand prices (us-east-1) and the arithmetic that turns measured requests into
a bill: DynamoDB's item sizes and request units, SQS's 64 KB chunks, Lambda's GB-seconds.

Pure: no AWS, no clock, nothing started. `bench.aws_cost` measures the counts on the embedded
stack and hands them here; `tests/unit/test_aws_cost.py` checks the arithmetic by hand.

DynamoDB's rules, as its developer guide states them (docs.aws.amazon.com/amazondynamodb, "DynamoDB
read and write operations", read 2026-12-06):

- an item's size is the UTF-8 length of its attribute names plus its values' sizes;
- a write costs 1 write request unit (WRU) per started 1 KB of the larger of the item before and
  after it (an `UpdateItem` too); a write in `TransactWriteItems` (a `ConditionCheck` too) costs
  2 per KB;
- a read costs 1 read request unit (RRU) per started 4 KB strongly consistent, half that
  eventually consistent, 2 in a transaction; a `Query` or `Scan` is charged on the summed size of
  the items it read, a `BatchGetItem` item by item; a read that finds nothing costs the minimum;
- every secondary index the written item is in is written too: 1 write per started KB of the
  index entry (its keys and projected attributes) when the item enters or leaves the index or a
  projected attribute changes, 2 when the index's own key changes (the old entry deleted, the new
  one put). A change to an attribute a `KEYS_ONLY` index does not hold writes nothing there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

REGION = "us-east-1"
PRICES_READ_ON = "2026-12-06"
"""When the prices below were read (AWS's public pricing pages, region us-east-1)."""

# DynamoDB on-demand, Standard table class: aws.amazon.com/dynamodb/pricing/on-demand/ (read
# 2026-12-06; the prices AWS cut on 2024-11-01: writes from $1.25, reads from $0.25 per million).
DYNAMODB_USD_PER_WRU = 0.625 / 1_000_000
DYNAMODB_USD_PER_RRU = 0.125 / 1_000_000
DYNAMODB_USD_PER_GB_MONTH = 0.25  # storage past the first 25 GB
# SQS standard queues: aws.amazon.com/sqs/pricing/ (read 2026-12-06): $0.40 per million requests
# past the first million a month; each 64 KB chunk of a request's payload is one request.
SQS_USD_PER_REQUEST = 0.40 / 1_000_000
SQS_CHUNK_BYTES = 64 * 1024
# Lambda, x86, first pricing tier: aws.amazon.com/lambda/pricing/ (read 2026-12-06): $0.20 per
# million requests, $0.0000166667 per GB-second (billed per ms).
LAMBDA_USD_PER_REQUEST = 0.20 / 1_000_000
LAMBDA_USD_PER_GB_SECOND = 0.0000166667
# S3 Standard: aws.amazon.com/s3/pricing/ (read 2026-12-06): PUT, COPY, POST, LIST $0.005 per
# 1,000; GET and the rest $0.0004 per 1,000; storage $0.023 per GB-month (first 50 TB).
S3_USD_PER_PUT = 0.005 / 1000
S3_USD_PER_GET = 0.0004 / 1000
S3_USD_PER_GB_MONTH = 0.023
# API Gateway REST API (what Chalice deploys): aws.amazon.com/api-gateway/pricing/ (read
# 2026-12-06): $3.50 per million requests for the first 333 million a month.
APIGW_USD_PER_REQUEST = 3.50 / 1_000_000

# The 12-month free tiers and monthly free allowances (SQS's first million requests, Lambda's
# million requests and 400,000 GB-seconds, DynamoDB's 25 GB) are left out: the figures are what
# the traffic itself costs.


def value_bytes(value: Mapping[str, Any]) -> int:
    """The size DynamoDB counts for one attribute value in its wire form (`{"S": "..."}`).

    Strings and binaries: their length in bytes (UTF-8; a binary as base64 text is decoded
    length, taken as 3/4 of the text). Numbers: 1 byte per 2 significant digits, plus 1.
    Booleans and nulls: 1. Lists and maps: 3 bytes, plus 1 per element, plus the elements (a
    map's keys too). Sets: the sum of their elements.

    Raises:
        ValueError: a value whose type DynamoDB does not know.
    """
    (kind, v), *_ = value.items()
    if kind == "S":
        return len(str(v).encode())
    if kind == "B":
        return len(v) if isinstance(v, bytes) else len(str(v)) * 3 // 4
    if kind == "N":
        digits = str(v).lstrip("-").replace(".", "").lstrip("0").rstrip("0")
        return max(1, math.ceil(len(digits) / 2)) + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(s).encode()) for s in v)
    if kind == "NS":
        return sum(value_bytes({"N": n}) for n in v)
    if kind == "BS":
        return sum(value_bytes({"B": b}) for b in v)
    if kind == "L":
        return 3 + sum(1 + value_bytes(e) for e in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_bytes(e) for k, e in v.items())
    raise ValueError(f"not a DynamoDB attribute value: {kind!r}")


def item_bytes(item: Mapping[str, Mapping[str, Any]] | None) -> int:
    """An item's size as DynamoDB counts it: names (UTF-8) plus values; 0 for None."""
    if not item:
        return 0
    return sum(len(name.encode()) + value_bytes(v) for name, v in item.items())


def write_units(size_bytes: int, *, transactional: bool = False) -> int:
    """WRU of one write of an item of `size_bytes` (the larger of before and after): 1 per
    started KB, at least 1; twice that in a transaction."""
    units = max(1, math.ceil(size_bytes / 1024))
    return 2 * units if transactional else units


def read_units(size_bytes: int, *, consistent: bool, transactional: bool = False) -> float:
    """RRU of one read of `size_bytes` (one item, or a Query's summed items): 1 per started 4 KB
    strongly consistent (at least 1), half that eventually consistent, 2 in a transaction."""
    units = max(1, math.ceil(size_bytes / 4096))
    if transactional:
        return 2.0 * units
    return float(units) if consistent else units / 2


@dataclass(frozen=True)
class Index:
    """A secondary index as the bill sees it: its key attributes (partition key first) and what
    it projects (`ALL`, `KEYS_ONLY`, or `INCLUDE` with `include`)."""

    name: str
    keys: tuple[str, ...]
    projection: str = "ALL"
    include: tuple[str, ...] = ()


def entry(
    item: Mapping[str, Any] | None, index: Index, table_keys: Sequence[str]
) -> dict[str, Any] | None:
    """The index entry `item` has in `index` (its keys and projected attributes), or None when the
    item is not in the index (a key attribute missing: the index is sparse)."""
    if not item or any(k not in item for k in index.keys):
        return None
    if index.projection == "ALL":
        return dict(item)
    kept = set(index.keys) | set(table_keys)
    if index.projection == "INCLUDE":
        kept |= set(index.include)
    return {k: v for k, v in item.items() if k in kept}


def index_write_units(
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    index: Index,
    table_keys: Sequence[str],
) -> int:
    """WRU a base-table write of an item from `before` to `after` (None: absent) costs in
    `index`: 0 when its entry did not change, 1 per started KB of the entry put or deleted when
    the item enters or leaves the index or a projected attribute changes, and the old entry's
    plus the new one's when the index's own key changed."""
    old, new = entry(before, index, table_keys), entry(after, index, table_keys)
    if old == new:
        return 0
    if old is None:
        return write_units(item_bytes(new))
    if new is None:
        return write_units(item_bytes(old))
    if any(old[k] != new[k] for k in index.keys):
        return write_units(item_bytes(old)) + write_units(item_bytes(new))
    return write_units(item_bytes(new))


def sqs_requests(payload_bytes: int) -> int:
    """Billed SQS requests of one API call carrying `payload_bytes`: one per started 64 KB, at
    least one."""
    return max(1, math.ceil(payload_bytes / SQS_CHUNK_BYTES))


def gb_seconds(duration_ms: float, memory_mb: int) -> float:
    """Lambda GB-seconds of `duration_ms` at `memory_mb` (1 GB = 1,024 MB, as Lambda bills)."""
    return duration_ms / 1000.0 * memory_mb / 1024.0


@dataclass(frozen=True)
class Usage:
    """What some number of attempts used, in billed units (`Usage.per_attempt` scales it)."""

    attempts: int
    dynamodb_rru: float = 0.0
    dynamodb_wru: float = 0.0
    """Table and index writes together (`dynamodb_index_wru` is the indexes' part)."""
    dynamodb_index_wru: float = 0.0
    sqs_requests: float = 0.0
    lambda_requests: float = 0.0
    lambda_gb_seconds: float = 0.0
    s3_puts: float = 0.0
    s3_gets: float = 0.0
    api_requests: float = 0.0


@dataclass(frozen=True)
class Line:
    """One line of a bill: what, how many per 1,000 attempts, the unit price, USD."""

    item: str
    quantity: float
    unit: str
    unit_usd: float
    usd: float


def bill(usage: Usage, per: int = 1000) -> list[Line]:
    """The bill of `per` attempts (default 1,000) at the prices above: one line per priced item,
    in order DynamoDB reads, DynamoDB writes, SQS, Lambda requests, Lambda duration, S3 PUT,
    S3 GET, API Gateway.

    Raises:
        ValueError: `usage.attempts` is not positive.
    """
    if usage.attempts <= 0:
        raise ValueError("a bill needs at least one attempt")
    k = per / usage.attempts
    items = [
        ("DynamoDB reads", usage.dynamodb_rru, "RRU", DYNAMODB_USD_PER_RRU),
        ("DynamoDB writes", usage.dynamodb_wru, "WRU", DYNAMODB_USD_PER_WRU),
        ("SQS requests", usage.sqs_requests, "64 KB request", SQS_USD_PER_REQUEST),
        ("Lambda requests", usage.lambda_requests, "invocation", LAMBDA_USD_PER_REQUEST),
        ("Lambda duration", usage.lambda_gb_seconds, "GB-s", LAMBDA_USD_PER_GB_SECOND),
        ("S3 PUT", usage.s3_puts, "request", S3_USD_PER_PUT),
        ("S3 GET", usage.s3_gets, "request", S3_USD_PER_GET),
        ("API Gateway", usage.api_requests, "request", APIGW_USD_PER_REQUEST),
    ]
    return [Line(name, q * k, unit, price, q * k * price) for name, q, unit, price in items]


def total(lines: Sequence[Line]) -> float:
    """USD of a bill's lines together."""
    return sum(line.usd for line in lines)


def usd_text(usd: float) -> str:
    """`usd` with 6 significant digits, never in exponent form (`0.0123457`, `12.3457`)."""
    if usd == 0:
        return "0"
    places = max(0, 5 - math.floor(math.log10(abs(usd))))
    return f"{Decimal(repr(usd)).quantize(Decimal(1).scaleb(-places)):f}"


def at_scale(usd_per_1000: float, cases_per_day: int) -> tuple[float, float]:
    """(USD per day, USD per 30-day month) of `cases_per_day` attempts a day at `usd_per_1000`."""
    day = usd_per_1000 * cases_per_day / 1000
    return day, day * 30
