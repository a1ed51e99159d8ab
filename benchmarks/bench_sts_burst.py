"""A Spark-scale burst: 500 concurrent loadTable calls of one table with vended credentials.

Workload: a Glue catalog on moto's server (Glue, S3) with credential vending; STS is moto behind a
recording front (``tests.support.fake_sts``) that counts AssumeRole calls and holds each answer back
``STS_LATENCY`` seconds, so the burst arrives while the first call is still out. 500 loads
(``X-Iceberg-Access-Delegation: vended-credentials``) are sent at once over 500 connections by one
asyncio client to a real ``irc-proxy serve`` process; a second burst follows once the credentials are
cached. The baseline is a proxy without a cache: one AssumeRole per load (500).
Goal: the burst costs at most 1 STS call (ratio <= 1/500). Quick mode: 100 loads.

moto's state is process-wide (``make bench`` runs every module in one process, and ``glue_load``
creates its own ``bench`` database, bucket and tables first), so the run starts by resetting moto and
uses names of its own: it can be run again, alone or after any other benchmark.
"""

from __future__ import annotations

import asyncio
import time

import httpx

from benchmarks.support import quiet_moto, row, served_proxy
from tests.support.aws import client
from tests.support.fake_sts import fake_sts
from tests.support.rest import SCHEMA
from tests.support.vending import DELEGATION, create_role, vending_catalog_config

BUCKET = "irc-bench-sts"
CATALOG = "vend"
NAMESPACE = "sts_burst"
STS_LATENCY = 0.2


async def burst(url: str, count: int) -> tuple[float, set[str]]:
    """Seconds for ``count`` concurrent loads, and the access key ids they returned."""
    limits = httpx.Limits(max_connections=count, max_keepalive_connections=count)
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        started = time.perf_counter()
        responses = await asyncio.gather(*(http.get(url, headers=DELEGATION) for _ in range(count)))
        took = time.perf_counter() - started
    failed = [r for r in responses if r.status_code != 200]
    if failed:
        raise RuntimeError(f"{len(failed)} loads failed, e.g. {failed[0].status_code} {failed[0].text[:200]}")
    return took, {r.json()["config"]["s3.access-key-id"] for r in responses}


def run(quick: bool = False) -> list[dict[str, object]]:
    loads = 100 if quick else 500
    with quiet_moto() as moto, fake_sts(moto) as sts:
        httpx.post(f"{moto}/moto-api/reset").raise_for_status()  # nothing left from an earlier benchmark
        client("s3", moto).create_bucket(Bucket=BUCKET)
        create_role(client("iam", moto))
        with served_proxy(vending_catalog_config(CATALOG, moto, sts.url, BUCKET)) as proxy:
            api = f"{proxy.url}/v1/{CATALOG}"
            httpx.post(f"{api}/namespaces", json={"namespace": [NAMESPACE]}).raise_for_status()
            tables = f"{api}/namespaces/{NAMESPACE}/tables"
            httpx.post(tables, json={"name": "hot", "schema": SCHEMA}).raise_for_status()
            sts.reset()
            sts.delay = STS_LATENCY
            cold_seconds, cold_keys = asyncio.run(burst(f"{tables}/hot", loads))
            cold_calls = len(sts.assume_role_calls())
            warm_seconds, warm_keys = asyncio.run(burst(f"{tables}/hot", loads))
            warm_calls = len(sts.assume_role_calls()) - cold_calls
    if len(cold_keys | warm_keys) != 1:
        raise RuntimeError(f"expected one set of credentials, got {len(cold_keys | warm_keys)}")
    workload = (
        f"{loads} concurrent loadTable (vended-credentials) of one Glue table on moto; STS answers after "
        f"{STS_LATENCY}s; baseline = one AssumeRole per load (no cache)"
    )
    name = "STS burst"
    return [
        row(name, workload, "STS calls, cold burst", cold_calls, loads, 1 / loads),
        row(name, workload + "; credentials already cached", "STS calls, warm burst", warm_calls, loads, None),
        row(name, workload, "burst wall time s (cold/warm)", cold_seconds, warm_seconds, None),
    ]


if __name__ == "__main__":
    for result in run():
        print(result)
