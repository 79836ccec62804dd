"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (for Hermes tests).

Each user turn gets one tool call (the ``todo`` tool, which runs offline), then a text
reply once the tool's result is in. A request whose system prompt is tinyjuice's summary
prompt gets a handoff summary. ``usage.prompt_tokens`` grows with the request's text
(``tokens_per_char`` tokens a character) so the conversation crosses the threshold the
test picks; it drops again after a compaction shortened the list.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SUMMARY_MARK = "you write handoff summar"  # the start of tinyjuice's summary prompt


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


class Script:
    def __init__(self, tokens_per_char: float) -> None:
        self.tokens_per_char = tokens_per_char
        self.requests: list[dict[str, Any]] = []
        self.summaries = 0
        self.lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, int]]:
        messages = body.get("messages") or []
        chars = sum(len(_text(m.get("content"))) for m in messages)
        usage = {"prompt_tokens": int(chars * self.tokens_per_char), "completion_tokens": 20}
        usage["total_tokens"] = usage["prompt_tokens"] + 20
        with self.lock:
            self.requests.append({"n": len(messages), "prompt_tokens": usage["prompt_tokens"]})
            turn = len(self.requests)
        first = _text(messages[0].get("content")) if messages else ""
        if SUMMARY_MARK in first.lower():
            with self.lock:
                self.summaries += 1
            text = "## Goal\nKeep the release checklist moving.\n## Progress\nTodo items written."
            return {"role": "assistant", "content": text}, usage
        last = messages[-1] if messages else {}
        if last.get("role") == "user":
            call = {
                "id": f"call_{turn}",
                "type": "function",
                "function": {
                    "name": "todo",
                    "arguments": json.dumps(
                        {
                            "todos": [
                                {"id": str(turn), "content": f"step {turn}", "status": "pending"}
                            ]
                        }
                    ),
                },
            }
            return {"role": "assistant", "content": None, "tool_calls": [call]}, usage
        return {"role": "assistant", "content": f"Done with step {turn}. " + "ok " * 40}, usage


def _chunks(message: dict[str, Any], usage: dict[str, int], model: str) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model}
    delta: dict[str, Any] = {"role": "assistant"}
    if message.get("tool_calls"):
        delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(message["tool_calls"])]
        finish = "tool_calls"
    else:
        delta["content"] = message.get("content") or ""
        finish = "stop"
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": usage},
    ]


def make_handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _json(self, status: int, doc: Any) -> None:
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(
                    200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}
                )
            else:
                self._json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": "not found"}})
                return
            message, usage = script.reply(body)
            model = body.get("model") or "fake-model"
            if body.get("stream"):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in _chunks(message, usage, model):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                return
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            self._json(
                200,
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                },
            )

    return Handler


def serve(tokens_per_char: float) -> tuple[ThreadingHTTPServer, Script]:
    script = Script(tokens_per_char)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(script))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, script
