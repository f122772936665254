#ifndef VPNCTL_CVPNSHIMS_H
#define VPNCTL_CVPNSHIMS_H
#include <stddef.h>

/// Creates a new tun interface through TUNSETIFF on an open /dev/net/tun
/// descriptor; never attaches to an existing one (-EBUSY when `name` exists).
/// `name` is in/out (IFNAMSIZ). Returns 0 or -errno.
int vpn_tun_set_iff(int fd, char *name, size_t name_len, int no_pi);

/// TUNSETPERSIST. Returns 0 or -errno.
int vpn_tun_set_persist(int fd, int persist);

/// flock(LOCK_EX) that retries on EINTR. Returns 0 or -errno.
int vpn_flock_exclusive(int fd);

/// Returns 1 when fd refers to a terminal, 0 otherwise.
int vpn_isatty(int fd);
/// The terminal's width in columns, or -1 when fd is no terminal.
int vpn_terminal_columns(int fd);
#endif

/// posix_spawn with the fds a provider needs: `pass_fds[i]` becomes fd 3+i in
/// the child, every other fd >= 3+n is closed (addclosefrom_np), stdin is
/// /dev/null, stdout/stderr go to `out_fd` (or /dev/null when < 0). The child
/// gets an empty signal mask and default dispositions. `new_session` adds
/// POSIX_SPAWN_SETSID. Returns the pid, or -errno.
int vpn_spawn(const char *path, char *const argv[], char *const envp[],
              const int *pass_fds, int n_pass_fds, int out_fd, int new_session);

/// Like vpn_spawn (no new session), for a provider that must not outlive
/// its parent: the child arms PR_SET_PDEATHSIG(`death_signal`) and checks
/// that its parent is still the caller before it execs, so there is no
/// window in which the caller's death leaves it running. vfork-based, with
/// every signal blocked in the caller meanwhile. Returns the pid, or -errno
/// (the exec's own errno when the program cannot run).
int vpn_spawn_tied(const char *path, char *const argv[], char *const envp[],
                   const int *pass_fds, int n_pass_fds, int out_fd, int death_signal);

/// Like vpn_spawn_tied, for a provider that runs as another user: after the
/// fds are in place the child sets its groups to `gid` alone, its gid and
/// its uid (real, effective and saved), sets no_new_privs, changes to "/",
/// and only then arms the parent-death signal (a credential change clears
/// it). `uid` < 0 changes nothing. Returns the pid, or -errno.
int vpn_spawn_tied_as(const char *path, char *const argv[], char *const envp[],
                      const int *pass_fds, int n_pass_fds, int out_fd, int death_signal, int uid, int gid);

/// Like vpn_spawn_tied_as, but runs the file open at `exec_fd` (when >= 0)
/// with execveat(fd, "", AT_EMPTY_PATH) instead of looking `path` up again:
/// the inode that was checked is the one that runs. A binary's fd is moved
/// above the passed fds, close-on-exec; a `script`'s fd becomes stdin (not
/// close-on-exec), since the kernel gives the interpreter "/dev/fd/0".
/// posix_spawn cannot do this (it has no fexecve), so it is this vfork path.
int vpn_spawn_tied_fd_as(const char *path, int exec_fd, int script, char *const argv[], char *const envp[],
                         const int *pass_fds, int n_pass_fds, int out_fd, int death_signal, int uid, int gid);


/// Blocks SIGTERM, SIGINT, SIGHUP and SIGCHLD and returns a signalfd that
/// reports them (non-blocking, close-on-exec), or -errno.
int vpn_supervisor_signalfd(void);

/// Reads one signalfd record; returns the signal number, 0 when none is
/// pending, or -errno.
int vpn_signalfd_read(int fd);

/// pidfd_open(2): an fd that polls readable when `pid` exits, or -errno.
int vpn_pidfd_open(int pid);

/// flock(LOCK_EX | LOCK_NB). Returns 0, or -errno (-EWOULDBLOCK when held).
int vpn_flock_try_exclusive(int fd);

/// The kernel's ifindex and ARPHRD type of a link, by two ioctls
/// (SIOCGIFINDEX, SIOCGIFHWADDR) on `sock`, any AF_INET datagram socket.
/// Returns 0 or -errno.
int vpn_link_facts(int sock, const char *name, int *ifindex, int *arphrd_type);

/// The driver name and bus info of a link (ethtool ETHTOOL_GDRVINFO).
/// Returns 0 or -errno (-EOPNOTSUPP for drivers without ethtool support).
int vpn_link_driver(int sock, const char *name, char *driver, size_t driver_len, char *bus, size_t bus_len);

/// SO_PEERCRED of a connected unix socket: the peer's pid, uid and gid as
/// the kernel recorded them at connect(2). Returns 0 or -errno.
int vpn_peer_credentials(int fd, int *pid, unsigned *uid, unsigned *gid);

/// sd_notify(3) without libsystemd: sends `message` as one datagram to the
/// AF_UNIX socket `address` (a leading '@' is the abstract namespace).
/// Returns 0 or -errno.
int vpn_sd_notify(const char *address, const char *message);

/// accept4(SOCK_CLOEXEC | SOCK_NONBLOCK). Returns the fd or -errno.
int vpn_accept(int listener);
