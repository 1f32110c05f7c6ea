# objects, strings, dicts, recursion: the shape of ordinary Python programs
import json, re
class Node:
    def __init__(self, k, l=None, r=None): self.k, self.l, self.r = k, l, r
def insert(n, k):
    if n is None: return Node(k)
    if k < n.k: n.l = insert(n.l, k)
    else: n.r = insert(n.r, k)
    return n
def walk(n, out):
    if n: walk(n.l, out); out.append(n.k); walk(n.r, out)
def fib(n): return n if n < 2 else fib(n-1) + fib(n-2)
root = None
x = 12345
for i in range(100000):
    x = (x * 1103515245 + 12345) % 2**31
    root = insert(root, x)
out = []; walk(root, out)
words = {}
for i in range(300000):
    w = "w%d" % (i % 997)
    words[w] = words.get(w, 0) + 1
s = json.dumps({"words": words, "n": len(out)})
d = json.loads(s)
m = len(re.findall(r"w(\d+)", " ".join(words)))
print(len(out), fib(25), d["n"], m)
