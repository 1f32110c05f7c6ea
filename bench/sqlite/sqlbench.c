/* SQLite as an application embeds it (bench/real.sh, sqlite): a shop's
   database in a file, filled through prepared statements with bound
   parameters (44,600 rows in transactions of 5,000), then indexed, queried
   (joins, GROUP BY, ORDER BY, a window function, LIKE and string functions,
   recursive CTEs, a temporary table, 10,000 point lookups), updated, deleted
   from, rolled back and checked. A C driver, not the sqlite3 shell with a
   script: applications call the C API (prepare, bind, step), and the
   shell's SQL text would spend more of the run in the parser and in
   shell.c's output formatting.

     sqlbench DBFILE

   DBFILE is removed first (with its journal) and left behind. The database
   is a real file, not :memory:, so that the pager and the rollback journal
   go through the VFS as in real use: with SQLite's default page cache (2 MB)
   and a 2.8 MB database, pages are written, evicted and read again, through
   WASI's fd_pread/fd_pwrite on wasm. It is opened with the "unix-none" VFS
   (no file locks: one process, and WASI preview1 has no advisory locks) and
   synchronous=OFF (no fsync: the bench measures the engine, not the disk).
   Temporary tables and sorts stay in memory.

   The data come from a fixed LCG, and everything printed is an integer or
   text (sums of REALs are scaled and cast in SQL: double arithmetic, the
   same everywhere; SQLite's own float formatting uses long double, 80 bits
   natively and 128 on wasm32), so every runtime prints what the native run
   prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sqlite3.h"

enum { kCustomers = 4000, kProducts = 600, kOrders = 40000, kBatch = 5000, kLookups = 10000 };

static unsigned long long state = 20261127;
static unsigned next(void) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)(state >> 33);
}

static sqlite3* db;

static void fail(const char* what) {
  printf("%s: %s\n", what, sqlite3_errmsg(db));
  exit(1);
}

static void exec(const char* sql) {
  char* err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
    printf("%s: %s\n", sql, err ? err : "?");
    exit(1);
  }
}

static sqlite3_stmt* prepare(const char* sql) {
  sqlite3_stmt* st;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail(sql);
  return st;
}

static void step_done(sqlite3_stmt* st) {
  if (sqlite3_step(st) != SQLITE_DONE) fail(sqlite3_sql(st));
  sqlite3_reset(st);
}

/* Prints every row of a query, columns separated by '|', under a title. */
static void show(const char* title, const char* sql) {
  sqlite3_stmt* st = prepare(sql);
  printf("-- %s\n", title);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (int i = 0; i < sqlite3_column_count(st); i++) {
      const unsigned char* v = sqlite3_column_text(st, i);
      printf("%s%s", i ? "|" : "", v ? (const char*)v : "NULL");
    }
    putchar('\n');
  }
  if (rc != SQLITE_DONE) fail(sql);
  sqlite3_finalize(st);
}

/* Prints the row count and an FNV-1a hash of every row of a (long) result. */
static void digest(const char* title, const char* sql) {
  sqlite3_stmt* st = prepare(sql);
  unsigned long long h = 1469598103934665603ull;
  long rows = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    rows++;
    for (int i = 0; i < sqlite3_column_count(st); i++) {
      const unsigned char* v = sqlite3_column_text(st, i);
      for (const unsigned char* p = v ? v : (const unsigned char*)"\1"; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
      h = (h ^ '|') * 1099511628211ull;
    }
  }
  if (rc != SQLITE_DONE) fail(sql);
  sqlite3_finalize(st);
  printf("-- %s: %ld rows, %016llx\n", title, rows, h);
}

static const char* const kSyllables[] = {"ka",  "lo",  "mi", "ren", "sa",  "to",
                                         "vel", "dor", "an", "is",  "bru", "zel"};
static const char* const kCities[] = {"Lisbon", "Oslo",   "Lyon",  "Turin",   "Krakow", "Ghent",
                                      "Bergen", "Malaga", "Basel", "Tallinn", "Porto",  "Graz"};
static const char* const kWords[] = {"fast",  "gift", "wasm",  "fragile", "express", "return", "paper",
                                     "green", "blue", "large", "small",   "urgent",  "frame",  "stack"};
static const char* const kCategories[] = {"books", "tools", "garden", "kitchen",
                                          "toys",  "music", "sport",  "office"};

static void name(char* buf, int syllables) {
  buf[0] = 0;
  for (int i = 0; i < syllables; i++) strcat(buf, kSyllables[next() % 12]);
  buf[0] -= 'a' - 'A';
}

