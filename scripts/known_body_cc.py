#!/usr/bin/env python3
"""C++ for the known bodies that the VM runs by translation (vm/known_bodies.def).

  python3 scripts/known_body_cc.py --out FILE --blocks FILE2
                                              writes the C++ (the build does, into
                                              BUILD/generated/vm/known_bodies_native.inc,
                                              which vm/interp.cc includes) and the
                                              blocks it counts (known_bodies_blocks.inc,
                                              for vm/lower/function_compiler.cc)
  python3 scripts/known_body_cc.py --row A.wasm B.wasm FUNC
                                              prints FUNC's row for the .def: its
                                              code entry in A, with a hole where
                                              B's differs (see below)

Some rows of vm/known_bodies.def name a kind listed in TRANSLATED below: their
ops run a C++ function written here from the row's own bytes, one statement per
wasm instruction, so the function computes exactly what the body computes: the
same locals, the same loads and stores at the same addresses in the same order,
the same branches. What it cannot do natively (a call, `unreachable`, an access
outside memory 0, more loop iterations than a budget) makes it put back every
byte and global it wrote (an undo log, KnownTxn in vm/interp.cc) and answer
false, and the op lets the body run from its start as written, so a trap or a
call happens where it always did.

Holes: a row's `{G+k}` (an i32.const) and `{g+k}` (a memory access's offset)
are the immediates G + k, G the same in all of the row's holes and kept with
the match (an allocator's state, at a different address in every program);
`{H}` is an i32.const of any value, the same in all of the row's `{H}`s and
kept too (a second address: wasi-libc's __heap_base). `{e}` is a memory
access's offset of any value (errno's address, which only failure paths
store to): the translation gives such an access back to the body. --row
makes them from programs built against the same library (two or more): where
their immediates differ, a call's is `{f}`, one that is G + k in all of them
a G hole, an i32.const of one value per program `{H}`, any other offset
`{e}`; G of each program is its dlfree's first access's offset less the
--base-offset (default 16: that access reads least_addr, 16 bytes into the
allocator's state).
`{f}` is a function index (the translated function never calls: the body
does).
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEF = os.path.join(ROOT, 'vm', 'known_bodies.def')

# kind -> (C++ function name, i32 parameters, result type or None). The
# allocator's run in plain and counted code; the string functions' only in
# counted code (plain code has faster ones by hand, vm/interp.cc).
TRANSLATED = {
    'LibcDlfree': ('known_dlfree', 1, None),
    'LibcDlmalloc': ('known_dlmalloc', 1, 'i32'),
    'LibcMemcpy': ('known_memcpy', 3, 'i32'),
    'LibcMemset': ('known_memset', 3, 'i32'),
    'LibcMemcmp': ('known_memcmp', 3, 'i32'),
    'LibcStrlen': ('known_strlen', 1, 'i32'),
}

# ---- decoding


def leb(b, i, signed_bits=0):
    """The LEB128 at b[i]: (value, index past it); signed_bits > 0 reads a
    signed one and gives its two's complement in that many bits."""
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7f) << s
        s += 7
        if not x & 0x80:
            if signed_bits and x & 0x40:
                r -= 1 << s
            return (r & ((1 << signed_bits) - 1) if signed_bits else r), i


def uleb(b, i):
    return leb(b, i)


def sleb(b, i, bits):
    return leb(b, i, bits)


