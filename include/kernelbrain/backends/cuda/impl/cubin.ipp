// Bodies of kernelbrain/backends/cuda/cubin.hpp, included by it or by kernelbrain/src.hpp (config.hpp).
//
// The layout, as NVRTC 13 writes it for sm_90 (checked against ptxas -v and cuFuncGetAttribute):
// an ELF64 little-endian file, e_machine 190 (EM_CUDA). An entry point is a FUNC symbol whose
// st_other has bit 0x10 set. The section ".nv.info" holds records keyed by symbol index
// (REGCOUNT, FRAME_SIZE); ".nv.info.<kernel>" holds the kernel's own records (KPARAM_INFO per
// parameter, MAX_THREADS, REQNTID). A record is {u8 format, u8 attribute} followed by a u16 value
// (formats 1-3) or a u16 length and that many bytes (format 4). Static shared memory is the size of
// ".nv.shared.<kernel>", which on sm_90 also counts the 1 KiB per block that the device reserves
// (a module with a ".nv.shared.reserved.0" section); that part is subtracted.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include "kernelbrain/backends/cuda/arch_table.hpp"
#include "kernelbrain/backends/cuda/cubin.hpp"
#include "kernelbrain/core/error.hpp"

namespace kernelbrain {
namespace detail::cubin {

enum : std::uint8_t {
  fmt_sval = 4,  // u16 length + bytes; 1 (none), 2 (byte) and 3 (half word) carry a u16 in place
  attr_max_threads = 0x05,
  attr_reqntid = 0x10,
  attr_frame_size = 0x11,
  attr_kparam_info = 0x17,
  attr_regcount = 0x2f,
};
inline constexpr std::uint8_t sto_entry = 0x10;
inline constexpr std::uint32_t sht_symtab = 2, sht_nobits = 8;
/// The shared memory per block the device reserves on sm_90, which ".nv.shared.<kernel>" counts there.
inline constexpr std::uint64_t reserved_smem_sm90 =
    static_cast<std::uint64_t>(find_gpu_arch("sm_90")->sm.reserved_smem_per_block);

/// Bounds-checked little-endian reads from the image.
class reader {
 public:
  explicit reader(std::string_view image) : s_(image) {}
  template <class T>
  [[nodiscard]] T at(std::uint64_t off, char const* what) const {
    if (off > s_.size() || s_.size() - off < sizeof(T)) fail(std::string(what) + " lies outside the file");
    T v;
    std::memcpy(&v, s_.data() + off, sizeof(T));  // cubins are little-endian, as are the hosts we build for
    return v;
  }
  [[nodiscard]] std::string_view bytes(std::uint64_t off, std::uint64_t n, char const* what) const {
    if (off > s_.size() || s_.size() - off < n) fail(std::string(what) + " lies outside the file");
    return s_.substr(off, n);
  }
  /// A NUL-terminated string starting at `off` inside [begin, begin + size).
  [[nodiscard]] std::string_view cstr(std::uint64_t begin, std::uint64_t size, std::uint64_t off,
                                      char const* what) const {
    const auto table = bytes(begin, size, what);
    if (off >= table.size()) fail(std::string(what) + ": a name lies outside its string table");
    const auto end = table.find('\0', off);
    if (end == std::string_view::npos) fail(std::string(what) + ": an unterminated name");
    return table.substr(off, end - off);
  }
  [[noreturn]] static void fail(std::string const& why) { throw error("cubin: " + why); }