static void fill(void) {
  char text[128];
  exec("BEGIN");
  sqlite3_stmt* st = prepare("INSERT INTO customers VALUES (?1, ?2, ?3, ?4, ?5)");
  for (int id = 1; id <= kCustomers; id++) {
    name(text, 2 + next() % 3);
    sqlite3_bind_int(st, 1, id);
    sqlite3_bind_text(st, 2, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, kCities[next() % 12], -1, SQLITE_STATIC);
    if (id > 1 && next() % 8) sqlite3_bind_int(st, 4, 1 + next() % (id - 1));
    else sqlite3_bind_null(st, 4);
    sqlite3_bind_int(st, 5, next() % 365);
    step_done(st);
  }
  sqlite3_finalize(st);
  st = prepare("INSERT INTO products (title, category, price, weight) VALUES (?1, ?2, ?3, ?4)");
  for (int i = 0; i < kProducts; i++) {
    name(text, 3);
    strcat(text, " ");
    strcat(text, kWords[next() % 14]);
    sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, kCategories[next() % 8], -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, 99 + next() % 20000);
    sqlite3_bind_double(st, 4, (next() % 50000) / 1000.0);
    step_done(st);
  }
  sqlite3_finalize(st);
  exec("COMMIT");

  st = prepare("INSERT INTO orders (customer_id, product_id, qty, day, note) VALUES (?1, ?2, ?3, ?4, ?5)");
  for (int i = 0; i < kOrders; i++) {
    if (i % kBatch == 0) exec("BEGIN");
    /* Some customers and products sell far more than others. */
    unsigned c = next() % 4 ? 1 + next() % kCustomers : 1 + next() % (kCustomers / 20);
    unsigned p = next() % 3 ? 1 + next() % kProducts : 1 + next() % (kProducts / 10);
    sqlite3_bind_int(st, 1, c);
    sqlite3_bind_int(st, 2, p);
    sqlite3_bind_int(st, 3, 1 + next() % 9);
    sqlite3_bind_int(st, 4, next() % 365);
    if (next() % 3) {
      text[0] = 0;
      for (int w = 2 + next() % 6; w > 0; w--) {
        strcat(text, kWords[next() % 14]);
        if (w > 1) strcat(text, " ");
      }
      sqlite3_bind_text(st, 5, text, -1, SQLITE_TRANSIENT);
    } else {
      sqlite3_bind_null(st, 5);
    }
    step_done(st);
    if (i % kBatch == kBatch - 1) exec("COMMIT");
  }
  sqlite3_finalize(st);
}

