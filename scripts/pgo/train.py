# Training run for the interpreter's profile (scripts/pgo.sh): the mix of
# work a Python program makes its interpreter do (objects and attributes,
# dicts, calls of every kind, generators, exceptions, strings, regular
# expressions, JSON, sorting, big and small integers), each a little, so
# that the profile weighs the VM's handlers as real programs use them.
# Not a benchmark: bench/python/ holds those, and this file is kept apart
# from them so that the profile is not fitted to what is measured.
import json
import re


class Account:
    def __init__(self, name, balance):
        self.name = name
        self.balance = balance
        self.history = []

    def deposit(self, amount):
        self.balance += amount
        self.history.append(("in", amount))
        return self

    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError("insufficient funds: %s" % self.name)
        self.balance -= amount
        self.history.append(("out", amount))
        return self


class Point:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __add__(self, other):
        return Point(self.x + other.x, self.y + other.y)

    def norm1(self):
        return abs(self.x) + abs(self.y)


def ackermann(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def primes(limit):
    sieve = bytearray([1]) * (limit + 1)
    sieve[0:2] = b"\0\0"
    for i in range(2, int(limit**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytes(len(range(i * i, limit + 1, i)))
    return [i for i, on in enumerate(sieve) if on]


def walk(tree, depth=0):
    if isinstance(tree, dict):
        for key in sorted(tree):
            yield from walk(tree[key], depth + 1)
    elif isinstance(tree, list):
        for item in tree:
            yield from walk(item, depth + 1)
    else:
        yield depth, tree


def make_tree(seed, depth):
    if depth == 0:
        return seed % 97
    if seed % 3:
        return {"k%d" % i: make_tree(seed * 31 + i, depth - 1) for i in range(3)}
    return [make_tree(seed * 17 + i, depth - 1) for i in range(2)]


def main():
    accounts = [Account("acct%03d" % i, i * 10) for i in range(200)]
    refused = 0
    for step in range(20000):
        a = accounts[(step * 7) % len(accounts)]
        try:
            if step % 5 == 0:
                a.withdraw(step % 300)
            else:
                a.deposit(step % 50)
        except ValueError:
            refused += 1

    p = Point(0, 0)
    for i in range(30000):
        p = p + Point(i % 7 - 3, 3 - i % 5)
    total = sum(x.norm1() for x in [p, Point(-1, 2)])

    words = {}
    text = " ".join("w%d-%s" % (i % 113, "abcdefgh"[i % 8] * (i % 4 + 1)) for i in range(20000))
    for w in text.split():
        words[w] = words.get(w, 0) + 1
    matches = re.findall(r"w(\d+)-([a-h]+)", text)
    swapped = re.sub(r"(\d+)", lambda m: m.group(1)[::-1], text[:20000])
    upper = sum(1 for w in text.split() if w.upper() != w.lower())

    tree = make_tree(12345, 6)
    leaves = list(walk(tree))
    doc = json.loads(json.dumps({"tree": tree, "words": words}))

    ranked = sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    big = 1
    for i in range(1, 300):
        big = big * i + (big >> 7)
    floats = sum((i * 0.5) ** 0.5 for i in range(20000))
    print(refused, total, len(matches), len(swapped), upper, len(leaves), len(doc["words"]),
          ranked[0], big % 1000003, round(floats, 3), len(primes(50000)), ackermann(2, 60), fib(20))


main()
