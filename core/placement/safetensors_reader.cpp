#include "placement/safetensors_reader.h"
#include "common/json_input.h"

#include "common/diagnostics.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace moex {

namespace {

constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;  // the safetensors library's own limit

std::size_t dtypeSize(const std::string& dtype)
{
    static const std::pair<const char*, std::size_t> kSizes[] = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
        {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8},
    };
    for (const auto& [name, size] : kSizes) {
        if (dtype == name)
            return size;
    }
    return 0;
}

std::string offsets(const SafetensorsTensor& t, std::size_t dataStart)
{
    return "[" + std::to_string(t.offset - dataStart) + ", " + std::to_string(t.offset - dataStart + t.data.size()) + "]";
}

}  // namespace

std::vector<SafetensorsTensor> parseSafetensors(std::string_view bytes, const std::string& file)
{
    return withJsonErrors(file, 0, [&] {
        const auto fail = [&](std::size_t at, const std::string& message) {
            throw InputError(Location{file, 0, 0}, "safetensors byte " + std::to_string(at) + ": " + message);
        };
        if (bytes.size() < 8)
            fail(0, "file of " + std::to_string(bytes.size()) + " bytes is too short for the 8-byte header length");
        std::uint64_t headerLen = 0;
        for (int i = 7; i >= 0; --i)
            headerLen = (headerLen << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
        if (headerLen > bytes.size() - 8)
            fail(0, "header length " + std::to_string(headerLen) + " runs past the end of the file ("
                        + std::to_string(bytes.size()) + " bytes)");
        if (headerLen > kMaxHeaderBytes)
            fail(0, "header of " + std::to_string(headerLen) + " bytes is larger than the limit of "
                        + std::to_string(kMaxHeaderBytes));
        const std::string_view header = bytes.substr(8, static_cast<std::size_t>(headerLen));
        const std::size_t dataStart = 8 + static_cast<std::size_t>(headerLen);
        const std::size_t dataSize = bytes.size() - dataStart;
        // Where a tensor's name appears in the header, so that its errors point near it.
        const auto near = [&](const std::string& name) {
            const std::size_t p = header.find("\"" + name + "\"");
            return p == std::string_view::npos ? std::size_t{8} : 8 + p;
        };

        nlohmann::json j;
        try {
            j = parseJsonInput(header, file, 0, "the safetensors header");
        } catch (const JsonSyntaxError& e) {
            fail(8 + e.offset(), "header is not valid JSON: " + e.detail());
        }
        if (!j.is_object())
            fail(8, "header must be a JSON object of tensors");

        std::vector<SafetensorsTensor> out;
        for (const auto& [name, info] : j.items()) {
            if (name == "__metadata__") {
                if (!info.is_object())
                    fail(near(name), "\"__metadata__\" must be an object");
                continue;
            }
            const auto dtype = info.is_object() ? info.find("dtype") : info.end();
            const auto shape = info.is_object() ? info.find("shape") : info.end();
            const auto offs = info.is_object() ? info.find("data_offsets") : info.end();
            if (!info.is_object() || info.size() != 3 || dtype == info.end() || shape == info.end() || offs == info.end())
                fail(near(name), "tensor '" + name + "' must be {\"dtype\", \"shape\", \"data_offsets\"}");
            if (!dtype->is_string() || dtypeSize(dtype->get<std::string>()) == 0)
                fail(near(name), "tensor '" + name + "' has an unknown dtype " + jsonSnippet(*dtype));
            const std::size_t elem = dtypeSize(dtype->get<std::string>());
            if (!shape->is_array() || shape->size() > 16)
                fail(near(name), "tensor '" + name + "': \"shape\" must be an array of at most 16 sizes");
            SafetensorsTensor t;
            t.name = name;
            t.dtype = dtype->get<std::string>();
            std::uint64_t bytesNeeded = elem;
            for (const auto& d : *shape) {
                if (!d.is_number_unsigned() || d.get<std::uint64_t>() > dataSize)
                    fail(near(name), "tensor '" + name + "': size " + jsonSnippet(d) + " is not an integer in [0, "
                                         + std::to_string(dataSize) + "]");
                const std::uint64_t n = d.get<std::uint64_t>();
                bytesNeeded = n == 0 ? 0 : (bytesNeeded > dataSize / n ? dataSize + 1 : bytesNeeded * n);
                t.shape.push_back(static_cast<std::int64_t>(n));
            }
            if (!offs->is_array() || offs->size() != 2 || !(*offs)[0].is_number_unsigned()
                || !(*offs)[1].is_number_unsigned())
                fail(near(name), "tensor '" + name + "': \"data_offsets\" must be [begin, end], non-negative integers");
            const std::uint64_t begin = (*offs)[0].get<std::uint64_t>();
            const std::uint64_t end = (*offs)[1].get<std::uint64_t>();
            if (begin > end || end > dataSize)
                fail(near(name), "tensor '" + name + "': data_offsets [" + std::to_string(begin) + ", " + std::to_string(end)
                                     + "] are outside the data (" + std::to_string(dataSize) + " bytes after the header)");
            if (end - begin != bytesNeeded)
                fail(near(name), "tensor '" + name + "': data_offsets span " + std::to_string(end - begin)
                                     + " bytes but dtype and shape need " + std::to_string(bytesNeeded));
            t.offset = dataStart + static_cast<std::size_t>(begin);
            t.data = bytes.substr(t.offset, static_cast<std::size_t>(end - begin));
            out.push_back(std::move(t));
        }

        // The tensors must tile the data exactly: no overlap (two names for one set of bytes) and no
        // holes (bytes no tensor accounts for).
        std::vector<const SafetensorsTensor*> order;
        for (const auto& t : out)
            order.push_back(&t);
        std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
            return a->offset != b->offset ? a->offset < b->offset : a->data.size() < b->data.size();
        });
        std::size_t expected = dataStart;
        const SafetensorsTensor* previous = nullptr;
        for (const auto* t : order) {
            if (previous != nullptr && t->offset < expected)
                fail(near(t->name), "tensor '" + t->name + "' data_offsets " + offsets(*t, dataStart) + " overlap tensor '"
                                        + previous->name + "' " + offsets(*previous, dataStart));
            if (t->offset > expected)
                fail(near(t->name), "bytes " + std::to_string(expected - dataStart) + " to "
                                        + std::to_string(t->offset - dataStart) + " of the data belong to no tensor");
            expected = t->offset + t->data.size();
            previous = t;
        }
        if (expected != bytes.size())
            fail(expected, std::to_string(bytes.size() - expected) + " bytes after the last tensor belong to no tensor");
        return out;
    });
}

std::vector<std::int64_t> safetensorsInts(const SafetensorsTensor& t, const std::string& file)
{
    std::size_t elem = 0;
    if (t.dtype == "I64")
        elem = 8;
    else if (t.dtype == "I32")
        elem = 4;
    else
        throw InputError(Location{file, 0, 0}, "safetensors byte " + std::to_string(t.offset) + ": tensor '" + t.name
                                                   + "' has dtype " + t.dtype + "; token counts must be I64 or I32");
    std::vector<std::int64_t> out(t.data.size() / elem);
    for (std::size_t k = 0; k < out.size(); ++k) {
        std::uint64_t u = 0;
        for (std::size_t i = elem; i-- > 0;)
            u = (u << 8) | static_cast<unsigned char>(t.data[k * elem + i]);
        out[k] = elem == 8 ? static_cast<std::int64_t>(u) : static_cast<std::int32_t>(static_cast<std::uint32_t>(u));
    }
    return out;
}

}  // namespace moex
