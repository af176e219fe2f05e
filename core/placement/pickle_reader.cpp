#include "placement/pickle_reader.h"

#include "common/diagnostics.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_map>
#include <utility>

namespace moex {

namespace {

// Every opcode of protocols 0-5, so that a refused one is named in the error.
const char* opcodeName(unsigned char op)
{
    static const std::pair<int, const char*> kNames[] = {
        {'(', "MARK"}, {'.', "STOP"}, {'0', "POP"}, {'1', "POP_MARK"}, {'2', "DUP"}, {'F', "FLOAT"}, {'I', "INT"},
        {'J', "BININT"}, {'K', "BININT1"}, {'L', "LONG"}, {'M', "BININT2"}, {'N', "NONE"}, {'P', "PERSID"},
        {'Q', "BINPERSID"}, {'R', "REDUCE"}, {'S', "STRING"}, {'T', "BINSTRING"}, {'U', "SHORT_BINSTRING"},
        {'V', "UNICODE"}, {'X', "BINUNICODE"}, {'a', "APPEND"}, {'b', "BUILD"}, {'c', "GLOBAL"}, {'d', "DICT"},
        {'}', "EMPTY_DICT"}, {'e', "APPENDS"}, {'g', "GET"}, {'h', "BINGET"}, {'i', "INST"}, {'j', "LONG_BINGET"},
        {'l', "LIST"}, {']', "EMPTY_LIST"}, {'o', "OBJ"}, {'p', "PUT"}, {'q', "BINPUT"}, {'r', "LONG_BINPUT"},
        {'s', "SETITEM"}, {'t', "TUPLE"}, {')', "EMPTY_TUPLE"}, {'u', "SETITEMS"}, {'G', "BINFLOAT"}, {'B', "BINBYTES"},
        {'C', "SHORT_BINBYTES"}, {0x80, "PROTO"}, {0x81, "NEWOBJ"}, {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"},
        {0x85, "TUPLE1"}, {0x86, "TUPLE2"}, {0x87, "TUPLE3"}, {0x88, "NEWTRUE"}, {0x89, "NEWFALSE"}, {0x8a, "LONG1"},
        {0x8b, "LONG4"}, {0x8c, "SHORT_BINUNICODE"}, {0x8d, "BINUNICODE8"}, {0x8e, "BINBYTES8"}, {0x8f, "EMPTY_SET"},
        {0x90, "ADDITEMS"}, {0x91, "FROZENSET"}, {0x92, "NEWOBJ_EX"}, {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"},
        {0x95, "FRAME"}, {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"}
    };
    for (const auto& [code, name] : kNames) {
        if (code == op)
            return name;
    }
    return nullptr;
}

std::string hexByte(unsigned char op)
{
    static const char* digits = "0123456789abcdef";
    return std::string("0x") + digits[op >> 4] + digits[op & 15];
}

const char* kRebuildTensor = "torch._utils _rebuild_tensor_v2";
const char* kOrderedDict = "collections OrderedDict";

bool storageDType(std::string_view global, TorchDType& out)
{
    static const std::pair<const char*, TorchDType> kStorages[] = {
        {"torch DoubleStorage", TorchDType::f64}, {"torch FloatStorage", TorchDType::f32},
        {"torch HalfStorage", TorchDType::f16},   {"torch BFloat16Storage", TorchDType::bf16},
        {"torch LongStorage", TorchDType::i64},   {"torch IntStorage", TorchDType::i32},
        {"torch ShortStorage", TorchDType::i16},  {"torch CharStorage", TorchDType::i8},
        {"torch ByteStorage", TorchDType::u8},    {"torch BoolStorage", TorchDType::boolean},
    };
    for (const auto& [name, t] : kStorages) {
        if (global == name) {
            out = t;
            return true;
        }
    }
    return false;
}

class Vm {
public:
    Vm(std::string_view bytes, const std::string& file, std::size_t fileOffset, const PickleLimits& limits)
        : m_b(bytes), m_file(file), m_base(fileOffset), m_limits(limits),
          m_copyBudget(limits.max_copied_nodes + 2 * bytes.size())
    {
    }

    PickleValue run();

private:
    [[noreturn]] void fail(const std::string& message) const
    {
        throw InputError(Location{m_file, 0, 0}, "byte " + std::to_string(m_base + m_op) + " (pickle byte "
                                                     + std::to_string(m_op) + "): " + message);
    }
    std::string opLabel(unsigned char op) const
    {
        const char* name = opcodeName(op);
        return "opcode " + hexByte(op) + (name ? std::string(" ") + name : std::string(" (not a pickle opcode)"));
    }

    std::string_view take(std::size_t n)
    {
        if (n > m_b.size() - m_pos)
            fail("pickle ends inside " + opLabel(static_cast<unsigned char>(m_b[m_op])) + " (truncated file?)");
        const std::string_view s = m_b.substr(m_pos, n);
        m_pos += n;
        return s;
    }
    std::uint64_t le(std::size_t n)
    {
        const std::string_view s = take(n);
        std::uint64_t v = 0;
        for (std::size_t i = n; i-- > 0;)
            v = (v << 8) | static_cast<unsigned char>(s[i]);
        return v;
    }
    std::string line()
    {
        const std::size_t nl = m_b.find('\n', m_pos);
        if (nl == std::string_view::npos && m_b.size() - m_pos <= 256)
            fail("pickle ends inside opcode 0x63 GLOBAL (truncated file?)");
        if (nl == std::string_view::npos || nl - m_pos > 256)
            fail("GLOBAL name is longer than 256 bytes");
        std::string s(m_b.substr(m_pos, nl - m_pos));
        m_pos = nl + 1;
        for (const char c : s) {
            if (c < 0x21 || c > 0x7e)
                fail("GLOBAL name holds a non-printable byte");
        }
        return s;
    }

    void push(PickleValue v)
    {
        if (m_stack.size() >= m_limits.max_stack)
            fail("pickle stack deeper than " + std::to_string(m_limits.max_stack));
        if (v.depth > m_limits.max_depth)
            fail("values nested deeper than " + std::to_string(m_limits.max_depth));
        m_stack.push_back(std::move(v));
    }
    PickleValue pop(const char* what)
    {
        if (m_stack.size() <= (m_marks.empty() ? 0 : m_marks.back()))
            fail(std::string(what) + " on an empty stack");
        PickleValue v = std::move(m_stack.back());
        m_stack.pop_back();
        return v;
    }
    PickleValue& top(const char* what)
    {
        if (m_stack.size() <= (m_marks.empty() ? 0 : m_marks.back()))
            fail(std::string(what) + " on an empty stack");
        return m_stack.back();
    }
    std::vector<PickleValue> popToMark(const char* what)
    {
        if (m_marks.empty())
            fail(std::string(what) + " without a MARK");
        const std::size_t mark = m_marks.back();
        m_marks.pop_back();
        std::vector<PickleValue> items(std::make_move_iterator(m_stack.begin() + static_cast<std::ptrdiff_t>(mark)),
                                       std::make_move_iterator(m_stack.end()));
        m_stack.resize(mark);
        return items;
    }

    static PickleValue container(PickleValue::Kind kind, std::vector<PickleValue> items)
    {
        PickleValue v;
        v.kind = kind;
        for (const auto& it : items)
            v.depth = std::max(v.depth, it.depth + 1);
        v.items = std::move(items);
        return v;
    }
    void add(PickleValue& to, PickleValue value)
    {
        to.depth = std::max(to.depth, value.depth + 1);
        if (to.depth > m_limits.max_depth)
            fail("values nested deeper than " + std::to_string(m_limits.max_depth));
        to.items.push_back(std::move(value));
    }
    void setItem(PickleValue& dict, PickleValue key, PickleValue value)
    {
        if (key.kind != PickleValue::Kind::string)
            fail(std::string("dict key must be a string, found ") + PickleValue::kindName(key.kind));
        const auto it = std::find(dict.keys.begin(), dict.keys.end(), key.s);
        if (it != dict.keys.end()) {  // a repeated key replaces the value, as in Python
            dict.depth = std::max(dict.depth, value.depth + 1);
            dict.items[static_cast<std::size_t>(it - dict.keys.begin())] = std::move(value);
            return;
        }
        dict.keys.push_back(std::move(key.s));
        add(dict, std::move(value));
    }

    // Copies through the memo are the one way a small file could build a huge value: count them.
    std::size_t nodes(const PickleValue& v, std::size_t budget) const
    {
        std::size_t n = 1 + v.s.size() / 64 + v.keys.size();
        for (const auto& it : v.items) {
            if (n > budget)
                break;
            n += nodes(it, budget - n);
        }
        return n;
    }
    PickleValue copy(const PickleValue& v)
    {
        const std::size_t left = m_copyBudget - m_copied;
        const std::size_t n = nodes(v, left);
        if (n > left)
            fail("values copied through the memo exceed " + std::to_string(m_copyBudget) + " nodes");
        m_copied += n;
        return v;
    }
    void put(std::uint64_t index)
    {
        if (m_memo.count(static_cast<std::uint32_t>(index)) == 0 && m_memo.size() >= m_limits.max_memo)
            fail("more than " + std::to_string(m_limits.max_memo) + " memo entries");
        m_memo[static_cast<std::uint32_t>(index)] = copy(top("PUT"));
    }
    void get(std::uint64_t index)
    {
        const auto it = m_memo.find(static_cast<std::uint32_t>(index));
        if (it == m_memo.end())
            fail("memo entry " + std::to_string(index) + " is read before it is written");
        push(copy(it->second));
    }

    void global();
    void persistentId();
    void reduce();

    std::string_view m_b;
    const std::string& m_file;
    std::size_t m_base;
    const PickleLimits& m_limits;
    std::size_t m_pos = 0;
    std::size_t m_op = 0;  // offset of the opcode being run, for messages
    std::size_t m_copyBudget;
    std::size_t m_copied = 0;
    std::vector<PickleValue> m_stack;
    std::vector<std::size_t> m_marks;
    std::unordered_map<std::uint32_t, PickleValue> m_memo;
};

void Vm::global()
{
    const std::string module = line();
    const std::string name = line();
    const std::string full = module + ' ' + name;
    TorchDType t{};
    if (full != kRebuildTensor && full != kOrderedDict && !storageDType(full, t))
        fail("GLOBAL '" + full + "' is not allowed; a torch.save file of counts needs only "
             "torch._utils._rebuild_tensor_v2, torch.<Type>Storage and collections.OrderedDict");
    PickleValue v;
    v.kind = PickleValue::Kind::global;
    v.s = full;
    push(std::move(v));
}

// torch.save stores each storage out of band: ('storage', torch.<Type>Storage, key, location, numel).
void Vm::persistentId()
{
    const PickleValue pid = pop("BINPERSID");
    TorchDType dtype{};
    if (pid.kind != PickleValue::Kind::tuple || pid.items.size() != 5 || pid.items[0].kind != PickleValue::Kind::string
        || pid.items[0].s != "storage" || pid.items[1].kind != PickleValue::Kind::global
        || !storageDType(pid.items[1].s, dtype) || pid.items[2].kind != PickleValue::Kind::string
        || pid.items[3].kind != PickleValue::Kind::string || pid.items[4].kind != PickleValue::Kind::integer)
        fail("BINPERSID expects ('storage', torch.<Type>Storage, key, location, numel)");
    const std::string& key = pid.items[2].s;
    if (key.empty() || key.size() > 64 || key.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyz_") != std::string::npos)
        fail("storage key '" + key + "' is not a plain name");
    if (pid.items[4].i < 0)
        fail("storage has a negative size");
    auto ref = std::make_shared<TensorRef>();
    ref->storage_key = key;
    ref->location = pid.items[3].s;
    ref->dtype = dtype;
    ref->storage_numel = pid.items[4].i;
    PickleValue v;
    v.kind = PickleValue::Kind::storage;
    v.tensor = std::move(ref);
    push(std::move(v));
}

void Vm::reduce()
{
    PickleValue args = pop("REDUCE");
    const PickleValue callable = pop("REDUCE");
    if (callable.kind != PickleValue::Kind::global)
        fail(std::string("REDUCE needs a callable, found ") + PickleValue::kindName(callable.kind));
    if (args.kind != PickleValue::Kind::tuple)
        fail("REDUCE arguments must be a tuple");
    if (callable.s == kOrderedDict) {
        if (!args.items.empty())
            fail("OrderedDict is only accepted with no arguments");
        PickleValue d;
        d.kind = PickleValue::Kind::dict;
        push(std::move(d));
        return;
    }
    if (callable.s != kRebuildTensor)
        fail("REDUCE of '" + callable.s + "' is not allowed (only _rebuild_tensor_v2 and OrderedDict)");

    // _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, backward_hooks[, metadata])
    const auto& a = args.items;
    const auto isInts = [](const PickleValue& t) {
        return t.kind == PickleValue::Kind::tuple && std::all_of(t.items.begin(), t.items.end(), [](const PickleValue& x) {
                   return x.kind == PickleValue::Kind::integer && x.i >= 0;
               });
    };
    if (a.size() < 6 || a.size() > 7 || a[0].kind != PickleValue::Kind::storage || a[1].kind != PickleValue::Kind::integer
        || a[1].i < 0 || !isInts(a[2]) || !isInts(a[3]) || a[2].items.size() != a[3].items.size()
        || a[4].kind != PickleValue::Kind::boolean || a[5].kind != PickleValue::Kind::dict || !a[5].items.empty()
        || (a.size() == 7 && a[6].kind != PickleValue::Kind::dict && a[6].kind != PickleValue::Kind::none))
        fail("_rebuild_tensor_v2 expects (storage, offset, size, stride, requires_grad, {}), with sizes and strides "
             "non-negative integers of one length");
    if (a[2].items.size() > 16)
        fail("tensor with more than 16 dimensions");
    auto ref = std::make_shared<TensorRef>(*a[0].tensor);
    ref->offset = a[1].i;
    // The last element reached must lie inside the storage; bounds keep the arithmetic exact.
    // Saturating at kCap (far above any storage) keeps the products from overflowing.
    constexpr std::int64_t kCap = std::int64_t{1} << 61;
    const auto mulCap = [](std::int64_t x, std::int64_t y) { return y != 0 && x > kCap / y ? kCap : x * y; };
    std::int64_t last = std::min(ref->offset, kCap);
    std::int64_t numel = 1;
    for (std::size_t d = 0; d < a[2].items.size(); ++d) {
        const std::int64_t n = a[2].items[d].i;
        const std::int64_t s = a[3].items[d].i;
        ref->size.push_back(n);
        ref->stride.push_back(s);
        numel = mulCap(numel, n);
        if (n > 0)
            last = std::min(last + mulCap(n - 1, s), kCap);
    }
    if (numel > (std::int64_t{1} << 31))
        fail("tensor has more than 2^31 elements");
    if (numel > 0 && last >= ref->storage_numel)
        fail("tensor view (offset " + std::to_string(ref->offset) + ") reaches element " + std::to_string(last)
             + " of a storage of " + std::to_string(ref->storage_numel));
    PickleValue v;
    v.kind = PickleValue::Kind::tensor;
    v.tensor = std::move(ref);
    push(std::move(v));
}

PickleValue Vm::run()
{
    using K = PickleValue::Kind;
    while (m_pos < m_b.size()) {
        m_op = m_pos;
        const auto op = static_cast<unsigned char>(m_b[m_pos++]);
        if (m_op == 0 && op != 0x80)
            fail("a torch.save pickle starts with PROTO 2, found " + opLabel(op));
        switch (op) {
        case 0x80: {
            const std::uint64_t proto = le(1);
            if (m_op != 0 || proto != 2)
                fail("PROTO " + std::to_string(proto) + (m_op != 0 ? " in the middle of the pickle" : "")
                     + "; torch.save writes protocol 2");
            break;
        }
        case '.': {
            if (!m_marks.empty() || m_stack.size() != 1)
                fail("STOP with " + std::to_string(m_stack.size()) + " values on the stack and "
                     + std::to_string(m_marks.size()) + " open MARKs");
            if (m_pos != m_b.size())
                fail(std::to_string(m_b.size() - m_pos) + " bytes after STOP");
            PickleValue root = std::move(m_stack.back());
            if (root.kind == K::storage || root.kind == K::global)
                fail("the pickle's value is a bare storage or global");
            return root;
        }
        case '(':
            if (m_marks.size() >= m_limits.max_marks)
                fail("more than " + std::to_string(m_limits.max_marks) + " nested MARKs");
            m_marks.push_back(m_stack.size());
            break;
        case '}': push(container(K::dict, {})); break;
        case ']': push(container(K::list, {})); break;
        case ')': push(container(K::tuple, {})); break;
        case 'N': push(PickleValue{}); break;
        case 0x88:
        case 0x89: {
            PickleValue v;
            v.kind = K::boolean;
            v.i = op == 0x88 ? 1 : 0;
            push(std::move(v));
            break;
        }
        case 'K':
        case 'M':
        case 'J':
        case 0x8a: {
            PickleValue v;
            v.kind = K::integer;
            if (op == 'K' || op == 'M') {
                v.i = static_cast<std::int64_t>(le(op == 'K' ? 1 : 2));
            } else if (op == 'J') {
                v.i = static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4)));
            } else {  // LONG1: n bytes, two's complement little-endian
                const std::size_t n = static_cast<std::size_t>(le(1));
                if (n > 8)
                    fail("LONG1 of " + std::to_string(n) + " bytes does not fit 64 bits");
                std::uint64_t u = n == 0 ? 0 : le(n);
                if (n > 0 && n < 8 && (u >> (8 * n - 1)) & 1u)
                    u |= ~std::uint64_t{0} << (8 * n);
                v.i = static_cast<std::int64_t>(u);
            }
            push(std::move(v));
            break;
        }
        case 'G': {
            const std::string_view s = take(8);
            std::uint64_t u = 0;
            for (const char c : s)
                u = (u << 8) | static_cast<unsigned char>(c);  // big-endian
            PickleValue v;
            v.kind = K::floating;
            v.f = std::bit_cast<double>(u);
            push(std::move(v));
            break;
        }
        case 'X': {
            const std::uint64_t n = le(4);
            if (n > m_limits.max_string_bytes)
                fail("string of " + std::to_string(n) + " bytes, more than the limit of "
                     + std::to_string(m_limits.max_string_bytes));
            PickleValue v;
            v.kind = K::string;
            v.s = std::string(take(static_cast<std::size_t>(n)));
            push(std::move(v));
            break;
        }
        case 'q': put(le(1)); break;
        case 'r': put(le(4)); break;
        case 'h': get(le(1)); break;
        case 'j': get(le(4)); break;
        case 't': push(container(K::tuple, popToMark("TUPLE"))); break;
        case 0x85:
        case 0x86:
        case 0x87: {
            const std::size_t n = op - 0x84u;
            std::vector<PickleValue> items(n);
            for (std::size_t k = n; k-- > 0;)
                items[k] = pop(opcodeName(op));
            push(container(K::tuple, std::move(items)));
            break;
        }
        case 'a': {
            PickleValue v = pop("APPEND");
            PickleValue& list = top("APPEND");
            if (list.kind != K::list)
                fail(std::string("APPEND to a ") + PickleValue::kindName(list.kind));
            add(list, std::move(v));
            break;
        }
        case 'e': {
            std::vector<PickleValue> items = popToMark("APPENDS");
            PickleValue& list = top("APPENDS");
            if (list.kind != K::list)
                fail(std::string("APPENDS to a ") + PickleValue::kindName(list.kind));
            for (auto& it : items)
                add(list, std::move(it));
            break;
        }
        case 's': {
            PickleValue value = pop("SETITEM");
            PickleValue key = pop("SETITEM");
            PickleValue& dict = top("SETITEM");
            if (dict.kind != K::dict)
                fail(std::string("SETITEM on a ") + PickleValue::kindName(dict.kind));
            setItem(dict, std::move(key), std::move(value));
            break;
        }
        case 'u': {
            std::vector<PickleValue> items = popToMark("SETITEMS");
            if (items.size() % 2 != 0)
                fail("SETITEMS with an odd number of values");
            PickleValue& dict = top("SETITEMS");
            if (dict.kind != K::dict)
                fail(std::string("SETITEMS on a ") + PickleValue::kindName(dict.kind));
            for (std::size_t k = 0; k < items.size(); k += 2)
                setItem(dict, std::move(items[k]), std::move(items[k + 1]));
            break;
        }
        case 'c': global(); break;
        case 'Q': persistentId(); break;
        case 'R': reduce(); break;
        default:
            fail(opLabel(op) + " is not allowed; only the opcodes torch.save writes for dicts of tensors are read");
        }
    }
    m_op = m_pos;
    fail(m_b.empty() ? std::string("empty pickle") : std::string("pickle ends without STOP (truncated file?)"));
}

}  // namespace

const char* toString(TorchDType t)
{
    switch (t) {
    case TorchDType::f64: return "float64";
    case TorchDType::f32: return "float32";
    case TorchDType::f16: return "float16";
    case TorchDType::bf16: return "bfloat16";
    case TorchDType::i64: return "int64";
    case TorchDType::i32: return "int32";
    case TorchDType::i16: return "int16";
    case TorchDType::i8: return "int8";
    case TorchDType::u8: return "uint8";
    case TorchDType::boolean: return "bool";
    }
    return "?";
}

std::size_t elementSize(TorchDType t)
{
    switch (t) {
    case TorchDType::f64:
    case TorchDType::i64: return 8;
    case TorchDType::f32:
    case TorchDType::i32: return 4;
    case TorchDType::f16:
    case TorchDType::bf16:
    case TorchDType::i16: return 2;
    case TorchDType::i8:
    case TorchDType::u8:
    case TorchDType::boolean: return 1;
    }
    return 1;
}

std::int64_t TensorRef::numel() const
{
    std::int64_t n = 1;
    for (const auto d : size)
        n *= d;
    return n;
}

const PickleValue* PickleValue::get(std::string_view key) const
{
    if (kind != Kind::dict)
        return nullptr;
    for (std::size_t k = 0; k < keys.size(); ++k) {
        if (keys[k] == key)
            return &items[k];
    }
    return nullptr;
}

const char* PickleValue::kindName(Kind k)
{
    switch (k) {
    case Kind::none: return "None";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::floating: return "float";
    case Kind::string: return "string";
    case Kind::tuple: return "tuple";
    case Kind::list: return "list";
    case Kind::dict: return "dict";
    case Kind::tensor: return "tensor";
    case Kind::storage: return "storage";
    case Kind::global: return "global";
    }
    return "?";
}

PickleValue parsePickle(std::string_view bytes, const std::string& file, std::size_t fileOffset,
                        const PickleLimits& limits)
{
    return Vm(bytes, file, fileOffset, limits).run();
}

}  // namespace moex
