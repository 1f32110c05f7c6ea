// calc: a small scripting-language interpreter (C++20, libc++ for wasm32), a
// real command-line program for the WASI tests. It reads a script file
// (tokenizer -> recursive-descent parser -> AST -> tree-walking evaluator)
// with integers, strings, variables, functions with recursion, if/else,
// while and print, and reports errors with the script's line and column.
//
//   calc SCRIPT [ARGS...]     ARGS are the script's args: arg(0), arg(1), ..., nargs()
//
// Exit status: the script's `exit N`, else 0; 2 for a syntax error, 1 for a
// runtime error (both printed to stderr as "SCRIPT:LINE:COL: message").
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace {

using Value = std::variant<int64_t, std::string>;

std::string show(const Value& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  return std::get<std::string>(v);
}

struct Pos {
  int line = 1, col = 1;
};

struct Token {
  enum Kind { Num, Str, Ident, Op, End } kind;
  std::string text;
  int64_t num = 0;
  Pos pos;
};

std::string g_file;
[[noreturn]] void die(Pos p, const std::string& msg, int status) {
  std::cout.flush();
  std::cerr << g_file << ":" << p.line << ":" << p.col << ": " << msg << "\n";
  std::exit(status);
}

std::vector<Token> tokenize(const std::string& src) {
  std::vector<Token> out;
  Pos p;
  size_t i = 0;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n; ++k, ++i) {
      if (src[i] == '\n')
        p = {p.line + 1, 1};
      else
        ++p.col;
    }
  };
  while (i < src.size()) {
    char c = src[i];
    if (isspace(static_cast<unsigned char>(c))) {
      advance(1);
    } else if (c == '#') {
      while (i < src.size() && src[i] != '\n') advance(1);
    } else if (isdigit(static_cast<unsigned char>(c))) {
      Token t{Token::Num, "", 0, p};
      while (i < src.size() && isdigit(static_cast<unsigned char>(src[i]))) {
        if (t.num > (INT64_MAX - (src[i] - '0')) / 10) die(p, "number too large", 2);
        t.num = t.num * 10 + (src[i] - '0');
        advance(1);
      }
      out.push_back(t);
    } else if (isalpha(static_cast<unsigned char>(c)) || c == '_') {
      Token t{Token::Ident, "", 0, p};
      while (i < src.size() && (isalnum(static_cast<unsigned char>(src[i])) || src[i] == '_')) {
        t.text += src[i];
        advance(1);
      }
      out.push_back(t);
    } else if (c == '"') {
      Token t{Token::Str, "", 0, p};
      advance(1);
      while (i < src.size() && src[i] != '"') {
        if (src[i] == '\\' && i + 1 < src.size()) {
          advance(1);
          t.text += src[i] == 'n' ? '\n' : src[i];
        } else {
          t.text += src[i];
        }
        advance(1);
      }
      if (i >= src.size()) die(t.pos, "unterminated string", 2);
      advance(1);
      out.push_back(t);
    } else {
      static const char* two[] = {"==", "!=", "<=", ">=", "&&", "||"};
      Token t{Token::Op, std::string(1, c), 0, p};
      for (const char* op : two)
        if (src.compare(i, 2, op) == 0) t.text = op;
      if (t.text.size() == 1 && std::string("+-*/%<>=!(){},;").find(c) == std::string::npos)
        die(p, std::string("unexpected character '") + c + "'", 2);
      advance(t.text.size());
      out.push_back(t);
    }
  }
  out.push_back({Token::End, "end of file", 0, p});
  return out;
}

// ---- AST ---------------------------------------------------------------------

struct Expr;
using ExprP = std::unique_ptr<Expr>;
struct Expr {
  enum Kind { Lit, Var, Unary, Binary, Call } kind;
  Pos pos;
  Value lit;
  std::string name;  // variable, function, or operator
  std::vector<ExprP> args;
};

struct Stmt;
using StmtP = std::unique_ptr<Stmt>;
using Block = std::vector<StmtP>;
struct Stmt {
  enum Kind { Let, Assign, Print, If, While, Return, ExprStmt, Exit } kind;
  Pos pos;
  std::string name;
  std::vector<ExprP> exprs;
  Block body, else_body;
};

