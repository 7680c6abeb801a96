#include "io/read_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "io/json_reader.hpp"

namespace sm {

namespace {

constexpr size_t kPathHead = 60;   // characters kept from the start of a long path
constexpr size_t kPathTail = 200;  // and from its end, where the file name is

InputError error_of(const InputSource& src, std::string why) {
    return InputError{src.role, src.path == "-" ? "standard input" : quote_path(src.path), std::move(why)};
}

std::string too_big(size_t max_bytes) { return fmt::format("at most {} bytes (4 MiB) may be read", max_bytes); }

// Closes the descriptor on every path out of read_bounded.
struct Fd {
    int fd;
    explicit Fd(int f) : fd(f) {}
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
};

Expected<std::string> read_open(const InputSource& src, int fd, size_t max_bytes) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return error_of(src, std::string("cannot read: ") + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) return error_of(src, "is a directory; expected " + src.kind);
    // A regular file states its size: refuse a big one before reading a byte.
    if (S_ISREG(st.st_mode) && static_cast<unsigned long long>(st.st_size) > max_bytes)
        return error_of(src, fmt::format("{} bytes; {}", st.st_size, too_big(max_bytes)));
    std::string text;
    char buf[65536];
    while (true) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return error_of(src, std::string("cannot read: ") + std::strerror(errno));
        if (n == 0) break;
        if (text.size() + static_cast<size_t>(n) > max_bytes)
            return error_of(src, fmt::format("more than {} bytes; {}", max_bytes, too_big(max_bytes)));
        text.append(buf, static_cast<size_t>(n));
    }
    return text;
}

}  // namespace

Expected<std::string> read_bounded(const InputSource& src, size_t max_bytes) {
    if (src.path == "-") return read_open(src, STDIN_FILENO, max_bytes);
    const Fd f(::open(src.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (f.fd < 0) return error_of(src, std::string("cannot open the file: ") + std::strerror(errno));
    return read_open(src, f.fd, max_bytes);
}

Expected<std::optional<std::string>> read_if_present(const InputSource& src, size_t max_bytes) {
    struct stat st {};
    if (::stat(src.path.c_str(), &st) != 0 && errno == ENOENT) return std::optional<std::string>();
    Expected<std::string> text = read_bounded(src, max_bytes);
    if (!text) return text.error();
    return std::optional<std::string>(std::move(text).value());
}

std::string printable_path(std::string_view path) {
    std::string p = printable(path, std::string::npos);
    if (p.size() <= kPathHead + kPathTail + 3) return p;
    return p.substr(0, kPathHead) + "..." + p.substr(p.size() - kPathTail);
}

std::string quote_path(std::string_view path) { return fmt::format("\"{}\"", printable_path(path)); }

}  // namespace sm