MEM = {  # opcode: (name, bytes, signed, value type); loads then stores
    0x28: ('load', 4, False, 'i32'), 0x29: ('load', 8, False, 'i64'),
    0x2c: ('load', 1, True, 'i32'), 0x2d: ('load', 1, False, 'i32'),
    0x2e: ('load', 2, True, 'i32'), 0x2f: ('load', 2, False, 'i32'),
    0x36: ('store', 4, False, 'i32'), 0x37: ('store', 8, False, 'i64'),
    0x3a: ('store', 1, False, 'i32'), 0x3b: ('store', 2, False, 'i32'),
}
# i32 operators: what replaces the operand(s) a (and b) on the stack
S = 'static_cast<int32_t>'
I32_BINARY = {
    0x46: '{a} == {b}', 0x47: '{a} != {b}',
    0x48: S + '({a}) < ' + S + '({b})', 0x49: '{a} < {b}',
    0x4a: S + '({a}) > ' + S + '({b})', 0x4b: '{a} > {b}',
    0x4c: S + '({a}) <= ' + S + '({b})', 0x4d: '{a} <= {b}',
    0x4e: S + '({a}) >= ' + S + '({b})', 0x4f: '{a} >= {b}',
    0x6a: '{a} + {b}', 0x6b: '{a} - {b}', 0x6c: '{a} * {b}',
    0x71: '{a} & {b}', 0x72: '{a} | {b}', 0x73: '{a} ^ {b}',
    0x74: '{a} << ({b} & 31)', 0x76: '{a} >> ({b} & 31)',
    0x75: 'static_cast<uint32_t>(' + S + '({a}) >> ({b} & 31))',
    0x77: 'std::rotl({a}, static_cast<int>({b} & 31))',
    0x78: 'std::rotr({a}, static_cast<int>({b} & 31))',
}
I32_UNARY = {
    0x45: '{a} == 0',
    0x67: 'static_cast<uint32_t>(std::countl_zero({a}))',
    0x68: 'static_cast<uint32_t>(std::countr_zero({a}))',
}
# operators on or to i64: (operand types, result type, C++)
TYPED = {
    0xad: (('i32',), 'i64', 'uint64_t{{{a}}}'),  # i64.extend_i32_u
    0x7e: (('i64', 'i64'), 'i64', '{a} * {b}'),  # i64.mul
}


def decode(code):
    """The code entry `code` (locals, then instructions): (locals as a list of
    types, [(offset, opcode, immediates...)]). Offsets are into `code`."""
    n, i = uleb(code, 0)
    locals_ = []
    for _ in range(n):
        c, i = uleb(code, i)
        t = code[i]
        i += 1
        locals_ += [{0x7f: 'i32', 0x7e: 'i64'}[t]] * c
    out = []
    while i < len(code):
        at, op = i, code[i]
        i += 1
        if op in (0x02, 0x03, 0x04):
            bt = code[i]
            i += 1
            if bt not in (0x40, 0x7f, 0x7e):
                raise SystemExit('block type %#x at %d' % (bt, at))
            out.append((at, op, {0x40: None, 0x7f: 'i32', 0x7e: 'i64'}[bt]))
        elif op in (0x0c, 0x0d, 0x20, 0x21, 0x22, 0x23, 0x24, 0x10):
            v, i = uleb(code, i)
            out.append((at, op, v))
        elif op == 0x0e:  # br_table: its targets, the default last
            n, i = uleb(code, i)
            targets = []
            for _ in range(n + 1):
                v, i = uleb(code, i)
                targets.append(v)
            out.append((at, op, targets))
        elif op == 0x41:
            v, i = sleb(code, i, 32)
            out.append((at, op, v))
        elif op == 0x42:
            v, i = sleb(code, i, 64)
            out.append((at, op, v))
        elif op in MEM:
            align, i = uleb(code, i)
            off_at = i
            off, i = uleb(code, i)
            out.append((at, op, off, off_at))
        else:
            out.append((at, op))
    return locals_, out


# ---- rows with holes


def row_tokens(hexrow):
    """A row's hex as its code entry's bytes, holes replaced by placeholder
    immediates, and {byte offset: hole text} for them."""
    b = bytearray()
    holes = {}
    for m in re.finditer(r'\{([^}]*)\}|([0-9a-f]{2})', hexrow):
        if m.group(1) is not None:
            holes[len(b)] = m.group(1)
            b.append(0)  # a one-byte LEB 0 stands in for the hole
        else:
            b.append(int(m.group(2), 16))
    return bytes(b), holes


def def_rows():
    text = open(DEF).read()
    rows = {}
    for m in re.finditer(r'WZVM_KNOWN_BODY\((\w+),\s*"([^"]*)",((?:\s*"[^"]*")+)\)', text):
        rows.setdefault(m.group(1), []).append(''.join(re.findall(r'"([^"]*)"', m.group(3))))
    return rows


