"""A scripted model API on 127.0.0.1 for the real ACP agents of the supervisor benchmark, in
the three shapes they speak (one server, told apart by path):

- Gemini's `POST /v1beta/models/MODEL:streamGenerateContent?alt=sse` (Gemini CLI, with
  `GOOGLE_GEMINI_BASE_URL`), and its side call `:generateContent` (the model router's
  classifier), which gets a fixed verdict;
- OpenAI's Chat Completions, `POST /v1/chat/completions`, streamed (Qwen Code, opencode);
- OpenAI's Responses, `POST /v1/responses`, as server-sent events (Codex).

Every turn of an agent (a request that offers tools) is answered with a call of the agent's
shell tool, so that the agent asks permission and its job waits at a gate; a side call that
offers none (opencode's title of the session) gets a short text. The shapes are those of the
tests' fakes (tests/common/gemini.rs, fake_chat.rs, fake_responses.rs). One thread a
connection, one request a connection: every answer closes it.
"""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "fake-model"
KEY = "sk-fake-bench-key"
# What the model asks to run: the job waits at its gate, so it never runs.
COMMAND = "echo approved > marker.txt"
DESCRIPTION = "Write the marker"


def _sse(events, named):
    """Server-sent events, each `data:` one JSON object; with `named`, each also has an
    `event:` line naming its `type` (as the Responses API streams them)."""
    out = []
    for e in events:
        if named:
            out.append(f"event: {e['type']}\n")
        out.append(f"data: {json.dumps(e)}\n\n")
    return "".join(out).encode()


def gemini_stream():
    """One streamed answer: a line of text and a call of Gemini CLI's shell tool."""
    parts = [{"text": "I will write the marker."},
             {"functionCall": {"name": "run_shell_command",
                               "args": {"command": COMMAND, "description": DESCRIPTION}}}]
    chunk = {"candidates": [{"content": {"role": "model", "parts": parts},
                             "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 7,
                               "totalTokenCount": 107},
             "modelVersion": "gemini-fake"}
    return "text/event-stream", f"data: {json.dumps(chunk)}\r\n\r\n".encode()


def gemini_classifier():
    verdict = {"complexity_reasoning": "a scripted task", "complexity_score": 1}
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": json.dumps(verdict)}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1,
                              "totalTokenCount": 2}}
    return "application/json", json.dumps(body).encode()


def chat_completion(request):
    """A streamed Chat Completions answer: for a turn (tools offered), a call of the shell tool
    the agent offers (Qwen Code's `run_shell_command`, opencode's `bash`); else `ok`."""
    names = [t.get("function", {}).get("name") for t in request.get("tools") or []]
    call = None
    if names:
        name = "bash" if "bash" in names else "run_shell_command"
        args = {"command": COMMAND, "description": DESCRIPTION}
        call = {"index": 0, "id": "call_0", "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}
    usage = {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940}

    def chunk(delta, finish=None):
        return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1,
                "model": MODEL, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks.append(chunk({"tool_calls": [call]}) if call else chunk({"content": "ok"}))
    last = chunk({}, "tool_calls" if call else "stop")
    last["usage"] = usage
    chunks.append(last)
    if not request.get("stream"):
        message = {"role": "assistant", "content": "" if call else "ok"}
        if call:
            message["tool_calls"] = [call]
        body = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": MODEL,
                "choices": [{"index": 0, "message": message,
                             "finish_reason": last["choices"][0]["finish_reason"]}],
                "usage": usage}
        return "application/json", json.dumps(body).encode()
    return "text/event-stream", _sse(chunks, False) + b"data: [DONE]\n\n"


def responses_stream():
    """A Responses answer as its events: one function call of Codex's `exec_command`."""
    item = {"type": "function_call", "id": "fc_0", "call_id": "call_0", "name": "exec_command",
            "arguments": json.dumps({"cmd": COMMAND}), "status": "completed"}
    usage = {"input_tokens": 900, "input_tokens_details": {"cached_tokens": 100},
             "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 940}
    events = [{"type": "response.created", "response": {"id": "resp_0", "status": "in_progress"}},
              {"type": "response.output_item.added", "output_index": 0, "item": item},
              {"type": "response.output_item.done", "output_index": 0, "item": item},
              {"type": "response.completed", "response": {"id": "resp_0", "status": "completed",
                                                          "output": [item], "usage": usage}}]
    return "text/event-stream", _sse(events, True)


def models_list():
    return "application/json", json.dumps({"object": "list",
                                           "data": [{"id": MODEL, "object": "model"}]}).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self._answer(*models_list())

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"null") or {}
        except ValueError:
            request = {}
        path = self.path.split("?")[0]
        with self.server.lock:
            self.server.counts[path] = self.server.counts.get(path, 0) + 1
        if ":streamGenerateContent" in self.path:
            self._answer(*gemini_stream())
        elif ":generateContent" in self.path:
            self._answer(*gemini_classifier())
        elif self.path.endswith("/chat/completions"):
            self._answer(*chat_completion(request))
        elif self.path.endswith("/responses"):
            self._answer(*responses_stream())
        else:
            self._answer(*models_list())

    def _answer(self, content_type, body):
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True


class FakeLlm:
    """The server, serving on a thread of this process until `stop`."""

    def __init__(self):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.counts = {}
        self.server.lock = threading.Lock()
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def requests_seen(self):
        """How many requests each path got, for a message when an agent never asks."""
        return dict(self.server.counts)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
