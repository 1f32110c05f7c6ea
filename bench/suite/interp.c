/* Branchy: a tiny language processor. (1) A recursive-descent parser reads
 * generated arithmetic expressions (+ - * / % parentheses, unary minus,
 * variables) and compiles them to stack bytecode; (2) a switch-dispatched
 * bytecode VM runs them, and runs a hand-assembled loop program (Collatz chain
 * lengths with a data-dependent branch per step). Size: thousands of
 * expressions (the number of Collatz runs scales with it). */
#include "common.h"

enum Op { PUSH, LOAD, STORE, ADD, SUB, MUL, DIV, MOD, NEG, JMP, JZ, JNZ, LT, DUP, ODD, HALF, INC, HALT };
typedef struct { uint8_t op; int32_t arg; } Ins;

/* ---- expression generator ---- */
static char *gen(char *o, uint32_t *seed, int depth) {
  uint32_t r = suite_rand(seed);
  if (depth <= 0 || r % 5 == 0) {
    if (r & 32) { *o++ = (char)('a' + (r >> 8) % 4); return o; }
    return o + sprintf(o, "%u", (r >> 8) % 1000);
  }
  switch ((r >> 3) % 7) {
    case 0: *o++ = '('; o = gen(o, seed, depth - 1); *o++ = ')'; return o;
    case 1: *o++ = '-'; return gen(o, seed, depth - 1);
    default: {
      static const char ops[] = "+-*/%+-";
      o = gen(o, seed, depth - 1);
      *o++ = ' ';
      *o++ = ops[(r >> 12) % 7];
      *o++ = ' ';
      return gen(o, seed, depth - 1);
    }
  }
}

/* ---- parser: expr := term {(+|-) term}; term := unary {(*|/|%) unary};
 *      unary := '-' unary | '(' expr ')' | number | variable ---- */
typedef struct { const char *p; Ins *code; int n; } Parser;

static void emit(Parser *ps, enum Op op, int32_t arg) { ps->code[ps->n].op = (uint8_t)op; ps->code[ps->n++].arg = arg; }
static void skip(Parser *ps) { while (*ps->p == ' ') ps->p++; }
static void expr(Parser *ps);

static void unary(Parser *ps) {
  skip(ps);
  char c = *ps->p;
  if (c == '-') { ps->p++; unary(ps); emit(ps, NEG, 0); }
  else if (c == '(') { ps->p++; expr(ps); skip(ps); if (*ps->p == ')') ps->p++; }
  else if (c >= 'a' && c <= 'z') { ps->p++; emit(ps, LOAD, c - 'a'); }
  else {
    int32_t v = 0;
    while (*ps->p >= '0' && *ps->p <= '9') v = v * 10 + (*ps->p++ - '0');
    emit(ps, PUSH, v);
  }
}

static void term(Parser *ps) {
  unary(ps);
  for (;;) {
    skip(ps);
    char c = *ps->p;
    if (c != '*' && c != '/' && c != '%') return;
    ps->p++;
    unary(ps);
    emit(ps, c == '*' ? MUL : c == '/' ? DIV : MOD, 0);
  }
}

static void expr(Parser *ps) {
  term(ps);
  for (;;) {
    skip(ps);
    char c = *ps->p;
    if (c != '+' && c != '-') return;
    ps->p++;
    term(ps);
    emit(ps, c == '+' ? ADD : SUB, 0);
  }
}

/* ---- VM. Division by zero yields 0 (the language's rule), so any generated
 * expression is defined; arithmetic wraps (done in uint32_t). ---- */
