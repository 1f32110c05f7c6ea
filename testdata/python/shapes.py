# A Python program for the Python-level profiles (tests/python_profile_test.cc):
# recursion, a method, a generator, a closure, a comprehension, an exception
# caught, and C code calling back into Python (sorted's key=, json's
# default=). The tests name the lines below: keep them where they are.
import json


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


class Shape:
    def __init__(self, k):
        self.k = k

    def area(self):
        return sum(i * self.k for i in range(300))


def squares(n):
    for i in range(n):
        yield i * i


def make_counter():
    count = [0]

    def bump(x):
        count[0] += x
        return count[0]
    return bump


def sort_key(x):
    return (x * 7919) % 10007


def encode_default(obj):
    return [obj.k, obj.k * 2]


def risky(i):
    try:
        if i % 3 == 0:
            raise ValueError(i)
        return i
    except ValueError:
        return -i


def main():
    total = 0
    for _ in range(3):
        total += fib(17)
    shapes = [Shape(k) for k in range(150)]
    total += sum(s.area() for s in shapes)
    total += sum(squares(30000)) % 1000
    bump = make_counter()
    for i in range(20000):
        bump(i)
    data = sorted(range(20000), key=sort_key)
    total += data[0]
    text = json.dumps(shapes * 20, default=encode_default)
    total += len(text)
    total += sum(risky(i) for i in range(15000))
    print(total, flush=True)


main()
