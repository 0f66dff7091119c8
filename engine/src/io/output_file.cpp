// Output files (atomic, through symlinks, regular files only), input files (regular files of a
// bounded size) and the stop request of SIGINT / SIGTERM. See output_file.hpp for the rules.
#include "convlab/output_file.hpp"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace convlab {

namespace {

namespace fs = std::filesystem;

// [SECTION] stop requests and the registry of live temporaries

std::atomic<bool> g_cancel{false};
std::atomic<int> g_signals{0};
std::atomic<int> g_immediate{0};

// The signal handler may only unlink paths it can read without locks or allocation: a fixed
// table of slots, each free (0), being filled (1) or holding a live temporary (2).
// 1024: a command's transaction (output_file.hpp) keeps every output as a live temporary until
// its end, and a lesson gallery writes hundreds of pictures.
constexpr int kSlots = 1024;
struct Slot {
    std::atomic<int> state{0};
    char path[PATH_MAX] = {};
};
Slot g_slots[kSlots];

// A slot holding `path`, or -1 when the table is full or the path too long (the temporary is
// then still removed on every error, only not by the signal handler).
int register_temporary(const std::string& path) {
    if (path.size() >= PATH_MAX) return -1;
    for (int i = 0; i < kSlots; ++i) {
        int expected = 0;
        if (g_slots[i].state.compare_exchange_strong(expected, 1)) {
            std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
            g_slots[i].state.store(2);
            return i;
        }
    }
    return -1;
}

void unregister_temporary(int slot) {
    if (slot < 0) return;
    g_slots[slot].state.store(1);
    g_slots[slot].path[0] = '\0';
    g_slots[slot].state.store(0);
}

void remove_live_temporaries() noexcept {
    for (Slot& s : g_slots)
        if (s.state.load() == 2) ::unlink(s.path);
}

extern "C" void on_interrupt(int) {
    g_cancel.store(true);
    if (g_signals.fetch_add(1) >= 1 || g_immediate.load() > 0) {
        remove_live_temporaries();
        ::_exit(130);
    }
}

// The transaction of this thread (its outermost one), or null.
thread_local OutputTransaction* g_transaction = nullptr;

// [SECTION] paths

std::string dir_of(const std::string& path) {
    const fs::path p = fs::path(path).parent_path();
    return p.empty() ? std::string(".") : p.string();
}

// "is a FIFO" ... for a node that is neither a regular file nor a directory.
const char* kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "is a directory";
    if (S_ISCHR(mode)) return "is a character device";
    if (S_ISBLK(mode)) return "is a block device";
    if (S_ISFIFO(mode)) return "is a FIFO";
    if (S_ISSOCK(mode)) return "is a socket";
    return "is not a regular file";
}

// A random name of 8 characters, ".cl" and six of [A-Za-z0-9]: short enough that a temporary
// beside any legal file name (255 bytes at most) is itself legal.
std::string temporary_name() {
    static std::atomic<std::uint64_t> counter{0};
    std::uint64_t x =
        counter.fetch_add(1) * 0x9e3779b97f4a7c15ull ^
        static_cast<std::uint64_t>(::getpid()) << 32 ^
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    static constexpr char kChars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string name = ".cl";
    for (int i = 0; i < 6; ++i) {
        name += kChars[x % 62];
        x /= 62;
    }
    return name;
}

}  // namespace

bool cancel_requested() noexcept {
    return g_cancel.load(std::memory_order_relaxed);
}
void request_cancel() noexcept {
    g_cancel.store(true);
}
void clear_cancel() noexcept {
    g_cancel.store(false);
    g_signals.store(0);
}
const std::atomic<bool>& cancel_flag() noexcept {
    return g_cancel;
}
void throw_if_cancelled() {
    if (cancel_requested()) throw Interrupted();
}

void install_interrupt_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
}

ImmediateInterrupt::ImmediateInterrupt() {
    g_immediate.fetch_add(1);
    // A stop requested before this section began is honoured at once too.
    if (g_cancel.load()) {
        g_immediate.fetch_sub(1);
        throw Interrupted();
    }
}
ImmediateInterrupt::~ImmediateInterrupt() {
    g_immediate.fetch_sub(1);
}