# ---- translation


STRUCTURE = (0x02, 0x03, 0x05, 0x0b)  # block, loop, else, end: not instructions that run


def translate(kind, hexrow):
    """The C++ of the row's body and its blocks: [first, last] instruction
    indices (into the body's instructions, structure included) of each
    straight line the function counts with `count(j)` as it enters it."""
    fname, nparams, result = TRANSLATED[kind]
    code, holes = row_tokens(hexrow)
    locals_, ins = decode(code)
    # every local an i32 or i64 variable; params first
    lines = []
    emit = lines.append
    ctype = {'i32': 'uint32_t', 'i64': 'uint64_t'}
    decl = ['uint32_t l%d = p%d;' % (k, k) for k in range(nparams)]
    for k, t in enumerate(locals_, start=nparams):
        decl.append('%s l%d = 0;' % (ctype[t], k))
    ltype = ['i32'] * nparams + locals_
    stack = []  # types of the values on the wasm stack; value at depth d is s<type><d>
    maxdepth = {'i32': 0, 'i64': 0}
    ctrls = []  # (kind, label, stack height, result type)
    label_no = [0]
    dead = [False]
    # Counting: a block starts at the first instruction that runs after a
    # label or a br_if (where control may arrive from elsewhere, or leave).
    blocks = []
    new_block = [True]

    def label(name):
        emit('%s:;' % name)
        new_block[0] = True

    def push(t):
        stack.append(t)
        d = len(stack) - 1
        maxdepth[t] = max(maxdepth[t], d + 1)
        return 's%s_%d' % (t[1:], d)

    def top(k=0):
        d = len(stack) - 1 - k
        return 's%s_%d' % (stack[d][1:], d)

    def pop():
        v = top()
        stack.pop()
        return v

    def imm(at_byte, value, signed_const):
        """The immediate at code byte `at_byte`: its C++ expression."""
        h = holes.get(at_byte)
        if h is None:
            return '%du' % value if value < 2**31 else '%#xu' % value
        m = re.fullmatch(r'([Gg])\+(\d+)', h)
        if m:
            return '(G + %su)' % m.group(2)
        if h == 'H':
            return 'H'
        if h == 'e':
            return None
        raise SystemExit('%s: hole {%s} in an instruction the translation needs' % (kind, h))

    def branch(depth):
        kind_, label_, height, rtype = ctrls[-1 - depth]
        if kind_ == 'loop':
            emit('if (__builtin_expect(!t.tick(), 0)) return t.fail();')
            emit('goto %s;' % label_)
            return
        if kind_ == 'body':
            emit(ret_stmt())
            return
        if rtype is not None:
            emit('s%s_%d = %s;' % (rtype[1:], height, top()))
        emit('goto %s;' % label_)

    def ret_stmt():
        if result is None:
            return 'return t.done();'
        return 'return t.done(%s);' % top()

    ctrls.append(('body', None, 0, result))
    for n, inst in enumerate(ins):
        at, op = inst[0], inst[1]
        if dead[0]:
            # unreachable code up to the end (or else) of the innermost block
            if op in (0x02, 0x03, 0x04):
                ctrls.append(('dead', None, len(stack), None))
                continue
            if op != 0x0b:
                continue
            if ctrls[-1][0] == 'dead':
                ctrls.pop()
                continue
            dead[0] = False
            kind_, label_, height, rtype = ctrls.pop()
            del stack[height:]
            if rtype is not None:
                push(rtype)
            if kind_ == 'block':
                label(label_)
            if kind_ == 'body':
                break
            continue
        if op not in STRUCTURE:
            if new_block[0]:
                emit('count(%d);' % len(blocks))
                blocks.append([n, n])
                new_block[0] = False
            blocks[-1][1] = n
        if op == 0x02 or op == 0x03:  # block, loop
            label_no[0] += 1
            name = 'L%d' % label_no[0]
            ctrls.append(('block' if op == 0x02 else 'loop', name, len(stack), inst[2]))
            if op == 0x03:
                label(name)
        elif op == 0x0b:  # end
            kind_, label_, height, rtype = ctrls.pop()
            if kind_ == 'body':
                emit(ret_stmt())
                break
            if rtype is not None:
                v = pop()
                if v != 's%s_%d' % (rtype[1:], height):
                    emit('s%s_%d = %s;' % (rtype[1:], height, v))
                del stack[height:]
                push(rtype)
            if kind_ == 'block':
                label(label_)
        elif op == 0x0c:  # br
            branch(inst[2])
            dead[0] = True
        elif op == 0x0d:  # br_if
            c = pop()
            emit('if (%s) {' % c)
            branch(inst[2])
            emit('}')
            new_block[0] = True
        elif op == 0x0e:  # br_table
            c = pop()
            emit('switch (%s) {' % c)
            for k, depth in enumerate(inst[2]):
                emit('case %du:' % k if k + 1 < len(inst[2]) else 'default:')
                branch(depth)
            emit('}')
            dead[0] = True
        elif op == 0x0f:  # return
            emit(ret_stmt())
            dead[0] = True
        elif op == 0x00 or op == 0x10:  # unreachable, call: the body's to do
            emit('return t.fail();')
            dead[0] = True
        elif op == 0x1a:  # drop
            pop()
        elif op == 0x1b:  # select
            c = pop()
            b = pop()
            a = top()
            emit('if (!%s) %s = %s;' % (c, a, b))
        elif op == 0x20:  # local.get
            v = push(ltype[inst[2]])
            emit('%s = l%d;' % (v, inst[2]))
        elif op == 0x21:
            emit('l%d = %s;' % (inst[2], pop()))
        elif op == 0x22:
            emit('l%d = %s;' % (inst[2], top()))
        elif op == 0x23:  # global.get (global 0: the stack pointer)
            if inst[2] != 0:
                raise SystemExit('%s: global %d' % (kind, inst[2]))
            v = push('i32')
            emit('%s = t.global0();' % v)
        elif op == 0x24:
            if inst[2] != 0:
                raise SystemExit('%s: global %d' % (kind, inst[2]))
            emit('t.set_global0(%s);' % pop())
        elif op == 0x41:
            v = push('i32')
            emit('%s = %s;' % (v, imm(at + 1, inst[2], True)))
        elif op == 0x42:
            if (at + 1) in holes:
                raise SystemExit('%s: hole in an i64.const' % kind)
            v = push('i64')
            emit('%s = %#xull;' % (v, inst[2]))
        elif op in MEM:
            what, size, signed, vt = MEM[op]
            off = imm(inst[3], inst[2], False)
            if off is None:  # {e}: an address this translation does not know
                emit('return t.fail();')
                stack.pop()
                if what == 'load':
                    push(vt)
                else:
                    stack.pop()
                continue
            if what == 'load':
                a = pop()
                v = push(vt)
                ct = {1: 'int8_t' if signed else 'uint8_t', 2: 'int16_t' if signed else 'uint16_t',
                      4: 'uint32_t', 8: 'uint64_t'}[size]
                emit('if (!t.template load<%s>(uint64_t{%s} + %s, %s)) return t.fail();' % (ct, a, off, v))
            else:
                val = pop()
                a = pop()
                ct = {1: 'uint8_t', 2: 'uint16_t', 4: 'uint32_t', 8: 'uint64_t'}[size]
                emit('if (!t.template store<%s>(uint64_t{%s} + %s, static_cast<%s>(%s))) return t.fail();' %
                     (ct, a, off, ct, val))
        elif op in I32_UNARY:
            a = top()
            emit('%s = %s;' % (a, I32_UNARY[op].format(a=a)))
        elif op in I32_BINARY:
            b = pop()
            a = top()
            emit('%s = %s;' % (a, I32_BINARY[op].format(a=a, b=b)))
        elif op in TYPED:
            args, rtype, fmt = TYPED[op]
            vals = [pop() for _ in args][::-1]
            if [v[1:3] for v in vals] != [t_[1:] for t_ in args]:
                raise SystemExit('%s: opcode %#x at byte %d: operand types' % (kind, op, at))
            v = push(rtype)
            emit('%s = %s;' % (v, fmt.format(**dict(zip('ab', vals)))))
        else:
            raise SystemExit('%s: opcode %#x at byte %d has no translation' % (kind, op, at))
    params = ''.join(', uint32_t p%d' % k for k in range(nparams))
    head = ['// %s (vm/known_bodies.def, %s): the body as C++, one statement per' % (fname, kind),
            '// instruction (scripts/known_body_cc.py); count(j) on entering block j',
            '// (%s_blocks).' % fname,
            'template <class Txn, class Count>',
            'inline bool %s(Txn& t, [[maybe_unused]] uint32_t G, [[maybe_unused]] uint32_t H%s,' % (fname, params),
            '               [[maybe_unused]] Count count) {']
    body = ['  ' + d for d in decl]
    text = '\n'.join(lines)
    for t_ in ('i32', 'i64'):
        names = ['s%s_%d' % (t_[1:], d) for d in range(maxdepth[t_])
                 if re.search(r'\bs%s_%d\b' % (t_[1:], d), text)]
        if names:
            body.append('  %s %s;' % (ctype[t_], ', '.join(n + ' = 0' for n in names)))
    used = set(re.findall(r'goto (L\d+);', text))
    lines = [l for l in lines if not re.fullmatch(r'L\d+:;', l) or l[:-2] in used]
    body += ['  ' + l for l in lines]
    table = ['// %s\'s blocks (count(j)): the first and last instruction of each, by' % fname,
             '// index into the body\'s instructions, block structure included.',
             'inline constexpr uint32_t %s_blocks[][2] = {' % fname]
    for k in range(0, len(blocks), 8):
        table.append('    ' + ' '.join('{%d, %d},' % (x, y) for x, y in blocks[k:k + 8]))
    table.append('};')
    return '\n'.join(head + body + ['}', '']), '\n'.join(table + [''])


