#pragma once
// Errors of loading a module (decode, validate, link) as data, and a small
// Result<T> to return them. Nothing in vm/ throws.

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace wzvm::vm {

struct Error {
  // Which phase rejected the module; the spec runner maps assert_malformed to
  // Malformed, assert_invalid to Invalid, assert_unlinkable to Link.
  enum class Kind : uint8_t { Malformed, Invalid, Link, Instantiate, Io };
  Kind kind = Kind::Malformed;
  std::string message;
  std::string section;    // e.g. "code", "import"; empty when unknown
  int64_t function = -1;  // function index (in the function index space) or -1
  int64_t offset = -1;    // byte offset in the module or -1
  // Instantiate: the host could not give what the instance needed (a memory
  // or a table mapped, or memory while the start function ran), rather than
  // the module asking for something wrong: embedders report it as their own.
  bool host_out_of_memory = false;

  // "WHAT (section S, function F, offset 0xOFF)" with the known parts only.
  std::string to_string() const;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void> equivalent.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace wzvm::vm
