#!/usr/bin/env python3
"""What the broker gives a plain Kafka client (confluent-kafka, librdkafka), no Lucille: the
ceiling Kafka mode is measured against (bench/distributed/README.md).

- produce: N corpus lines (~920 B) to a fresh topic of P partitions, keyed by id, as fast as
  the client sends them (`linger.ms` 5), until every delivery report came back;
- consume: the same N messages read back by one group consumer;
- fetch latency: one message at a time, produced and flushed, and the time until an idle
  consumer (caught up, its fetch waiting at the broker) receives it, for several
  `fetch.wait.max.ms`: Apache Kafka answers a waiting fetch as soon as a message arrives, so
  this is the produce round trip whatever the wait; a broker that holds every fetch for the
  whole wait shows the wait here.

    python3 bench/distributed/broker_limit.py --docs 100000 [--bootstrap 127.0.0.1:19092]

Used as a module by run.py (`limits`).
"""

import argparse
import os
import statistics
import sys
import time
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def new_topic(bootstrap: str, partitions: int) -> str:
    topic = f"limit_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    return topic


def produce(bootstrap: str, topic: str, lines: list[bytes]) -> float:
    """Seconds to produce every line and get every delivery report."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                  "queue.buffering.max.messages": 1_000_000})
    failed = []

    def report(err, _msg):  # type: ignore[no-untyped-def]
        if err is not None:
            failed.append(err)

    start = time.perf_counter()
    for i, line in enumerate(lines):
        while True:
            try:
                p.produce(topic, key=str(i), value=line, on_delivery=report)
                break
            except BufferError:
                p.poll(0.005)
        if i % 1000 == 0:
            p.poll(0)
    left = p.flush(120)
    took = time.perf_counter() - start
    if left or failed:
        sys.exit(f"produce: {left} undelivered, {len(failed)} failed ({failed[:3]})")
    return took


def consume(bootstrap: str, topic: str, n: int, fetch_wait_ms: int) -> float:
    """Seconds for one group consumer to read `n` messages, from the first one received."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"limit-{uuid.uuid4().hex}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "fetch.wait.max.ms": fetch_wait_ms})
    c.subscribe([topic])
    got, start, deadline = 0, None, time.time() + 120
    while got < n and time.time() < deadline:
        for m in c.consume(10000, 0.5):
            if m.error() is None:
                if start is None:
                    start = time.perf_counter()
                got += 1
    took = time.perf_counter() - (start or time.perf_counter())
    c.close()
    if got < n:
        sys.exit(f"consume: {got} of {n} messages read")
    return took


def fetch_latency(bootstrap: str, fetch_wait_ms: int, samples: int) -> list[float]:
    """Milliseconds from produce to receipt, one message at a time, consumer idle between."""
    topic = new_topic(bootstrap, 1)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"lat-{uuid.uuid4().hex}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "fetch.wait.max.ms": fetch_wait_ms})
    c.subscribe([topic])
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    # Assigned and caught up: a first message read.
    p.produce(topic, value=b"warm-up")
    p.flush(10)
    deadline = time.time() + 60
    while time.time() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            break
    out = []
    for i in range(samples):
        # Idle for a moment, so the consumer's fetch is waiting at the broker.
        time.sleep(0.05 + (i % 7) * 0.013)
        start = time.perf_counter()
        p.produce(topic, value=b"x")
        p.poll(0)
        while True:
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                break
        out.append((time.perf_counter() - start) * 1000)
    c.close()
    return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def limits(bootstrap: str, lines: list[bytes], partitions: int = 4,
           fetch_wait_ms: int = 100) -> dict[str, float]:
    """Produce and consume rates (messages/s) of a plain client on this broker."""
    topic = new_topic(bootstrap, partitions)
    prod = produce(bootstrap, topic, lines)
    cons = consume(bootstrap, topic, len(lines), fetch_wait_ms)
    return {"produce": len(lines) / prod, "consume": len(lines) / cons}


def corpus(n: int) -> list[bytes]:
    path = f"/tmp/lucille-bench-distributed/corpus-{n}.jsonl"
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        import subprocess
        subprocess.run([sys.executable, os.path.join(ROOT, "bench/standard/generate.py"),
                        "--docs", str(n), "--out", path], check=True)
    with open(path, "rb") as f:
        return [line.rstrip(b"\n") for line in f]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=100000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--fetch-wait", type=int, default=100,
                    help="the consumer's fetch.wait.max.ms for the consume rate")
    ap.add_argument("--bootstrap", default=os.environ.get("LUCILLE_TEST_KAFKA_BOOTSTRAP"))
    a = ap.parse_args()
    if not a.bootstrap:
        sys.exit("--bootstrap or LUCILLE_TEST_KAFKA_BOOTSTRAP (source scripts/services/kafka.sh)")
    lines = corpus(a.docs)
    r = limits(a.bootstrap, lines, a.partitions, a.fetch_wait)
    print(f"| plain client, produce {a.docs} docs, {a.partitions} partitions | "
          f"{r['produce']:,.0f} msgs/s |")
    print(f"| plain client, consume {a.docs} docs, fetch.wait.max.ms {a.fetch_wait} | "
          f"{r['consume']:,.0f} msgs/s |")
    for wait in (500, 100, 5):
        ms = fetch_latency(a.bootstrap, wait, a.samples)
        print(f"| fetch latency, fetch.wait.max.ms {wait} | p50 {statistics.median(ms):.1f} ms, "
              f"p99 {pct(ms, 0.99):.1f} ms |")


if __name__ == "__main__":
    main()