def generate():
    """The functions (for vm/interp.cc) and their blocks (for lowering)."""
    rows = def_rows()
    funcs = ['// Written by scripts/known_body_cc.py from vm/known_bodies.def at build time.',
             '// Each function runs one known body natively in a Txn of vm/interp.cc',
             '// (KnownTxn, an undo log, or KnownDirect): true when it ran the body to',
             '// its return (the result in t.result), false with every write put back',
             '// where the body must run. Count is called with a block\'s index as the',
             '// run enters it (counted code: the body\'s counters, vm/lower/instrument.cc).',
             '']
    tables = ['// Written by scripts/known_body_cc.py from vm/known_bodies.def at build time:',
              '// the blocks of the functions in known_bodies_native.inc.', '']
    cases = []
    for kind in TRANSLATED:
        if kind not in rows or len(rows[kind]) != 1:
            raise SystemExit('known_body_cc.py: vm/known_bodies.def needs exactly one %s row' % kind)
        f, t = translate(kind, rows[kind][0])
        funcs.append(f)
        tables.append(t)
        cases.append('    case KnownBody::%s:\n      return %s_blocks;' % (kind, TRANSLATED[kind][0]))
    tables += ['// The blocks of the translated body of `kind`; none for any other kind.',
               'inline std::span<const uint32_t[2]> known_body_blocks(KnownBody kind) {',
               '  switch (kind) {'] + cases + ['    default:', '      return {};', '  }', '}', '']
    return '\n'.join(funcs), '\n'.join(tables)


