#!/usr/bin/env python3
"""A minimal ACP agent: initialize, session/new, then one prompt that writes a line of message,
asks permission for a tool call and waits for the answer for ever (until its stdin closes).
The benchmark runs it as a program named `gemini`, so that luzia drives it over ACP."""
import json
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    for line in sys.stdin:
        m = json.loads(line)
        method = m.get("method")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {
                "protocolVersion": 1, "agentCapabilities": {"loadSession": True},
                "agentInfo": {"name": "bench-agent", "version": "1"}}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "bench-session"}})
        elif method == "session/prompt":
            send({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": "bench-session",
                "update": {"sessionUpdate": "agent_message_chunk",
                           "content": {"type": "text", "text": "Working.\n"}}}})
            send({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {
                "sessionId": "bench-session",
                "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"},
                            {"optionId": "no", "name": "Reject", "kind": "reject_once"}],
                "toolCall": {"toolCallId": "c1", "title": "make test", "kind": "execute",
                             "status": "pending"}}})


if __name__ == "__main__":
    main()
