#!/usr/bin/env python3
"""Compares tests/schemas/*-request.json (our transcriptions) with the providers' published sources.

  tools/check-request-schemas.py OPENAPI_YAML [SDK_MESSAGE_CREATE_PARAMS_PY]

OPENAPI_YAML: openapi.yaml of github.com/openai/openai-openapi. Every property our OpenAI schema lists
must be a property of CreateChatCompletionRequest (with CreateModelResponseProperties), with the same
type, nullability and range, and our required list must be the spec's.
SDK_MESSAGE_CREATE_PARAMS_PY: src/anthropic/types/message_create_params.py of
github.com/anthropics/anthropic-sdk-python. Every property our Anthropic schema lists must be a
parameter of MessageCreateParams, and our required list must be the SDK's Required[...] ones.
Prints what differs and exits 1 if anything does. Needs PyYAML. Not run by CI (no network there):
run it when the spec or the SDK changes, or when the client starts to send another field.
"""
import json
import os
import re
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
problems = []


def ours(name):
    return json.load(open(os.path.join(root, "tests", "schemas", name)))


def openai(path):
    import yaml

    S = yaml.safe_load(open(path))["components"]["schemas"]
    props, required = {}, []

    def collect(s):
        if "$ref" in s:
            collect(S[s["$ref"].split("/")[-1]])
            return
        for part in s.get("allOf", []):
            collect(part)
        props.update(s.get("properties", {}))
        required.extend(s.get("required", []))

    collect(S["CreateChatCompletionRequest"])
    mine = ours("openai-chat-completions-request.json")
    if sorted(mine["required"]) != sorted(required):
        problems.append("openai: required %s, the spec %s" % (mine["required"], required))

    def deref(s):
        while "$ref" in s:
            s = S[s["$ref"].split("/")[-1]]
        return s

    def shape(s):
        """(types, minimum, maximum) of a spec or our schema, nullable folded into the types."""
        s = deref(s)
        types, lo, hi = set(), None, None
        for alt in s.get("anyOf", s.get("oneOf", [s])):
            alt = deref(alt)
            t = alt.get("type")
            if isinstance(t, list):
                types.update(t)
            elif t:
                types.add(t)
            if alt.get("nullable"):
                types.add("null")
            lo = alt.get("minimum", lo)
            hi = alt.get("maximum", hi)
        if s.get("nullable"):
            types.add("null")
        return types, lo, hi

    for name, mine_p in mine["properties"].items():
        if name not in props:
            problems.append("openai: '%s' is not a property of CreateChatCompletionRequest" % name)
            continue
        if name in ("messages", "model"):
            continue  # checked by hand: see the $comment of the schema
        a, b = shape(mine_p), shape(props[name])
        if a != b:
            problems.append("openai: '%s' is %s here, %s in the spec" % (name, a, b))
    print("openai: %d properties compared with the spec (%d in it)" % (len(mine["properties"]), len(props)))


def anthropic(path):
    text = open(path).read()
    base = text[text.index("class MessageCreateParamsBase") : text.index("class MessageCreateParamsNonStreaming")]
    params = dict(re.findall(r"^    (\w+): (.+)$", base, re.M))
    params["stream"] = "Literal[True/False]"
    required = [k for k, v in params.items() if v.startswith("Required[")]
    mine = ours("anthropic-messages-request.json")
    if sorted(mine["required"]) != sorted(required):
        problems.append("anthropic: required %s, the SDK %s" % (mine["required"], required))
    for name in mine["properties"]:
        if name not in params:
            problems.append("anthropic: '%s' is not a parameter of MessageCreateParams" % name)
    print("anthropic: %d properties compared with the SDK (%d in it)" % (len(mine["properties"]), len(params)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    openai(sys.argv[1])
    if len(sys.argv) > 2:
        anthropic(sys.argv[2])
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)
