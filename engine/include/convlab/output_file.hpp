// Files the program writes and reads, and the stop request of Ctrl-C, in one place so that every
// writer (npy, charts, PNG, GIF, CSV, JSON) and every reader follows the same rules:
//
// Output: a path is written only when it names a regular file or nothing yet. A directory,
// character or block device, FIFO or socket is refused with "cannot write PATH: is a FIFO; ..."
// (standard output included: "-" and /dev/stdout are refused, write to a file instead). A
// symlink is written through: the file it points to is replaced atomically, its temporary
// created in that file's folder. Temporaries are ".clXXXXXX" (random, created exclusively), so
// any legal file name fits and concurrent writers never collide; they are removed on every
// error, and on SIGINT/SIGTERM by the handlers of install_interrupt_handlers().
//
// Input: only regular files are opened (a FIFO or device is refused before open could block),
// and a file larger than its format can need is refused before it is read.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "convlab/problem.hpp"  // Error

namespace convlab {

// [SECTION] stop requests

// Set by SIGINT / SIGTERM (or request_cancel()); long work polls it between safe points (layers,
// measurements, lesson steps), never inside a parallel region.
bool cancel_requested() noexcept;
void request_cancel() noexcept;
void clear_cancel() noexcept;
const std::atomic<bool>& cancel_flag() noexcept;
// Thrown at a safe point after a stop request; the command line exits 130 on it.
struct Interrupted : Error {
    Interrupted() : Error("interrupted") {}
};
void throw_if_cancelled();  // throws Interrupted when a stop was requested

// SIGINT and SIGTERM: the first sets the stop request (the work ends at its next safe point and
// writes what it has); a second, or the first while an ImmediateInterrupt is alive, removes every
// live temporary and ends the process at once with status 130.
void install_interrupt_handlers();
// While alive, an interrupt ends the process at once (after removing temporaries): for work that
// keeps nothing partial, such as one computation whose result is written only at its end.
struct ImmediateInterrupt {
    ImmediateInterrupt();
    ~ImmediateInterrupt();
    ImmediateInterrupt(const ImmediateInterrupt&) = delete;
    ImmediateInterrupt& operator=(const ImmediateInterrupt&) = delete;
};

// [SECTION] output

// The file `path` would write (a symlink followed to its target). Error "cannot write PATH: why"
// when it is not a regular file or a new name in a writable folder.
std::string output_target(const std::string& path);
// Checks `path` as output_target does, to fail before any work.
inline void check_output_path(const std::string& path) {
    (void)output_target(path);
}

// A temporary beside the target, renamed over it by commit(); destroyed uncommitted, it is
// removed. Errors throw "cannot write PATH: why".
class OutputFile {
  public:
    explicit OutputFile(const std::string& path);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    const std::string& path() const { return path_; }
    // For libraries that write by file name (cairo, stb): the temporary's path.
    const std::string& temp_path() const { return tmp_; }
    int fd() const { return fd_; }
    void write(const void* data, std::size_t bytes);
    // fsync, close, rename onto the target. The temporary's mode is the replaced file's, or
    // 0666 less the umask for a new one.
    void commit();
    // Throws "cannot write PATH: why".
    [[noreturn]] void fail(const std::string& why) const;

  private:
    std::string path_, target_, tmp_;
    int fd_ = -1;
    int slot_ = -1;
    bool committed_ = false;
};

// All-or-nothing output of a command that writes several files: while a transaction is alive on
// a thread, every OutputFile committed on that thread is closed but kept as its temporary; the
// transaction's commit() renames them all onto their paths, and a transaction destroyed
// uncommitted (an error, an interrupt) removes them, so that a command that fails writes no file
// at all. The temporaries stay registered for SIGINT/SIGTERM until renamed. A transaction begun
// while another is alive on the thread joins it: the outermost one commits. A file written twice
// keeps its last content. Until the commit, current_file() names where a written path's content
// is (for a command that reads back what it wrote).
class OutputTransaction {
  public:
    OutputTransaction();
    ~OutputTransaction();
    OutputTransaction(const OutputTransaction&) = delete;
    OutputTransaction& operator=(const OutputTransaction&) = delete;

    // Renames every pending temporary onto its target (of an outermost transaction; a joined
    // one's commit does nothing). Throws "cannot write PATH: why" and removes the temporaries
    // not yet renamed when a rename fails.
    void commit();
    // The paths written so far and not yet committed, as their writers named them.
    std::vector<std::string> pending() const;
    // The file holding `path`'s content: its pending temporary in this thread's transaction,
    // else `path` itself.
    static std::string current_file(const std::string& path);

  private:
    friend class OutputFile;
    struct Pending {
        std::string path, target, tmp;
        int slot;
    };
    void adopt(Pending p);
    std::vector<Pending> pending_;
    OutputTransaction* outer_ = nullptr;  // the transaction this one joined, if any
};

// Whole files at once.
void write_file(const std::string& path, std::string_view bytes);
void write_file(const std::string& path, const std::function<void(std::ostream&)>& fill);

// [SECTION] input

// Opens `path` for reading when it is a regular file of at most max_bytes; `what` names it in
// errors ("lesson file", "shape file"). Errors: "PATH: is a FIFO, not a WHAT (WHATs are regular
// files)", "PATH: N bytes, more than a WHAT may hold (M)". The FILE* is the caller's to close.
std::FILE* open_input_file(const std::string& path, std::uintmax_t max_bytes, std::string_view what,
                           std::uintmax_t* size = nullptr);
// The whole file, under the same rules.
std::string read_input_file(const std::string& path, std::uintmax_t max_bytes,
                            std::string_view what);

}  // namespace convlab
