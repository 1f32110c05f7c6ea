# Instruction counts by Python function and line (tests/python_profile_test.cc):
# the line numbers below are asserted there.
def leaf(n):
    total = 0
    for i in range(n):
        total += i
    return total


def twice():
    return leaf(3000) + leaf(3000)


def negate(x):
    return -x


def main():
    print(twice())
    print(sorted(range(500), key=negate)[0])


main()
