#include "common/atomic_file.h"

#include "common/diagnostics.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

namespace moex {

void writeFileAtomically(const std::string& path, std::string_view contents)
{
    std::random_device rd;
    const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + '.' + std::to_string(rd());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        throw FileWriteError("cannot write " + path + ": " + std::strerror(errno));
    std::size_t done = 0;
    while (done < contents.size()) {
        const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            const int err = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            throw FileWriteError("cannot write " + path + ": " + std::strerror(err));
        }
        done += static_cast<std::size_t>(n);
    }
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
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw InputError(Location{path, 0, 0}, std::string("cannot open file: ") + std::strerror(errno));
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