struct Function {
  std::vector<std::string> params;
  Block body;
};

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  void program(Block& main, std::map<std::string, Function>& fns) {
    while (peek().kind != Token::End) {
      if (is("fn")) {
        Pos p = next().pos;
        std::string name = ident();
        if (fns.count(name)) die(p, "function '" + name + "' defined twice", 2);
        Function f;
        expect("(");
        if (!is(")")) {
          do f.params.push_back(ident());
          while (accept(","));
        }
        expect(")");
        f.body = block();
        fns[name] = std::move(f);
      } else {
        main.push_back(statement());
      }
    }
  }

 private:
  const Token& peek() const { return t_[i_]; }
  const Token& next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  bool is(const char* s) const {
    return (peek().kind == Token::Op || peek().kind == Token::Ident) && peek().text == s;
  }
  bool accept(const char* s) {
    if (!is(s)) return false;
    next();
    return true;
  }
  void expect(const char* s) {
    if (!accept(s)) die(peek().pos, std::string("expected '") + s + "', found '" + peek().text + "'", 2);
  }
  std::string ident() {
    if (peek().kind != Token::Ident) die(peek().pos, "expected a name, found '" + peek().text + "'", 2);
    return next().text;
  }

  Block block() {
    expect("{");
    Block b;
    while (!is("}")) {
      if (peek().kind == Token::End) die(peek().pos, "expected '}', found end of file", 2);
      b.push_back(statement());
    }
    expect("}");
    return b;
  }

  StmtP statement() {
    auto s = std::make_unique<Stmt>();
    s->pos = peek().pos;
    if (accept("let")) {
      s->kind = Stmt::Let;
      s->name = ident();
      expect("=");
      s->exprs.push_back(expr());
    } else if (accept("print")) {
      s->kind = Stmt::Print;
      do s->exprs.push_back(expr());
      while (accept(","));
    } else if (accept("if")) {
      s->kind = Stmt::If;
      s->exprs.push_back(expr());
      s->body = block();
      if (accept("else")) {
        if (is("if"))
          s->else_body.push_back(statement());
        else
          s->else_body = block();
      }
      return s;
    } else if (accept("while")) {
      s->kind = Stmt::While;
      s->exprs.push_back(expr());
      s->body = block();
      return s;
    } else if (accept("return")) {
      s->kind = Stmt::Return;
      s->exprs.push_back(expr());
    } else if (accept("exit")) {
      s->kind = Stmt::Exit;
      s->exprs.push_back(expr());
    } else if (peek().kind == Token::Ident && t_[i_ + 1].kind == Token::Op && t_[i_ + 1].text == "=") {
      s->kind = Stmt::Assign;
      s->name = ident();
      expect("=");
      s->exprs.push_back(expr());
    } else {
      s->kind = Stmt::ExprStmt;
      s->exprs.push_back(expr());
    }
    expect(";");
    return s;
  }

  // Precedence climbing: || < && < comparisons < + - < * / % < unary.
  static int precedence(const std::string& op) {
    static const std::map<std::string, int> p = {{"||", 1}, {"&&", 2}, {"==", 3}, {"!=", 3}, {"<", 3},
                                                 {"<=", 3}, {">", 3},  {">=", 3}, {"+", 4},  {"-", 4},
                                                 {"*", 5},  {"/", 5},  {"%", 5}};
    auto it = p.find(op);
    return it == p.end() ? 0 : it->second;
  }
  ExprP expr(int min_prec = 1) {
    ExprP lhs = unary();
    for (;;) {
      const Token& op = peek();
      int prec = op.kind == Token::Op ? precedence(op.text) : 0;
      if (prec < min_prec) return lhs;
      next();
      auto e = std::make_unique<Expr>();
      e->kind = Expr::Binary;
      e->pos = op.pos;
      e->name = op.text;
      e->args.push_back(std::move(lhs));
      e->args.push_back(expr(prec + 1));
      lhs = std::move(e);
    }
  }
  ExprP unary() {
    if (is("-") || is("!")) {
      auto e = std::make_unique<Expr>();
      e->kind = Expr::Unary;
      e->pos = peek().pos;
      e->name = next().text;
      e->args.push_back(unary());
      return e;
    }
    return primary();
  }
  ExprP primary() {
    auto e = std::make_unique<Expr>();
    const Token& t = next();
    e->pos = t.pos;
    switch (t.kind) {
      case Token::Num:
        e->kind = Expr::Lit;
        e->lit = t.num;
        return e;
      case Token::Str:
        e->kind = Expr::Lit;
        e->lit = t.text;
        return e;
      case Token::Ident:
        e->name = t.text;
        if (accept("(")) {
          e->kind = Expr::Call;
          if (!is(")")) {
            do e->args.push_back(expr());
            while (accept(","));
          }
          expect(")");
        } else {
          e->kind = Expr::Var;
        }
        return e;
      default:
        if (t.text == "(") {
          ExprP inner = expr();
          expect(")");
          return inner;
        }
        die(t.pos, "expected an expression, found '" + t.text + "'", 2);
    }
  }

  std::vector<Token> t_;
  size_t i_ = 0;
};

