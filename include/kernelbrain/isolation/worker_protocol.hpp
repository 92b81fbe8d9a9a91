// The parent/worker protocol every process-isolated backend shares: length-prefixed messages over a
// stream socket, a small binary body encoding, the shared-memory arena, and the worker's serve loop.
// Backend-neutral: a backend differs only in the request types it defines and what its worker does
// with them. Linux only (memfd_create, prctl); both the parent and the worker executable include it.
#pragma once
#if !defined(__linux__)
#error "kernelbrain/isolation/worker_protocol.hpp: process-isolated backends need Linux (memfd_create, prctl)"
#endif
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>
#include "kernelbrain/isolation/process_supervision.hpp"

namespace kernelbrain::detail {

/// Message types below `first_backend_type` belong to the protocol itself.
namespace wire {
inline constexpr std::uint32_t version = 2;
inline constexpr std::uint32_t hello = 1;     ///< worker -> parent once at start: version, role
inline constexpr std::uint32_t progress = 2;  ///< worker -> parent while busy: resets the watchdog
inline constexpr std::uint32_t first_backend_type = 16;
inline constexpr std::size_t max_body = std::size_t{64} << 20;  ///< a larger frame is a protocol error
/// File descriptors a worker finds its channel and arena on (the parent arranges them at spawn).
inline constexpr int channel_fd = 3;
inline constexpr int arena_fd = 4;
}  // namespace wire

/// A protocol violation or a broken channel (not a candidate's fault).
class wire_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct wire_message {
  std::uint32_t type = 0;
  std::string body;
};

/// Appends fixed-width native-endian values (both ends are the same machine and build).
class wire_writer {
 public:
  template <class T>
  requires std::is_arithmetic_v<T> || std::is_enum_v<T> wire_writer& put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
    return *this;
  }
  wire_writer& str(std::string_view s) {
    put(static_cast<std::uint64_t>(s.size()));
    out_.append(s.data(), s.size());
    return *this;
  }
  template <class T>
  wire_writer& vec(std::vector<T> const& v) {
    put(static_cast<std::uint64_t>(v.size()));
    for (auto const& x : v) put(x);
    return *this;
  }
  [[nodiscard]] std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

/// Reads what wire_writer wrote; throws wire_error on a short or malformed body.
class wire_reader {
 public:
  explicit wire_reader(std::string_view body) : in_(body) {}
  template <class T>
  requires std::is_arithmetic_v<T> || std::is_enum_v<T> T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str() {
    const auto n = get<std::uint64_t>();
    need(n);
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  template <class T>
  std::vector<T> vec() {
    const auto n = get<std::uint64_t>();
    if (n > in_.size()) throw wire_error("wire: vector length " + std::to_string(n) + " exceeds the message");
    std::vector<T> v;
    v.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) v.push_back(get<T>());
    return v;
  }
  [[nodiscard]] bool done() const noexcept { return pos_ == in_.size(); }

