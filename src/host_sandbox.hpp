// host_sandbox: the operating-system rules a host executor (the process that runs one candidate's
// code) lives under, for kernelbrain-host-worker only. Two layers, both unprivileged and both
// irreversible once installed:
//   - Landlock (Linux 5.13+, where the kernel enables it): while the module loads, files can be read
//     only under the module's directory and the system library directories; nothing can be written,
//     created or removed anywhere; on ABI 6+ signals to processes outside the sandbox are refused too.
//   - seccomp-bpf: a list of the system calls a kernel needs (memory, its own threads, clocks, exit,
//     signals to itself), checked by the kernel on every call. Anything else traps: SIGSYS, whose
//     handler names the call to the trusted worker and ends the process (host_executor.hpp). Two
//     filters stack: the load filter adds read-only file access for the dynamic loader, the run
//     filter (installed after the module loaded) takes it away again.
// The filter is written as raw BPF against <linux/seccomp.h> rather than with libseccomp: the GPU
// machines cannot install packages, and the list is small enough to read in one screen.
#pragma once
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kernelbrain::host_sandbox {

// ---- system call names --------------------------------------------------------------------------------

/// The name of system call `nr` on this architecture ("clone", "openat"), or "system call N". Only
/// calls a candidate might be refused are listed.
inline std::string syscall_name(long nr) {
#ifdef SYS_fork
  if (nr == SYS_fork) return "fork";
#endif
#ifdef SYS_vfork
  if (nr == SYS_vfork) return "vfork";
#endif
#ifdef SYS_open
  if (nr == SYS_open) return "open";
#endif
#ifdef SYS_alarm
  if (nr == SYS_alarm) return "alarm";
#endif
#ifdef SYS_pipe
  if (nr == SYS_pipe) return "pipe";
#endif
#ifdef SYS_dup2
  if (nr == SYS_dup2) return "dup2";
#endif
#ifdef SYS_creat
  if (nr == SYS_creat) return "creat";
#endif
#ifdef SYS_unlink
  if (nr == SYS_unlink) return "unlink";
#endif
#ifdef SYS_rename
  if (nr == SYS_rename) return "rename";
#endif
#ifdef SYS_mkdir
  if (nr == SYS_mkdir) return "mkdir";
#endif
#ifdef SYS_access
  if (nr == SYS_access) return "access";
#endif
#ifdef SYS_stat
  if (nr == SYS_stat) return "stat";
#endif
#ifdef SYS_readlink
  if (nr == SYS_readlink) return "readlink";
#endif
#ifdef SYS_getdents
  if (nr == SYS_getdents) return "getdents";
#endif
#ifdef SYS_time
  if (nr == SYS_time) return "time";
#endif
#ifdef SYS_clone
  if (nr == SYS_clone) return "clone";
#endif
#ifdef SYS_clone3
  if (nr == SYS_clone3) return "clone3";
#endif
#ifdef SYS_execve
  if (nr == SYS_execve) return "execve";
#endif
#ifdef SYS_execveat
  if (nr == SYS_execveat) return "execveat";
#endif
#ifdef SYS_kill
  if (nr == SYS_kill) return "kill";
#endif
#ifdef SYS_tkill
  if (nr == SYS_tkill) return "tkill";
#endif
#ifdef SYS_tgkill
  if (nr == SYS_tgkill) return "tgkill";
#endif
#ifdef SYS_rt_sigqueueinfo
  if (nr == SYS_rt_sigqueueinfo) return "rt_sigqueueinfo";
#endif
#ifdef SYS_rt_tgsigqueueinfo
  if (nr == SYS_rt_tgsigqueueinfo) return "rt_tgsigqueueinfo";
#endif
#ifdef SYS_rt_sigaction
  if (nr == SYS_rt_sigaction) return "rt_sigaction";
#endif
#ifdef SYS_openat
  if (nr == SYS_openat) return "openat";
#endif
#ifdef SYS_openat2
  if (nr == SYS_openat2) return "openat2";
#endif
#ifdef SYS_read
  if (nr == SYS_read) return "read";
#endif
#ifdef SYS_write
  if (nr == SYS_write) return "write";
#endif
#ifdef SYS_pread64
  if (nr == SYS_pread64) return "pread64";
#endif
#ifdef SYS_pwrite64
  if (nr == SYS_pwrite64) return "pwrite64";
#endif
#ifdef SYS_readv
  if (nr == SYS_readv) return "readv";
#endif
#ifdef SYS_writev
  if (nr == SYS_writev) return "writev";
#endif
#ifdef SYS_close
  if (nr == SYS_close) return "close";
#endif
#ifdef SYS_socket
  if (nr == SYS_socket) return "socket";
#endif
#ifdef SYS_socketpair
  if (nr == SYS_socketpair) return "socketpair";
#endif
#ifdef SYS_connect
  if (nr == SYS_connect) return "connect";
#endif
#ifdef SYS_bind
  if (nr == SYS_bind) return "bind";
#endif
#ifdef SYS_listen
  if (nr == SYS_listen) return "listen";
#endif
#ifdef SYS_sendto
  if (nr == SYS_sendto) return "sendto";
#endif
#ifdef SYS_recvfrom
  if (nr == SYS_recvfrom) return "recvfrom";
#endif
#ifdef SYS_sendmsg
  if (nr == SYS_sendmsg) return "sendmsg";
#endif
#ifdef SYS_recvmsg
  if (nr == SYS_recvmsg) return "recvmsg";
#endif
#ifdef SYS_setitimer
  if (nr == SYS_setitimer) return "setitimer";
#endif
#ifdef SYS_getitimer
  if (nr == SYS_getitimer) return "getitimer";
#endif
#ifdef SYS_timer_create
  if (nr == SYS_timer_create) return "timer_create";
#endif
#ifdef SYS_timer_settime
  if (nr == SYS_timer_settime) return "timer_settime";
#endif
#ifdef SYS_timer_delete
  if (nr == SYS_timer_delete) return "timer_delete";
#endif
#ifdef SYS_timerfd_create
  if (nr == SYS_timerfd_create) return "timerfd_create";
#endif
#ifdef SYS_prlimit64
  if (nr == SYS_prlimit64) return "prlimit64";
#endif
#ifdef SYS_setrlimit
  if (nr == SYS_setrlimit) return "setrlimit";
#endif
#ifdef SYS_getrlimit
  if (nr == SYS_getrlimit) return "getrlimit";
#endif
#ifdef SYS_ptrace
  if (nr == SYS_ptrace) return "ptrace";
#endif
#ifdef SYS_process_vm_readv
  if (nr == SYS_process_vm_readv) return "process_vm_readv";
#endif
#ifdef SYS_process_vm_writev
  if (nr == SYS_process_vm_writev) return "process_vm_writev";
#endif
#ifdef SYS_mount
  if (nr == SYS_mount) return "mount";
#endif
#ifdef SYS_unshare
  if (nr == SYS_unshare) return "unshare";
#endif
#ifdef SYS_setns
  if (nr == SYS_setns) return "setns";
#endif
#ifdef SYS_chdir
  if (nr == SYS_chdir) return "chdir";
#endif
#ifdef SYS_fchdir
  if (nr == SYS_fchdir) return "fchdir";
#endif
#ifdef SYS_umask
  if (nr == SYS_umask) return "umask";
#endif
#ifdef SYS_unlinkat
  if (nr == SYS_unlinkat) return "unlinkat";
#endif
#ifdef SYS_renameat2
  if (nr == SYS_renameat2) return "renameat2";
#endif
#ifdef SYS_mkdirat
  if (nr == SYS_mkdirat) return "mkdirat";
#endif
#ifdef SYS_ioctl
  if (nr == SYS_ioctl) return "ioctl";
#endif
#ifdef SYS_fcntl
  if (nr == SYS_fcntl) return "fcntl";
#endif
#ifdef SYS_dup
  if (nr == SYS_dup) return "dup";
#endif
#ifdef SYS_dup3
  if (nr == SYS_dup3) return "dup3";
#endif
#ifdef SYS_pipe2
  if (nr == SYS_pipe2) return "pipe2";
#endif
#ifdef SYS_memfd_create
  if (nr == SYS_memfd_create) return "memfd_create";
#endif
#ifdef SYS_kcmp
  if (nr == SYS_kcmp) return "kcmp";
#endif
#ifdef SYS_pidfd_open
  if (nr == SYS_pidfd_open) return "pidfd_open";
#endif
#ifdef SYS_pidfd_send_signal
  if (nr == SYS_pidfd_send_signal) return "pidfd_send_signal";
#endif
#ifdef SYS_pidfd_getfd
  if (nr == SYS_pidfd_getfd) return "pidfd_getfd";
#endif
#ifdef SYS_setsid
  if (nr == SYS_setsid) return "setsid";
#endif
#ifdef SYS_setpgid
  if (nr == SYS_setpgid) return "setpgid";
#endif
#ifdef SYS_prctl
  if (nr == SYS_prctl) return "prctl";
#endif
#ifdef SYS_seccomp
  if (nr == SYS_seccomp) return "seccomp";
#endif
#ifdef SYS_bpf
  if (nr == SYS_bpf) return "bpf";
#endif
#ifdef SYS_perf_event_open
  if (nr == SYS_perf_event_open) return "perf_event_open";
#endif
#ifdef SYS_userfaultfd
  if (nr == SYS_userfaultfd) return "userfaultfd";
#endif
#ifdef SYS_io_uring_setup
  if (nr == SYS_io_uring_setup) return "io_uring_setup";
#endif
#ifdef SYS_io_uring_enter
  if (nr == SYS_io_uring_enter) return "io_uring_enter";
#endif
#ifdef SYS_ftruncate
  if (nr == SYS_ftruncate) return "ftruncate";
#endif
#ifdef SYS_truncate
  if (nr == SYS_truncate) return "truncate";
#endif
#ifdef SYS_fchmod
  if (nr == SYS_fchmod) return "fchmod";
#endif
#ifdef SYS_fchmodat
  if (nr == SYS_fchmodat) return "fchmodat";
#endif
#ifdef SYS_flock
  if (nr == SYS_flock) return "flock";
#endif
#ifdef SYS_sysinfo
  if (nr == SYS_sysinfo) return "sysinfo";
#endif
#ifdef SYS_uname
  if (nr == SYS_uname) return "uname";
#endif
#ifdef SYS_getdents64
  if (nr == SYS_getdents64) return "getdents64";
#endif
#ifdef SYS_newfstatat
  if (nr == SYS_newfstatat) return "newfstatat";
#endif
#ifdef SYS_fstat
  if (nr == SYS_fstat) return "fstat";
#endif
#ifdef SYS_statx
  if (nr == SYS_statx) return "statx";
#endif
#ifdef SYS_readlinkat
  if (nr == SYS_readlinkat) return "readlinkat";
#endif
#ifdef SYS_faccessat
  if (nr == SYS_faccessat) return "faccessat";
#endif
#ifdef SYS_faccessat2
  if (nr == SYS_faccessat2) return "faccessat2";
#endif
#ifdef SYS_lseek
  if (nr == SYS_lseek) return "lseek";
#endif
#ifdef SYS_eventfd2
  if (nr == SYS_eventfd2) return "eventfd2";
#endif
#ifdef SYS_epoll_create1
  if (nr == SYS_epoll_create1) return "epoll_create1";
#endif
#ifdef SYS_signalfd4
  if (nr == SYS_signalfd4) return "signalfd4";
#endif
#ifdef SYS_inotify_init1
  if (nr == SYS_inotify_init1) return "inotify_init1";
#endif
#ifdef SYS_sched_setscheduler
  if (nr == SYS_sched_setscheduler) return "sched_setscheduler";
#endif
#ifdef SYS_setpriority
  if (nr == SYS_setpriority) return "setpriority";
#endif
#ifdef SYS_wait4
  if (nr == SYS_wait4) return "wait4";
#endif
#ifdef SYS_waitid
  if (nr == SYS_waitid) return "waitid";
#endif
  return "system call " + std::to_string(nr);
}

// ---- seccomp-bpf --------------------------------------------------------------------------------------

#if defined(__x86_64__)
inline constexpr std::uint32_t audit_arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
inline constexpr std::uint32_t audit_arch = AUDIT_ARCH_AARCH64;
#else
#error "kernelbrain-host-worker: the host sandbox knows x86-64 and AArch64 only"
#endif

/// Builds a filter from rules, each tested in order against the call's number. A rule either allows
/// its call outright, allows it when one argument passes a test, or fails it with an errno; a call
/// no rule allows traps (SIGSYS, with the call's number for the handler to report).
class filter_builder {
 public:
  filter_builder() {
    // A call made under another architecture's numbering (x32, or int 0x80 on x86-64) never reaches
    // the rules: the whole process dies.
    load(offsetof(seccomp_data, arch));
    jump_eq(audit_arch, 1, 0);
    ret(SECCOMP_RET_KILL_PROCESS);
#if defined(__x86_64__)
    load(offsetof(seccomp_data, nr));
    emit(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 0, 1);  // __X32_SYSCALL_BIT
    ret(SECCOMP_RET_KILL_PROCESS);
#endif
  }

  filter_builder& allow(long nr) {
    const auto at = match(nr);
    ret(SECCOMP_RET_ALLOW);
    return end_rule(at);
  }
  /// Fails `nr` with `err` instead of trapping (a call a library tries first and falls back from).
  filter_builder& fail(long nr, int err) {
    const auto at = match(nr);
    ret(SECCOMP_RET_ERRNO | (static_cast<std::uint32_t>(err) & SECCOMP_RET_DATA));
    return end_rule(at);
  }
  /// Allows `nr` when the low 32 bits of argument `arg` equal `value`.
  filter_builder& allow_if_arg_eq(long nr, int arg, std::uint32_t value) {
    const auto at = match(nr);
    load(arg_low(arg));
    jump_eq(value, 0, 1);
    ret(SECCOMP_RET_ALLOW);
    ret(SECCOMP_RET_TRAP);
    return end_rule(at);
  }
  /// Allows `nr` when the low 32 bits of argument `arg` equal one of `values` or exceed `above`.
  filter_builder& allow_if_arg_in_or_above(long nr, int arg, std::vector<std::uint32_t> const& values,
                                           std::uint32_t above) {
    const auto at = match(nr);
    load(arg_low(arg));
    const auto n = static_cast<std::uint8_t>(values.size());
    for (std::uint8_t i = 0; i < n; ++i)  // equal: jump to the ALLOW after the last test
      jump_eq(values[i], static_cast<std::uint8_t>(n - i + 1), 0);
    emit(BPF_JMP | BPF_JGT | BPF_K, above, 1, 0);
    ret(SECCOMP_RET_TRAP);
    ret(SECCOMP_RET_ALLOW);
    return end_rule(at);
  }
  /// Allows `nr` when the low 32 bits of argument `arg` exceed `above`.
  filter_builder& allow_if_arg_above(long nr, int arg, std::uint32_t above) {
    return allow_if_arg_in_or_above(nr, arg, {}, above);
  }
  /// Allows `nr` when argument `arg` (all 64 bits) is zero: a null pointer.
  filter_builder& allow_if_arg_null(long nr, int arg) {
    const auto at = match(nr);
    load(arg_low(arg));
    jump_eq(0, 0, 3);
    load(arg_low(arg) + 4);
    jump_eq(0, 0, 1);
    ret(SECCOMP_RET_ALLOW);
    ret(SECCOMP_RET_TRAP);
    return end_rule(at);
  }
  /// Allows `nr` when every bit of `bits` is set in the low 32 bits of argument `arg`.
  filter_builder& allow_if_arg_has(long nr, int arg, std::uint32_t bits) {
    const auto at = match(nr);
    load(arg_low(arg));
    emit(BPF_ALU | BPF_AND | BPF_K, bits, 0, 0);
    jump_eq(bits, 0, 1);
    ret(SECCOMP_RET_ALLOW);
    ret(SECCOMP_RET_TRAP);
    return end_rule(at);
  }
  /// Allows `nr` when no bit of `bits` is set in the low 32 bits of argument `arg`.
  filter_builder& allow_if_arg_lacks(long nr, int arg, std::uint32_t bits) {
    const auto at = match(nr);
    load(arg_low(arg));
    emit(BPF_JMP | BPF_JSET | BPF_K, bits, 1, 0);
    ret(SECCOMP_RET_ALLOW);
    ret(SECCOMP_RET_TRAP);
    return end_rule(at);
  }

  /// Installs the filter on top of any installed before it (filters stack; the strictest answer
  /// wins). Returns 0 or an errno.
  int install() {
    ret(SECCOMP_RET_TRAP);
    sock_fprog prog{static_cast<unsigned short>(code_.size()), code_.data()};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return errno;
    return 0;
  }

 private:
  static constexpr std::uint32_t arg_low(int arg) {
    return static_cast<std::uint32_t>(offsetof(seccomp_data, args) + 8 * static_cast<std::size_t>(arg));
  }
  void emit(std::uint16_t code, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
    code_.push_back({code, jt, jf, k});
  }
  void load(std::uint32_t offset) { emit(BPF_LD | BPF_W | BPF_ABS, offset, 0, 0); }
  void jump_eq(std::uint32_t v, std::uint8_t jt, std::uint8_t jf) { emit(BPF_JMP | BPF_JEQ | BPF_K, v, jt, jf); }
  void ret(std::uint32_t action) { emit(BPF_RET | BPF_K, action, 0, 0); }
  /// Loads the call number and tests it; end_rule(at) makes a mismatch skip the rule's body.
  std::size_t match(long nr) {
    load(offsetof(seccomp_data, nr));
    jump_eq(static_cast<std::uint32_t>(nr), 0, 0);
    return code_.size() - 1;
  }
  filter_builder& end_rule(std::size_t at) {
    code_[at].jf = static_cast<std::uint8_t>(code_.size() - at - 1);
    return *this;
  }

  std::vector<sock_filter> code_;
};

/// What a kernel needs and nothing more: memory, its own threads, clocks, signals to itself, exit;
/// `go_fd` and `done_fd` are the executor's channel to the trusted worker, `pid` its own process.
/// `loading`: also what the dynamic loader needs to load a module (opening files read-only, where
/// Landlock says which, reading, mapping and closing them). The load filter is installed first and
/// stays; the run filter, installed after the module loaded, takes file access away again.
/// `report_fd` (>= 0, a sanitized build's executor): writing there too, where the sanitizer runtimes
/// write their reports.
inline filter_builder rules(int go_fd, int done_fd, pid_t pid, bool loading, int report_fd = -1) {
  filter_builder f;
  if (report_fd >= 0) {
    // The sanitizers' report code looks for files (the memory map, its own executable) to name the
    // modules in a stack trace: it is told they cannot be opened, and prints addresses instead. The
    // candidate ran under the ordinary filter before its sanitized build runs here.
#ifdef SYS_open
    f.fail(SYS_open, EACCES);
#endif
#ifdef SYS_readlink
    f.fail(SYS_readlink, EACCES);
#endif
    f.fail(SYS_readlinkat, EACCES);
    if (!loading) f.fail(SYS_openat, EACCES);
    // ...and asks whether stderr is a terminal (for colours): it is not.
    f.fail(SYS_ioctl, ENOTTY);
    // AddressSanitizer probes whether memory is readable by writing it into a pipe of its own (as a
    // thread starts): it may make pipes, write to descriptors above the channel's and close them.
    f.allow(SYS_pipe2);
    f.allow_if_arg_above(SYS_close, 0, static_cast<std::uint32_t>(std::max(done_fd, report_fd)));
  }
  if (loading) {  // first: the first rule that names a call answers for it
    f.allow_if_arg_lacks(SYS_openat, 2, O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND);
    // Installing the run filter afterwards.
    f.allow_if_arg_eq(SYS_prctl, 0, PR_SET_NO_NEW_PRIVS);
    f.allow_if_arg_eq(SYS_seccomp, 0, SECCOMP_SET_MODE_FILTER);
    for (long nr : {static_cast<long>(SYS_read), static_cast<long>(SYS_pread64), static_cast<long>(SYS_close),
                    static_cast<long>(SYS_fstat), static_cast<long>(SYS_newfstatat), static_cast<long>(SYS_lseek),
                    static_cast<long>(SYS_statx)})
      f.allow(nr);
  }
  for (long nr : {
#ifdef SYS_time
           static_cast<long>(SYS_time),
#endif
           static_cast<long>(SYS_mmap),
           static_cast<long>(SYS_munmap),
           static_cast<long>(SYS_mremap),
           static_cast<long>(SYS_mprotect),
           static_cast<long>(SYS_brk),
           static_cast<long>(SYS_madvise),
           static_cast<long>(SYS_futex),
           static_cast<long>(SYS_set_robust_list),
           static_cast<long>(SYS_rseq),
           static_cast<long>(SYS_exit),
           static_cast<long>(SYS_exit_group),
           static_cast<long>(SYS_rt_sigprocmask),
           static_cast<long>(SYS_rt_sigreturn),
           static_cast<long>(SYS_sigaltstack),
           static_cast<long>(SYS_sched_yield),
           static_cast<long>(SYS_sched_getaffinity),
           static_cast<long>(SYS_getpid),
           static_cast<long>(SYS_gettid),
           static_cast<long>(SYS_getppid),
           static_cast<long>(SYS_getuid),
           static_cast<long>(SYS_geteuid),
           static_cast<long>(SYS_getgid),
           static_cast<long>(SYS_getegid),
           static_cast<long>(SYS_getrandom),
           static_cast<long>(SYS_clock_gettime),
           static_cast<long>(SYS_clock_getres),
           static_cast<long>(SYS_gettimeofday),
           static_cast<long>(SYS_nanosleep),
           static_cast<long>(SYS_clock_nanosleep),
           static_cast<long>(SYS_membarrier),
           static_cast<long>(SYS_getcpu)})
    f.allow(nr);
  // Threads, not processes: clone must carry CLONE_THREAD. clone3 passes its flags in memory the
  // filter cannot read, so it fails with ENOSYS and glibc falls back to clone.
  f.allow_if_arg_has(SYS_clone, 0, CLONE_THREAD | CLONE_VM);
  f.fail(SYS_clone3, ENOSYS);
  // Signals to itself (abort, raise), to no one else.
  f.allow_if_arg_eq(SYS_tgkill, 0, static_cast<std::uint32_t>(pid));
  // Reading its own limits (glibc does, for thread stacks), never setting them.
  f.allow_if_arg_null(SYS_prlimit64, 2);
  // The channel: wait for "go" on one descriptor, say "done" on the other.
  f.allow_if_arg_eq(SYS_read, 0, static_cast<std::uint32_t>(go_fd));
  if (report_fd >= 0)
    f.allow_if_arg_in_or_above(SYS_write, 0,
                               {static_cast<std::uint32_t>(done_fd), static_cast<std::uint32_t>(report_fd)},
                               static_cast<std::uint32_t>(std::max(done_fd, report_fd)));
  else
    f.allow_if_arg_eq(SYS_write, 0, static_cast<std::uint32_t>(done_fd));
  return f;
}

// ---- Landlock -----------------------------------------------------------------------------------------

namespace landlock {
// The UAPI, spelled out here: distribution headers lag the running kernel (Debian 12's stop at ABI 2).
inline constexpr std::uint64_t fs_execute = 1ULL << 0, fs_write_file = 1ULL << 1, fs_read_file = 1ULL << 2,
                               fs_read_dir = 1ULL << 3, fs_abi1_all = (1ULL << 13) - 1, fs_refer = 1ULL << 13,
                               fs_truncate = 1ULL << 14, fs_ioctl_dev = 1ULL << 15;
inline constexpr std::uint64_t net_bind_tcp = 1ULL << 0, net_connect_tcp = 1ULL << 1;
inline constexpr std::uint64_t scope_abstract_unix_socket = 1ULL << 0, scope_signal = 1ULL << 1;
struct ruleset_attr {
  std::uint64_t handled_access_fs = 0, handled_access_net = 0, scoped = 0;
};
struct [[gnu::packed]] path_beneath_attr {
  std::uint64_t allowed_access = 0;
  std::int32_t parent_fd = -1;
};
inline constexpr int rule_path_beneath = 1;
inline constexpr unsigned create_ruleset_version = 1U << 0;

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

/// The Landlock ABI version this kernel offers, or -errno (-ENOSYS: too old, -EOPNOTSUPP: disabled).
inline int abi() {
  const long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, create_ruleset_version);
  return v < 0 ? -errno : static_cast<int>(v);
}
}  // namespace landlock