// ---- evaluation ----------------------------------------------------------------

class Interp {
 public:
  Interp(std::map<std::string, Function>& fns, std::vector<std::string> args)
      : fns_(fns), args_(std::move(args)) {}

  // Runs a block; returns the value of a `return` inside it, if any.
  std::optional<Value> run(const Block& b, std::unordered_map<std::string, Value>& env) {
    for (const StmtP& s : b) {
      switch (s->kind) {
        case Stmt::Let:
          env[s->name] = eval(*s->exprs[0], env);
          break;
        case Stmt::Assign: {
          auto it = env.find(s->name);
          if (it == env.end()) die(s->pos, "assignment to undefined variable '" + s->name + "'", 1);
          it->second = eval(*s->exprs[0], env);
          break;
        }
        case Stmt::Print: {
          std::string line;
          for (size_t i = 0; i < s->exprs.size(); ++i) line += (i ? " " : "") + show(eval(*s->exprs[i], env));
          std::cout << line << "\n";
          break;
        }
        case Stmt::If: {
          const Block& chosen = truthy(eval(*s->exprs[0], env)) ? s->body : s->else_body;
          if (auto r = run(chosen, env)) return r;
          break;
        }
        case Stmt::While:
          while (truthy(eval(*s->exprs[0], env)))
            if (auto r = run(s->body, env)) return r;
          break;
        case Stmt::Return:
          return eval(*s->exprs[0], env);
        case Stmt::Exit: {
          Value v = eval(*s->exprs[0], env);
          std::cout.flush();
          std::exit(static_cast<int>(integer(v, s->pos)));
        }
        case Stmt::ExprStmt:
          eval(*s->exprs[0], env);
          break;
      }
    }
    return std::nullopt;
  }

 private:
  static bool truthy(const Value& v) {
    if (auto* i = std::get_if<int64_t>(&v)) return *i != 0;
    return !std::get<std::string>(v).empty();
  }
  static int64_t integer(const Value& v, Pos p) {
    if (auto* i = std::get_if<int64_t>(&v)) return *i;
    die(p, "expected an integer, got \"" + std::get<std::string>(v) + "\"", 1);
  }

  Value eval(const Expr& e, std::unordered_map<std::string, Value>& env) {
    switch (e.kind) {
      case Expr::Lit:
        return e.lit;
      case Expr::Var: {
        auto it = env.find(e.name);
        if (it == env.end()) die(e.pos, "undefined variable '" + e.name + "'", 1);
        return it->second;
      }
      case Expr::Unary: {
        Value v = eval(*e.args[0], env);
        if (e.name == "!") return int64_t{!truthy(v)};
        int64_t i = integer(v, e.pos);
        if (i == INT64_MIN) die(e.pos, "integer overflow", 1);
        return -i;
      }
      case Expr::Binary:
        return binary(e, env);
      case Expr::Call:
        return call(e, env);
    }
    return int64_t{0};
  }

