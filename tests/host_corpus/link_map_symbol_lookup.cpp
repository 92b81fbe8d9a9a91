// expect: policy
// detail: forbidden system call kill
// Source-policy bypass without dlsym: walks the loaded objects with dl_iterate_phdr (own struct
// layouts, no <link.h>), finds "kill" in libc's .dynsym by name and calls it on its process group.
#include <cstdint>
#include <cstring>
#include "kernelbrain/evaluate/host_abi.h"

struct Phdr { std::uint32_t type, flags; std::uint64_t off, vaddr, paddr, filesz, memsz, align; };
struct PhdrInfo { std::uint64_t addr; const char* name; const Phdr* phdr; std::uint16_t phnum; };
struct Dyn { std::int64_t tag; std::uint64_t val; };
struct Sym { std::uint32_t name; unsigned char info, other; std::uint16_t shndx; std::uint64_t value, size; };
extern "C" int dl_iterate_phdr(int (*)(PhdrInfo*, unsigned long, void*), void*) noexcept;
using sig_fn = int (*)(int, int);
static const char* wanted = "kill";

static int find_in_libc(PhdrInfo* o, unsigned long, void* out) {
  if (!o->name || !std::strstr(o->name, "libc.so")) return 0;
  for (int i = 0; i < o->phnum; ++i) {
    if (o->phdr[i].type != 2) continue;  // PT_DYNAMIC
    std::uint64_t sym = 0, str = 0;
    for (auto* d = reinterpret_cast<const Dyn*>(o->addr + o->phdr[i].vaddr); d->tag; ++d) {
      if (d->tag == 6) sym = d->val;  // DT_SYMTAB
      if (d->tag == 5) str = d->val;  // DT_STRTAB
    }
    if (sym < o->addr) sym += o->addr;
    if (str < o->addr) str += o->addr;
    for (auto* s = reinterpret_cast<const Sym*>(sym); reinterpret_cast<std::uint64_t>(s) < str; ++s)
      if (s->value && !std::strcmp(reinterpret_cast<const char*>(str) + s->name, wanted)) {
        *static_cast<sig_fn*>(out) = reinterpret_cast<sig_fn>(o->addr + s->value);
        return 1;
      }
  }
  return 0;
}

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) acc += (y[r * C + c] = x[r * C + c] * w[c]);
    s[r] = static_cast<float>(acc);
  }
  sig_fn f = nullptr;
  if (dl_iterate_phdr(find_in_libc, &f) && f) f(0, 9);  // SIGKILL to the process group
}