 private:
  void need(std::uint64_t n) const {
    if (n > in_.size() - pos_) throw wire_error("wire: message body ends early");
  }
  std::string_view in_;
  std::size_t pos_ = 0;
};

/// A frame: u32 body length, u32 type, body.
inline std::string frame(std::uint32_t type, std::string_view body) {
  if (body.size() > wire::max_body)
    throw wire_error("wire: message of " + std::to_string(body.size()) + " bytes is too large");
  std::string f;
  f.reserve(8 + body.size());
  const auto len = static_cast<std::uint32_t>(body.size());
  f.append(reinterpret_cast<char const*>(&len), 4);
  f.append(reinterpret_cast<char const*>(&type), 4);
  f.append(body.data(), body.size());
  return f;
}
/// Tries to cut one complete frame off the front of `buf`.
inline bool unframe(std::string& buf, wire_message& out) {
  if (buf.size() < 8) return false;
  std::uint32_t len = 0;
  std::memcpy(&len, buf.data(), 4);
  if (len > wire::max_body) throw wire_error("wire: frame announces " + std::to_string(len) + " bytes");
  if (buf.size() < 8 + static_cast<std::size_t>(len)) return false;
  std::memcpy(&out.type, buf.data() + 4, 4);
  out.body.assign(buf, 8, len);
  buf.erase(0, 8 + static_cast<std::size_t>(len));
  return true;
}

/// Blocking send of one message. MSG_NOSIGNAL: a dead peer is an error return, never a SIGPIPE.
inline void write_message(int fd, std::uint32_t type, std::string_view body) {
  const std::string f = detail::frame(type, body);
  std::size_t off = 0;
  while (off < f.size()) {
    const ssize_t n = ::send(fd, f.data() + off, f.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw wire_error(std::string("wire: send failed: ") + std::strerror(errno));
    off += static_cast<std::size_t>(n);
  }
}

/// Blocking receive of one message; false on a clean end of stream before a frame started.
inline bool read_message(int fd, wire_message& out) {
  auto read_exact = [fd](char* p, std::size_t n, bool eof_ok) {
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::recv(fd, p + got, n - got, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0 && got == 0 && eof_ok) return false;
      if (r <= 0)
        throw wire_error(r == 0 ? "wire: stream ended inside a frame"
                                : std::string("wire: recv failed: ") + std::strerror(errno));
      got += static_cast<std::size_t>(r);
    }
    return true;
  };
  char head[8];
  if (!read_exact(head, 8, true)) return false;
  std::uint32_t len = 0;
  std::memcpy(&len, head, 4);
  std::memcpy(&out.type, head + 4, 4);
  if (len > wire::max_body) throw wire_error("wire: frame announces " + std::to_string(len) + " bytes");
  out.body.resize(len);
  if (len) read_exact(out.body.data(), len, false);
  return true;
}

/// Buffers shared between the trusted parent and a worker: one memfd, mapped by both. The parent
/// creates and grows it; a worker inherits the descriptor at spawn and re-maps when a request says
/// the arena has grown. Offsets, never pointers, cross the channel (the mappings differ).
class shared_arena {
 public:
  shared_arena() = default;
  shared_arena(shared_arena const&) = delete;
  shared_arena& operator=(shared_arena const&) = delete;
  shared_arena(shared_arena&& o) noexcept { swap(o); }
  shared_arena& operator=(shared_arena&& o) noexcept {
    if (this != &o) {
      release();
      swap(o);
    }
    return *this;
  }
  ~shared_arena() { release(); }

  /// Parent side: a new, empty arena (close-on-exec; the spawner hands it to the worker explicitly).
  [[nodiscard]] static shared_arena create(char const* name) {
    shared_arena a;
    a.fd_ = ::memfd_create(name, MFD_CLOEXEC);
    if (a.fd_ < 0) throw wire_error(std::string("shared arena: memfd_create failed: ") + std::strerror(errno));
    a.owner_ = true;
    return a;
  }
  /// Worker side: the arena inherited on `fd`.
  [[nodiscard]] static shared_arena attach(int fd) {
    shared_arena a;
    a.fd_ = fd;
    return a;
  }