def write(path, text):
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        f.write(text)
    os.replace(tmp, path)  # whole or not at all


def make_row(paths, func, base_offset):
    """FUNC's row from its bodies in `paths` (built against one library): the
    first's bytes, with a hole wherever another's immediate differs."""
    bodies = [body_of(p, func) for p in paths]
    decoded = [decode(b) for b in bodies]
    a = bodies[0]
    la, ia = decoded[0]
    for lb, ib in decoded[1:]:
        if la != lb or len(ia) != len(ib) or any(x[1] != y[1] for x, y in zip(ia, ib)):
            raise SystemExit('the bodies differ in shape')

    # G of each program: the offset of dlfree's first memory access with one
    # (least_addr, base_offset bytes into the allocator's state)
    def state_of(path):
        return next(x[2] for x in decode(body_of(path, 'dlfree'))[1] if x[1] in MEM and x[2]) - base_offset
    G = [state_of(p) for p in paths]
    H = [None] * len(paths)
    repl = {}
    for n, x in enumerate(ia):
        values = [d[1][n][2] for d in decoded] if len(x) > 2 else None
        if values is None or all(v == values[0] for v in values):
            continue
        if x[1] == 0x10:
            start = x[0] + 1
            repl[start] = (uleb(a, start)[1], '{f}')
            continue
        start = x[0] + 1 if x[1] == 0x41 else x[3]
        end = uleb(a, start)[1]  # a signed LEB's length is found alike
        ks = [v - g for v, g in zip(values, G)]
        if all(k == ks[0] for k in ks):
            repl[start] = (end, '{%s+%d}' % ('G' if x[1] == 0x41 else 'g', ks[0]))
        elif x[1] == 0x41 and all(h is None or h == v for h, v in zip(H, values)):
            H = values  # a second address (wasi-libc's __heap_base)
            repl[start] = (end, '{H}')
        elif x[1] in MEM:
            # an address of its own in each program (errno): the translation
            # gives such an access back to the body
            repl[start] = (end, '{e}')
        else:
            raise SystemExit('an immediate at %d differs in a way no hole covers' % x[0])
    i = 0
    hx = ''
    while i < len(a):
        if i in repl:
            end, h = repl[i]
            hx += h
            i = end
        else:
            hx += '%02x' % a[i]
            i += 1
    return hx