// [SECTION] output

std::string output_target(const std::string& path) {
    const auto cannot = [&](const std::string& why) {
        return Error("cannot write " + path + ": " + why);
    };
    const std::string only = "; only a regular file or a new path is written";
    if (path.empty()) throw cannot("the path is empty");
    if (path == "-") throw cannot("standard output is not an output file" + only);
    std::string target = path;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) throw cannot(std::strerror(EISDIR));
        if (!S_ISREG(st.st_mode)) throw cannot(kind_of(st.st_mode) + only);
        // A symlink (chain) to a regular file: the file itself is replaced.
        struct stat lst {};
        if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
            char* real = ::realpath(path.c_str(), nullptr);
            if (!real) throw cannot(std::strerror(errno));
            target = real;
            std::free(real);
        }
    } else if (errno == ENOENT) {
        // A new name, or a dangling symlink: the file it names is created.
        for (int hops = 0;; ++hops) {
            struct stat lst {};
            if (::lstat(target.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) break;
            if (hops == 40) throw cannot(std::strerror(ELOOP));
            std::error_code ec;
            const fs::path link = fs::read_symlink(target, ec);
            if (ec) throw cannot(ec.message());
            target =
                link.is_absolute() ? link.string() : (fs::path(dir_of(target)) / link).string();
        }
    } else {
        throw cannot(std::strerror(errno));
    }
    const std::string dir = dir_of(target);
    struct stat dst {};
    if (::stat(dir.c_str(), &dst) != 0) throw cannot(std::strerror(errno));
    if (!S_ISDIR(dst.st_mode)) throw cannot(std::strerror(ENOTDIR));
    if (::access(dir.c_str(), W_OK | X_OK) != 0) throw cannot(std::strerror(errno));
    return target;
}

OutputFile::OutputFile(const std::string& path) : path_(path), target_(output_target(path)) {
    const std::string dir = dir_of(target_);
    struct stat old {};
    const bool replaces = ::stat(target_.c_str(), &old) == 0;
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
        tmp_ = (fs::path(dir) / temporary_name()).string();
        fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd_ < 0 && errno != EEXIST) fail(std::strerror(errno));
    }
    if (fd_ < 0) fail("no free temporary file name beside it");
    slot_ = register_temporary(tmp_);
    // The replaced file keeps its permissions.
    if (replaces) (void)::fchmod(fd_, old.st_mode & 07777);
}

OutputFile::~OutputFile() {
    if (committed_) return;
    if (fd_ >= 0) ::close(fd_);
    ::unlink(tmp_.c_str());
    unregister_temporary(slot_);
}

void OutputFile::fail(const std::string& why) const {
    throw Error("cannot write " + path_ + ": " + why);
}

void OutputFile::write(const void* data, std::size_t bytes) {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
        const ssize_t n = ::write(fd_, p, bytes);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail(std::strerror(errno));
        }
        p += n;
        bytes -= static_cast<std::size_t>(n);
    }
}

void OutputFile::commit() {
    if (::fsync(fd_) != 0) fail(std::strerror(errno));
    const int closed = ::close(fd_);
    fd_ = -1;
    if (closed != 0) fail(std::strerror(errno));
    committed_ = true;
    if (g_transaction) {
        // Kept as the temporary: the transaction renames it, or removes it.
        g_transaction->adopt({path_, target_, tmp_, slot_});
        return;
    }
    if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
        committed_ = false;
        fail(std::strerror(errno));
    }
    unregister_temporary(slot_);
}

// [SECTION] transactions

OutputTransaction::OutputTransaction() : outer_(g_transaction) {
    if (!outer_) g_transaction = this;
}

OutputTransaction::~OutputTransaction() {
    if (outer_) return;
    g_transaction = nullptr;
    for (const Pending& p : pending_) {
        ::unlink(p.tmp.c_str());
        unregister_temporary(p.slot);
    }
}

void OutputTransaction::adopt(Pending p) {
    // A path written again: its earlier content is dropped.
    for (Pending& q : pending_)
        if (q.target == p.target) {
            ::unlink(q.tmp.c_str());
            unregister_temporary(q.slot);
            q = std::move(p);
            return;
        }
    pending_.push_back(std::move(p));
}