/* What an application does most: look rows up by key, one statement each. */
static void lookups(void) {
  sqlite3_stmt* by_id = prepare("SELECT customer_id, qty, day FROM orders WHERE id = ?1");
  sqlite3_stmt* by_customer = prepare(
      "SELECT count(*), coalesce(sum(o.qty * p.price), 0) FROM orders o"
      " JOIN products p ON p.id = o.product_id WHERE o.customer_id = ?1 AND o.day BETWEEN ?2 AND ?2 + 30");
  long long sum = 0, found = 0;
  for (int i = 0; i < kLookups; i++) {
    sqlite3_stmt* st = i % 4 ? by_id : by_customer;
    sqlite3_bind_int(st, 1, 1 + next() % (i % 4 ? kOrders : kCustomers));
    if (st == by_customer) sqlite3_bind_int(st, 2, next() % 335);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      found++;
      sum += sqlite3_column_int64(st, 0) * 7 + sqlite3_column_int64(st, 1) * 3 + sqlite3_column_int64(st, 2);
    } else if (rc != SQLITE_DONE) {
      fail("lookup");
    }
    sqlite3_reset(st);
  }
  sqlite3_finalize(by_id);
  sqlite3_finalize(by_customer);
  printf("-- lookups: %lld rows, checksum %lld\n", found, sum);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: sqlbench DBFILE\n");
    return 2;
  }
  char journal[4096];
  snprintf(journal, sizeof journal, "%s-journal", argv[1]);
  unlink(argv[1]);
  unlink(journal);
  if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, "unix-none") != SQLITE_OK)
    fail(argv[1]);
  printf("sqlite %s\n", sqlite3_libversion());
  exec("PRAGMA synchronous = OFF; PRAGMA temp_store = MEMORY");
  exec(
      "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL,"
      " referrer INTEGER REFERENCES customers, signup INTEGER);"
      "CREATE TABLE products (id INTEGER PRIMARY KEY, title TEXT, category TEXT, price INTEGER, weight REAL);"
      "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, product_id INTEGER,"
      " qty INTEGER, day INTEGER, note TEXT)");
  fill();

  exec(
      "BEGIN;"
      "CREATE INDEX orders_customer ON orders (customer_id, day);"
      "CREATE INDEX orders_product ON orders (product_id, day);"
      "CREATE INDEX customers_city ON customers (city, name);"
      "CREATE INDEX customers_referrer ON customers (referrer);"
      "COMMIT;"
      "ANALYZE");

  show("revenue by category",
       "SELECT p.category, count(*), sum(o.qty), sum(o.qty * p.price),"
       " CAST(sum(o.qty * p.weight) * 1000 AS INTEGER)"
       " FROM orders o JOIN products p ON p.id = o.product_id GROUP BY p.category ORDER BY 4 DESC");
  exec(
      "CREATE TEMP TABLE totals AS SELECT c.id, c.name, c.city, count(*) AS n, sum(o.qty * p.price) AS total"
      " FROM orders o JOIN customers c ON c.id = o.customer_id JOIN products p ON p.id = o.product_id"
      " GROUP BY c.id");
  show("top customers", "SELECT name, city, n, total FROM totals ORDER BY total DESC, id LIMIT 8");
  show("best customer per city",
       "SELECT city, name, total FROM (SELECT city, name, total,"
       " row_number() OVER (PARTITION BY city ORDER BY total DESC, id) AS r FROM totals)"
       " WHERE r = 1 ORDER BY city");
  show("busiest weeks",
       "SELECT day / 7 AS week, count(*), sum(qty) FROM orders GROUP BY week ORDER BY 2 DESC, week LIMIT 5");
  show("notes",
       "SELECT count(*), sum(length(note)), sum(note LIKE '%wasm%'), sum(note LIKE 'fast%urgent%'),"
       " sum(instr(note, 'gift') > 0), count(DISTINCT substr(note, 1, instr(note || ' ', ' ') - 1))"
       " FROM orders WHERE note IS NOT NULL");
  show("name prefixes",
       "SELECT upper(substr(name, 1, 3)) AS prefix, count(*), max(length(name)), min(name), max(name),"
       " count(DISTINCT city) FROM customers WHERE name NOT LIKE '%a%'"
       " GROUP BY prefix ORDER BY 2 DESC, prefix LIMIT 6");
  show("products not bought in the first week",
       "SELECT count(*), min(id), max(id) FROM products p WHERE NOT EXISTS"
       " (SELECT 1 FROM orders o WHERE o.product_id = p.id AND o.day < 7)");
  show("referral depths",
       "WITH RECURSIVE tree(id, depth, root) AS (SELECT id, 0, id FROM customers WHERE referrer IS NULL"
       " UNION ALL SELECT c.id, t.depth + 1, t.root FROM customers c JOIN tree t ON c.referrer = t.id)"
       " SELECT depth, count(*), count(DISTINCT root) FROM tree GROUP BY depth ORDER BY depth");
  show("days without orders of the top product",
       "WITH RECURSIVE days(d) AS (SELECT 0 UNION ALL SELECT d + 1 FROM days WHERE d < 364),"
       " top(id) AS (SELECT product_id FROM orders GROUP BY product_id"
       " ORDER BY count(*) DESC, product_id LIMIT 1)"
       " SELECT (SELECT id FROM top), count(*) FROM days WHERE NOT EXISTS"
       " (SELECT 1 FROM orders WHERE product_id = (SELECT id FROM top) AND day = d)");
  digest("orders by customer",
         "SELECT c.name, o.day, o.qty, o.note FROM customers c JOIN orders o ON o.customer_id = c.id"
         " ORDER BY c.name, o.day DESC, o.id");
  lookups();

  exec("BEGIN");
  exec("UPDATE products SET price = price * 11 / 10 WHERE category IN ('toys', 'music')");
  printf("-- repriced %d products\n", sqlite3_changes(db));
  exec("UPDATE orders SET qty = qty + 1, note = replace(note, 'urgent', 'URGENT') WHERE day % 7 = 0");
  printf("-- updated %d orders\n", sqlite3_changes(db));
  exec("DELETE FROM orders WHERE qty >= 9 AND day < 120");
  printf("-- deleted %d orders\n", sqlite3_changes(db));
  exec(
      "DELETE FROM customers WHERE referrer IS NOT NULL"
      " AND id NOT IN (SELECT customer_id FROM orders WHERE day >= 300)");
  printf("-- deleted %d customers\n", sqlite3_changes(db));
  exec("COMMIT");
  /* A transaction rolled back: the journal puts the pages back. */
  exec("BEGIN; DELETE FROM orders WHERE day < 200; UPDATE customers SET city = 'Nowhere'; ROLLBACK");

  show(
      "after the changes",
      "SELECT (SELECT count(*) FROM orders), (SELECT sum(qty) FROM orders), (SELECT count(*) FROM customers),"
      " (SELECT sum(o.qty * p.price) FROM orders o JOIN products p ON p.id = o.product_id),"
      " (SELECT count(*) FROM orders WHERE note LIKE '%URGENT%')");
  show("check", "PRAGMA quick_check");
  show("pages", "SELECT page_count, freelist_count FROM pragma_page_count, pragma_freelist_count");
  if (sqlite3_close(db) != SQLITE_OK) fail("close");
  return 0;
}
