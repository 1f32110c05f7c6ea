# Allocations at known lines, kept alive to the end (tests/python_profile_test.cc):
# wzvm's memory profile by Python line against tracemalloc's, natively.
import sys


def buffers(n):
    return [bytearray(8000) for _ in range(n)]


def texts(n):
    return ["%d" % i * 50 for i in range(n)]


class Node:
    def __init__(self, parent):
        self.parent = parent
        self.children = []


def tree(depth):
    root = Node(None)
    level = [root]
    for _ in range(depth):
        nxt = []
        for node in level:
            for _ in range(2):
                child = Node(node)
                node.children.append(child)
                nxt.append(child)
        level = nxt
    return root


kept = [buffers(1500), texts(20000), tree(12)]
if "--tracemalloc" in sys.argv:
    import tracemalloc
    snapshot = tracemalloc.take_snapshot()
    for stat in snapshot.statistics("lineno")[:6]:
        frame = stat.traceback[0]
        print("%s:%d %d" % (frame.filename.rsplit("/", 1)[-1], frame.lineno, stat.size))
print("kept", len(kept[0]), len(kept[1]))