 private:
  std::string_view s_;
};

struct section {
  std::string_view name;
  std::uint32_t type = 0, link = 0, info = 0;
  std::uint64_t offset = 0, size = 0, entsize = 0;
};

/// Calls f(attribute, payload) for every record of an .nv.info section.
template <class F>
void for_each_record(reader const& r, section const& s, F&& f) {
  const auto data = r.bytes(s.offset, s.size, "an .nv.info section");
  std::size_t p = 0;
  while (p + 4 <= data.size()) {
    const auto format = static_cast<std::uint8_t>(data[p]);
    const auto attr = static_cast<std::uint8_t>(data[p + 1]);
    std::uint16_t v;
    std::memcpy(&v, data.data() + p + 2, 2);
    if (format == fmt_sval) {
      if (data.size() - (p + 4) < v) reader::fail("an .nv.info record runs past its section");
      f(attr, data.substr(p + 4, v));
      p += 4 + v;
    } else {
      f(attr, data.substr(p + 2, 2));
      p += 4;
    }
  }
}

inline std::uint32_t u32(std::string_view b, std::size_t off) {
  std::uint32_t v = 0;
  if (b.size() >= off + 4) std::memcpy(&v, b.data() + off, 4);
  return v;
}

inline int clamp_int(std::uint64_t v) { return v > 0x7fffffffULL ? 0x7fffffff : static_cast<int>(v); }

}  // namespace detail::cubin

cubin_info read_cubin(std::string_view image) {
  using namespace detail::cubin;
  const reader r(image);
  if (image.size() < 64 || image.substr(0, 4) != std::string_view("\x7f"
                                                                  "ELF",
                                                                  4))
    reader::fail("not an ELF file (" + std::to_string(image.size()) + " bytes)");
  if (image[4] != 2 || image[5] != 1) reader::fail("not a 64-bit little-endian ELF file");
  if (const auto machine = r.at<std::uint16_t>(18, "the header"); machine != 190)
    reader::fail("not a CUDA ELF file (e_machine " + std::to_string(machine) + ", expected 190)");
  cubin_info out;
  out.sm = static_cast<int>((r.at<std::uint32_t>(48, "the header") >> 8) & 0xff);
  const auto shoff = r.at<std::uint64_t>(40, "the header");
  const auto shentsize = r.at<std::uint16_t>(58, "the header");
  const auto shnum = r.at<std::uint16_t>(60, "the header");
  const auto shstrndx = r.at<std::uint16_t>(62, "the header");
  if (shentsize < 64) reader::fail("section headers of " + std::to_string(shentsize) + " bytes");
  if (shstrndx >= shnum) reader::fail("no section-name table");
  std::vector<section> secs(shnum);
  for (std::uint16_t i = 0; i < shnum; ++i) {
    const auto h = shoff + std::uint64_t{i} * shentsize;
    auto& s = secs[i];
    s.type = r.at<std::uint32_t>(h + 4, "a section header");
    s.offset = r.at<std::uint64_t>(h + 24, "a section header");
    s.size = r.at<std::uint64_t>(h + 32, "a section header");
    s.link = r.at<std::uint32_t>(h + 40, "a section header");
    s.info = r.at<std::uint32_t>(h + 44, "a section header");
    s.entsize = r.at<std::uint64_t>(h + 56, "a section header");
  }
  auto const& names = secs[shstrndx];
  for (std::uint16_t i = 0; i < shnum; ++i) {
    const auto h = shoff + std::uint64_t{i} * shentsize;
    secs[i].name = r.cstr(names.offset, names.size, r.at<std::uint32_t>(h, "a section header"), "the section names");
  }
  auto named = [&](std::string_view n) -> section const* {
    for (auto const& s : secs)
      if (s.name == n) return &s;
    return nullptr;
  };

  // Entry points: FUNC symbols marked as entries.
  section const* symtab = nullptr;
  for (auto const& s : secs)
    if (s.type == sht_symtab) symtab = &s;
  if (!symtab) reader::fail("no symbol table");
  if (symtab->entsize < 24 || symtab->link >= shnum) reader::fail("a malformed symbol table");
  auto const& strtab = secs[symtab->link];
  std::map<std::uint32_t, std::size_t> by_symbol;  // symbol index -> kernel
  const auto nsyms = symtab->size / symtab->entsize;
  for (std::uint64_t k = 0; k < nsyms; ++k) {
    const auto e = symtab->offset + k * symtab->entsize;
    const auto info = r.at<std::uint8_t>(e + 4, "a symbol");
    const auto other = r.at<std::uint8_t>(e + 5, "a symbol");
    if ((info & 0xf) != 2 /* STT_FUNC */) continue;
    if (r.at<std::uint16_t>(e + 6, "a symbol") == 0) {  // SHN_UNDEF: supplied by the driver at load time
      out.imports.emplace_back(
          r.cstr(strtab.offset, strtab.size, r.at<std::uint32_t>(e, "a symbol"), "the symbol names"));
      continue;
    }
    if ((other & sto_entry) == 0) continue;
    cubin_kernel kernel;
    kernel.name =
        std::string(r.cstr(strtab.offset, strtab.size, r.at<std::uint32_t>(e, "a symbol"), "the symbol names"));
    by_symbol[static_cast<std::uint32_t>(k)] = out.kernels.size();
    out.kernels.push_back(std::move(kernel));
  }

  // Registers and stack frames, keyed by symbol index.
  if (auto const* nv = named(".nv.info")) {
    for_each_record(r, *nv, [&](std::uint8_t attr, std::string_view v) {
      if ((attr != attr_regcount && attr != attr_frame_size) || v.size() < 8) return;
      auto it = by_symbol.find(u32(v, 0));
      if (it == by_symbol.end()) return;
      auto& kernel = out.kernels[it->second];
      (attr == attr_regcount ? kernel.registers : kernel.local_bytes) = clamp_int(u32(v, 4));
    });
  }
  const bool reserves = named(".nv.shared.reserved.0") != nullptr;
  for (auto& kernel : out.kernels) {
    if (auto const* info = named(".nv.info." + kernel.name)) {
      std::map<std::uint32_t, int> params;  // ordinal -> size
      for_each_record(r, *info, [&](std::uint8_t attr, std::string_view v) {
        if (attr == attr_kparam_info && v.size() >= 12) {
          // u32 index, u16 ordinal, u16 offset, u32 flags whose bits 18-31 hold the size in bytes.
          std::uint16_t ordinal;
          std::memcpy(&ordinal, v.data() + 4, 2);
          params[ordinal] = static_cast<int>((u32(v, 8) >> 18) & 0x3fff);
        } else if (attr == attr_max_threads && v.size() >= 12) {
          const std::uint64_t n = std::uint64_t{u32(v, 0)} * u32(v, 4) * u32(v, 8);
          kernel.max_threads = clamp_int(n);
        } else if (attr == attr_reqntid && v.size() >= 12) {
          for (int d = 0; d < 3; ++d)
            kernel.required_block[static_cast<std::size_t>(d)] = clamp_int(u32(v, 4 * static_cast<std::size_t>(d)));
        }
      });
      std::uint32_t expect = 0;
      for (auto const& [ordinal, size] : params) {
        if (ordinal != expect++) reader::fail("kernel '" + kernel.name + "': parameter ordinals are not 0..n-1");
        kernel.param_sizes.push_back(size);
      }
    }
    if (auto const* sh = named(".nv.shared." + kernel.name)) {
      std::uint64_t bytes = sh->size;
      if (reserves && bytes >= reserved_smem_sm90) bytes -= reserved_smem_sm90;
      kernel.static_smem = clamp_int(bytes);
    }
  }
  return out;
}

cubin_info read_cubin_file(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("cubin: cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return read_cubin(ss.str());
  } catch (error const& e) {
    throw error(std::string(e.what()) + " (" + path + ")");
  }
}

}  // namespace kernelbrain