  Value binary(const Expr& e, std::unordered_map<std::string, Value>& env) {
    const std::string& op = e.name;
    // && and || short-circuit.
    if (op == "&&" || op == "||") {
      bool l = truthy(eval(*e.args[0], env));
      if (op == "&&" ? !l : l) return int64_t{l};
      return int64_t{truthy(eval(*e.args[1], env))};
    }
    Value a = eval(*e.args[0], env), b = eval(*e.args[1], env);
    if (op == "+" && (std::holds_alternative<std::string>(a) || std::holds_alternative<std::string>(b)))
      return show(a) + show(b);
    if (op == "==") return int64_t{a == b};
    if (op == "!=") return int64_t{a != b};
    if (std::holds_alternative<std::string>(a) && std::holds_alternative<std::string>(b)) {
      const auto &x = std::get<std::string>(a), &y = std::get<std::string>(b);
      if (op == "<") return int64_t{x < y};
      if (op == "<=") return int64_t{x <= y};
      if (op == ">") return int64_t{x > y};
      if (op == ">=") return int64_t{x >= y};
    }
    int64_t x = integer(a, e.pos), y = integer(b, e.pos), r = 0;
    if (op == "<") return int64_t{x < y};
    if (op == "<=") return int64_t{x <= y};
    if (op == ">") return int64_t{x > y};
    if (op == ">=") return int64_t{x >= y};
    bool overflow = false;
    if (op == "+")
      overflow = __builtin_add_overflow(x, y, &r);
    else if (op == "-")
      overflow = __builtin_sub_overflow(x, y, &r);
    else if (op == "*")
      overflow = __builtin_mul_overflow(x, y, &r);
    else {
      if (y == 0) die(e.pos, "division by zero", 1);
      if (x == INT64_MIN && y == -1)
        overflow = true;
      else
        r = op == "/" ? x / y : x % y;
    }
    if (overflow) die(e.pos, "integer overflow", 1);
    return r;
  }

  Value call(const Expr& e, std::unordered_map<std::string, Value>& env) {
    std::vector<Value> args;
    for (const ExprP& a : e.args) args.push_back(eval(*a, env));
    auto want = [&](size_t n) {
      if (args.size() != n)
        die(e.pos,
            e.name + "() takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s") + ", got " +
                std::to_string(args.size()),
            1);
    };
    if (e.name == "len") {
      want(1);
      return static_cast<int64_t>(show(args[0]).size());
    }
    if (e.name == "str") {
      want(1);
      return show(args[0]);
    }
    if (e.name == "nargs") {
      want(0);
      return static_cast<int64_t>(args_.size());
    }
    if (e.name == "arg") {
      want(1);
      int64_t i = integer(args[0], e.pos);
      if (i < 0 || i >= static_cast<int64_t>(args_.size()))
        die(e.pos, "arg(" + std::to_string(i) + "): no such argument", 1);
      return args_[i];
    }
    if (e.name == "env") {
      want(1);
      const char* v = std::getenv(show(args[0]).c_str());
      return std::string(v ? v : "");
    }
    auto it = fns_.find(e.name);
    if (it == fns_.end()) die(e.pos, "undefined function '" + e.name + "'", 1);
    const Function& f = it->second;
    want(f.params.size());
    if (++depth_ > 1000) die(e.pos, "recursion too deep", 1);
    std::unordered_map<std::string, Value> local;
    for (size_t i = 0; i < args.size(); ++i) local[f.params[i]] = std::move(args[i]);
    std::optional<Value> r = run(f.body, local);
    --depth_;
    return r ? *r : Value(int64_t{0});
  }

  std::map<std::string, Function>& fns_;
  std::vector<std::string> args_;
  int depth_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: calc SCRIPT [ARGS...]\n";
    return 2;
  }
  g_file = argv[1];
  std::ifstream in(g_file);
  if (!in) {
    std::perror(("calc: " + g_file).c_str());
    return 2;
  }
  std::stringstream src;
  src << in.rdbuf();
  std::map<std::string, Function> fns;
  Block main_block;
  Parser(tokenize(src.str())).program(main_block, fns);
  Interp interp(fns, std::vector<std::string>(argv + 2, argv + argc));
  std::unordered_map<std::string, Value> globals;
  interp.run(main_block, globals);
  return 0;
}
