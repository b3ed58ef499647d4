"""Small agents, run offline, whose spans come from real instrumentation libraries.

    agents.py FLAVOUR (--file PATH | --endpoint URL)

FLAVOUR is one of
  pydantic-ai    a pydantic-ai agent on a FunctionModel (GenAI conventions); its booking
                 tool fails three times, then the model claims success anyway
  openinference  the OpenAI SDK, instrumented by OpenInference, against a local stub
  openllmetry    the OpenAI SDK, instrumented by OpenLLMetry, against a local stub

In the OpenAI flavours the refund tool answers "Error: ..." and the model claims success.
Spans go to PATH as OTLP JSON, one TracesData a line (ids in base64, as protobuf's JSON
mapping writes them), or to an OTLP/HTTP endpoint as protobuf.
"""
import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from google.protobuf.json_format import MessageToJson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class JsonLinesExporter(SpanExporter):
    def __init__(self, path):
        self.out = open(path, "w")

    def export(self, spans):
        self.out.write(MessageToJson(encode_spans(spans), indent=None) + "\n")
        self.out.flush()
        return SpanExportResult.SUCCESS


def provider(service, args):
    tp = TracerProvider(resource=Resource.create({"service.name": service}))
    if args.file:
        exporter = JsonLinesExporter(args.file)
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        exporter = OTLPSpanExporter(endpoint=args.endpoint.rstrip("/") + "/v1/traces")
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


def pydantic_ai(args):
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    tp = provider("booking-service", args)
    Agent.instrument_all(InstrumentationSettings(tracer_provider=tp))

    def model(messages, info: AgentInfo):
        answers = sum(isinstance(p, (ToolReturnPart, RetryPromptPart)) for m in messages for p in m.parts)
        if answers < 3:
            return ModelResponse(parts=[ToolCallPart("book_flight", {"flight": "UA100"})])
        return ModelResponse(parts=[TextPart("Your flight UA100 is booked.")])

    agent = Agent(FunctionModel(model), name="booking", retries=5)

    @agent.tool_plain
    def book_flight(flight: str) -> str:
        raise ModelRetry("flight service unavailable")

    print(agent.run_sync("Book me flight UA100 please").output)
    tp.shutdown()


class OpenAIStub(BaseHTTPRequestHandler):
    """Asks for the refund tool, then answers with text once the tool has replied."""

    def log_message(self, *_):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        messages = body["messages"]
        if messages[-1]["role"] == "tool":
            message = {"role": "assistant", "content": "Done: your refund is on its way."}
        else:
            call = {"id": f"call_{len(messages)}", "type": "function",
                    "function": {"name": "issue_refund", "arguments": json.dumps({"order": "W123"})}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        reply = json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "stub-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop" if message["content"] else "tool_calls"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


def openai_agent(args):
    server = HTTPServer(("127.0.0.1", 0), OpenAIStub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tp = provider("refund-service", args)
    if args.flavour == "openinference":
        from openinference.instrumentation import using_session
        from openinference.instrumentation.openai import OpenAIInstrumentor
        session = using_session("refund-conversation-1")
    else:
        import contextlib
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
        session = contextlib.nullcontext()
    OpenAIInstrumentor().instrument(tracer_provider=tp)

    import openai
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="test-key")
    tools = [{"type": "function", "function": {"name": "issue_refund",
              "parameters": {"type": "object", "properties": {"order": {"type": "string"}}}}}]
    messages = [{"role": "system", "content": "You are a support agent."},
                {"role": "user", "content": "Please refund order W123."}]
    tracer = tp.get_tracer("refund-agent")
    # The application's own span around the agent's turn, as the GenAI conventions describe.
    with session, tracer.start_as_current_span("invoke_agent refund", attributes={"gen_ai.operation.name": "invoke_agent"}):
        for _ in range(2):
            reply = client.chat.completions.create(model="stub-model", messages=messages, tools=tools).choices[0].message
            messages.append(reply.model_dump(exclude_none=True))
            for call in reply.tool_calls or []:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "Error: refund service timed out"})
    print(messages[-1]["content"])
    tp.shutdown()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("flavour", choices=["pydantic-ai", "openinference", "openllmetry"])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--file")
    target.add_argument("--endpoint")
    args = parser.parse_args()
    if args.flavour == "pydantic-ai":
        pydantic_ai(args)
    else:
        openai_agent(args)


if __name__ == "__main__":
    main()
