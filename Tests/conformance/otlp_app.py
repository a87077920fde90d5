"""An app instrumented with the official OpenTelemetry Python SDK and nothing of Parley's: it exports to whatever
OTEL_EXPORTER_OTLP_ENDPOINT names (OTLP over HTTP, protobuf), as any stock set-up does. It makes a trace of three
nested spans (the innermost fails) and writes log lines through Python's logging, bridged to OpenTelemetry; then
it flushes and exits. Run by test_otlp_sdk.py."""
import logging
import sys

from opentelemetry import trace
from opentelemetry._logs import set_logger_provider
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode

resource = Resource.create()  # service.name from OTEL_SERVICE_NAME
tracer_provider = TracerProvider(resource=resource)
tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(tracer_provider)
logger_provider = LoggerProvider(resource=resource)
logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
set_logger_provider(logger_provider)
logging.getLogger().addHandler(LoggingHandler(level=logging.INFO, logger_provider=logger_provider))
logging.getLogger().setLevel(logging.INFO)

log = logging.getLogger("shop.checkout")
tracer = trace.get_tracer("shop")
with tracer.start_as_current_span("POST /checkout", kind=trace.SpanKind.SERVER) as root:
    root.set_attribute("http.request.method", "POST")
    log.info("checkout started for %s", "cart-42")
    with tracer.start_as_current_span("reserve stock"):
        with tracer.start_as_current_span("SELECT stock", kind=trace.SpanKind.CLIENT) as query:
            query.set_attribute("db.system", "postgresql")
            query.set_status(Status(StatusCode.ERROR, "deadlock detected"))
            log.warning("retrying after a deadlock \x1b[31mred\x1b[0m")
    log.debug("not sent: below the handler's level")
    log.error("payment declined", extra={"order": "o-7"})

tracer_provider.shutdown()
logger_provider.shutdown()
print(format(root.get_span_context().trace_id, "032x"))
sys.exit(0)