/// Confines this process to reading (and mapping for execution) files beneath `readable`; nothing
/// may be written, created or removed. Paths that do not exist are skipped. Returns "" or why not.
inline std::string confine_files(std::vector<std::string> const& readable, int abi) {
  using namespace landlock;
  if (abi < 1) return "Landlock is not available (" + std::string(std::strerror(-abi)) + ")";
  ruleset_attr attr;
  attr.handled_access_fs =
      fs_abi1_all | (abi >= 2 ? fs_refer : 0) | (abi >= 3 ? fs_truncate : 0) | (abi >= 5 ? fs_ioctl_dev : 0);
  std::size_t size = sizeof(std::uint64_t);
  if (abi >= 4) {
    attr.handled_access_net = net_bind_tcp | net_connect_tcp;
    size = 2 * sizeof(std::uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = scope_abstract_unix_socket | scope_signal;
    size = sizeof attr;
  }
  const int rs = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0U));
  if (rs < 0) return std::string("landlock_create_ruleset: ") + std::strerror(errno);
  for (auto const& dir : readable) {
    const int fd = ::open(dir.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    const bool is_dir = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    path_beneath_attr rule;
    rule.allowed_access = fs_execute | fs_read_file | (is_dir ? fs_read_dir : 0);
    rule.parent_fd = fd;
    const long r = ::syscall(SYS_landlock_add_rule, rs, rule_path_beneath, &rule, 0U);
    const int e = errno;
    ::close(fd);
    if (r != 0) {
      ::close(rs);
      return "landlock_add_rule(" + dir + "): " + std::strerror(e);
    }
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::syscall(SYS_landlock_restrict_self, rs, 0U) != 0) {
    const int e = errno;
    ::close(rs);
    return std::string("landlock_restrict_self: ") + std::strerror(e);
  }
  ::close(rs);
  return "";
}

}  // namespace kernelbrain::host_sandbox