static int32_t run(const Ins *code, int32_t *vars) {
  int32_t st[256];
  int sp = 0;
  for (int pc = 0;; pc++) {
    const Ins *i = &code[pc];
    switch (i->op) {
      case PUSH: st[sp++] = i->arg; break;
      case LOAD: st[sp++] = vars[i->arg]; break;
      case STORE: vars[i->arg] = st[--sp]; break;
      case ADD: sp--; st[sp - 1] = (int32_t)((uint32_t)st[sp - 1] + (uint32_t)st[sp]); break;
      case SUB: sp--; st[sp - 1] = (int32_t)((uint32_t)st[sp - 1] - (uint32_t)st[sp]); break;
      case MUL: sp--; st[sp - 1] = (int32_t)((uint32_t)st[sp - 1] * (uint32_t)st[sp]); break;
      case DIV: sp--; st[sp - 1] = (st[sp] == 0 || (st[sp] == -1 && st[sp - 1] == INT32_MIN)) ? 0 : st[sp - 1] / st[sp]; break;
      case MOD: sp--; st[sp - 1] = (st[sp] == 0 || st[sp] == -1) ? 0 : st[sp - 1] % st[sp]; break;
      case NEG: st[sp - 1] = (int32_t)(0u - (uint32_t)st[sp - 1]); break;
      case JMP: pc = i->arg - 1; break;
      case JZ: if (st[--sp] == 0) pc = i->arg - 1; break;
      case JNZ: if (st[--sp] != 0) pc = i->arg - 1; break;
      case LT: sp--; st[sp - 1] = st[sp - 1] < st[sp]; break;
      case DUP: st[sp] = st[sp - 1]; sp++; break;
      case ODD: st[sp - 1] &= 1; break;
      case HALF: st[sp - 1] = (int32_t)((uint32_t)st[sp - 1] >> 1); break;
      case INC: vars[i->arg]++; break;
      case HALT: return sp ? st[sp - 1] : 0;
    }
  }
}

int main(int argc, char **argv) {
  long k = suite_size(argc, argv, 16);
  uint32_t seed = 0x1234abcd;
  static char text[1 << 16];
  static Ins code[1 << 15];
  int32_t vars[8] = {3, -7, 11, 100000};
  uint32_t acc = 0;
  for (long e = 0; e < k * 1000; e++) {
    char *end = gen(text, &seed, 6);
    *end = 0;
    Parser ps = {text, code, 0};
    expr(&ps);
    emit(&ps, HALT, 0);
    acc = acc * 31 + (uint32_t)run(code, vars);
    vars[e & 3] += (int32_t)(acc & 0xff);
  }
  /* Collatz: for x in 1..limit: steps += chain length of x (vars: 0 x, 1 y, 2 steps, 3 limit). */
  static const Ins collatz[] = {
      {PUSH, 1}, {STORE, 0},                     /* 0: x = 1 */
      {LOAD, 0}, {LOAD, 3}, {LT, 0}, {JZ, 26},   /* 2: while x < limit */
      {LOAD, 0}, {STORE, 1},                     /* 6: y = x */
      {LOAD, 1}, {PUSH, 1}, {SUB, 0}, {JZ, 24},  /* 8: while y != 1 */
      {INC, 2},                                  /* 12: steps++ */
      {LOAD, 1}, {DUP, 0}, {ODD, 0}, {JZ, 21},   /* 13: if y odd */
      {PUSH, 3}, {MUL, 0}, {PUSH, 1}, {ADD, 0},  /* 17: y*3+1, then halved below (always even) */
      {HALF, 0}, {STORE, 1}, {JMP, 8},           /* 21: y = (odd ? 3y+1 : y) / 2 */
      {INC, 0}, {JMP, 2},                        /* 24: x++ */
      {LOAD, 2}, {HALT, 0},                      /* 26 */
  };
  /* Bounded below 10000 (peak value 27 million) so the chains never overflow. */
  int32_t steps = 0;
  for (long r = 0; r < k / 4 + 1; r++) {
    int32_t cv[8] = {0, 0, 0, (k < 4 ? (int32_t)k * 2500 : 10000) - (int32_t)(r % 7)};
    steps += run(collatz, cv);
  }
  printf("interp: expr=%08x collatz=%d\n", acc, steps);
  return 0;
}