void OutputTransaction::commit() {
    if (outer_) return;
    g_transaction = nullptr;  // what is written from here on is written at once
    while (!pending_.empty()) {
        const Pending& p = pending_.front();
        if (::rename(p.tmp.c_str(), p.target.c_str()) != 0) {
            const int err = errno;
            const std::string path = p.path;
            // The destructor removes this one and the rest.
            throw Error("cannot write " + path + ": " + std::strerror(err));
        }
        unregister_temporary(p.slot);
        pending_.erase(pending_.begin());
    }
}

std::vector<std::string> OutputTransaction::pending() const {
    const OutputTransaction* t = outer_ ? outer_ : this;
    std::vector<std::string> out;
    for (const Pending& p : t->pending_) out.push_back(p.path);
    return out;
}

std::string OutputTransaction::current_file(const std::string& path) {
    if (!g_transaction) return path;
    const fs::path want = fs::path(path).lexically_normal();
    for (const Pending& p : g_transaction->pending_)
        if (fs::path(p.path).lexically_normal() == want || fs::path(p.target) == want) return p.tmp;
    return path;
}

void write_file(const std::string& path, std::string_view bytes) {
    OutputFile f(path);
    f.write(bytes.data(), bytes.size());
    f.commit();
}

void write_file(const std::string& path, const std::function<void(std::ostream&)>& fill) {
    OutputFile f(path);
    {
        std::ofstream o(f.temp_path(), std::ios::binary | std::ios::trunc);
        if (!o) f.fail(std::strerror(errno ? errno : EIO));
        fill(o);
        o.flush();
        if (!o) f.fail(std::strerror(errno ? errno : EIO));
    }
    f.commit();
}

// [SECTION] input

std::FILE* open_input_file(const std::string& path, std::uintmax_t max_bytes, std::string_view what,
                           std::uintmax_t* size) {
    const auto refuse = [&](const std::string& why) { return Error(path + ": " + why); };
    const auto not_file = [&](mode_t mode) {
        return refuse(std::string(kind_of(mode)) + ", not " + std::string(what) +
                      (S_ISDIR(mode) ? "" : " (only regular files are read)"));
    };
    // stat first, so that a device is never opened; O_NONBLOCK so that a FIFO swapped in after
    // it cannot block the open; fstat decides.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw refuse("cannot open: " + std::string(std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) throw not_file(st.st_mode);
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw refuse("cannot open: " + std::string(std::strerror(errno)));
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const int err = errno;
        ::close(fd);
        if (S_ISREG(st.st_mode)) throw refuse("cannot open: " + std::string(std::strerror(err)));
        throw not_file(st.st_mode);
    }
    const auto bytes = static_cast<std::uintmax_t>(st.st_size);
    if (bytes > max_bytes) {
        ::close(fd);
        throw refuse(std::to_string(bytes) + " bytes, more than " + std::string(what) +
                     " may hold (" + std::to_string(max_bytes) + ")");
    }
    (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    std::FILE* f = ::fdopen(fd, "rb");
    if (!f) {
        const int err = errno;
        ::close(fd);
        throw refuse("cannot open: " + std::string(std::strerror(err)));
    }
    if (size) *size = bytes;
    return f;
}

std::string read_input_file(const std::string& path, std::uintmax_t max_bytes,
                            std::string_view what) {
    std::uintmax_t size = 0;
    std::FILE* f = open_input_file(path, max_bytes, what, &size);
    std::string text(static_cast<std::size_t>(size), '\0');
    // Reads to the end, never past the cap: a file that grew meanwhile is refused.
    const std::size_t got = std::fread(text.data(), 1, text.size(), f);
    const bool more = got == text.size() && std::fgetc(f) != EOF;
    const bool bad = std::ferror(f) != 0;
    const int err = errno;
    std::fclose(f);
    if (bad) throw Error(path + ": cannot read: " + std::strerror(err));
    if (more) throw Error(path + ": grew while it was read");
    text.resize(got);
    return text;
}

}  // namespace convlab
