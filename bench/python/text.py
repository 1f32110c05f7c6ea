# Text processing: tokenizing, regular expressions, string building and a
# JSON round trip of the result, the work of log and config processing.
import json
import re

words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
lines = []
x = 7
for i in range(40000):
    x = (x * 48271) % 2147483647
    lines.append("%s=%d; %s:%s [%d]" % (words[x % 8], x % 1000, words[(x >> 3) % 8], words[(x >> 6) % 8], i))
text = "\n".join(lines)
for round in range(6):
    pairs = re.findall(r"(\w+)=(\d+)", text)
    counts = {}
    for k, v in pairs:
        counts[k] = counts.get(k, 0) + int(v)
    tags = re.sub(r"\[(\d+)\]", lambda m: "#" + m.group(1)[::-1], text)
    upper = sum(1 for w in text.split() if w.upper() != w)
    doc = json.loads(json.dumps({"counts": counts, "lines": lines, "n": len(tags)}))
print(len(pairs), sorted(doc["counts"].items())[:3], doc["n"], upper)
