#include "common/atomic_file.h"

#include "common/diagnostics.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace moex {

namespace {

void writeAll(int fd, const std::string& path, std::string_view contents, const std::string& tmp)
{
    std::size_t done = 0;
    while (done < contents.size()) {
        const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            const int err = errno;
            ::close(fd);
            if (!tmp.empty())
                ::unlink(tmp.c_str());
            throw FileWriteError("cannot write " + path + ": " + std::strerror(err));
        }
        done += static_cast<std::size_t>(n);
    }
}

}  // namespace

void writeFileAtomically(const std::string& requested, std::string_view contents)
{
    // A symbolic link is followed: the file it names is replaced, the link stays. A device, pipe
    // or socket (/dev/stdout, a FIFO) is written straight through: it has no old contents to keep
    // and must not be replaced by a regular file.
    if (requested.empty())
        throw FileWriteError("cannot write: the output's file name is empty");
    // A dangling link is followed too: its target is created.
    std::string path = requested;
    struct stat st {};
    for (int hops = 0; hops < 40 && ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode); ++hops) {
        std::error_code ec;
        const std::filesystem::path target = std::filesystem::read_symlink(path, ec);
        if (ec)
            break;
        const std::string next = (target.is_absolute() ? target : std::filesystem::path(path).parent_path() / target).string();
        // /proc/self/fd/1 of a pipe reads "pipe:[123]", no path: the link itself opens the pipe.
        struct stat nextSt {};
        if (::stat(next.c_str(), &nextSt) != 0 && ::stat(path.c_str(), &nextSt) == 0)
            break;
        path = next;
    }
    mode_t mode = 0666;  // less the umask, as any new file
    bool keepMode = false;
    if (::stat(path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode))
            throw FileWriteError("cannot write " + requested + ": it is a directory");
        if (!S_ISREG(st.st_mode)) {
            const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd < 0)
                throw FileWriteError("cannot write " + requested + ": " + std::strerror(errno));
            writeAll(fd, requested, contents, {});
            if (::close(fd) != 0)
                throw FileWriteError("cannot write " + requested + ": " + std::strerror(errno));
            return;
        }
        // The replacement keeps the replaced file's permissions (a private file stays private).
        mode = st.st_mode & 07777;
        keepMode = true;
    }
    std::random_device rd;
    const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + '.' + std::to_string(rd());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, keepMode ? 0600 : mode);
    if (fd < 0)
        throw FileWriteError("cannot write " + path + ": " + std::strerror(errno));
    if (keepMode && ::fchmod(fd, mode) != 0) {
        const int err = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        throw FileWriteError("cannot write " + path + ": " + std::strerror(err));
    }
    writeAll(fd, path, contents, tmp);
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw FileWriteError("cannot write " + path + ": " + std::strerror(err));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw FileWriteError("cannot replace " + path + ": " + std::strerror(err));
    }
}

std::string readFile(const std::string& path, std::size_t maxBytes)
{
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw InputError(Location{path, 0, 0}, "is a directory, not a file");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw InputError(Location{path, 0, 0}, std::string("cannot open file: ") + std::strerror(errno));
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
        // A pipe (<(cat f), /dev/stdin) or a device: read to its end, within the limit.
        std::string data;
        char buffer[1 << 16];
        while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
            data.append(buffer, static_cast<std::size_t>(in.gcount()));
            if (data.size() > maxBytes)
                throw InputError(Location{path, 0, 0},
                                 "holds more than the limit of " + std::to_string(maxBytes) + " bytes (not a regular file)");
        }
        if (in.bad())
            throw InputError(Location{path, 0, 0}, std::string("cannot read: ") + std::strerror(errno));
        return data;
    }
    in.seekg(0, std::ios::end);
    const auto size = in.tellg();
    if (size < 0)
        throw InputError(Location{path, 0, 0}, "cannot read file");
    if (static_cast<std::size_t>(size) > maxBytes)
        throw InputError(Location{path, 0, 0},
                         "file is " + std::to_string(static_cast<long long>(size)) + " bytes, more than the limit of "
                             + std::to_string(maxBytes));
    in.seekg(0, std::ios::beg);
    std::string data(static_cast<std::size_t>(size), '\0');
    in.read(data.data(), size);
    if (!in)
        throw InputError(Location{path, 0, 0}, "cannot read file");
    return data;
}

}  // namespace moex
