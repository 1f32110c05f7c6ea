/* Integer: a CoreMark-like mix written here. Each iteration runs, on inputs
 * derived from the iteration's seed, a linked-list pass (build, reverse,
 * search, merge sort), a small integer matrix pass (multiply, add a constant,
 * extract bit fields), a state machine that classifies number-like tokens, and
 * folds every result into a CRC-16. Size: iterations. */
#include "common.h"

/* ---- CRC-16/CCITT, bitwise (as CoreMark does: it is part of the work) ---- */
static uint16_t crc16(uint16_t crc, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; i++) {
    crc ^= (uint16_t)((v >> (8 * i)) & 0xff) << 8;
    for (int b = 0; b < 8; b++) crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
  }
  return crc;
}

/* ---- linked list ---- */
typedef struct Node { struct Node *next; int32_t key; int32_t val; } Node;
enum { LIST = 96 };

static Node *list_build(Node *pool, uint32_t *seed) {
  Node *head = NULL;
  for (int i = 0; i < LIST; i++) {
    pool[i].key = (int32_t)(suite_rand(seed) % 1000);
    pool[i].val = i;
    pool[i].next = head;
    head = &pool[i];
  }
  return head;
}

static Node *list_reverse(Node *h) {
  Node *r = NULL;
  while (h) { Node *n = h->next; h->next = r; r = h; h = n; }
  return r;
}

static Node *list_find(Node *h, int32_t key) {
  while (h && h->key != key) h = h->next;
  return h;
}

/* Bottom-up merge sort on the list by key (stable), CoreMark's way. */
static Node *list_sort(Node *list) {
  for (int insize = 1;; insize *= 2) {
    Node *p = list, *tail = NULL;
    list = NULL;
    int merges = 0;
    while (p) {
      merges++;
      Node *q = p;
      int psize = 0;
      for (int i = 0; i < insize && q; i++) { psize++; q = q->next; }
      int qsize = insize;
      while (psize > 0 || (qsize > 0 && q)) {
        Node *e;
        if (psize == 0) { e = q; q = q->next; qsize--; }
        else if (qsize == 0 || !q || p->key <= q->key) { e = p; p = p->next; psize--; }
        else { e = q; q = q->next; qsize--; }
        if (tail) tail->next = e; else list = e;
        tail = e;
      }
      p = q;
    }
    tail->next = NULL;
    if (merges <= 1) return list;
  }
}

/* ---- matrix ---- */
enum { M = 12 };

static uint16_t matrix_pass(uint16_t crc, uint32_t *seed) {
  int16_t a[M][M], b[M][M];
  int32_t c[M][M];
  for (int i = 0; i < M; i++)
    for (int j = 0; j < M; j++) {
      a[i][j] = (int16_t)(suite_rand(seed) & 0xff);
      b[i][j] = (int16_t)(suite_rand(seed) & 0xff) - 128;
    }
  int16_t k = (int16_t)(*seed & 0x3f);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < M; j++) a[i][j] = (int16_t)(a[i][j] + k);
  int32_t acc = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < M; j++) {
      int32_t s = 0;
      for (int x = 0; x < M; x++) s += (int32_t)a[i][x] * b[x][j];
      c[i][j] = s;
      acc += ((s >> 2) & 0xf) * ((s >> 5) & 0x7f); /* bit extraction */
    }
  for (int i = 0; i < M; i++) crc = crc16(crc, (uint32_t)c[i][i], 4);
  return crc16(crc, (uint32_t)acc, 4);
}

/* ---- state machine: classify tokens as int, decimal, exponent or invalid ---- */
enum State { START, INT, SIGN, DEC, EXP, EXPSIGN, SCI, BAD, NSTATES };

static enum State next_state(enum State s, char ch) {
  int digit = ch >= '0' && ch <= '9';
  switch (s) {
    case START: return digit ? INT : (ch == '+' || ch == '-') ? SIGN : ch == '.' ? DEC : BAD;
    case SIGN: return digit ? INT : ch == '.' ? DEC : BAD;
    case INT: return digit ? INT : ch == '.' ? DEC : (ch == 'e' || ch == 'E') ? EXP : BAD;
    case DEC: return digit ? DEC : (ch == 'e' || ch == 'E') ? EXP : BAD;
    case EXP: return digit ? SCI : (ch == '+' || ch == '-') ? EXPSIGN : BAD;
    case EXPSIGN: return digit ? SCI : BAD;
    case SCI: return digit ? SCI : BAD;
    default: return BAD;
  }
}

static uint16_t state_pass(uint16_t crc, uint32_t *seed) {
  static const char alphabet[] = "0123456789012345+-.eE,x";
  char text[256];
  for (int i = 0; i < (int)sizeof text - 1; i++) text[i] = alphabet[suite_rand(seed) % (sizeof alphabet - 1)];
  text[sizeof text - 1] = 0;
  uint32_t count[NSTATES] = {0};
  enum State s = START;
  for (const char *p = text; *p; p++) {
    if (*p == ',') { count[s]++; s = START; continue; }
    s = next_state(s, *p);
  }
  count[s]++;
  for (int i = 0; i < NSTATES; i++) crc = crc16(crc, count[i], 2);
  return crc;
}

int main(int argc, char **argv) {
  long iters = suite_size(argc, argv, 8000);
  static Node pool[LIST];
  uint16_t crc = 0;
  for (long it = 0; it < iters; it++) {
    uint32_t seed = 0x9e3779b9u ^ (uint32_t)(it * 2654435761u);
    if (seed == 0) seed = 1;
    Node *h = list_build(pool, &seed);
    h = list_reverse(h);
    for (int q = 0; q < 8; q++) {
      Node *f = list_find(h, (int32_t)(suite_rand(&seed) % 1000));
      crc = crc16(crc, f ? (uint32_t)f->val : 0xffffu, 2);
    }
    h = list_sort(h);
    for (Node *p = h; p; p = p->next) crc = crc16(crc, (uint32_t)p->val, 1);
    crc = matrix_pass(crc, &seed);
    crc = state_pass(crc, &seed);
  }
  printf("intmix: crc=%04x\n", crc);
  return 0;
}
