# Function and method calls, closures, generators and exceptions: the
# interpreter's own overheads, with little work per call.
class Vec:
    __slots__ = ("x", "y")
    def __init__(self, x, y): self.x, self.y = x, y
    def add(self, o): return Vec(self.x + o.x, self.y + o.y)
    def dot(self, o): return self.x * o.x + self.y * o.y

def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)

def counter():
    n = 0
    def step(k):
        nonlocal n
        n += k
        return n
    return step

def gen(n):
    for i in range(n):
        yield i * i

acc = Vec(0, 0)
for i in range(400000):
    acc = acc.add(Vec(i, -i))
step = counter()
for i in range(400000):
    step(i)
caught = 0
for i in range(100000):
    try:
        if i % 3 == 0:
            raise ValueError(i)
    except ValueError:
        caught += 1
print(fib(30), acc.dot(Vec(1, 1)), step(0), sum(gen(300000)), caught)
