"""Spans per second parleyd stores from the official OpenTelemetry Python SDK's OTLP/HTTP exporter (protobuf), as
an app with a stock set-up sends them: BatchSpanProcessor with batches of 512. parley-bench runs it (`--only otlp`)
against a parleyd of its own; by hand:

    python3 Benchmarks/otlp_sdk_spans.py --endpoint http://127.0.0.1:4318 [--spans 100000]

Two figures, one JSON object on stdout:
  * `exporter`: spans made beforehand, handed to OTLPSpanExporter.export 512 at a time, one export after the other as
    BatchSpanProcessor's worker does; each export returns once parleyd has answered, which it does once it has
    stored the spans. What the exporter and parleyd manage together.
  * `sdk`: spans made by a tracer (three attributes each, as the Swift load generator's) through
    BatchSpanProcessor(max_export_batch_size=512) until force_flush() returns: what an app sees, span creation in
    Python included.
"""
import argparse
import json
import sys
import time

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind

BATCH = 512


class Collector(SpanExporter):
    """Keeps the finished spans, to export them later with the clock running."""

    def __init__(self):
        self.spans = []

    def export(self, spans):
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def make_spans(tracer, count):
    for index in range(count):
        with tracer.start_as_current_span("GET /items/{id}", kind=SpanKind.SERVER) as span:
            span.set_attribute("http.request.method", "GET")
            span.set_attribute("http.response.status_code", 200)
            span.set_attribute("url.path", f"/items/{index}")


def exporter_rate(endpoint, count):
    collector = Collector()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-python-exporter"}))
    provider.add_span_processor(SimpleSpanProcessor(collector))
    make_spans(provider.get_tracer("bench"), count)
    exporter = OTLPSpanExporter(endpoint=endpoint + "/v1/traces")
    start = time.monotonic()
    for offset in range(0, count, BATCH):
        if exporter.export(collector.spans[offset:offset + BATCH]) != SpanExportResult.SUCCESS:
            raise SystemExit(f"otlp_sdk_spans: an export of spans {offset}… failed")
    elapsed = time.monotonic() - start
    exporter.shutdown()
    return count / elapsed, elapsed


def sdk_rate(endpoint, count):
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-python-sdk"}))
    processor = BatchSpanProcessor(
        OTLPSpanExporter(endpoint=endpoint + "/v1/traces"), max_export_batch_size=BATCH, max_queue_size=max(count, 2048))
    provider.add_span_processor(processor)
    start = time.monotonic()
    make_spans(provider.get_tracer("bench"), count)
    made = time.monotonic() - start
    if not provider.force_flush(timeout_millis=600_000):
        raise SystemExit("otlp_sdk_spans: force_flush did not finish")
    elapsed = time.monotonic() - start
    provider.shutdown()
    return count / elapsed, elapsed, made


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", required=True, help="parleyd's OTLP endpoint (its readiness line's otlp)")
    parser.add_argument("--spans", type=int, default=100_000)
    arguments = parser.parse_args()
    endpoint = arguments.endpoint.rstrip("/")
    exported, exported_seconds = exporter_rate(endpoint, arguments.spans)
    sdk, sdk_seconds, made_seconds = sdk_rate(endpoint, arguments.spans)
    json.dump({"spans": arguments.spans, "exporter": exported, "exporterSeconds": exported_seconds,
               "sdk": sdk, "sdkSeconds": sdk_seconds, "spanCreationSeconds": made_seconds}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
