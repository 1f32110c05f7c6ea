# CPython seeds its string hashing from random_get (unless PYTHONHASHSEED is
# set), so the slots a dict or set gives its keys, how many probes a lookup
# takes and the order a set iterates in change from run to run: so do the
# instruction counts. tests/deterministic_test.cc runs it with and without
# --deterministic.
import time

words = {"w%d" % (i * 7919 % 10007) for i in range(1000)}
table = {}
for w in words:
    table[w] = len(table)
hits = sum(1 for i in range(2000) if ("w%d" % i) in table)
start = time.monotonic()
time.sleep(0.05)
slept = time.monotonic() - start
order = 0
for w in words:  # set order follows the hashes
    order = (order * 31 + int(w[1:])) % 1000000007
print(len(words), hits, order, slept >= 0.05)
