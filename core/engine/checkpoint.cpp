// Opening a checkpoint directory: the index, the shards mapped read-only, one table of tensor names.
#include "engine/checkpoint.h"
#include "common/json_input.h"

#include "common/diagnostics.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace moex::engine {

namespace fs = std::filesystem;

namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";

[[noreturn]] void fail(const std::string& file, const std::string& message)
{
    throw InputError(Location{file, 0, 0}, message);
}

}  // namespace

// One shard: its bytes mapped read-only (pages come in as the weights are read) and its tensors,
// whose data views point into the mapping.
struct Checkpoint::Shard {
    std::string path;
    void* map = nullptr;
    std::size_t size = 0;
    std::vector<SafetensorsTensor> tensors;

    explicit Shard(std::string p) : path(std::move(p))
    {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            fail(path, std::string("cannot open the shard: ") + std::strerror(errno));
        struct stat st {};
        if (::fstat(fd, &st) != 0) {
            const int err = errno;
            ::close(fd);
            fail(path, std::string("cannot read the shard's size: ") + std::strerror(err));
        }
        size = static_cast<std::size_t>(st.st_size);
        // mmap refuses length 0; an empty file is the reader's "too short" error below.
        if (size > 0) {
            map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
            if (map == MAP_FAILED) {
                const int err = errno;
                map = nullptr;
                ::close(fd);
                fail(path, std::string("cannot map the shard: ") + std::strerror(err));
            }
        }
        ::close(fd);  // the mapping stays valid without the descriptor
        try {
            tensors = parseSafetensors(std::string_view(static_cast<const char*>(map), size), path);
        } catch (...) {
            unmap();
            throw;
        }
    }
    ~Shard() { unmap(); }
    Shard(const Shard&) = delete;
    Shard& operator=(const Shard&) = delete;

    void unmap()
    {
        if (map != nullptr)
            ::munmap(map, size);
        map = nullptr;
    }
};

Checkpoint::~Checkpoint() = default;

std::shared_ptr<const Checkpoint> Checkpoint::open(const std::string& dir)
{
    std::shared_ptr<Checkpoint> c(new Checkpoint);
    c->m_dir = dir;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        fail(dir, "the checkpoint is not a directory");
    const fs::path index = fs::path(dir) / kIndexName;

    // Shard file name -> the tensors the index places in it (empty without an index).
    std::map<std::string, std::vector<std::string>> wanted;
    if (fs::exists(index, ec)) {
        c->m_lookupFile = index.string();
        if (fs::is_directory(index, ec))
            throw InputError(Location{index.string(), 0, 0}, "the index is a directory, not a file");
        std::ifstream in(index, std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        const nlohmann::json j = parseJsonInput(text.str(), c->m_lookupFile, 0, "the index");
        const auto map = j.is_object() ? j.find("weight_map") : j.end();
        if (map == j.end() || !map->is_object())
            fail(c->m_lookupFile, "needs a \"weight_map\" object of tensor name -> shard file");
        for (const auto& [name, shard] : map->items()) {
            if (!shard.is_string())
                fail(c->m_lookupFile, "weight_map: tensor '" + name + "' maps to " + jsonSnippet(shard) + ", not a file name");
            const fs::path p(shard.get<std::string>());
            // Shards live in the checkpoint directory: a name that climbs out of it is refused.
            if (p.empty() || p.has_parent_path() || p.filename() == ".." || p.filename() == ".")
                fail(c->m_lookupFile, "weight_map: tensor '" + name + "' maps to '" + p.string()
                                          + "', not a file name inside the checkpoint directory");
            wanted[p.string()].push_back(name);
        }
        if (wanted.empty())
            fail(c->m_lookupFile, "weight_map names no tensor");
        for (const auto& [shard, names] : wanted)
            if (!fs::is_regular_file(fs::path(dir) / shard, ec))
                fail(c->m_lookupFile, "weight_map: tensor '" + names.front() + "' is in shard '" + shard
                                          + "', which is not in " + dir);
    } else {
        c->m_lookupFile = dir;
        for (const auto& entry : fs::directory_iterator(dir, ec))
            if (entry.path().extension() == ".safetensors" && entry.is_regular_file(ec))
                wanted[entry.path().filename().string()];
        if (wanted.empty())
            fail(dir, std::string("the checkpoint has neither ") + kIndexName + " nor any *.safetensors file");
    }

    for (const auto& [shard, names] : wanted) {
        c->m_shards.push_back(std::make_unique<Shard>((fs::path(dir) / shard).string()));
        const Shard& s = *c->m_shards.back();
        for (const SafetensorsTensor& t : s.tensors) {
            const auto [it, fresh] = c->m_tensors.try_emplace(t.name, Found{&t, &s.path});
            if (!fresh)
                fail(s.path, "tensor '" + t.name + "' is also in " + *it->second.file
                                 + "; a checkpoint holds each tensor once");
        }
        for (const std::string& name : names) {
            const auto it = c->m_tensors.find(name);
            if (it == c->m_tensors.end() || it->second.file != &s.path)
                fail(c->m_lookupFile, "weight_map puts tensor '" + name + "' in '" + shard + "', but " + s.path
                                          + " has no such tensor");
        }
    }
    return c;
}

Checkpoint::Found Checkpoint::find(const std::string& name) const
{
    const auto it = m_tensors.find(name);
    return it == m_tensors.end() ? Found{} : it->second;
}

}  // namespace moex::engine
