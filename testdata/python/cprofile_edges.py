# Runs a script under cProfile (natively, with the host's python3.11) and
# prints who calls whom among Python functions on stderr, one
# "direct|via caller -> callee share" per line, each function as
# file-basename:first-line (spaces made _), `share` the callee's cumulative time under that
# caller over the whole run's. "direct": a Python function called another;
# "via": through built-in functions (sum, sorted, ...), which a merged wzvm
# stack shows as C frames between the two. cProfile keeps one entry per
# built-in for all its callers, so "via" edges are a superset of the real
# ones. tests/python_profile_test.cc compares these with wzvm's stacks.
import cProfile
import os
import pstats
import runpy
import sys

script = sys.argv[1]
profile = cProfile.Profile()
profile.enable()
runpy.run_path(script, run_name="__main__")
profile.disable()
stats = pstats.Stats(profile).stats


def key(f):
    file, line, name = f
    # "<frozen importlib._bootstrap>": no spaces, so a line splits on them.
    return None if file == "~" else "%s:%d" % (os.path.basename(file).replace(" ", "_"), line)


callers = {}  # callee -> its callers
for callee, (_, _, _, _, who) in stats.items():
    callers.setdefault(callee, set()).update(who)


def python_callers(f, seen):
    for c in callers.get(f, ()):
        if key(c) is not None:
            yield c
        elif c not in seen:
            seen.add(c)
            yield from python_callers(c, seen)


total = sum(tt for (_, _, tt, _, _) in stats.values())
edges = {}
for callee in stats:
    if key(callee) is None:
        continue
    for c, (_, _, _, ct) in stats[callee][4].items():
        if key(c) is not None:
            e = "direct %s -> %s" % (key(c), key(callee))
            edges[e] = max(edges.get(e, 0), ct / total)
    for c in python_callers(callee, set()):
        e = "%s -> %s" % (key(c), key(callee))
        if "direct " + e not in edges:
            edges["via " + e] = 0
sys.stdout.flush()
print("\n".join("%s %.4f" % (e, share) for e, share in sorted(edges.items())), file=sys.stderr)
