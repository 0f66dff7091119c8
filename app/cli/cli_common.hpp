// Shared pieces of the convlab subcommands: the option table of a command, parsed options, and
// the helpers every subcommand uses. A subcommand lives in its own file (cmd_*.cpp) and is listed
// once in the command table of cli.cpp (commands()).
#pragma once

#include <cstdint>
#include <iostream>
#include <map>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "convlab/output_file.hpp"  // check_output_path
#include "convlab/problem.hpp"
#include "convlab/tensor.hpp"

namespace convlab::cli {

// Thrown by a command that did its work (its files are written) but must end with exit status 1
// because what it checked failed, e.g. `convlab bench` with measurements that failed
// verification. run_cli prints "convlab: " + what() on stderr and returns 1.
struct CommandFailed : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct OptionSpec {
    const char* name;   // "--problem"
    const char* value;  // placeholder of its value ("DESC"), or nullptr for a switch
    const char* help;
};

class Options {
  public:
    const std::string* get(std::string_view name) const {
        const auto it = values_.find(name);
        return it == values_.end() ? nullptr : &it->second;
    }
    bool has(std::string_view name) const { return get(name) != nullptr; }
    const std::string& required(std::string_view command, std::string_view name) const {
        if (const std::string* v = get(name)) return *v;
        throw Error(std::string(command) + " needs " + std::string(name));
    }
    // The value of `name`, or `fallback` when it was not given.
    std::string value_or(std::string_view name, std::string fallback) const {
        const std::string* v = get(name);
        return v ? *v : std::move(fallback);
    }
    void set(std::string name, std::string value) { values_[std::move(name)] = std::move(value); }
    // Arguments that are not options, in order (only for commands that declare an OptionSpec
    // whose name does not start with '-', e.g. {"FILE...", nullptr, "lesson files"}).
    const std::vector<std::string>& positional() const { return positional_; }
    void add_positional(std::string arg) { positional_.push_back(std::move(arg)); }
    // Where diagnostics go ("file:line:column: what is wrong"): standard error, as compilers
    // print theirs, so a command's results on standard output stay clean for a pipe.
    std::ostream& diagnostics() const { return *diagnostics_; }
    void set_diagnostics(std::ostream& err) { diagnostics_ = &err; }

  private:
    std::map<std::string, std::string, std::less<>> values_;
    std::vector<std::string> positional_;
    std::ostream* diagnostics_ = &std::cerr;
};

struct Command {
    const char* name;
    const char* summary;   // one line, for the command list
    const char* synopsis;  // after "usage: convlab "
    const char* details;   // printed after the options; may be empty
    std::vector<OptionSpec> options;
    // Throws Error for bad input (exit status 2); returns normally on success (status 0).
    void (*run)(const Options&, std::ostream& out);
};

// The memory budget of the algorithms' work memory (convlab::set_memory_budget), an option of
// every command that computes; dispatch applies it before the command runs.
inline const OptionSpec kMaxMemoryOption{
    "--max-memory", "SIZE",
    "work memory the algorithms may take, e.g. 512M, 4G (default: 80% of available memory)"};

// "--name value" or "--name=value"; switches take no value. Every option at most once.
Options parse_options(const Command& cmd, std::span<const std::string> args);

// Runs f; an Error it throws gets `context` in front of its message.
template <class F>
auto in_context(const std::string& context, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const Error& e) {
        throw Error(context + ": " + e.what());
    }
}

// An integer in [lo, hi], or Error naming the flag and the range.
std::int64_t parse_integer(std::string_view flag, const std::string& text, std::int64_t lo,
                           std::int64_t hi);
std::uint64_t parse_seed(const std::string& text);
// --problem, parsed and checked (Error names the field and the rule).
Problem problem_from(const Options& opts, std::string_view command);
// Generated inputs: integers in [-3, 3] from splitmix64 (exact sums in fp32); `salt` separates
// the tensors of one seed.
Tensor generate(std::vector<dim_t> dims, std::uint64_t seed, std::uint64_t salt);

// [SECTION] commands defined in their own files (cmd_*.cpp), listed in cli.cpp's commands()
// (one declaration here and one line there per command).
const Command& bench_command();

const Command& lesson_command();  // cmd_lesson.cpp

const Command& gui_command();   // cmd_gui.cpp
const Command& shot_command();  // cmd_shot.cpp
const Command& demo_command();  // cmd_demo.cpp

}  // namespace convlab::cli
