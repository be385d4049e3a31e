#!/usr/bin/env python3
"""Writes long-sessions.jsonl, the Grace-tier scenarios' trace (Agentic Mooncake format, 512-token blocks):
SESSIONS agent sessions, each TURNS turns over one 256K-token context. Turn 1 sends the whole context; each
later turn leaves DELAY_MS (a long tool call) after the previous answer and sends the same context plus GROWTH
new tokens, so its prompt is the previous prompt's blocks and a few new ones. Sessions start START_GAP_MS
apart: about 40 sessions are open at once, several times the ~5 contexts of 256K tokens each GPU's HBM holds
beside GLM-5's weights, so a turn's prefix has left HBM by its next turn and is found again only in Grace (or
recomputed). Run: python3 long_sessions.py > long-sessions.jsonl
"""
import json

SESSIONS, TURNS = 48, 3
CONTEXT, GROWTH, OUTPUT, BLOCK = 262144, 2048, 256, 512
DELAY_MS, START_GAP_MS = 300000, 8000

next_id = 0
for s in range(SESSIONS):
    ids = []
    tokens = 0
    for t in range(TURNS):
        tokens = CONTEXT if t == 0 else tokens + OUTPUT + GROWTH
        while len(ids) * BLOCK < tokens:
            ids.append(next_id)
            next_id += 1
        line = {"session_id": f"s{s}", "input_length": tokens, "output_length": OUTPUT, "hash_ids": ids[:]}
        if t == 0:
            line["timestamp"] = s * START_GAP_MS
        else:
            line["delay"] = DELAY_MS
        print(json.dumps(line, separators=(",", ":")))