  /// Makes at least `bytes` usable. The owner grows the file; both sides re-map.
  void ensure(std::size_t bytes) {
    if (bytes == 0 || (bytes <= size_ && data_)) return;
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::size_t want = (bytes + page - 1) / page * page;
    if (want == 0) want = page;
    if (owner_) {
      want = std::max(want, size_ + size_ / 2);  // grow geometrically: fewer re-maps on both sides
      want = (want + page - 1) / page * page;
      if (::ftruncate(fd_, static_cast<off_t>(want)) != 0)
        throw wire_error("shared arena: cannot grow to " + std::to_string(want) + " bytes: " + std::strerror(errno));
    } else {
      // The owner may have grown it further than this request needs: map all of it.
      const off_t end = ::lseek(fd_, 0, SEEK_END);
      if (end < 0 || static_cast<std::size_t>(end) < bytes)
        throw wire_error("shared arena: request names " + std::to_string(bytes) + " bytes but the arena holds " +
                         std::to_string(end < 0 ? 0 : end));
      want = static_cast<std::size_t>(end);
    }
    void* p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED)
      throw wire_error("shared arena: mmap of " + std::to_string(want) + " bytes failed: " + std::strerror(errno));
    if (data_) ::munmap(data_, size_);
    data_ = static_cast<std::byte*>(p);
    size_ = want;
  }

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] int fd() const noexcept { return fd_; }
  template <class T>
  [[nodiscard]] T* at(std::size_t offset) const noexcept {
    return reinterpret_cast<T*>(data_ + offset);
  }

 private:
  void swap(shared_arena& o) noexcept {
    std::swap(fd_, o.fd_);
    std::swap(owner_, o.owner_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
  }
  void release() noexcept {
    if (data_) ::munmap(data_, size_);
    if (owner_ && fd_ >= 0) ::close(fd_);
    data_ = nullptr;
    size_ = 0;
    fd_ = -1;
  }
  int fd_ = -1;
  bool owner_ = false;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// What a worker's request handler gets besides the request: the arena and a heartbeat.
class worker_context {
 public:
  worker_context(int channel, shared_arena& arena) : channel_(channel), arena_(&arena) {}
  [[nodiscard]] shared_arena& arena() noexcept { return *arena_; }
  /// Tells the parent the worker is alive; the watchdog's silence deadline starts again.
  void heartbeat() { write_message(channel_, wire::progress, {}); }

 private:
  int channel_;
  shared_arena* arena_;
};

/// Handles one request; returns the reply body (the reply has the request's type).
using request_handler = std::function<std::string(std::uint32_t type, std::string_view body, worker_context&)>;

/// A worker executable's main loop: checks that it was started by a parent (channel and arena on
/// their descriptors) that is still alive, arranges to die with the parent, runs `lock_down` (the
/// backend's own restrictions), says hello, then answers requests until the channel closes.
/// Returns the process exit status: 2 not started by an evaluator, 3 the parent was already gone,
/// 4 protocol error, 5 the watch thread could not start.
///
/// Dying with the parent: a watch thread (detail::supervision::kill_group_when_peer_closes) kills
/// the worker's whole process group, the candidate and anything it started included, as soon as the
/// parent's end of the channel closes, which the kernel does when the parent dies, however it dies.
/// Not PR_SET_PDEATHSIG: that fires when the parent *thread* that spawned the worker exits, and
/// workers are spawned by whichever thread called the evaluator first (often the evaluation thread
/// of one search, which ends with that search while the evaluator goes on serving the next). The
/// parent's end is close-on-exec and spawn closes every descriptor it does not hand over, so no
/// other child holds it open. The watch thread exists before `lock_down` and the first request: a
/// census of the worker's threads must be taken after serve_requests started.
inline int serve_requests(std::string_view role, request_handler const& handle,
                          std::function<void()> const& lock_down = {}) {
  if (::fcntl(wire::channel_fd, F_GETFD) < 0 || ::fcntl(wire::arena_fd, F_GETFD) < 0) {
    std::fprintf(stderr,
                 "kernelbrain worker (%.*s): this program is started by KernelBrain's evaluator, not by hand "
                 "(no channel on fd %d)\n",
                 static_cast<int>(role.size()), role.data(), wire::channel_fd);
    return 2;
  }
  // An orphaned worker would keep a candidate running forever. The channel watch covers a parent
  // that dies from now on; a parent already gone has been replaced by init or a subreaper.
  if (detail::supervision::parent_is_gone()) return 3;
  if (const int rc = detail::supervision::kill_group_when_peer_closes(wire::channel_fd); rc != 0) {
    std::fprintf(stderr, "kernelbrain worker (%.*s): cannot start the thread that watches the parent: %s\n",
                 static_cast<int>(role.size()), role.data(), std::strerror(rc));
    return 5;
  }
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // a crashing candidate must not write core files
  if (lock_down) lock_down();
  shared_arena arena = shared_arena::attach(wire::arena_fd);
  worker_context ctx(wire::channel_fd, arena);
  try {
    write_message(wire::channel_fd, wire::hello, wire_writer{}.put(wire::version).str(role).take());
    wire_message m;
    while (read_message(wire::channel_fd, m)) {
      std::string reply = handle(m.type, m.body, ctx);
      write_message(wire::channel_fd, m.type, reply);
    }
  } catch (wire_error const& e) {
    std::fprintf(stderr, "kernelbrain worker (%.*s): %s\n", static_cast<int>(role.size()), role.data(), e.what());
    return 4;
  }
  return 0;
}

}  // namespace kernelbrain::detail