def body_of(path, name):
    b = open(path, 'rb').read()
    i = 8
    names = {}
    nimp = 0
    codes = []
    while i < len(b):
        sid = b[i]
        size, i = uleb(b, i + 1)
        end = i + size
        if sid == 2:
            n, j = uleb(b, i)
            for _ in range(n):
                for _ in range(2):
                    ln, j = uleb(b, j)
                    j += ln
                k = b[j]
                j += 1
                if k == 0:
                    _, j = uleb(b, j)
                    nimp += 1
                elif k == 1:
                    j += 1
                    f, j = uleb(b, j)
                    _, j = uleb(b, j)
                    if f & 1:
                        _, j = uleb(b, j)
                elif k == 2:
                    f, j = uleb(b, j)
                    _, j = uleb(b, j)
                    if f & 1:
                        _, j = uleb(b, j)
                elif k == 3:
                    j += 2
                elif k == 4:
                    j += 1
                    _, j = uleb(b, j)
        elif sid == 10:
            n, j = uleb(b, i)
            for _ in range(n):
                sz, j = uleb(b, j)
                codes.append(b[j:j + sz])
                j += sz
        elif sid == 0:
            ln, j = uleb(b, i)
            if b[j:j + ln] == b'name':
                j += ln
                while j < end:
                    sub = b[j]
                    ssz, j = uleb(b, j + 1)
                    if sub == 1:
                        n, k = uleb(b, j)
                        for _ in range(n):
                            idx, k = uleb(b, k)
                            ln2, k = uleb(b, k)
                            names[b[k:k + ln2].decode()] = idx
                            k += ln2
                    j += ssz
        i = end
    return codes[names[name] - nimp]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--out')
    ap.add_argument('--blocks')
    ap.add_argument('--row', nargs='+', metavar='A.wasm B.wasm ... FUNC')
    ap.add_argument('--base-offset', type=int, default=16)
    args = ap.parse_args()
    if args.row:
        if len(args.row) < 3:
            ap.error('--row needs two programs or more and a function')
        print(make_row(args.row[:-1], args.row[-1], args.base_offset))
        return
    if not args.out or not args.blocks:
        ap.error('--out FILE --blocks FILE, or --row A B FUNC')
    funcs, tables = generate()
    write(args.out, funcs)
    write(args.blocks, tables)


if __name__ == '__main__':
    main()
