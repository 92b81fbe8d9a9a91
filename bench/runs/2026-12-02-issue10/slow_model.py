#!/usr/bin/env python3
"""A slow scripted model on loopback, for measuring overlap (not for kernel quality).

Speaks OpenAI chat completions (POST .../chat/completions). Every reply takes LATENCY seconds and carries
the problem's reference kernel with its launch plan, made unique by a comment that numbers the reply, so
each reply is a new, correct, slow candidate. The start-up check ("Reply with the single word: ok") is
answered at once. Usage: slow_model.py PORT LATENCY PROBLEM_DIR
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, latency, problem_dir = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
problem = json.load(open(f"{problem_dir}/problem.json"))
ref = problem["reference"]
if isinstance(ref, str):  # a host problem: the seed kernel (the reference is not written to the ABI)
    source, plan = open(f"{problem_dir}/{problem.get('seed', 'seed.cpp')}").read(), None
else:
    source, plan = open(f"{problem_dir}/{ref['source']}").read(), json.dumps(ref["launch"])
lock = threading.Lock()
count = 0


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        global count
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        prompt = "".join(m.get("content", "") for m in body.get("messages", []) if isinstance(m.get("content"), str))
        if "Reply with the single word" in prompt:
            text = "ok"
        else:
            time.sleep(latency)
            with lock:
                count += 1
                n = count
            text = f"The reference kernel, reply {n}.\n\n```cpp\n// reply {n}\n{source}```\n"
            if plan:
                text += f"\n```json\n{plan}\n```\n"
        reply = {
            "id": "slow",
            "object": "chat.completion",
            "model": "slow-scripted",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
